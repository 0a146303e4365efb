/*
 * world/topology.c — what a fracture pass (defo/fracture.h) changes in a
 * body besides its mesh: the state of the new nodes, their prescribed sets
 * and dead loads, the per-element data of new elements, the faces its
 * tractions load; then the body is rebuilt (rest data, force model, masses)
 * and its stepper told (defo_integrator_ops.topology_changed).
 *
 * New nodes, in creation order (each made from older ones): a copy of a
 * node takes its position, velocity, prescribed set and its share of the
 * node's dead load in proportion to the new lumped masses (the total is
 * kept); a cut point (1 − w)·a + w·b takes the interpolated
 * position and velocity (exact for the linear element it lies on), no dead
 * load, and the prescribed set of its ends when both follow the same one.
 * New elements take the per-element data of the element they were split
 * from: its plastic state (per-point records, parameter set, goal), its
 * material region, density scale and fibre directions.
 * A traction keeps loading the same surface: its faces are recorded as rest
 * triangles of original elements when it is added, and after a pass (or a
 * restore) every face of a descendant that lies inside one of them is loaded
 * (tet4 bisection splits a loaded face among the children).
 */
#include "world/world_internal.h"

#include "defo/math.h"

#include <math.h>
#include <string.h>

/* The rest corners and original element of every face of t, as added. */
defo_status defo_world_traction_record(world_body *b, world_traction *t) {
    t->rec_count = t->count;
    t->corners = defo_malloc(9 * (size_t)t->count * sizeof(double) + 1);
    t->origin = defo_malloc((size_t)t->count * sizeof(defo_index) + 1);
    if (!t->corners || !t->origin) return defo_error_oom("traction faces", (size_t)t->count * 48);
    const int P = b->mesh->nodes_per_elem;
    const defo_index *orig = b->frac ? defo_fracture_elem_origin(b->frac) : NULL;
    for (defo_index k = 0; k < t->count; k++) {
        const defo_index *v = b->mesh->elems + (size_t)P * (size_t)t->elem[k];
        for (int j = 0; j < 3; j++)
            memcpy(t->corners + 9 * (size_t)k + 3 * (size_t)j,
                   b->mesh->x + 3 * (size_t)v[defo_tet_faces[t->face[k]][j]], 3 * sizeof(double));
        t->origin[k] = orig ? orig[t->elem[k]] : t->elem[k];
    }
    return DEFO_OK;
}

