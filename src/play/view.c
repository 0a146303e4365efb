/*
 * play/view.c — what a `defo play` window shows: every body as defo render
 * draws it (its boundary, or its embedded surface with normals from the
 * element maps' gradients and von Mises stress interpolated to the detail
 * vertices, MTPS08 §6.2), the colliders, the tet mesh's boundary edges as a
 * wireframe over the picture, and the camera that picks.
 *
 * The camera is the renderer's own (defo_render_camera) for a framing box
 * fixed at the start (scaled by the zoom) and the orbit's azimuth and
 * elevation, so a pixel means the same point in the picture and in a pick.
 */
#include "play/play_internal.h"

#include <stdlib.h>
#include <string.h>

static void body_free_caches(play_body *b) {
    defo_boundary_free(&b->bd);
    memset(&b->bd, 0, sizeof b->bd);
    free(b->J);
    free(b->vm);
    free(b->node_vm);
    b->J = b->vm = b->node_vm = NULL;
}

void play_bodies_destroy(play_session *ps) {
    for (int i = 0; ps->bodies && i < ps->nb; i++) {
        play_body *b = &ps->bodies[i];
        body_free_caches(b);
        free(b->sx);
        free(b->sn);
        free(b->sval);
    }
    free(ps->bodies);
    ps->bodies = NULL;
}

defo_status play_bodies_create(play_session *ps) {
    defo_simulation *sim = ps->def->sim;
    ps->nb = defo_simulation_num_bodies(sim);
    ps->bodies = calloc((size_t)ps->nb + 1, sizeof *ps->bodies);
    if (!ps->bodies) return DEFO_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < ps->nb; i++) {
        play_body *b = &ps->bodies[i];
        b->id = defo_simulation_body(sim, i);
    }
    return play_bodies_update(ps);
}

defo_status play_bodies_update(play_session *ps) {
    for (int i = 0; i < ps->nb; i++) {
        play_body *b = &ps->bodies[i];
        const defo_mesh *m = defo_body_mesh(ps->world, b->id);
        if (m->num_nodes != b->nodes || !b->J) {
            /* first call, or fracture added nodes and relinked elements */
            body_free_caches(b);
            defo_status s = defo_mesh_boundary(m, m->nodes_per_elem == 10, &b->bd);
            if (s) return s;
            b->J = malloc(((size_t)m->num_elems + 1) * sizeof(double));
            b->vm = malloc(((size_t)m->num_elems + 1) * sizeof(double));
            b->node_vm = malloc(((size_t)m->num_nodes + 1) * sizeof(double));
            if (!b->J || !b->vm || !b->node_vm) return DEFO_ERR_OUT_OF_MEMORY;
            b->nodes = m->num_nodes;
        }
        /* the embedded surface as the simulation has it now */
        b->surface = defo_simulation_embedded_surface(ps->def->sim, i);
        b->embed = defo_simulation_embedding(ps->def->sim, i);
        if (b->embed && (size_t)b->surface->num_nodes + 1 > b->cap_sv) {
            const size_t nv = (size_t)b->surface->num_nodes + 1;
            free(b->sx);
            free(b->sn);
            free(b->sval);
            b->sx = malloc(3 * nv * sizeof(double));
            b->sn = malloc(3 * nv * sizeof(double));
            b->sval = malloc(nv * sizeof(double));
            if (!b->sx || !b->sn || !b->sval) return DEFO_ERR_OUT_OF_MEMORY;
            b->cap_sv = nv;
        }
        const double *x = defo_body_positions(ps->world, b->id);
        if (ps->color != PLAY_COLOR_PLAIN) {
            defo_force_fields ff;
            memset(&ff, 0, sizeof ff);
            ff.J = b->J;
            ff.von_mises = b->vm;
            ff.node_von_mises = b->node_vm;
            defo_status s = defo_body_fields(ps->world, b->id, &ff);
            if (s) return s;
        }
        if (b->embed) {
            defo_status s = defo_embed_update(b->embed, x, NULL, b->sx, b->sn);
            if (!s && ps->color == PLAY_COLOR_STRESS)
                s = defo_embed_interpolate(b->embed, b->node_vm, b->sval);
            if (s) return s;
        }
        /* the body's mesh, its fields pointing into the arrays above */
        b->view = *m;
        b->view.num_tris = 0;
        b->view.nodes_per_tri = 0;
        b->view.tris = NULL;
        b->view.tri_tag = NULL;
        b->view.elem_tag = NULL;
        b->view.num_groups = 0;
        b->view.groups = NULL;
        memset(b->fields, 0, sizeof b->fields);
        snprintf(b->fields[0].name, sizeof b->fields[0].name, "J");
        b->fields[0].location = DEFO_FIELD_CELL;
        b->fields[0].components = 1;
        b->fields[0].data = b->J;
        snprintf(b->fields[1].name, sizeof b->fields[1].name, "von_mises");
        b->fields[1].location = DEFO_FIELD_CELL;
        b->fields[1].components = 1;
        b->fields[1].data = b->vm;
        b->view.fields = b->fields;
        b->view.num_fields = ps->color == PLAY_COLOR_PLAIN ? 0 : 2;
    }
    return DEFO_OK;
}

