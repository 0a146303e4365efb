/*
 * play/handles.c — grabbing a body in a `defo play` window.
 *
 * Picking: the ray through the cursor (the renderer's camera) against every
 * triangle drawn — the embedded surface, or the tet mesh's boundary with a
 * tet10's curved faces as their 4 flat triangles — nearest hit first
 * (Möller–Trumbore).  The hit point is located in its element: its reference
 * coordinates λ (an embedded vertex's binding, or defo_element_locate in the
 * current element) give the shape-function weights N_a(λ) of the point.
 *
 * Spring handle (MG04: user forces) on a patch, the nodes within 1.5 h of
 * the point's rest position (h the mean edge): f = k (target − p) − c ṗ
 * with p the patch's centre of mass (plus the grabbed point's offset from
 * it when taken), |target − p| capped at `reach` = 5 h (a handle dragged
 * arbitrarily far pulls with a bounded force), spread over the patch in
 * proportion to the nodes' masses m_i/M (the patch accelerates as one, none
 * of its elements distorts) — dead loads, renewed before every frame of
 * length T.  A force held over a frame is explicit: over T it moves the
 * patch at most f T²/(2M) (less when the body resists), so k = ½ M/T²
 * keeps the frame-to-frame feedback at most ½ — stable whatever the
 * material — and c = ½ M/T.
 *
 * Hard handle (MTPS08's handles, one node each; several handles make a
 * region): the element's node nearest the point becomes a prescribed set
 * following x = X + T0 + (target − grab), T0 = x − X when grabbed, so
 * grabbing moves nothing and dragging translates it with the cursor (one
 * set per grab: the world keeps every set, so a set per node of a region
 * would grow its per-step work with each grab).  The integrators land it on
 * its target in every step; how far it is dragged is not limited — the
 * inversion handling keeps an invertible body recoverable.
 *
 * The drag plane passes through the grab point facing the camera.
 */
#include "play/play_internal.h"

#include "defo/geometry.h"
#include "defo/math.h"

#include <stdlib.h>
#include <string.h>

/* Möller–Trumbore: distance t along the ray to triangle (a, b, c), or −1. */
static double ray_tri(const double o[3], const double d[3], const double *a, const double *b,
                      const double *c, double *u_out, double *v_out) {
    double e1[3], e2[3], p[3], q[3], s[3];
    for (int k = 0; k < 3; k++) {
        e1[k] = b[k] - a[k];
        e2[k] = c[k] - a[k];
        s[k] = o[k] - a[k];
    }
    p[0] = d[1] * e2[2] - d[2] * e2[1];
    p[1] = d[2] * e2[0] - d[0] * e2[2];
    p[2] = d[0] * e2[1] - d[1] * e2[0];
    const double det = e1[0] * p[0] + e1[1] * p[1] + e1[2] * p[2];
    if (!(fabs(det) > 0)) return -1;
    const double u = (s[0] * p[0] + s[1] * p[1] + s[2] * p[2]) / det;
    if (u < 0 || u > 1) return -1;
    q[0] = s[1] * e1[2] - s[2] * e1[1];
    q[1] = s[2] * e1[0] - s[0] * e1[2];
    q[2] = s[0] * e1[1] - s[1] * e1[0];
    const double v = (d[0] * q[0] + d[1] * q[1] + d[2] * q[2]) / det;
    if (v < 0 || u + v > 1) return -1;
    const double t = (e2[0] * q[0] + e2[1] * q[1] + e2[2] * q[2]) / det;
    *u_out = u;
    *v_out = v;
    return t > 0 ? t : -1;
}

typedef struct hit {
    double t;
    int body;
    defo_index elem;
    double bary[4];
    double p[3];
} hit;

