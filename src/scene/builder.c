/*
 * scene/builder.c — a scene's world (no stepping here): every body's tet
 * mesh from a file (defo_mesh_read, elements reoriented), a generator, or a
 * closed surface through the mesher (defo_mesh_surface, ITF04 §10), tet4 or
 * tet10 alike; its rest positions transformed x' = R (S x) + t; its
 * integrator, formulation, material, initial velocity and spin; fixed sets
 * as prescribed node sets (held at rest or moved by their "motion": TSIF05
 * §11 bones, kinematic handles); "forces" and "tractions" as dead loads
 * (tractions consistently, defo_element_traction_load); plasticity (with
 * an ITF04 §7 goal shape) and material regions; fracture; colliders.
 *
 * Force options by integrator: the equilibrium solvers (quasistatic,
 * static) evaluate invertible bodies with TSIF05 §9 constant extrapolation;
 * an integrator object's rotation_interval / lazy_tolerance /
 * definiteness_fix go to the bodies it steps.
 *
 * A body that starts inside a collider is reported (scene_build.warning:
 * body, collider, nodes inside, deepest node, and how it will be resolved —
 * the dynamic integrators push it out no faster than the collider's
 * separation_speed, the equilibrium solvers' penalty contact in the first
 * frame): a user who placed it there by mistake learns why it rises.
 */
#include "scene/scene_internal.h"

#include "defo/collision.h"
#include "defo/element.h"
#include "defo/io.h"
#include "defo/world.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void transform_nodes(const scene_body *b, defo_mesh *m) {
    const double *R = b->rotation;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        double *x = m->x + 3 * (size_t)i;
        double p[3] = {x[0] * b->scale[0], x[1] * b->scale[1], x[2] * b->scale[2]};
        for (int k = 0; k < 3; k++)
            x[k] = R[3 * k] * p[0] + R[3 * k + 1] * p[1] + R[3 * k + 2] * p[2] + b->translate[k];
    }
    /* a mirroring scale would flip every element: keep them positive (a
     * shell's triangles have no sign: its normals flip with it) */
    if (b->scale[0] * b->scale[1] * b->scale[2] < 0 && m->nodes_per_elem != 3)
        defo_mesh_orient(m, NULL);
}

defo_status scene_body_mesh(const scene_body *b, defo_mesh **out) {
    *out = NULL;
    defo_status s = DEFO_OK;
    switch (b->source) {
    case SRC_FILE: {
        defo_read_options ro = defo_default_read_options();
        ro.reorient = DEFO_ORIENT_REPAIR;
        s = defo_mesh_read(b->file, &ro, out);
        if (s > 0) s = DEFO_OK; /* reoriented: fine for a simulation */
        if (!s && (*out)->num_elems == 0 && (*out)->num_tris > 0 && (*out)->nodes_per_tri == 3) {
            /* a triangle mesh: a shell (tri3, ITF04 §8) */
            defo_mesh *shell = NULL;
            s = defo_mesh_shell_from_triangles(*out, &shell);
            defo_mesh_destroy(*out);
            *out = shell;
            if (s < 0) return defo_error_prefix("'%s'", b->file);
            break;
        }
        if (!s && (*out)->nodes_per_elem != 4 && (*out)->nodes_per_elem != 10) {
            defo_mesh_destroy(*out);
            *out = NULL;
            return defo_error(DEFO_ERR_UNSUPPORTED,
                              "'%s' is neither a volume mesh of tet4 or tet10 elements nor a "
                              "mesh of 3-node triangles (a shell)",
                              b->file);
        }
        break;
    }
    case SRC_GENERATOR:
        switch (b->generator) {
        case GEN_BOX:
            s = defo_generate_box(&b->box, out);
            break;
        case GEN_SPHERE:
            s = defo_generate_sphere(&b->sphere, out);
            break;
        case GEN_CYLINDER:
            s = defo_generate_cylinder(&b->cylinder, out);
            break;
        case GEN_TORUS:
            s = defo_generate_torus(&b->torus, out);
            break;
        case GEN_RECTANGLE:
            s = defo_generate_rectangle(&b->rectangle, out);
            break;
        case GEN_SPHERE_SHELL:
            s = defo_generate_sphere_shell(&b->sphere_shell, out);
            break;
        case GEN_TORUS_SHELL:
            s = defo_generate_torus_shell(&b->torus_shell, out);
            break;
        }
        break;
    case SRC_SURFACE: {
        defo_mesh *surf = NULL;
        s = defo_mesh_read(b->file, NULL, &surf);
        if (s < 0) return s;
        if (surf->num_tris == 0) {
            defo_mesh_destroy(surf);
            return defo_error(DEFO_ERR_INVALID_MESH, "'%s' has no triangles", b->file);
        }
        s = defo_mesh_surface(surf, &b->mesher, out, NULL);
        defo_mesh_destroy(surf);
        break;
    }
    }
    if (s < 0) return s;
    transform_nodes(b, *out);
    return DEFO_OK;
}

