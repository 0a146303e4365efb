/*
 * world/fragments.c — the hybrid integrator's impacts (MMDJ01 §2.7.1): the
 * stepper left a body at the deformed shape of an impact's static analysis;
 * here its stresses break it and its pieces become rigid bodies of their own.
 *
 * Breaking: fracture passes at once (dt = ∞: a crack reaches its radius in
 * the pass and the next may start; the stepper analyses the cracked body
 * again after each, topology_changed), until a pass starts no crack or the
 * body has come apart — at most MAX_CRACKS.  (Going on after it came apart
 * would let the anchors, which stand for the whole body's inertia, hold
 * the pieces together and shatter them; the pieces' own impacts in later
 * steps break them further.)  Pieces: when the body's elements fall into several
 * connected components, each becomes a new world body (its own mesh: the
 * component's nodes in increasing order, its elements), with the broken
 * body's material, force model, fracture and integrator, named
 * "<name>.<k>"; the broken body is removed (its id goes stale; MMDJ01: "the
 * old body is deleted and one or more child bodies are generated").  Every
 * piece keeps the broken body's placement — its rest shape moved by the same
 * rigid motion (the impact's deformation does not outlast it) — and
 * inherits its motion by MMDJ01 eq. 22: v = v_p + ω_p × (c − c_p), ω = ω_p
 * (its nodes move rigidly with them; the stepper's fit gives back exactly
 * that state and L = I ω).  With mass properties from the tets, Σ M = M_p,
 * Σ M v = M_p v_p and Σ (I ω + M (c − c_p) × v) = I_p ω_p (parallel axes):
 * momentum is kept.  A piece below the fragment size does not break again
 * (world.c: sb.breaks).
 */
#include "world/world_internal.h"

#include <stdio.h>
#include <string.h>

#define MAX_CRACKS 8

/* Make the pieces of body bi (components of its mesh) new bodies. */
static defo_status split(defo_world *w, int bi) {
    world_body *b = &w->bodies[bi];
    const defo_mesh *m = b->mesh;
    const int P = m->nodes_per_elem;
    defo_index *comp = defo_malloc((size_t)m->num_elems * sizeof *comp + 1), nc = 0;
    if (!comp) return defo_error_oom("pieces", (size_t)m->num_elems * sizeof *comp);
    defo_status s = defo_mesh_components(m, comp, &nc);
    if (s || nc < 2) {
        defo_free(comp);
        return s;
    }
    const defo_rigid_body *rp = b->sb.rigid;
    if (!rp) {
        defo_free(comp);
        return defo_error(DEFO_ERR_INTERNAL, "body '%s': no rigid state to break", b->name);
    }
    /* the parent's placement and motion */
    defo_rigid_body par = *rp;
    double Pp[9], wp[3];
    defo_rigid_placement(&par, Pp);
    defo_rigid_angular_velocity(&par, wp);
    defo_index *map = defo_malloc((size_t)b->n * sizeof *map + 1);
    double *x = defo_malloc(3 * (size_t)b->n * sizeof(double) + 1);
    double *v = defo_malloc(3 * (size_t)b->n * sizeof(double) + 1);
    if (!map || !x || !v) s = defo_error_oom("pieces", 7 * (size_t)b->n * sizeof(double));
    /* the definition every piece shares (copies: adding bodies may move the
     * array) */
    char name[DEFO_NAME_MAX], pname[DEFO_NAME_MAX];
    snprintf(name, sizeof name, "%s", b->name);
    const defo_material_def mat = b->mat_def;
    const defo_force_model_def force = b->force_def;
    const defo_plasticity_def plast =
        b->plast ? *defo_plasticity_get_def(b->plast, 0) : defo_default_plasticity_def();
    const defo_fracture_def frac = b->frac_def;
    const int has_plast = b->plast != NULL, has_frac = b->frac != NULL, integ = b->integrator;
    int made = 0;
    for (defo_index k = 0; k < nc && !s; k++) {
        b = &w->bodies[bi]; /* adding bodies may move the array */
        m = b->mesh;
        for (defo_index i = 0; i < b->n; i++) map[i] = -1;
        defo_mesh *pm = NULL;
        s = defo_mesh_create(m->order, &pm);
        for (defo_index e = 0; e < m->num_elems && !s; e++) {
            if (comp[e] != k) continue;
            const defo_index *ev = m->elems + (size_t)P * (size_t)e;
            for (int a = 0; a < P; a++) map[ev[a]] = 0;
        }
        defo_index nn = 0;
        for (defo_index i = 0; i < b->n && !s; i++) {
            if (map[i] < 0) continue;
            map[i] = nn++;
            s = defo_mesh_add_node(pm, m->x[3 * (size_t)i], m->x[3 * (size_t)i + 1],
                                   m->x[3 * (size_t)i + 2], NULL);
        }
        for (defo_index e = 0; e < m->num_elems && !s; e++) {
            if (comp[e] != k) continue;
            defo_index ev[DEFO_ELEMENT_MAX_NODES];
            for (int a = 0; a < P; a++) ev[a] = map[m->elems[(size_t)P * (size_t)e + (size_t)a]];
            s = defo_mesh_add_elem(pm, ev, m->elem_tag ? m->elem_tag[e] : 0);
        }
        /* the piece's exact centre, placed with the parent, and its motion
         * (MMDJ01 eq. 22) */
        defo_mass_properties mp;
        if (!s) s = defo_mass_properties_of(pm, NULL, mat.density, &mp);
        double c[3], vc[3];
        for (int q = 0; q < 3 && !s; q++) {
            const double d[3] = {mp.center[0] - par.rest_center[0],
                                 mp.center[1] - par.rest_center[1],
                                 mp.center[2] - par.rest_center[2]};
            c[q] = par.center[q] + Pp[3 * q] * d[0] + Pp[3 * q + 1] * d[1] + Pp[3 * q + 2] * d[2];
        }
        if (!s) {
            const double r[3] = {c[0] - par.center[0], c[1] - par.center[1], c[2] - par.center[2]};
            vc[0] = par.velocity[0] + wp[1] * r[2] - wp[2] * r[1];
            vc[1] = par.velocity[1] + wp[2] * r[0] - wp[0] * r[2];
            vc[2] = par.velocity[2] + wp[0] * r[1] - wp[1] * r[0];
            for (defo_index i = 0; i < nn; i++) {
                const double *X = pm->x + 3 * (size_t)i;
                const double d[3] = {X[0] - mp.center[0], X[1] - mp.center[1], X[2] - mp.center[2]};
                double *xi = x + 3 * (size_t)i, *vi = v + 3 * (size_t)i;
                double rr[3];
                for (int q = 0; q < 3; q++)
                    rr[q] = Pp[3 * q] * d[0] + Pp[3 * q + 1] * d[1] + Pp[3 * q + 2] * d[2];
                for (int q = 0; q < 3; q++) xi[q] = c[q] + rr[q];
                vi[0] = vc[0] + wp[1] * rr[2] - wp[2] * rr[1];
                vi[1] = vc[1] + wp[2] * rr[0] - wp[0] * rr[2];
                vi[2] = vc[2] + wp[0] * rr[1] - wp[1] * rr[0];
            }
        }
        defo_body_def bd = defo_default_body_def();
        bd.mesh = pm;
        bd.material = mat;
        bd.force = force;
        bd.integrator = integ;
        snprintf(pname, sizeof pname, "%.40s.%d", name, (int)k);
        bd.name = pname;
        bd.plasticity = has_plast ? &plast : NULL;
        bd.fracture = has_frac ? &frac : NULL;
        defo_body_id id;
        if (!s) s = defo_world_add_body_state(w, &bd, x, v, &id);
        if (!s) {
            world_body *nb = &w->bodies[id.index];
            nb->origin = bi;
            s = defo_mesh_clone(pm, &nb->origin_mesh);
            made++;
        }
        defo_mesh_destroy(pm);
    }
    defo_free(map);
    defo_free(x);
    defo_free(v);
    defo_free(comp);
    if (s) return defo_error_prefix("body '%s': its pieces", w->bodies[bi].name);
    /* the broken body is removed: its id goes stale */
    world_body *bb = &w->bodies[bi];
    bb->removed = 1;
    bb->generation++;
    w->stats.fragments += made;
    return DEFO_OK;
}