/* The nearest drawn triangle of body i along the ray. */
static void pick_body(play_session *ps, int i, const double o[3], const double d[3], hit *best) {
    play_body *b = &ps->bodies[i];
    const defo_mesh *m = defo_body_mesh(ps->world, b->id);
    const double *x = defo_body_positions(ps->world, b->id);
    if (b->embed) {
        const defo_mesh *sf = b->surface;
        for (defo_index t = 0; t < sf->num_tris; t++) {
            const defo_index *tr = sf->tris + 3 * (size_t)t;
            double u, v;
            const double s = ray_tri(o, d, b->sx + 3 * (size_t)tr[0], b->sx + 3 * (size_t)tr[1],
                                     b->sx + 3 * (size_t)tr[2], &u, &v);
            if (s < 0 || (best->body >= 0 && s >= best->t)) continue;
            /* the vertex nearest the hit carries the point: its binding */
            const double wgt[3] = {1 - u - v, u, v};
            int k = 0;
            for (int j = 1; j < 3; j++)
                if (wgt[j] > wgt[k]) k = j;
            best->t = s;
            best->body = i;
            best->elem = defo_embed_elements(b->embed)[tr[k]];
            memcpy(best->bary, defo_embed_barycentric(b->embed) + 4 * (size_t)tr[k],
                   4 * sizeof(double));
            for (int r = 0; r < 3; r++) best->p[r] = o[r] + s * d[r];
        }
        return;
    }
    const int per = b->bd.nodes_per_face, split = per == 6 ? 4 : 1;
    static const int flat[1][3] = {{0, 1, 2}};
    const int(*sub)[3] = split == 4 ? defo_tri6_split : flat;
    for (defo_index f = 0; f < b->bd.num_faces; f++) {
        const defo_index *fc = b->bd.faces + (size_t)per * (size_t)f;
        for (int q = 0; q < split; q++) {
            double u, v;
            const double s =
                ray_tri(o, d, x + 3 * (size_t)fc[sub[q][0]], x + 3 * (size_t)fc[sub[q][1]],
                        x + 3 * (size_t)fc[sub[q][2]], &u, &v);
            if (s < 0 || (best->body >= 0 && s >= best->t)) continue;
            best->t = s;
            best->body = i;
            best->elem = b->bd.elem[f];
            for (int r = 0; r < 3; r++) best->p[r] = o[r] + s * d[r];
        }
    }
    if (best->body == i && !b->embed) {
        int ok = 0;
        if (defo_element_locate(m, x, best->elem, best->p, best->bary, &ok) != DEFO_OK) {
            best->bary[0] = best->bary[1] = best->bary[2] = best->bary[3] = 0.25;
        }
    }
}

static double mean_edge(play_session *ps, int body) {
    return defo_mesh_mean_edge(defo_body_mesh(ps->world, ps->bodies[body].id));
}

static int free_slot(play_session *ps) {
    for (int h = 0; h < PLAY_MAX_HANDLES; h++)
        if (!ps->handles[h].used) return h;
    return -1;
}

