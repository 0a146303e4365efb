/*
 * mg04_tear.c — MG04 Fig. 9 in spirit: a block grabbed by two handles (its
 * end faces, moved apart with a twist) tears along planes normal to the
 * largest principal stress (MG04 §4's criterion, MMDJ01 §2.5's cut).
 * Table 1 "dragon" stiffness and fracture threshold: E = 100 kPa, ν = 0.33,
 * σ_threshold = 60 kPa... scaled down to 6 kPa so the tear happens within a
 * short clip.  A detailed surface (the boundary of a finer box) is embedded
 * (MG04 §5.1) and written while the body is whole; once it fractures, the
 * tet boundary surface is written instead (watertight cutting, MG04 §5.2, is
 * a later issue).
 *
 * A world without gravity, one backward Euler integrator, one corotated body
 * with body_def.fracture; the handles are defo_body_prescribe with a
 * scripted motion.  The body's mesh grows as it cracks: defo_body_mesh.
 *
 *   cc -O2 -Iinclude examples/mg04_tear.c build/libdefo.a \
 *      -ljansson -lcholmod -lsuitesparseconfig -lm -fopenmp -o mg04_tear
 *   ./mg04_tear OUTDIR       writes OUTDIR/tear_NNNN.vtu and .obj
 */
#include <defo/embed.h>
#include <defo/io.h>
#include <defo/mesh.h>
#include <defo/world.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 0.4;
    bd.size[1] = bd.size[2] = 0.1;
    bd.cells[0] = 12;
    bd.cells[1] = bd.cells[2] = 3;
    bd.split = DEFO_SPLIT_5; /* irregular-looking cracks (MG04 §4 advice) */
    defo_mesh *m = NULL, *fine = NULL, *surf = NULL;
    defo_world *w = NULL;
    defo_embed *emb = NULL;
    double *p = NULL, *n = NULL;
    if (defo_generate_box(&bd, &m)) goto fail;
    /* detailed surface: the boundary of a 3× finer box */
    bd.cells[0] = 36;
    bd.cells[1] = bd.cells[2] = 9;
    if (defo_generate_box(&bd, &fine)) goto fail;
    defo_boundary b;
    if (defo_mesh_boundary(fine, 0, &b)) goto fail;
    if (defo_mesh_create(0, &surf)) goto fail;
    for (defo_index i = 0; i < fine->num_nodes; i++)
        defo_mesh_add_node(surf, fine->x[3 * i], fine->x[3 * i + 1], fine->x[3 * i + 2], NULL);
    for (defo_index f = 0; f < b.num_faces; f++) defo_mesh_add_tri(surf, b.faces + 3 * f, 3, 0);
    defo_boundary_free(&b);

    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    if (defo_world_create(&wd, &w)) goto fail;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    id.time_step = 0.01;
    id.rayleigh_mass = 1.0;
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = 6e3;
    defo_body_def body = defo_default_body_def();
    body.mesh = m;
    body.material.youngs_modulus = 100e3;
    body.material.poisson = 0.33;
    body.material.density = 1000;
    body.force.formulation = DEFO_FORMULATION_COROTATED;
    body.fracture = &fd;
    defo_body_id block;
    if (defo_world_add_integrator(w, &id, &body.integrator)) goto fail;
    if (defo_world_add_body(w, &body, &block)) goto fail;
    /* the handles: the end faces move apart at 5 cm/s each with a twist */
    const double speed = 0.05;
    defo_motion_def left = defo_default_motion_def(), right = left;
    left.velocity[0] = -speed, left.velocity[2] = 0.02;
    right.velocity[0] = speed, right.velocity[2] = -0.02;
    const double lo0[3] = {-INFINITY, -INFINITY, -INFINITY}, hi0[3] = {0, INFINITY, INFINITY};
    const double lo1[3] = {0.4, -INFINITY, -INFINITY}, hi1[3] = {INFINITY, INFINITY, INFINITY};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    if (defo_body_prescribe(w, block, &r0, &left, NULL)) goto fail;
    if (defo_body_prescribe(w, block, &r1, &right, NULL)) goto fail;
    /* the embedding reads the rest mesh's connectivity: used while whole */
    if (defo_embed_create(m, surf, &emb)) goto fail;
    size_t nv = (size_t)surf->num_nodes;
    p = malloc(3 * nv * sizeof(double));
    n = malloc(3 * nv * sizeof(double));
    if (!p || !n) goto fail;
    int broken = 0;
    char path[4096];
    for (int frame = 0; frame <= 30; frame++) {
        const defo_mesh *bm = defo_body_mesh(w, block);
        const double *x = defo_body_positions(w, block);
        defo_write_options wo = defo_default_write_options();
        wo.positions = x;
        snprintf(path, sizeof path, "%s/tear_%04d.vtu", argv[1], frame);
        if (defo_mesh_write(path, bm, &wo)) goto fail;
        snprintf(path, sizeof path, "%s/tear_%04d.obj", argv[1], frame);
        if (!broken) {
            /* normals by each tet's polar rotation: the corotated rotation */
            if (defo_embed_update(emb, x, NULL, p, n)) goto fail;
            if (defo_embed_write_obj(emb, path, p, n)) goto fail;
        } else if (defo_boundary_write_obj(bm, x, path)) {
            goto fail;
        }
        if (defo_world_step(w, 0.03) < 0) goto fail; /* 3 steps: fracture, then implicit Euler */
        defo_step_stats st;
        defo_world_stats(w, &st);
        defo_index pieces = 0;
        if (defo_body_components(w, block, &pieces)) goto fail;
        if (st.splits > 0 && !broken) {
            broken = 1;
            printf("frame %2d: first crack (%ld splits)\n", frame, (long)st.splits);
        }
        if (frame % 10 == 0)
            printf("frame %2d: %ld nodes, %ld pieces\n", frame, (long)defo_body_num_nodes(w, block),
                   (long)pieces);
    }
    free(p);
    free(n);
    defo_embed_destroy(emb);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_mesh_destroy(fine);
    defo_mesh_destroy(surf);
    return 0;
fail:
    fprintf(stderr, "mg04_tear: %s\n", defo_last_error());
    free(p);
    free(n);
    defo_embed_destroy(emb);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_mesh_destroy(fine);
    defo_mesh_destroy(surf);
    return 1;
}