/* "forces" (N per node) into the body's dead loads and "tractions" (Pa on the
 * boundary faces in the region, defo_body_add_traction); a region that
 * loads nothing is an error. */
static defo_status dead_loads(const scene_body *b, const defo_mesh *m, defo_world *w,
                              defo_body_id id) {
    if (!b->num_forces && !b->num_tractions) return DEFO_OK;
    const defo_index n = m->num_nodes;
    unsigned char *mark = defo_malloc((size_t)n + 1);
    if (!mark) return defo_error_oom("loads", (size_t)n);
    double *f = defo_body_external_force(w, id);
    defo_status s = DEFO_OK;
    for (int j = 0; j < b->num_forces && !s; j++) {
        const scene_load *ld = &b->forces[j];
        s = defo_region_mark(m, &ld->region.region, mark);
        defo_index count = 0;
        for (defo_index i = 0; !s && i < n; i++) {
            if (!mark[i]) continue;
            count++;
            for (int c = 0; c < 3; c++) f[3 * (size_t)i + (size_t)c] += ld->value[c];
        }
        if (!s && !count)
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT, "forces[%d]: selects no node", j);
    }
    for (int j = 0; j < b->num_tractions && !s; j++) {
        s = defo_body_add_traction(w, id, &b->tractions[j].region.region, b->tractions[j].value,
                                   NULL);
        if (s) defo_error_prefix("tractions[%d]", j);
    }
    defo_free(mark);
    return s;
}

/* ITF04 §7: the goal shape's node positions — the rest shape stretched
 * about its bounding box's centre, or a mesh file of the same nodes
 * transformed like the body — handed to the body's plasticity. */
static defo_status goal_shape(const scene_body *b, const defo_mesh *m, defo_world *w,
                              defo_body_id id) {
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *g = defo_malloc(n3 * sizeof *g + 1);
    if (!g) return defo_error_oom("goal shape", n3 * sizeof *g);
    defo_status s = DEFO_OK;
    if (b->goal == GOAL_SCALE) {
        double lo[3], hi[3];
        s = defo_mesh_bbox(m, lo, hi);
        for (size_t j = 0; !s && j < n3; j++) {
            const double c = 0.5 * (lo[j % 3] + hi[j % 3]);
            g[j] = c + b->goal_scale[j % 3] * (m->x[j] - c);
        }
    } else {
        scene_body gb = *b;
        gb.source = SRC_FILE;
        snprintf(gb.file, sizeof gb.file, "%s", b->goal_file);
        defo_mesh *gm = NULL;
        s = scene_body_mesh(&gb, &gm);
        if (!s && (gm->num_nodes != m->num_nodes || gm->num_elems != m->num_elems))
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "'%s' has %ld nodes and %ld elements, the body %ld and %ld",
                           b->goal_file, (long)gm->num_nodes, (long)gm->num_elems,
                           (long)m->num_nodes, (long)m->num_elems);
        if (!s) memcpy(g, gm->x, n3 * sizeof *g);
        defo_mesh_destroy(gm);
    }
    if (!s) s = defo_body_set_plastic_goal(w, id, g, m->num_nodes);
    defo_free(g);
    return s;
}