defo_status defo_world_hold_impact(world_body *b) {
    if (b->impact_cap < b->n) {
        double *p = defo_realloc(b->impact_x, 3 * (size_t)b->n * sizeof *p);
        if (!p) return defo_error_oom("impact shape", 3 * (size_t)b->n * sizeof *p);
        b->impact_x = p;
        b->impact_cap = b->n;
    }
    memcpy(b->impact_x, b->x, 3 * (size_t)b->n * sizeof *b->x);
    b->impact_n = b->n;
    return DEFO_OK;
}

defo_status defo_world_hybrid_impacts(defo_world *w, int integ, double t) {
    const int count = w->num_bodies; /* pieces are appended: not visited */
    for (int i = 0; i < count; i++) {
        world_body *b = &w->bodies[i];
        if (!defo_world_live(b) || b->integrator != integ || !b->sb.impact) continue;
        if (!b->frac || b->frac_paused) continue;
        int cracked = 0;
        for (int k = 0; k < MAX_CRACKS; k++) {
            const int before = defo_fracture_num_cracks(b->frac);
            defo_status s = defo_world_fracture(w, b, t, INFINITY);
            if (s) return s;
            if (defo_fracture_num_cracks(b->frac) == before) break;
            cracked = 1;
            /* once in pieces, the pieces fly: an anchored analysis of a body
             * already apart would hold them together (MMDJ01: the pieces
             * are new bodies; their own impacts break them further) */
            defo_index pieces = 1;
            s = defo_mesh_components(b->mesh, NULL, &pieces);
            if (s) return s;
            if (pieces > 1) break;
        }
        /* the frame shows the cracked body's last analysis */
        defo_status s = cracked ? defo_world_hold_impact(b) : DEFO_OK;
        if (s) return s;
        s = split(w, i);
        if (s) return s;
    }
    return DEFO_OK;
}
