/*
 * mg04_wax.c — MG04 Fig. 8 "warm-wax cow" in spirit (the Stanford bunny of
 * data/meshes stands in for the cow): a body with MG04 §3 plasticity,
 * Table 1 "cow" parameters (E = 50 kPa, ν = 0.33, c_yield 0.01,
 * c_creep 100 /s, c_max 10), standing on its lowest nodes, sags under
 * gravity and keeps the sagged shape.  The detailed bunny surface is bound
 * to the tets (MG04 §5.1) and written as OBJ with rotated normals.
 *
 * A world with gravity along −y (the bunny's up axis is +y), one backward
 * Euler integrator (MG04 §6 interactive mode, 20 CG iterations at most) and
 * one corotated body with body_def.plasticity; the stand is a region of
 * prescribed nodes.  Each frame is 4 steps.
 *
 *   cc -O2 -Iinclude examples/mg04_wax.c build/libdefo.a \
 *      -ljansson -lcholmod -lsuitesparseconfig -lm -fopenmp -o mg04_wax
 *   ./mg04_wax OUTDIR [DATA_DIR]   writes OUTDIR/wax_NNNN.vtu and .obj
 */
#include <defo/embed.h>
#include <defo/io.h>
#include <defo/mesh.h>
#include <defo/mesher.h>
#include <defo/world.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s OUTDIR [DATA_DIR]\n", argv[0]);
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/meshes/bunny.off", argc > 2 ? argv[2] : "data");
    defo_mesh *surf = NULL, *m = NULL;
    defo_world *w = NULL;
    defo_embed *emb = NULL;
    double *p = NULL, *n = NULL, *plastic = NULL;
    if (defo_mesh_read(path, NULL, &surf)) goto fail;
    for (defo_index i = 0; i < 3 * surf->num_nodes; i++) surf->x[i] *= 0.03; /* ~30 cm */
    defo_mesher_def md = defo_default_mesher_def();
    md.cells = 7;
    if (defo_mesh_surface(surf, &md, &m, NULL) < 0) goto fail;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[1] = -9.81; /* the bunny's up axis is +y */
    wd.gravity[2] = 0;
    if (defo_world_create(&wd, &w)) goto fail;
    const double dt = 0.01; /* c_creep·Δt = 1: at MG04's limit */
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    id.time_step = dt;
    id.rayleigh_mass = 1.0;
    id.linear.fixed_iterations = 20;
    defo_plasticity_def pd = defo_plasticity_wax_def();
    defo_body_def body = defo_default_body_def();
    body.mesh = m;
    body.material.youngs_modulus = 50e3;
    body.material.poisson = 0.33;
    body.material.density = 1000;
    body.force.formulation = DEFO_FORMULATION_COROTATED;
    body.plasticity = &pd;
    defo_body_id wax;
    if (defo_world_add_integrator(w, &id, &body.integrator)) goto fail;
    if (defo_world_add_body(w, &body, &wax)) goto fail;
    double lo[3], hi[3];
    defo_mesh_bbox(m, lo, hi);
    /* standing on the table: the nodes in the lowest 8 % of the height */
    const double slo[3] = {-INFINITY, -INFINITY, -INFINITY},
                 shi[3] = {INFINITY, lo[1] + 0.08 * (hi[1] - lo[1]), INFINITY};
    defo_region stand = defo_region_box(slo, shi);
    if (defo_body_prescribe(w, wax, &stand, NULL, NULL)) goto fail;
    if (defo_embed_create(m, surf, &emb)) goto fail;
    size_t nv = (size_t)surf->num_nodes;
    p = malloc(3 * nv * sizeof(double));
    n = malloc(3 * nv * sizeof(double));
    plastic = malloc((size_t)m->num_elems * sizeof(double));
    if (!p || !n || !plastic) goto fail;
    for (int frame = 0; frame <= 20; frame++) {
        const double *x = defo_body_positions(w, wax);
        defo_write_options wo = defo_default_write_options();
        wo.positions = x;
        snprintf(path, sizeof path, "%s/wax_%04d.vtu", argv[1], frame);
        if (defo_mesh_write(path, m, &wo)) goto fail;
        /* normals by each tet's polar rotation: the corotated rotation */
        if (defo_embed_update(emb, x, NULL, p, n)) goto fail;
        snprintf(path, sizeof path, "%s/wax_%04d.obj", argv[1], frame);
        if (defo_embed_write_obj(emb, path, p, n)) goto fail;
        if (defo_world_step(w, 4 * dt) < 0) goto fail; /* plasticity, then implicit Euler */
        if (frame % 10 == 0) {
            defo_step_stats st;
            defo_world_stats(w, &st);
            if (defo_body_plastic_strain(w, wax, plastic)) goto fail;
            double pmax = 0;
            for (defo_index e = 0; e < m->num_elems; e++) pmax = fmax(pmax, plastic[e]);
            printf("frame %2d  yielding %d points (4 steps), max plastic strain %.3f\n", frame,
                   st.yielding, pmax);
        }
    }
    free(p);
    free(n);
    free(plastic);
    defo_embed_destroy(emb);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_mesh_destroy(surf);
    return 0;
fail:
    fprintf(stderr, "mg04_wax: %s\n", defo_last_error());
    free(p);
    free(n);
    free(plastic);
    defo_embed_destroy(emb);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_mesh_destroy(surf);
    return 1;
}