static defo_status add_body(const defo_scene *sc, scene_build *out, int i) {
    const scene_body *b = &sc->bodies[i];
    const scene_integrator *si = &sc->integrators[b->integrator];
    defo_mesh *m = NULL;
    defo_status s = scene_body_mesh(b, &m);
    if (s < 0) return defo_error_prefix("bodies[%d] '%s'", i, b->name);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = b->material;
    bd.name = b->name;
    bd.integrator = b->integrator;
    memcpy(bd.velocity, b->velocity, sizeof bd.velocity);
    memcpy(bd.angular_velocity, b->angular_velocity, sizeof bd.angular_velocity);
    bd.force.formulation = b->formulation;
    if (si->rotation_interval >= 0) bd.force.rotation_interval = si->rotation_interval;
    if (si->lazy_tolerance >= 0) bd.force.lazy_tolerance = si->lazy_tolerance;
    if (si->definiteness_fix >= 0) bd.force.definiteness_fix = si->definiteness_fix;
    /* TSIF05 §9: the equilibrium solvers evaluate with constant extrapolation */
    if (si->def.kind == DEFO_INTEGRATOR_QUASISTATIC || si->def.kind == DEFO_INTEGRATOR_STATIC)
        bd.force.constant_extrapolation = 1;
    if (b->has_plasticity) bd.plasticity = &b->plasticity;
    if (b->has_fracture) bd.fracture = &b->fracture;
    bd.collide = b->collide;
    bd.self_contact = b->self_contact;
    bd.friction = b->friction;
    double *fibres = NULL; /* ITF04 §6.1 directions on the transformed mesh */
    s = scene_body_fibres(b, m, &fibres);
    bd.fibres = fibres;
    if (!s) s = defo_world_add_body(out->world, &bd, &out->ids[i]);
    defo_free(fibres);
    if (s < 0) {
        defo_mesh_destroy(m);
        return defo_error_prefix("bodies[%d]", i);
    }
    const defo_body_id id = out->ids[i];
    for (int r = 0; r < b->num_regions && !s; r++) {
        const scene_region *rg = &b->regions[r];
        s = defo_body_add_material_region(out->world, id, &rg->region.region, &rg->material,
                                          rg->has_plasticity ? &rg->plasticity : NULL, NULL);
        if (s) defo_error_prefix("bodies[%d].material_regions[%d] '%s'", i, r, rg->name);
    }
    /* run-time plasticity edits need the body's plasticity from the start
     * (a checkpoint of any frame then has the same layout) */
    for (int k = 0; k < b->num_changes && !s; k++) {
        const scene_change *ch = &b->changes[k];
        if (!ch->has_plasticity || defo_body_plasticity(out->world, id)) continue;
        defo_plasticity_def never = defo_default_plasticity_def();
        s = defo_body_set_plasticity(out->world, id, -1, &never);
        if (s) defo_error_prefix("bodies[%d]", i);
    }
    if (!s && b->goal != GOAL_NONE) {
        s = goal_shape(b, m, out->world, id);
        if (s) defo_error_prefix("bodies[%d].plasticity.goal", i);
    }
    for (int f = 0; f < b->num_fixed && !s; f++) {
        s = defo_body_prescribe(out->world, id, &b->fixed[f].region,
                                b->fixed[f].has_motion ? &b->fixed[f].motion : NULL, NULL);
        if (s) defo_error_prefix("bodies[%d].fixed[%d]", i, f);
    }
    if (!s) {
        s = dead_loads(b, m, out->world, id);
        if (s) defo_error_prefix("bodies[%d]", i);
    }
    if (!s) {
        s = scene_body_activation(b, out->world, id);
        if (s) defo_error_prefix("bodies[%d]", i);
    }
    defo_mesh_destroy(m);
    return s;
}

/* Nodes of every body inside a collider at the start (φ < −10⁻⁹ of the
 * body's size, so a body resting on a surface is not inside), into
 * out->warning.  Prescribed nodes never collide (flesh bound to a bone
 * inside the bone's collider, TSIF05 §11) and are not counted. */