int play_grab(play_session *ps, double px, double py, int hard) {
    double o[3], d[3];
    play_pixel_ray(ps, px, py, o, d);
    hit best;
    memset(&best, 0, sizeof best);
    best.body = -1;
    for (int i = 0; i < ps->nb; i++) pick_body(ps, i, o, d, &best);
    if (best.body < 0) return -1;
    const int slot = free_slot(ps);
    if (slot < 0) {
        fprintf(stderr, "defo play: %d handles already: release some (u)\n", PLAY_MAX_HANDLES);
        return -1;
    }
    play_body *b = &ps->bodies[best.body];
    const defo_mesh *m = defo_body_mesh(ps->world, b->id);
    const double *x = defo_body_positions(ps->world, b->id);
    const defo_element_ops *ops = defo_element_ops_for_mesh(m);
    if (!ops) return -1;
    const int P = ops->nodes;
    const defo_index *en = m->elems + (size_t)P * (size_t)best.elem;
    play_handle *h = &ps->handles[slot];
    memset(h, 0, sizeof *h);
    h->body = best.body;
    h->hard = hard;
    h->frame = defo_simulation_frame(ps->def->sim);
    double N[DEFO_ELEMENT_MAX_NODES];
    ops->shape(best.bary, N);
    /* the grabbed point: the shape functions' point (the body's own) */
    double X[3] = {0, 0, 0};
    for (int r = 0; r < 3; r++) h->grab[r] = 0;
    for (int a = 0; a < P; a++)
        for (int r = 0; r < 3; r++) {
            h->grab[r] += N[a] * x[3 * (size_t)en[a] + r];
            X[r] += N[a] * m->x[3 * (size_t)en[a] + r];
        }
    memcpy(h->target, h->grab, sizeof h->target);
    const double hm = mean_edge(ps, best.body);
    if (hard) {
        /* the element's node nearest the point (rest positions) */
        int nearest = 0;
        double near = INFINITY;
        for (int a = 0; a < P; a++) {
            double s = 0;
            for (int r = 0; r < 3; r++) s += pow(m->x[3 * (size_t)en[a] + r] - X[r], 2);
            if (s < near) near = s, nearest = a;
        }
        const defo_index node = en[nearest];
        defo_region reg = defo_region_sphere(m->x + 3 * (size_t)node, 0);
        defo_index *nodes = NULL, count = 0;
        if (defo_region_nodes(m, &reg, &nodes, &count) != DEFO_OK || count == 0) {
            defo_region_nodes_free(nodes);
            return -1;
        }
        /* x = X + T0 + (target − grab), T0 = x − X when grabbed: the node
         * (and any split copy sharing its rest position) moves with the
         * cursor from where it is, nothing jumps */
        for (int k = 0; k < 9; k++) h->R[k] = k % 4 == 0 ? 1.0 : 0.0;
        for (int r = 0; r < 3; r++) h->T0[r] = x[3 * (size_t)node + r] - m->x[3 * (size_t)node + r];
        h->nn = count < (defo_index)(sizeof h->node / sizeof h->node[0])
                    ? (int)count
                    : (int)(sizeof h->node / sizeof h->node[0]);
        memcpy(h->node, nodes, (size_t)h->nn * sizeof(defo_index));
        defo_region_nodes_free(nodes);
        if (defo_body_prescribe(ps->world, b->id, &reg, NULL, &h->set) != DEFO_OK ||
            defo_body_set_transform(ps->world, b->id, h->set, h->R, h->T0) != DEFO_OK) {
            fprintf(stderr, "defo play: hard handle: %s\n", defo_last_error());
            return -1;
        }
    } else {
        /* a patch: the nodes within 1.5 h of the point's rest position (at
         * most as many as a handle holds), each pushed in proportion to its
         * mass — the patch accelerates as one, no element of it distorts */
        const int cap = (int)(sizeof h->node / sizeof h->node[0]);
        double rad = 1.5 * hm;
        defo_index *nodes = NULL, count = 0;
        for (int tries = 0; tries < 20; tries++, rad *= 0.8) {
            defo_region_nodes_free(nodes);
            nodes = NULL;
            defo_region reg = defo_region_sphere(X, rad);
            if (defo_region_nodes(m, &reg, &nodes, &count) != DEFO_OK) count = 0;
            if (count <= cap) break;
        }
        if (count == 0 || count > cap) { /* the element's corners, then */
            defo_region_nodes_free(nodes);
            nodes = NULL;
            count = 4;
        }
        const double *mass = defo_body_masses(ps->world, b->id);
        double M = 0, c[3] = {0, 0, 0};
        h->nn = (int)count;
        for (int a = 0; a < h->nn; a++) {
            h->node[a] = nodes ? nodes[a] : en[a];
            M += mass[h->node[a]];
        }
        defo_region_nodes_free(nodes);
        for (int a = 0; a < h->nn; a++) {
            h->w[a] = mass[h->node[a]] / M;
            for (int r = 0; r < 3; r++) c[r] += h->w[a] * x[3 * (size_t)h->node[a] + r];
        }
        /* the grabbed point rides with the patch's centre of mass */
        for (int r = 0; r < 3; r++) h->offset[r] = h->grab[r] - c[r];
        const double T = 1.0 / defo_scene_fps(ps->def->scene);
        h->k = 0.5 * M / (T * T);
        h->c = 0.5 * M / T;
        h->reach = 5 * hm;
    }
    h->used = 1;
    return slot;
}