/* Does point p lie in triangle (a, b, c), relative tolerance 1e-9? */
static int on_triangle(const double *p, const double *a, const double *b, const double *c) {
    double u[3], v[3], w[3], n[3];
    for (int k = 0; k < 3; k++) u[k] = b[k] - a[k], v[k] = c[k] - a[k], w[k] = p[k] - a[k];
    n[0] = u[1] * v[2] - u[2] * v[1];
    n[1] = u[2] * v[0] - u[0] * v[2];
    n[2] = u[0] * v[1] - u[1] * v[0];
    const double nn = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
    const double h = sqrt(
        fmax(u[0] * u[0] + u[1] * u[1] + u[2] * u[2], v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
    if (!(nn > 0)) return 0;
    const double dist = (n[0] * w[0] + n[1] * w[1] + n[2] * w[2]) / sqrt(nn);
    if (fabs(dist) > 1e-9 * h) return 0;
    /* barycentric coordinates in the plane */
    double c1[3], c2[3];
    c1[0] = w[1] * v[2] - w[2] * v[1], c1[1] = w[2] * v[0] - w[0] * v[2],
    c1[2] = w[0] * v[1] - w[1] * v[0];
    c2[0] = u[1] * w[2] - u[2] * w[1], c2[1] = u[2] * w[0] - u[0] * w[2],
    c2[2] = u[0] * w[1] - u[1] * w[0];
    const double s = (c1[0] * n[0] + c1[1] * n[1] + c1[2] * n[2]) / nn;
    const double r = (c2[0] * n[0] + c2[1] * n[1] + c2[2] * n[2]) / nn;
    return s >= -1e-9 && r >= -1e-9 && s + r <= 1 + 1e-9;
}

/* The faces of t on the current mesh: every face of an element descended
 * from a recorded face's original element that lies inside that recorded
 * triangle (a bisected face is loaded on each of its parts; after a restore
 * to a coarser mesh, the whole face again). */
defo_status defo_world_traction_remap(world_body *b, world_traction *t) {
    const defo_mesh *m = b->mesh;
    const int P = m->nodes_per_elem;
    const defo_index ne = m->num_elems, *orig = defo_fracture_elem_origin(b->frac);
    const defo_index no = b->ne0;
    /* elements by original element (counting sort) */
    defo_index *start = defo_calloc((size_t)no + 2, sizeof *start);
    defo_index *list = defo_malloc((size_t)ne * sizeof *list + 1);
    defo_index cap = t->rec_count + 4, count = 0;
    defo_index *elem = defo_malloc((size_t)cap * sizeof *elem + 1);
    int8_t *face = defo_malloc((size_t)cap + 1);
    defo_status st = DEFO_OK;
    if (!start || !list || !elem || !face) st = defo_error_oom("traction faces", (size_t)ne * 8);
    for (defo_index e = 0; e < ne && !st; e++) start[orig[e] + 2]++;
    for (defo_index o = 0; o < no && !st; o++) start[o + 2] += start[o + 1];
    for (defo_index e = 0; e < ne && !st; e++) list[start[orig[e] + 1]++] = e;
    for (defo_index k = 0; k < t->rec_count && !st; k++) {
        const double *tri = t->corners + 9 * (size_t)k;
        const defo_index o = t->origin[k];
        for (defo_index q = start[o]; q < start[o + 1] && !st; q++) {
            const defo_index e = list[q];
            const defo_index *v = m->elems + (size_t)P * (size_t)e;
            for (int lf = 0; lf < 4; lf++) {
                int in = 1;
                for (int j = 0; j < 3 && in; j++)
                    in = on_triangle(m->x + 3 * (size_t)v[defo_tet_faces[lf][j]], tri, tri + 3,
                                     tri + 6);
                if (!in) continue;
                if (count == cap) {
                    cap = 2 * cap;
                    defo_index *ne2 = defo_realloc(elem, (size_t)cap * sizeof *elem + 1);
                    if (ne2) elem = ne2;
                    int8_t *nf = ne2 ? defo_realloc(face, (size_t)cap + 1) : NULL;
                    if (nf) face = nf;
                    if (!ne2 || !nf) {
                        st = defo_error_oom("traction faces", (size_t)cap * 5);
                        break;
                    }
                }
                elem[count] = e;
                face[count] = (int8_t)lf;
                count++;
            }
        }
    }
    defo_free(start);
    defo_free(list);
    if (st) {
        defo_free(elem);
        defo_free(face);
        return st;
    }
    defo_free(t->elem);
    defo_free(t->face);
    t->elem = elem;
    t->face = face;
    t->count = count;
    return DEFO_OK;
}

/* n·per bytes at p grown or shrunk to ne·per; element e ≥ keep takes
 * element from[e]'s (from NULL: nothing copied). */
static defo_status follow(void **p, size_t per, defo_index keep, defo_index ne,
                          const defo_index *from) {
    if (!*p) return DEFO_OK;
    unsigned char *q = defo_realloc(*p, (size_t)ne * per + 1);
    if (!q) return defo_error_oom("element data", (size_t)ne * per);
    *p = q;
    for (defo_index e = keep; from && e < ne; e++)
        memcpy(q + (size_t)e * per, q + (size_t)from[e] * per, per);
    return DEFO_OK;
}

defo_status defo_world_elements_follow(world_body *b, defo_index old_ne, const defo_index *parent) {
    const defo_index ne = b->mesh->num_elems;
    /* a pass: each new element its parent's (a parent precedes its
     * children); a restore: each element past the originals its original's */
    const defo_index keep = parent ? old_ne : b->ne0;
    const defo_index *from = parent ? parent : defo_fracture_elem_origin(b->frac);
    if (!parent && keep > ne) return defo_error(DEFO_ERR_INTERNAL, "element data: bad count");
    const size_t pts = (size_t)defo_element_ops_for_mesh(b->mesh)->stiffness.num_points;
    defo_status s = follow((void **)&b->part_of, sizeof *b->part_of, keep, ne, from);
    if (!s) s = follow((void **)&b->density_scale, sizeof(double), keep, ne, from);
    if (!s) s = follow((void **)&b->fibres, 3 * pts * sizeof(double), keep, ne, from);
    if (!s) s = follow((void **)&b->fibres0, 3 * pts * sizeof(double), keep, ne, from);
    if (s || !b->plast) return s;
    if (parent) {
        s = defo_plasticity_grow(b->plast, ne, parent + old_ne);
    } else { /* a fresh state of the restored size, for the checkpoint's to overwrite */
        defo_plasticity *np = NULL;
        s = defo_plasticity_create(defo_plasticity_get_def(b->plast, 0), ne, (int)pts, &np);
        if (!s) {
            defo_plasticity_destroy(b->plast);
            b->plast = np;
        }
    }
    return s ? defo_error_prefix("body '%s': plasticity", b->name) : DEFO_OK;
}

/* A piece that broke off a body under an equilibrium integrator (static,
 * quasistatic) and holds no prescribed node has no equilibrium: its loads
 * have no support (MMDJ01 §2.6 hands such pieces to rigid dynamics; the
 * hybrid integrator does).  It is held where it broke off, at its rest shape
 * placed by the rigid motion that best fits its nodes (mass-weighted: the
 * polar rotation of Σ m (x − c)(X − C)ᵀ), so it carries no stress. */
static defo_status hold_free_pieces(defo_world *w, world_body *b) {
    const defo_mesh *m = b->mesh;
    const int P = m->nodes_per_elem;
    defo_index *comp = defo_malloc((size_t)m->num_elems * sizeof *comp + 1);
    defo_index *node_comp = defo_malloc((size_t)b->n * sizeof *node_comp + 1);
    defo_index nc = 0;
    defo_status s = comp && node_comp ? defo_mesh_components(m, comp, &nc)
                                      : defo_error_oom("pieces", (size_t)b->n * 8);
    unsigned char *support = s ? NULL : defo_calloc((size_t)nc + 1, 1);
    if (!s && !support) s = defo_error_oom("pieces", (size_t)nc);
    for (defo_index e = 0; !s && e < m->num_elems; e++)
        for (int a = 0; a < P; a++) {
            const defo_index v = m->elems[(size_t)P * (size_t)e + (size_t)a];
            node_comp[v] = comp[e];
            support[comp[e]] |= b->prescribed[v] || b->held[v];
        }
    for (defo_index c = 0; !s && c < nc; c++) {
        if (support[c]) continue;
        double M = 0, xc[3] = {0, 0, 0}, Xc[3] = {0, 0, 0};
        for (defo_index i = 0; i < b->n; i++) {
            if (node_comp[i] != c) continue;
            M += b->mass[i];
            for (int k = 0; k < 3; k++) {
                xc[k] += b->mass[i] * b->x[3 * (size_t)i + k];
                Xc[k] += b->mass[i] * m->x[3 * (size_t)i + k];
            }
        }
        for (int k = 0; k < 3; k++) xc[k] /= M, Xc[k] /= M;
        defo_mat3 A = defo_m3_zero(), R;
        for (defo_index i = 0; i < b->n; i++) {
            if (node_comp[i] != c) continue;
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++)
                    A.m[r][q] += b->mass[i] * (b->x[3 * (size_t)i + r] - xc[r]) *
                                 (m->x[3 * (size_t)i + q] - Xc[q]);
        }
        defo_polar3(&A, &R, NULL);
        for (defo_index i = 0; i < b->n; i++) {
            if (node_comp[i] != c) continue;
            const double *X = m->x + 3 * (size_t)i;
            for (int r = 0; r < 3; r++) {
                b->x[3 * (size_t)i + r] = xc[r] + R.m[r][0] * (X[0] - Xc[0]) +
                                          R.m[r][1] * (X[1] - Xc[1]) + R.m[r][2] * (X[2] - Xc[2]);
                b->v[3 * (size_t)i + r] = 0;
            }
            b->held[i] = 1;
        }
        w->stats.held++;
        b->sb.changed |= DEFO_CHANGED_MODEL | DEFO_CHANGED_STATE;
    }
    defo_free(support);
    defo_free(comp);
    defo_free(node_comp);
    return s;
}

/* MG04 §4 / MMDJ01 §2.5: one fracture pass on body b at time t for a step of
 * dt; a crack grows its arrays and rebuilds it. */
defo_status defo_world_fracture(defo_world *w, world_body *b, double t, double dt) {
    defo_fracture_stats fs;
    const defo_index old_n = b->n, old_ne = b->mesh->num_elems;
    defo_status s = defo_fracture_step(b->frac, b->mesh, b->force, b->x,
                                       b->sb.anchors ? b->sb.anchors : b->prescribed, t, dt, &fs);
    if (s) return defo_error_prefix("body '%s': fracture", b->name);
    w->stats.splits += fs.nodes_added;
    w->stats.cracks += fs.cracks;
    if (fs.nodes_added == 0 && fs.elems_added == 0) return DEFO_OK;
    s = defo_world_body_resize(w, b, b->mesh->num_nodes);
    if (s) return s;
    const defo_index *pa, *pb;
    const double *pw;
    defo_fracture_node_origin(b->frac, &pa, &pb, &pw);
    for (defo_index i = old_n; i < b->n; i++) {
        const defo_index a = pa[i], c = pb[i];
        const double wt = pw[i];
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            b->x[j] = (1.0 - wt) * b->x[3 * (size_t)a + k] + wt * b->x[3 * (size_t)c + k];
            b->v[j] = (1.0 - wt) * b->v[3 * (size_t)a + k] + wt * b->v[3 * (size_t)c + k];
            b->dead[j] = 0;
            if (b->X0) /* the first rest shape's point */
                b->X0[j] = (1.0 - wt) * b->X0[3 * (size_t)a + k] + wt * b->X0[3 * (size_t)c + k];
        }
        b->parent[i] = a;
        b->held[i] = b->held[a];
        const int same = b->set_of[a] == b->set_of[c];
        b->set_of[i] = same ? b->set_of[a] : -1;
        b->prescribed[i] = same ? b->prescribed[a] : 0;
    }
    if (fs.elems_added > 0) {
        const defo_index *par = defo_fracture_elem_parent(b->frac);
        s = defo_world_elements_follow(b, old_ne, par);
        for (int k = 0; k < b->num_tractions && !s; k++)
            s = defo_world_traction_remap(b, &b->tractions[k]);
        if (s) return s;
    }
    b->sb.parent_b = pb;
    b->sb.parent_w = pw;
    s = defo_world_body_rebuild(w, b, old_n);
    b->sb.parent_b = NULL;
    b->sb.parent_w = NULL;
    /* a copy shares its node's dead load in proportion to their (new)
     * masses, as the masses themselves are shared: the total is kept */
    for (defo_index i = old_n; !s && i < b->n; i++) {
        if (pa[i] != pb[i]) continue;
        const defo_index p = pa[i];
        const double share = b->mass[i] / (b->mass[i] + b->mass[p]);
        for (int k = 0; k < 3; k++) {
            const double f = b->dead[3 * (size_t)p + k] * share;
            b->dead[3 * (size_t)i + k] = f;
            b->dead[3 * (size_t)p + k] -= f;
        }
    }
    if (!s && !w->integrators[b->integrator].ops->dynamic) s = hold_free_pieces(w, b);
    if (!s) s = defo_world_body_loads(b);
    /* the contact surface of the cracked mesh: its crack faces, its new
     * nodes (and their scratch) */
    if (!s && b->surface) s = defo_world_contact_sources(w, b);
    return s;
}