static void find_penetrations(const defo_scene *sc, scene_build *out) {
    char *w = out->warning;
    const size_t cap = sizeof out->warning;
    size_t len = 0;
    int pairs = 0, more = 0;
    const double t = defo_world_time(out->world);
    for (int i = 0; i < sc->num_bodies; i++) {
        const defo_index n = defo_body_num_nodes(out->world, out->ids[i]);
        const double *x = defo_body_positions(out->world, out->ids[i]);
        const unsigned char *held = defo_body_prescribed(out->world, out->ids[i]);
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (defo_index j = 0; j < n; j++)
            for (int k = 0; k < 3; k++) {
                lo[k] = fmin(lo[k], x[3 * (size_t)j + (size_t)k]);
                hi[k] = fmax(hi[k], x[3 * (size_t)j + (size_t)k]);
            }
        const double size = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
        const defo_integrator_kind kind = sc->integrators[sc->bodies[i].integrator].def.kind;
        const int dynamic = kind != DEFO_INTEGRATOR_QUASISTATIC && kind != DEFO_INTEGRATOR_STATIC;
        for (int c = 0; c < out->num_colliders; c++) {
            long inside = 0;
            double deepest = 0;
            for (defo_index j = 0; j < n; j++) {
                if (held && held[j]) continue;
                const double phi =
                    defo_collider_phi(out->colliders[c], t, x + 3 * (size_t)j, NULL, NULL);
                if (phi < -1e-9 * size) {
                    inside++;
                    deepest = fmax(deepest, -phi);
                }
            }
            if (!inside) continue;
            if (pairs == 3) {
                more++;
                continue;
            }
            const double speed = sc->colliders[c].def.separation_speed;
            char how[160];
            if (!dynamic)
                snprintf(how, sizeof how, "penalty contact pushes them out in the first frame");
            else if (isfinite(speed))
                snprintf(how, sizeof how,
                         "they are pushed out at no more than %g m/s (about %.2g s)", speed,
                         deepest / speed);
            else
                snprintf(how, sizeof how, "they are projected out at once");
            int k = snprintf(w + len, cap - len,
                             "%sbodies[%d] '%s' starts inside colliders[%d] '%s': %ld of %ld "
                             "nodes, up to %.3g m deep; %s",
                             pairs ? "; " : "", i, sc->bodies[i].name, c, sc->colliders[c].name,
                             inside, (long)n, deepest, how);
            if (k > 0) len = DEFO_MIN(cap - 1, len + (size_t)k);
            pairs++;
        }
    }
    if (more && len < cap - 1)
        snprintf(w + len, cap - len, "; and %d more bod%s inside colliders", more,
                 more == 1 ? "y" : "ies");
    /* bodies placed inside each other */
    defo_body_overlap ov[4];
    int count = 0;
    if (defo_world_overlaps(out->world, ov, 4, &count) != DEFO_OK) return;
    for (int k = 0; k < count && k < 4; k++) {
        len = strlen(w);
        if (len >= cap - 1) break;
        const defo_body_id a = defo_world_body(out->world, ov[k].body);
        const int dyn =
            defo_world_integrator(out->world, defo_body_integrator(out->world, a))->kind <
            DEFO_INTEGRATOR_QUASISTATIC;
        const double speed = defo_world_contact(out->world)->separation_speed;
        char how[160];
        if (dyn)
            snprintf(how, sizeof how, "pushed apart at no more than %g m/s (about %.2g s)", speed,
                     ov[k].depth / speed);
        else
            snprintf(how, sizeof how, "contact pushes them apart in the first frame");
        int q = snprintf(w + len, cap - len,
                         "%sbodies[%d] '%s' starts inside bodies[%d] '%s': %ld surface nodes, "
                         "node %ld %.3g m deep; %s",
                         len ? "; " : "", ov[k].body, sc->bodies[ov[k].body].name, ov[k].other,
                         sc->bodies[ov[k].other].name, (long)ov[k].nodes, (long)ov[k].deepest_node,
                         ov[k].depth, how);
        (void)q;
    }
    len = strlen(w);
    if (count > 4 && len < cap - 1)
        snprintf(w + len, cap - len, "; and %d more overlaps between bodies", count - 4);
}

/* Mesh colliders: a hole too large for the winding number to tell inside
 * from outside near it is an error; smaller holes, flipped triangles and
 * self-intersections are reported (the collider still works: the winding
 * number degrades gracefully). */
static defo_status mesh_collider_checks(const defo_scene *sc, scene_build *out) {
    for (int i = 0; i < out->num_colliders; i++)
        for (int k = 0; k < sc->colliders[i].def.num_shapes; k++) {
            const defo_surface_info *info = defo_collider_surface_info(out->colliders[i], k);
            if (!info) continue;
            const double size = sqrt(info->area);
            if (info->hole_length > 0.25 * size)
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "colliders[%d] '%s': the mesh is not closed: holes %.3g m long "
                                  "in all (%lld open edges) against a surface of %.3g m²; close "
                                  "it (a mesh collider needs an inside)",
                                  i, sc->colliders[i].name, info->hole_length,
                                  (long long)info->open_edges, info->area);
            if (!info->open_edges && !info->flipped && !info->self_intersections &&
                !info->nonmanifold_edges)
                continue;
            char *w = out->warning;
            const size_t len = strlen(w), cap = sizeof out->warning;
            if (len >= cap - 1) continue;
            snprintf(w + len, cap - len,
                     "%scolliders[%d] '%s': the mesh has %lld open edges (%.3g m of holes), "
                     "%lld non-manifold edges, %ld flipped triangles (turned back) and %lld "
                     "self-intersections; inside is told by the winding number",
                     len ? "; " : "", i, sc->colliders[i].name, (long long)info->open_edges,
                     info->hole_length, (long long)info->nonmanifold_edges, (long)info->flipped,
                     (long long)info->self_intersections);
        }
    return DEFO_OK;
}