defo_status play_camera(play_session *ps) {
    double c[3];
    for (int k = 0; k < 3; k++) {
        c[k] = 0.5 * (ps->frame_lo[k] + ps->frame_hi[k]);
        const double h = 0.5 * (ps->frame_hi[k] - ps->frame_lo[k]) * ps->zoom;
        ps->rd.frame_lo[k] = c[k] - h;
        ps->rd.frame_hi[k] = c[k] + h;
    }
    return defo_render_camera(&ps->rd, ps->vp, ps->eye);
}

defo_status play_draw(play_session *ps, defo_image *img) {
    defo_status s = play_camera(ps);
    if (s) return s;
    defo_render_part *parts = calloc((size_t)ps->nb + 1, sizeof *parts);
    if (!parts) return DEFO_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < ps->nb; i++) {
        play_body *b = &ps->bodies[i];
        parts[i].mesh = &b->view;
        parts[i].positions = defo_body_positions(ps->world, b->id);
        if (b->embed) {
            parts[i].surface = b->surface;
            parts[i].surface_positions = b->sx;
            parts[i].surface_elem = defo_embed_elements(b->embed);
            parts[i].surface_bary = defo_embed_barycentric(b->embed);
            parts[i].surface_normals = b->sn;
            parts[i].surface_values = ps->color == PLAY_COLOR_STRESS ? b->sval : NULL;
        }
    }
    defo_render_shape *shapes = NULL;
    int nshapes = 0;
    const play_host *h = &ps->def->host;
    if (h->shapes && h->shapes(h->ctx, defo_world_time(ps->world), &shapes, &nshapes) != 0) {
        free(parts);
        return DEFO_ERR_OUT_OF_MEMORY;
    }
    ps->rd.field = ps->color == PLAY_COLOR_STRESS ? "von_mises"
                   : ps->color == PLAY_COLOR_J    ? "J"
                                                  : NULL;
    s = defo_render_parts(ps->renderer, &ps->rd, parts, ps->nb, shapes, nshapes, img);
    free(shapes);
    free(parts);
    if (s == DEFO_OK && ps->wireframe) play_draw_wireframe(ps, img);
    return s;
}

int play_project(const play_session *ps, const double p[3], double *x, double *y) {
    const double *m = ps->vp;
    double c[4];
    for (int i = 0; i < 4; i++)
        c[i] = m[4 * i] * p[0] + m[4 * i + 1] * p[1] + m[4 * i + 2] * p[2] + m[4 * i + 3];
    if (!(c[3] > 0)) return 0;
    *x = (1 + c[0] / c[3]) * 0.5 * ps->rd.width;
    *y = (1 - c[1] / c[3]) * 0.5 * ps->rd.height;
    return 1;
}

