/*
 * mg04_tear.c — MG04 Fig. 9 in spirit: a block grabbed by two handles (its
 * end faces, moved apart) tears by MG04 §4 vertex splitting.  Table 1
 * "dragon" stiffness and fracture threshold: E = 100 kPa, ν = 0.33,
 * σ_threshold = 60 kPa... scaled down to 6 kPa so the tear happens within a
 * short clip.  A detailed surface (the boundary of a finer box) is embedded
 * (MG04 §5.1) and written while the body is whole; once it fractures, the
 * tet boundary surface is written instead (watertight cutting, MG04 §5.2, is
 * a later issue).
 *
 *   cc -O2 -Iinclude examples/mg04_tear.c build/libdefo.a \
 *      -ljansson -lcholmod -lsuitesparseconfig -lm -fopenmp -o mg04_tear
 *   ./mg04_tear OUTDIR       writes OUTDIR/tear_NNNN.vtu and .obj
 */
#include <defo/backward_euler.h>
#include <defo/embed.h>
#include <defo/fracture.h>
#include <defo/io.h>
#include <defo/mesh.h>
#include <defo/solver.h>

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

    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = 100e3;
    mat.poisson = 0.33;
    mat.density = 1000;
    defo_backward_euler_def d = defo_default_backward_euler_def();
    d.time_step = 0.01;
    d.gravity[2] = 0;
    d.rayleigh_mass = 1.0;
    defo_backward_euler *be = NULL;
    defo_fracture *fr = NULL;
    defo_embed *emb = NULL;
    if (defo_backward_euler_create(m, &mat, &d, &be)) goto fail;
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = 6e3;
    fd.seed = 2004;
    fd.max_splits = 2;
    if (defo_fracture_create(m, &mat, &fd, &fr)) goto fail;
    if (defo_embed_create(m, surf, &emb)) goto fail;
    const double speed = 0.05; /* each handle [m/s] */
    {
        unsigned char *con = defo_backward_euler_constraints(be);
        double *v = defo_backward_euler_velocities(be);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            double X = m->x[3 * i];
            if (X < 1e-9 || X > 0.4 - 1e-9) {
                con[i] = DEFO_CONSTRAINT_FIXED;
                v[3 * i] = X < 0.2 ? -speed : speed;
                v[3 * i + 2] = X < 0.2 ? 0.02 : -0.02; /* a twist of the handles */
            }
        }
    }
    size_t nv = (size_t)surf->num_nodes;
    double *p = malloc(3 * nv * sizeof(double)), *n = malloc(3 * nv * sizeof(double));
    if (!p || !n) return 1;
    int broken = 0;
    char path[4096];
    for (int frame = 0; frame <= 30; frame++) {
        const double *x = defo_backward_euler_positions(be);
        defo_write_options wo = defo_default_write_options();
        wo.positions = x;
        snprintf(path, sizeof path, "%s/tear_%04d.vtu", argv[1], frame);
        if (defo_mesh_write(path, m, &wo)) goto fail;
        snprintf(path, sizeof path, "%s/tear_%04d.obj", argv[1], frame);
        if (!broken) {
            defo_embed_update(emb, x, defo_corotated_rotations(defo_backward_euler_force_model(be)),
                              p, n);
            if (defo_embed_write_obj(emb, path, p, n)) goto fail;
        } else if (defo_boundary_write_obj(m, x, path))
            goto fail;
        for (int s = 0; s < 3; s++) {
            defo_fracture_stats fs;
            if (defo_fracture_step(fr, be, &fs)) goto fail;
            if (fs.splits > 0 && !broken) {
                broken = 1;
                printf("frame %2d: first crack (sigma_max %.0f Pa)\n", frame, fs.max_stress);
            }
            if (defo_backward_euler_step(be, NULL) < 0) goto fail;
            if (s == 0 && frame % 10 == 0)
                printf("frame %2d: %ld nodes, %ld pieces\n", frame, (long)m->num_nodes,
                       (long)fs.components);
        }
    }
    free(p);
    free(n);
    defo_embed_destroy(emb);
    defo_fracture_destroy(fr);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
    defo_mesh_destroy(fine);
    defo_mesh_destroy(surf);
    return 0;
fail:
    fprintf(stderr, "mg04_tear: %s\n", defo_last_error());
    return 1;
}
