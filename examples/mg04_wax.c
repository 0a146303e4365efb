/*
 * mg04_wax.c — MG04 Fig. 8 "warm-wax cow" in spirit (the Stanford bunny of
 * data/meshes stands in for the cow): a body with MG04 §3 plasticity,
 * Table 1 "cow" parameters (E = 50 kPa, ν = 0.33, c_yield 0.01,
 * c_creep 100 /s, c_max 10), standing on its lowest nodes, sags under
 * gravity and keeps the sagged shape.  The detailed bunny surface is bound
 * to the tets (MG04 §5.1) and written as OBJ with rotated normals.
 *
 *   cc -O2 -Iinclude examples/mg04_wax.c build/libdefo.a \
 *      -ljansson -lcholmod -lsuitesparseconfig -lm -fopenmp -o mg04_wax
 *   ./mg04_wax OUTDIR [DATA_DIR]   writes OUTDIR/wax_NNNN.vtu and .obj
 */
#include <defo/backward_euler.h>
#include <defo/embed.h>
#include <defo/io.h>
#include <defo/mesh.h>
#include <defo/mesher.h>
#include <defo/plasticity.h>
#include <defo/solver.h>

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
    if (defo_mesh_read(path, NULL, &surf)) goto fail;
    for (defo_index i = 0; i < 3 * surf->num_nodes; i++) surf->x[i] *= 0.03; /* ~30 cm */
    defo_mesher_def md = defo_default_mesher_def();
    md.cells = 7;
    if (defo_mesh_surface(surf, &md, &m, NULL) < 0) goto fail;
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = 50e3;
    mat.poisson = 0.33;
    mat.density = 1000;
    defo_backward_euler_def d = defo_default_backward_euler_def();
    d.time_step = 0.01; /* c_creep·Δt = 1: at MG04's limit */
    d.rayleigh_mass = 1.0;
    d.cg_fixed_iterations = 20;
    d.gravity[1] = -9.81; /* the bunny's up axis is +y */
    d.gravity[2] = 0;
    defo_backward_euler *be = NULL;
    defo_plasticity *pl = NULL;
    defo_embed *emb = NULL;
    if (defo_backward_euler_create(m, &mat, &d, &be)) goto fail;
    defo_plasticity_def pd = defo_plasticity_wax_def();
    if (defo_plasticity_create(m, defo_backward_euler_force_model(be), &pd, &pl)) goto fail;
    if (defo_embed_create(m, surf, &emb)) goto fail;
    double lo[3], hi[3];
    defo_mesh_bbox(m, lo, hi);
    unsigned char *con = defo_backward_euler_constraints(be);
    for (defo_index i = 0; i < m->num_nodes; i++) /* standing on the table */
        if (m->x[3 * i + 1] < lo[1] + 0.08 * (hi[1] - lo[1])) con[i] = DEFO_CONSTRAINT_FIXED;
    size_t nv = (size_t)surf->num_nodes;
    double *p = malloc(3 * nv * sizeof(double)), *n = malloc(3 * nv * sizeof(double));
    if (!p || !n) return 1;
    for (int frame = 0; frame <= 20; frame++) {
        const double *x = defo_backward_euler_positions(be);
        defo_write_options wo = defo_default_write_options();
        wo.positions = x;
        snprintf(path, sizeof path, "%s/wax_%04d.vtu", argv[1], frame);
        if (defo_mesh_write(path, m, &wo)) goto fail;
        defo_embed_update(emb, x, defo_corotated_rotations(defo_backward_euler_force_model(be)), p,
                          n);
        snprintf(path, sizeof path, "%s/wax_%04d.obj", argv[1], frame);
        if (defo_embed_write_obj(emb, path, p, n)) goto fail;
        for (int s = 0; s < 4; s++) {
            defo_plasticity_stats ps;
            if (defo_plasticity_step(pl, be, d.time_step, &ps)) goto fail;
            if (defo_backward_euler_step(be, NULL) < 0) goto fail;
            if (s == 0 && frame % 10 == 0)
                printf("frame %2d  yielding %ld tets, max plastic strain %.3f\n", frame,
                       (long)ps.yielding, ps.max_plastic_strain);
        }
    }
    free(p);
    free(n);
    defo_embed_destroy(emb);
    defo_plasticity_destroy(pl);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
    defo_mesh_destroy(surf);
    return 0;
fail:
    fprintf(stderr, "mg04_wax: %s\n", defo_last_error());
    return 1;
}