void play_drag_to(play_session *ps, int hi, double px, double py) {
    if (hi < 0 || !ps->handles[hi].used) return;
    play_handle *h = &ps->handles[hi];
    double o[3], d[3];
    play_pixel_ray(ps, px, py, o, d);
    /* the plane through the grab point facing the camera */
    double n[3], l = 0;
    for (int k = 0; k < 3; k++) {
        n[k] = h->target[k] - ps->eye[k];
        l += n[k] * n[k];
    }
    l = sqrt(l);
    if (!(l > 0)) return;
    for (int k = 0; k < 3; k++) n[k] /= l;
    const double den = d[0] * n[0] + d[1] * n[1] + d[2] * n[2];
    if (!(fabs(den) > 1e-9)) return;
    const double t = ((h->target[0] - o[0]) * n[0] + (h->target[1] - o[1]) * n[1] +
                      (h->target[2] - o[2]) * n[2]) /
                     den;
    if (!(t > 0) || !isfinite(t)) return;
    for (int k = 0; k < 3; k++) h->target[k] = o[k] + t * d[k];
    if (h->hard) {
        double T[3];
        for (int k = 0; k < 3; k++) T[k] = h->T0[k] + h->target[k] - h->grab[k];
        defo_body_set_transform(ps->world, ps->bodies[h->body].id, h->set, h->R, T);
    }
}

/* Take a spring's loads of the last frame off its nodes. */
static void unload(play_session *ps, play_handle *h) {
    double *f = defo_body_external_force(ps->world, ps->bodies[h->body].id);
    for (int a = 0; f && a < h->nn; a++)
        for (int k = 0; k < 3; k++) {
            f[3 * (size_t)h->node[a] + k] -= h->applied[3 * a + k];
            h->applied[3 * a + k] = 0;
        }
}

void play_release(play_session *ps, int hi) {
    if (hi < 0 || !ps->handles[hi].used) return;
    play_handle *h = &ps->handles[hi];
    if (h->hard)
        defo_body_release(ps->world, ps->bodies[h->body].id, h->set);
    else
        unload(ps, h);
    h->used = 0;
    if (ps->drag == hi) ps->drag = -1;
}

int play_handle_near(play_session *ps, double px, double py, double r) {
    int best = -1;
    double bd = r * r;
    for (int i = 0; i < PLAY_MAX_HANDLES; i++) {
        if (!ps->handles[i].used) continue;
        double x, y;
        if (!play_project(ps, ps->handles[i].target, &x, &y)) continue;
        const double d2 = (x - px) * (x - px) + (y - py) * (y - py);
        if (d2 <= bd) {
            bd = d2;
            best = i;
        }
    }
    return best;
}

defo_status play_apply_handles(play_session *ps) {
    for (int i = 0; i < PLAY_MAX_HANDLES; i++) {
        play_handle *h = &ps->handles[i];
        if (!h->used || h->hard) continue;
        const defo_body_id id = ps->bodies[h->body].id;
        unload(ps, h);
        double *f = defo_body_external_force(ps->world, id);
        const double *x = defo_body_positions(ps->world, id),
                     *v = defo_body_velocities(ps->world, id);
        if (!f || !x || !v) return DEFO_ERR_INVALID_ARGUMENT;
        double p[3] = {0, 0, 0}, pv[3] = {0, 0, 0};
        for (int a = 0; a < h->nn; a++) {
            for (int k = 0; k < 3; k++) {
                p[k] += h->w[a] * x[3 * (size_t)h->node[a] + k];
                pv[k] += h->w[a] * v[3 * (size_t)h->node[a] + k];
            }
        }
        double s[3], len = 0;
        for (int k = 0; k < 3; k++) {
            s[k] = h->target[k] - p[k] - h->offset[k];
            len += s[k] * s[k];
        }
        len = sqrt(len);
        const double cap = len > h->reach ? h->reach / len : 1.0;
        for (int k = 0; k < 3; k++) {
            const double fk = h->k * cap * s[k] - h->c * pv[k];
            for (int a = 0; a < h->nn; a++) {
                h->applied[3 * a + k] = h->w[a] * fk;
                f[3 * (size_t)h->node[a] + k] += h->applied[3 * a + k];
            }
        }
    }
    return DEFO_OK;
}