/* Inverse of a row-major 4×4 by Gauss–Jordan with partial pivoting. */
static int mat4_inverse(const double a[16], double inv[16]) {
    double m[4][8];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++) m[i][j] = j < 4 ? a[4 * i + j] : (j - 4 == i);
    for (int c = 0; c < 4; c++) {
        int p = c;
        for (int r = c + 1; r < 4; r++)
            if (fabs(m[r][c]) > fabs(m[p][c])) p = r;
        if (m[p][c] == 0) return 0;
        for (int j = 0; j < 8; j++) {
            double t = m[c][j];
            m[c][j] = m[p][j];
            m[p][j] = t;
        }
        const double d = m[c][c];
        for (int j = 0; j < 8; j++) m[c][j] /= d;
        for (int r = 0; r < 4; r++)
            if (r != c) {
                const double f = m[r][c];
                for (int j = 0; j < 8; j++) m[r][j] -= f * m[c][j];
            }
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) inv[4 * i + j] = m[i][4 + j];
    return 1;
}

void play_pixel_ray(const play_session *ps, double x, double y, double o[3], double d[3]) {
    double inv[16];
    const double nx = 2 * x / ps->rd.width - 1, ny = 1 - 2 * y / ps->rd.height;
    double q[2][3];
    if (!mat4_inverse(ps->vp, inv)) {
        memcpy(o, ps->eye, 3 * sizeof(double));
        d[0] = d[1] = 0;
        d[2] = -1;
        return;
    }
    for (int s = 0; s < 2; s++) {
        const double nz = s ? 1 : -1;
        double c[4];
        for (int i = 0; i < 4; i++)
            c[i] = inv[4 * i] * nx + inv[4 * i + 1] * ny + inv[4 * i + 2] * nz + inv[4 * i + 3];
        for (int k = 0; k < 3; k++) q[s][k] = c[k] / c[3];
    }
    double l = 0;
    for (int k = 0; k < 3; k++) {
        o[k] = ps->eye[k];
        d[k] = q[1][k] - q[0][k];
        l += d[k] * d[k];
    }
    l = sqrt(l);
    for (int k = 0; k < 3; k++) d[k] /= l;
}

void play_draw_wireframe(play_session *ps, defo_image *img) {
    const unsigned char ink[3] = {30, 30, 38};
    for (int i = 0; i < ps->nb; i++) {
        play_body *b = &ps->bodies[i];
        const double *x = defo_body_positions(ps->world, b->id);
        const int per = b->bd.nodes_per_face;
        /* corner edges (c_k, c_k+1), through the edge node of a 6-node face */
        for (defo_index f = 0; f < b->bd.num_faces; f++) {
            const defo_index *fc = b->bd.faces + (size_t)per * (size_t)f;
            for (int k = 0; k < 3; k++) {
                const defo_index a = fc[k], c = fc[(k + 1) % 3];
                if (a > c) continue; /* each edge once (shared by two faces, opposite ways) */
                double pa[2], pc[2], pm[2];
                if (!play_project(ps, x + 3 * (size_t)a, &pa[0], &pa[1]) ||
                    !play_project(ps, x + 3 * (size_t)c, &pc[0], &pc[1]))
                    continue;
                if (per == 6 && play_project(ps, x + 3 * (size_t)fc[3 + k], &pm[0], &pm[1])) {
                    defo_image_draw_line(img, pa[0], pa[1], pm[0], pm[1], 1, ink);
                    defo_image_draw_line(img, pm[0], pm[1], pc[0], pc[1], 1, ink);
                } else {
                    defo_image_draw_line(img, pa[0], pa[1], pc[0], pc[1], 1, ink);
                }
            }
        }
    }
}