void scene_build_free(scene_build *b) {
    if (!b) return;
    defo_world_destroy(b->world);
    for (int i = 0; i < b->num_colliders; i++) defo_collider_destroy(b->colliders[i]);
    defo_free(b->colliders);
    defo_free(b->ids);
    memset(b, 0, sizeof *b);
}

defo_status scene_build_world(const defo_scene *sc, scene_build *out) {
    memset(out, 0, sizeof *out);
    defo_world_def wd = defo_default_world_def();
    memcpy(wd.gravity, sc->gravity, sizeof wd.gravity);
    defo_status s = defo_world_create(&wd, &out->world);
    out->ids = defo_calloc((size_t)sc->num_bodies + 1, sizeof *out->ids);
    out->colliders = defo_calloc((size_t)sc->num_colliders + 1, sizeof *out->colliders);
    if (!s && (!out->ids || !out->colliders)) s = defo_error_oom("scene world", 0);
    for (int i = 0; i < sc->num_integrators && !s; i++) {
        s = defo_world_add_integrator(out->world, &sc->integrators[i].def, NULL);
        if (s) defo_error_prefix("integrator");
    }
    if (!s) {
        s = defo_world_set_contact(out->world, &sc->contact);
        if (s) defo_error_prefix("contact");
    }
    for (int i = 0; i < sc->num_colliders && !s; i++) {
        s = defo_collider_create(&sc->colliders[i].def, &out->colliders[i]);
        if (s) {
            defo_error_prefix("colliders[%d]", i);
            break;
        }
        out->num_colliders++;
        s = defo_world_add_collider(out->world, out->colliders[i]);
    }
    for (int i = 0; i < sc->num_bodies && !s; i++) s = add_body(sc, out, i);
    /* refuse now what the first frame would refuse */
    const double frame_dt = 1.0 / sc->fps;
    for (int k = 0; k < sc->num_integrators && !s; k++) {
        int used = 0;
        for (int i = 0; i < sc->num_bodies; i++) used |= sc->bodies[i].integrator == k;
        if (!used) continue;
        const int steps = defo_world_steps_per_frame(out->world, k, frame_dt);
        if (steps < 1 || steps > 10000000)
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "integrator %s: a frame needs more than 1e7 steps (explicit "
                           "elasticity: stiffer or finer bodies need smaller steps); lower "
                           "youngs, coarsen the mesh, raise fps or use an implicit integrator",
                           defo_integrator_name(sc->integrators[k].def.kind));
        for (int i = 0; i < sc->num_bodies && !s; i++) {
            const scene_body *b = &sc->bodies[i];
            if (b->integrator != k) continue;
            const double dt = frame_dt / steps;
            /* MG04 §3: c_creep·Δt ≤ 1 (1/Δt absorbs the excess at once) */
            const char *bad = NULL;
            double creep = 0;
            char where[96] = "";
            if (b->has_plasticity && b->plasticity.model == DEFO_PLASTICITY_MG04 &&
                b->plasticity.creep * dt > 1)
                bad = "plasticity", creep = b->plasticity.creep;
            for (int r = 0; !bad && r < b->num_regions; r++)
                if (b->regions[r].has_plasticity &&
                    b->regions[r].plasticity.model == DEFO_PLASTICITY_MG04 &&
                    b->regions[r].plasticity.creep * dt > 1) {
                    snprintf(where, sizeof where, "material_regions[%d].plasticity", r);
                    bad = where, creep = b->regions[r].plasticity.creep;
                }
            for (int r = 0; !bad && r < b->num_changes; r++)
                if (b->changes[r].has_plasticity &&
                    b->changes[r].plasticity.model == DEFO_PLASTICITY_MG04 &&
                    b->changes[r].plasticity.creep * dt > 1) {
                    snprintf(where, sizeof where, "material_changes[%d].plasticity", r);
                    bad = where, creep = b->changes[r].plasticity.creep;
                }
            if (bad)
                s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                               "bodies[%d].%s.creep: %g /s times the step %g s exceeds 1 "
                               "(lower creep or integrator.time_step)",
                               i, bad, creep, dt);
            /* shells: the rest angles' creep likewise */
            if (!s && b->has_plasticity && b->plasticity.bending_creep * dt > 1)
                s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                               "bodies[%d].plasticity.bending_creep: %g /s times the step %g s "
                               "exceeds 1 (lower bending_creep or integrator.time_step)",
                               i, b->plasticity.bending_creep, dt);
        }
    }
    if (!s) find_penetrations(sc, out);
    if (!s) s = mesh_collider_checks(sc, out);
    if (s) scene_build_free(out);
    return s;
}
