/*
 * scene/schema.c — what a scene may say (docs/scene-format.md is the user's
 * reference; keep the two in step), checked with the JSON validator
 * (json_check.c) into the internal scene (scene_internal.h).
 *
 * Every error is collected (a user fixing a scene wants the whole list at
 * once).  Integrator options come from one table (integ_rows): a key is read
 * only by the integrators its row names, and is otherwise "not used by" the
 * chosen one.  Any formulation (invertible, corotated) and element (tet4,
 * tet10) goes with any integrator, plasticity and fracture with any body;
 * the few combinations still refused are refused with their physical reason.
 *
 * Invariant: a scene that parses without errors has every number in its
 * documented range and every file present, so building its world can only
 * fail on what needs the file contents (malformed meshes, empty node sets).
 */
#define _POSIX_C_SOURCE 200809L

#include "scene/scene_internal.h"

#include "defo/collision.h"
#include "defo/io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int scene_add_integrator(jv_ctx *c, json_t *o, const jv_path *p, defo_scene *s);

/* Rotation matrix (row-major) from {"axis": [..], "angle_deg": a}. */
static void axis_angle(const double axis[3], double angle, double R[9]) {
    double x = axis[0], y = axis[1], z = axis[2];
    double cs = cos(angle), sn = sin(angle), t = 1 - cs;
    R[0] = t * x * x + cs;
    R[1] = t * x * y - sn * z;
    R[2] = t * x * z + sn * y;
    R[3] = t * x * y + sn * z;
    R[4] = t * y * y + cs;
    R[5] = t * y * z - sn * x;
    R[6] = t * x * z - sn * y;
    R[7] = t * y * z + sn * x;
    R[8] = t * z * z + cs;
}

static void identity(double R[9]) {
    memset(R, 0, 9 * sizeof(double));
    R[0] = R[4] = R[8] = 1;
}

static void parse_rotate(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, double R[9]) {
    identity(R);
    json_t *r = jv_obj(c, obj, p, key);
    if (!r) return;
    jv_path rp = jv_key(p, key);
    static const char *const keys[] = {"axis", "angle_deg", NULL};
    jv_check_keys(c, r, &rp, keys);
    double axis[3] = {0, 0, 1}, deg = 0;
    jv_dir(c, r, &rp, "axis", axis);
    jv_num(c, r, &rp, "angle_deg", JV_ANY, &deg);
    axis_angle(axis, deg * (3.14159265358979323846 / 180.0), R);
}

/* ------------------------------------------------------------ material */
static const char *const material_keys[] = {"model",     "youngs",    "poisson",  "density",
                                            "damping",   "inversion", "biphasic", "fibres",
                                            "thickness", NULL};

static void parse_material(jv_ctx *c, json_t *m, const jv_path *p, defo_material_def *mat) {
    jv_check_keys(c, m, p, material_keys);
    int before = c->errs.count;
    const char *model = jv_str(c, m, p, "model");
    if (model) {
        static const char *const models[] = {"corotated", "neo_hookean", "stvk", "biphasic", NULL};
        jv_path kp = jv_key(p, "model");
        if (!strcmp(model, "transversely_isotropic")) {
            jv_error(c, kp.s,
                     "not a model: a transversely isotropic material (ITF04 §6.1) is an isotropic "
                     "model (corotated, neo_hookean, stvk, biphasic) plus \"fibres\"");
        } else {
            int k = jv_word(c, model, &kp, models);
            if (k >= 0) defo_material_model_from_name(models[k], &mat->model);
        }
    }
    jv_num(c, m, p, "youngs", JV_POS, &mat->youngs_modulus);
    jv_num(c, m, p, "poisson", (jv_range){0, 0.5, 1, 0}, &mat->poisson);
    jv_num(c, m, p, "density", JV_POS, &mat->density);
    jv_num(c, m, p, "damping", JV_NONNEG, &mat->damping_time);
    /* shells (tri3 bodies, ITF04 §8): required > 0 by them */
    jv_num(c, m, p, "thickness", JV_POS, &mat->thickness);
    json_t *inv = json_object_get(m, "inversion");
    if (inv) {
        jv_path ip = jv_key(p, "inversion");
        static const char *const modes[] = {"none", "c0", "c1", "clamp", NULL};
        const char *mode = NULL;
        if (json_is_string(inv)) {
            mode = json_string_value(inv);
        } else if (json_is_object(inv)) {
            static const char *const keys[] = {"mode", "threshold", NULL};
            jv_check_keys(c, inv, &ip, keys);
            mode = jv_str(c, inv, &ip, "mode");
            jv_num(c, inv, &ip, "threshold", (jv_range){0, 1, 0, 0}, &mat->inversion.threshold);
            if (mode) ip = jv_key(&ip, "mode");
        } else {
            jv_error(c, ip.s, "expected a mode name or an object, got %s", jv_type_name(inv));
        }
        if (mode) {
            int k = jv_word(c, mode, &ip, modes);
            if (k >= 0) mat->inversion.mode = (defo_inversion_mode)k;
        }
    }
    json_t *bi = jv_obj(c, m, p, "biphasic");
    if (bi) {
        jv_path bp = jv_key(p, "biphasic");
        static const char *const keys[] = {
            "compression_threshold", "elongation_threshold", "rest_slope",
            "compression_slope",     "elongation_slope",     NULL};
        jv_check_keys(c, bi, &bp, keys);
        defo_biphasic_def *b = &mat->biphasic;
        jv_num(c, bi, &bp, "compression_threshold", (jv_range){0, 1, 0, 0},
               &b->compression_threshold);
        jv_num(c, bi, &bp, "elongation_threshold", (jv_range){1, INFINITY, 0, 0},
               &b->elongation_threshold);
        jv_num(c, bi, &bp, "rest_slope", JV_POS, &b->rest_slope);
        jv_num(c, bi, &bp, "compression_slope", JV_NONNEG, &b->compression_slope);
        jv_num(c, bi, &bp, "elongation_slope", JV_NONNEG, &b->elongation_slope);
    }
    json_t *fib = jv_obj(c, m, p, "fibres");
    if (fib) {
        jv_path fp = jv_key(p, "fibres");
        scene_parse_fibre_curves(c, fib, &fp, mat);
    }
    /* Combinations (e.g. neo-Hookean without an inversion extension) are the
     * material module's to judge; only when each field is fine on its own. */
    if (c->errs.count == before && defo_material_def_validate(mat) != DEFO_OK)
        jv_error(c, p->s, "%s", defo_last_error());
}

/* ---------------------------------------------------------- plasticity */
/* The plasticity schema: one row per key and the models that read it (a
 * bit per defo_plasticity_model); a key of another model is "not used by"
 * the chosen one.  Adding a model is one word in plasticity_models and its
 * bit in the rows it reads. */
#define PM_MG (1u << DEFO_PLASTICITY_MG04)
#define PM_VM (1u << DEFO_PLASTICITY_VON_MISES)
#define PM_MU (1u << DEFO_PLASTICITY_MULTIPLICATIVE)
static const struct plast_row {
    const char *key;
    unsigned models;
} plast_rows[] = {
    {"model", PM_MG | PM_VM | PM_MU},
    {"limit", PM_MG | PM_VM | PM_MU},
    {"yield", PM_MG},
    {"creep", PM_MG},
    {"max", PM_MG | PM_VM},
    {"volumetric", PM_MG | PM_MU},
    {"yield_stress", PM_VM},
    {"hardening", PM_VM},
    {"isotropic_hardening", PM_VM},
    {"gamma", PM_MU},
    {"goal", PM_MU},
    /* shells only, whatever the in-plane model (ITF04 §8: the rest angles flow) */
    {"bending_yield", PM_MG | PM_VM | PM_MU},
    {"bending_creep", PM_MG | PM_VM | PM_MU},
    {"bending_max", PM_MG | PM_VM | PM_MU},
};

/* A "plasticity" object into d, which holds the previous values (an edit
 * keeps what it does not say; a new model starts from its defaults).
 * goal_of: the body whose own plasticity this is (a goal shape is the
 * body's; NULL for regions and changes); base: the scene's folder. */
static void parse_plasticity(jv_ctx *c, json_t *o, const jv_path *p, defo_plasticity_def *d,
                             scene_body *goal_of, const char *base) {
    const int before = c->errs.count;
    const char *model = jv_str(c, o, p, "model");
    if (model) {
        static const char *const models[] = {"mg04", "von_mises", "multiplicative", NULL};
        jv_path kp = jv_key(p, "model");
        const int k = jv_word(c, model, &kp, models);
        if (k >= 0 && (defo_plasticity_model)k != d->model) {
            if (k == DEFO_PLASTICITY_MG04) *d = defo_default_plasticity_def();
            if (k == DEFO_PLASTICITY_VON_MISES) *d = defo_default_von_mises_def(INFINITY, 0);
            if (k == DEFO_PLASTICITY_MULTIPLICATIVE) *d = defo_default_multiplicative_def(INFINITY);
        }
    }
    const unsigned bit = 1u << d->model;
    const char *name = defo_plasticity_model_name(d->model);
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val) {
        jv_path kp = jv_key(p, key);
        const struct plast_row *row = NULL;
        for (size_t r = 0; r < sizeof plast_rows / sizeof plast_rows[0] && !row; r++)
            if (!strcmp(key, plast_rows[r].key)) row = &plast_rows[r];
        if (!row) {
            const char *words[sizeof plast_rows / sizeof plast_rows[0] + 1];
            size_t nw = 0;
            for (size_t r = 0; r < sizeof plast_rows / sizeof plast_rows[0]; r++)
                if (plast_rows[r].models & bit) words[nw++] = plast_rows[r].key;
            words[nw] = NULL;
            const char *near = jv_nearest(key, words);
            if (near)
                jv_error(c, kp.s, "unknown key (did you mean '%s'?)", near);
            else
                jv_error(c, kp.s, "unknown key for plasticity model '%s'", name);
            continue;
        }
        if (!(row->models & bit)) {
            jv_error(c, kp.s, "not used by plasticity model '%s'", name);
            continue;
        }
        if (!strcmp(key, "limit"))
            jv_num(c, o, p, key, (jv_range){1, INFINITY, 1, 0}, &d->limit);
        else if (!strcmp(key, "yield"))
            jv_num(c, o, p, key, JV_NONNEG, &d->yield);
        else if (!strcmp(key, "creep"))
            jv_num(c, o, p, key, JV_NONNEG, &d->creep);
        else if (!strcmp(key, "max"))
            jv_num(c, o, p, key, JV_NONNEG, &d->max);
        else if (!strcmp(key, "volumetric"))
            jv_bool(c, o, p, key, &d->volumetric);
        else if (!strcmp(key, "yield_stress"))
            jv_num(c, o, p, key, JV_POS, &d->yield_stress);
        else if (!strcmp(key, "hardening"))
            jv_num(c, o, p, key, JV_NONNEG, &d->hardening);
        else if (!strcmp(key, "isotropic_hardening"))
            jv_num(c, o, p, key, JV_NONNEG, &d->isotropic_hardening);
        else if (!strcmp(key, "gamma"))
            jv_num(c, o, p, key, JV_NONNEG, &d->gamma);
        else if (!strcmp(key, "bending_yield"))
            jv_num(c, o, p, key, JV_NONNEG, &d->bending_yield);
        else if (!strcmp(key, "bending_creep"))
            jv_num(c, o, p, key, JV_NONNEG, &d->bending_creep);
        else if (!strcmp(key, "bending_max"))
            jv_num(c, o, p, key, JV_NONNEG, &d->bending_max);
        else if (!strcmp(key, "goal")) {
            if (!goal_of) {
                jv_error(c, kp.s,
                         "a goal shape is the body's: give it in the body's \"plasticity\"");
                continue;
            }
            json_t *g = jv_obj(c, o, p, key);
            if (!g) continue;
            static const char *const gk[] = {"scale", "mesh", NULL};
            jv_check_keys(c, g, &kp, gk);
            const int has_s = json_object_get(g, "scale") != NULL,
                      has_m = json_object_get(g, "mesh") != NULL;
            if (has_s + has_m != 1) {
                jv_error(c, kp.s,
                         "give exactly one of \"scale\" ([3] stretches of the rest shape about "
                         "its centre) or \"mesh\" (a file with the body's nodes)");
            } else if (has_s) {
                if (jv_vec3(c, g, &kp, "scale", JV_POS, goal_of->goal_scale))
                    goal_of->goal = GOAL_SCALE;
            } else if (jv_file(c, g, &kp, "mesh", base, goal_of->goal_file)) {
                goal_of->goal = GOAL_MESH;
            }
        }
    }
    /* the thresholds that never yield by default must be said */
    if (d->model == DEFO_PLASTICITY_VON_MISES && !(d->yield_stress < INFINITY))
        jv_error(c, p->s, "needs \"yield_stress\" (the uniaxial yield stress, Pa > 0)");
    if (d->model == DEFO_PLASTICITY_MULTIPLICATIVE && !(d->gamma < INFINITY))
        jv_error(c, p->s, "needs \"gamma\" (the yield radius of the elastic log strain, >= 0)");
    if (c->errs.count == before && defo_plasticity_def_validate(d) != DEFO_OK)
        jv_error(c, p->s, "%s", defo_last_error());
}

/* ---------------------------------------------------------- integrators */
/* The integrator schema: one row per option, the integrators that read it
 * (a bit per defo_integrator_kind) and how it is read.  Adding an integrator
 * is one more word in integrator_types and its bit in the rows it reads. */
#define NM       (1u << DEFO_INTEGRATOR_NEWMARK)
#define BE       (1u << DEFO_INTEGRATOR_BACKWARD_EULER)
#define B2       (1u << DEFO_INTEGRATOR_BDF2)
#define QS       (1u << DEFO_INTEGRATOR_QUASISTATIC)
#define ST       (1u << DEFO_INTEGRATOR_STATIC)
#define RG       (1u << DEFO_INTEGRATOR_RIGID)
#define HY       (1u << DEFO_INTEGRATOR_HYBRID)
#define IMPLICIT (BE | B2)
#define SOLVES   (BE | B2 | QS | ST)
#define ALL      (NM | BE | B2 | QS | ST)

typedef void (*integ_reader)(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                             scene_integrator *si);

static void read_time_step(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                           scene_integrator *si) {
    jv_num(c, o, p, key, JV_POS, &si->def.time_step);
}
static void read_cfl(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                     scene_integrator *si) {
    jv_num(c, o, p, key, (jv_range){0, 1, 0, 1}, &si->def.cfl);
}
static void read_rayleigh(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                          scene_integrator *si) {
    jv_num(c, o, p, key, JV_NONNEG,
           key[9] == 'm' ? &si->def.rayleigh_mass : &si->def.rayleigh_stiffness);
}
static void read_tolerance(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                           scene_integrator *si) {
    jv_num(c, o, p, key, (jv_range){0, 1, 0, 0}, &si->def.tolerance);
}
static void read_max_iterations(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                                scene_integrator *si) {
    jv_int(c, o, p, key, 1, 1000000, &si->def.newton.max_iterations);
}
static void read_line_search(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                             scene_integrator *si) {
    jv_bool(c, o, p, key, &si->def.newton.line_search);
}
static void read_definiteness(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                              scene_integrator *si) {
    int v = 1;
    if (jv_bool(c, o, p, key, &v)) si->definiteness_fix = v;
}
static void read_contact(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                         scene_integrator *si) {
    jv_num(c, o, p, key, JV_POS, &si->def.contact_stiffness);
}
static void read_fixed_iterations(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                                  scene_integrator *si) {
    jv_int(c, o, p, key, 0, 1000000, &si->def.linear.fixed_iterations);
}
static void read_rotation_interval(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                                   scene_integrator *si) {
    int v = 1;
    if (jv_int(c, o, p, key, 0, 1000000, &v)) si->rotation_interval = v;
}
static void read_lazy(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                      scene_integrator *si) {
    double v = 0;
    if (jv_num(c, o, p, key, JV_NONNEG, &v)) si->lazy_tolerance = v;
}
/* The index of o[key] in words (−1 when absent or not one of them: the
 * validator reported it). */
static int read_word(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                     const char *const *words) {
    const char *str = jv_str(c, o, p, key);
    jv_path kp = jv_key(p, key);
    return str ? jv_word(c, str, &kp, words) : -1;
}
static void read_precond(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                         scene_integrator *si) {
    static const char *const words[] = {
        "none", "jacobi", "block_jacobi", "block_ic0", "cholesky", "two_level", NULL};
    int k = read_word(c, o, p, key, words);
    if (k >= 0) defo_precond_from_name(words[k], &si->def.linear.precond.kind);
}
static void read_solver(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                        scene_integrator *si) {
    /* in defo_linear_method's order */
    static const char *const words[] = {"pcg", "cholesky", "petsc", NULL};
    int k = read_word(c, o, p, key, words);
    if (k == DEFO_LINEAR_CHOLESKY && si->def.kind == DEFO_INTEGRATOR_NEWMARK) {
        jv_path kp = jv_key(p, key);
        jv_error(c, kp.s, "newmark's damping solve is matrix-free: pcg or petsc");
    } else if (k >= 0) {
        si->def.linear.method = (defo_linear_method)k;
    }
}
/* PETSc's options for "solver": "petsc" (docs/distributed.md) */
static void read_petsc_options(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                               scene_integrator *si) {
    const char *str = jv_str(c, o, p, key);
    jv_path kp = jv_key(p, key);
    if (!str) return;
    if (strlen(str) >= sizeof si->def.linear.backend_options)
        jv_error(c, kp.s, "%zu characters (at most %zu)", strlen(str),
                 sizeof si->def.linear.backend_options - 1);
    else
        snprintf(si->def.linear.backend_options, sizeof si->def.linear.backend_options, "%s", str);
}
static void read_forcing(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                         scene_integrator *si) {
    static const char *const words[] = {"target", "eisenstat_walker", NULL};
    int k = read_word(c, o, p, key, words);
    if (k >= 0) si->def.newton.forcing = (defo_forcing)k;
}
static void read_predictor(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                           scene_integrator *si) {
    static const char *const words[] = {"none", "linear", "quadratic", "cubic", NULL};
    int k = read_word(c, o, p, key, words);
    if (k >= 0) si->def.predictor = (defo_predictor)k;
}
static void read_cg(jv_ctx *c, json_t *o, const jv_path *p, const char *key, scene_integrator *si) {
    json_t *cg = jv_obj(c, o, p, key);
    if (!cg) return;
    jv_path cp = jv_key(p, key);
    static const char *const ck[] = {"max_iterations", "tolerance", NULL};
    jv_check_keys(c, cg, &cp, ck);
    jv_int(c, cg, &cp, "max_iterations", 1, 1000000, &si->def.linear.max_iterations);
    if (si->def.kind == DEFO_INTEGRATOR_QUASISTATIC || si->def.kind == DEFO_INTEGRATOR_STATIC) {
        if (json_object_get(cg, "tolerance")) {
            jv_path tp = jv_key(&cp, "tolerance");
            jv_error(c, tp.s, "not used by %s (its CG tolerance adapts to the Newton residual)",
                     defo_integrator_name(si->def.kind));
        }
        return;
    }
    jv_num(c, cg, &cp, "tolerance", (jv_range){0, 1, 0, 0}, &si->def.linear.tolerance);
}

static void read_restitution(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                             scene_integrator *si) {
    jv_num(c, o, p, key, (jv_range){0, 1, 1, 1}, &si->def.restitution);
}
static void read_impact_radius(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                               scene_integrator *si) {
    jv_num(c, o, p, key, (jv_range){0, 10, 0, 1}, &si->def.impact_radius);
}
static void read_fragment_size(jv_ctx *c, json_t *o, const jv_path *p, const char *key,
                               scene_integrator *si) {
    jv_num(c, o, p, key, JV_POS, &si->def.fragment_size);
}

static const struct integ_row {
    const char *key;
    unsigned kinds;
    integ_reader read;
} integ_rows[] = {
    {"time_step", NM | IMPLICIT | RG | HY, read_time_step},
    {"max_dt", NM, read_time_step}, /* newmark's name for time_step in scenes before bdf2 */
    {"cfl", NM, read_cfl},
    {"rayleigh_mass", NM | IMPLICIT, read_rayleigh},
    {"rayleigh_stiffness", IMPLICIT, read_rayleigh},
    {"cg", ALL, read_cg},
    {"cg_fixed_iterations", IMPLICIT, read_fixed_iterations},
    {"precond", ALL, read_precond},
    {"solver", ALL, read_solver},
    {"petsc_options", ALL, read_petsc_options},
    {"tolerance", SOLVES | HY, read_tolerance},
    {"max_iterations", SOLVES, read_max_iterations},
    {"line_search", SOLVES, read_line_search},
    {"forcing", SOLVES, read_forcing},
    {"definiteness_fix", SOLVES, read_definiteness},
    {"predictor", QS, read_predictor},
    {"contact_stiffness", QS | ST, read_contact},
    {"rotation_interval", ALL, read_rotation_interval},
    {"lazy_tolerance", ALL, read_lazy},
    {"restitution", RG | HY, read_restitution},
    {"impact_radius", HY, read_impact_radius},
    {"fragment_size", HY, read_fragment_size},
};

/* Parse an "integrator" object (NULL: newmark's defaults) into the scene's
 * list; identical definitions share one entry.  Returns its index. */
int scene_add_integrator(jv_ctx *c, json_t *o, const jv_path *p, defo_scene *s) {
    scene_integrator si;
    memset(&si, 0, sizeof si);
    defo_integrator_kind kind = DEFO_INTEGRATOR_NEWMARK;
    const char *type = o ? jv_str(c, o, p, "type") : NULL;
    if (type) {
        static const char *const types[] = {"newmark", "backward_euler", "bdf2",   "quasistatic",
                                            "static",  "rigid",          "hybrid", NULL};
        jv_path tp = jv_key(p, "type");
        int k = jv_word(c, type, &tp, types);
        if (k >= 0) kind = (defo_integrator_kind)k;
    }
    si.def = defo_default_integrator_def(kind);
    si.rotation_interval = -1;
    si.lazy_tolerance = -1;
    si.definiteness_fix = -1;
    /* scene defaults of the equilibrium solvers: each Newton step solved to
     * the accuracy the tolerance needs at once, from the last equilibrium */
    if (kind == DEFO_INTEGRATOR_QUASISTATIC || kind == DEFO_INTEGRATOR_STATIC)
        si.def.newton.forcing = DEFO_FORCING_TARGET;
    if (o) {
        const char *key;
        json_t *val;
        json_object_foreach(o, key, val) {
            if (!strcmp(key, "type")) continue;
            const struct integ_row *row = NULL;
            for (size_t r = 0; r < sizeof integ_rows / sizeof integ_rows[0] && !row; r++)
                if (!strcmp(key, integ_rows[r].key)) row = &integ_rows[r];
            jv_path kp = jv_key(p, key);
            if (!row) {
                const char *words[sizeof integ_rows / sizeof integ_rows[0] + 2];
                size_t nw = 0;
                words[nw++] = "type";
                for (size_t r = 0; r < sizeof integ_rows / sizeof integ_rows[0]; r++)
                    if (integ_rows[r].kinds & (1u << kind)) words[nw++] = integ_rows[r].key;
                words[nw] = NULL;
                const char *near = jv_nearest(key, words);
                if (near)
                    jv_error(c, kp.s, "unknown key (did you mean '%s'?)", near);
                else
                    jv_error(c, kp.s, "unknown key for integrator '%s'",
                             defo_integrator_name(kind));
                continue;
            }
            if (!(row->kinds & (1u << kind))) {
                jv_error(c, kp.s, "not used by integrator '%s'", defo_integrator_name(kind));
                continue;
            }
            row->read(c, o, p, key, &si);
        }
        if (si.def.linear.backend_options[0] && si.def.linear.method != DEFO_LINEAR_BACKEND) {
            jv_path rp = jv_key(p, "petsc_options");
            jv_error(c, rp.s, "needs \"solver\": \"petsc\"");
        }
        if (si.rotation_interval == 0 && !(si.lazy_tolerance > 0)) {
            jv_path rp = jv_key(p, "rotation_interval");
            jv_error(c, rp.s, "0 (rotations only when F moved) needs a lazy_tolerance > 0");
        }
        if (c->errs.count == 0 && defo_integrator_def_validate(&si.def) != DEFO_OK)
            jv_error(c, p->s, "%s", defo_last_error());
    }
    for (int i = 0; i < s->num_integrators; i++)
        if (memcmp(&s->integrators[i], &si, sizeof si) == 0) return i;
    scene_integrator *ni =
        defo_realloc(s->integrators, (size_t)(s->num_integrators + 1) * sizeof *ni);
    if (!ni) {
        c->oom = 1;
        return 0;
    }
    s->integrators = ni;
    s->integrators[s->num_integrators] = si;
    return s->num_integrators++;
}

/* ---------------------------------------------------------------- body */
static void parse_generator(jv_ctx *c, json_t *g, const jv_path *p, scene_body *b) {
    const char *type = jv_str(c, g, p, "type");
    jv_path tp = jv_key(p, "type");
    if (!type) {
        if (!json_object_get(g, "type"))
            jv_error(c, tp.s,
                     "missing (box, sphere, cylinder, torus; shells: rectangle, sphere_shell, "
                     "torus_shell)");
        return;
    }
    static const char *const types[] = {"box",       "sphere",       "cylinder",    "torus",
                                        "rectangle", "sphere_shell", "torus_shell", NULL};
    int k = jv_word(c, type, &tp, types);
    if (k < 0) return;
    b->generator = (scene_generator)k;
    /* tet10 (MTPS08 §4.1) from every solid generator */
    int order = 1;
    if (k <= GEN_TORUS) jv_int(c, g, p, "order", 1, 2, &order);
    b->box.order = b->sphere.order = b->cylinder.order = b->torus.order = order;
    switch (b->generator) {
    case GEN_BOX: {
        static const char *const keys[] = {"type",      "center", "size",  "cells",
                                           "cell_size", "split",  "order", NULL};
        jv_check_keys(c, g, p, keys);
        defo_box_def *d = &b->box;
        double center[3] = {0, 0, 0};
        jv_vec3(c, g, p, "center", JV_ANY, center);
        jv_vec3(c, g, p, "size", JV_POS, d->size);
        json_t *cells = json_object_get(g, "cells");
        if (cells && json_is_integer(cells)) {
            int n = 4;
            if (jv_int(c, g, p, "cells", 1, 1000, &n)) d->cells[0] = d->cells[1] = d->cells[2] = n;
        } else if (cells) {
            double cv[3];
            jv_path cp = jv_key(p, "cells");
            if (jv_vec3_value(c, cells, &cp, (jv_range){1, 1000, 1, 1}, cv))
                for (int i = 0; i < 3; i++) d->cells[i] = (int)cv[i];
        }
        jv_num(c, g, p, "cell_size", JV_POS, &d->cell_size);
        const char *split = jv_str(c, g, p, "split");
        if (split) {
            static const char *const splits[] = {"6", "5", "24", NULL};
            jv_path sp = jv_key(p, "split");
            int s = jv_word(c, split, &sp, splits);
            if (s >= 0) d->split = (defo_box_split)s;
        }
        for (int i = 0; i < 3; i++) d->origin[i] = center[i] - 0.5 * d->size[i];
        break;
    }
    case GEN_SPHERE: {
        static const char *const keys[] = {"type", "center", "radius", "cell_size", "order", NULL};
        jv_check_keys(c, g, p, keys);
        jv_vec3(c, g, p, "center", JV_ANY, b->sphere.center);
        jv_num(c, g, p, "radius", JV_POS, &b->sphere.radius);
        jv_num(c, g, p, "cell_size", JV_POS, &b->sphere.cell_size);
        break;
    }
    case GEN_CYLINDER: {
        static const char *const keys[] = {"type",      "center", "radius", "height",
                                           "cell_size", "order",  NULL};
        jv_check_keys(c, g, p, keys);
        jv_vec3(c, g, p, "center", JV_ANY, b->cylinder.center);
        jv_num(c, g, p, "radius", JV_POS, &b->cylinder.radius);
        jv_num(c, g, p, "height", JV_POS, &b->cylinder.height);
        jv_num(c, g, p, "cell_size", JV_POS, &b->cylinder.cell_size);
        break;
    }
    case GEN_TORUS: {
        static const char *const keys[] = {
            "type", "center", "major_radius", "minor_radius", "cell_size", "order", NULL};
        jv_check_keys(c, g, p, keys);
        defo_torus_def *d = &b->torus;
        jv_vec3(c, g, p, "center", JV_ANY, d->center);
        jv_num(c, g, p, "major_radius", JV_POS, &d->major_radius);
        jv_num(c, g, p, "minor_radius", JV_POS, &d->minor_radius);
        jv_num(c, g, p, "cell_size", JV_POS, &d->cell_size);
        if (!(d->minor_radius < d->major_radius))
            jv_error(c, p->s, "minor_radius %g must be smaller than major_radius %g",
                     d->minor_radius, d->major_radius);
        break;
    }
    case GEN_RECTANGLE: {
        /* a flat shell in the z = 0 plane (before "transform") */
        static const char *const keys[] = {"type", "center", "size", "cells", "cell_size", NULL};
        jv_check_keys(c, g, p, keys);
        defo_rectangle_def *d = &b->rectangle;
        jv_vec3(c, g, p, "center", JV_ANY, d->center);
        json_t *sz = jv_arr(c, g, p, "size");
        jv_path sp = jv_key(p, "size");
        if (sz && json_array_size(sz) != 2) jv_error(c, sp.s, "expected [width, height]");
        for (size_t i = 0; sz && json_array_size(sz) == 2 && i < 2; i++) {
            json_t *e = json_array_get(sz, i);
            if (!json_is_number(e) || !(json_number_value(e) > 0))
                jv_error(c, sp.s, "expected two sizes > 0 [m]");
            else
                d->size[i] = json_number_value(e);
        }
        json_t *cells = json_object_get(g, "cells");
        jv_path cp = jv_key(p, "cells");
        if (cells && json_is_integer(cells)) {
            int n = 10;
            if (jv_int(c, g, p, "cells", 1, 2000, &n)) d->cells[0] = d->cells[1] = n;
        } else if (cells && json_is_array(cells) && json_array_size(cells) == 2) {
            for (size_t i = 0; i < 2; i++) {
                json_t *e = json_array_get(cells, i);
                json_int_t v = json_is_integer(e) ? json_integer_value(e) : 0;
                if (v < 1 || v > 2000)
                    jv_error(c, cp.s, "expected two integers in [1, 2000]");
                else
                    d->cells[i] = (int)v;
            }
        } else if (cells) {
            jv_error(c, cp.s, "expected an integer or [nx, ny]");
        }
        jv_num(c, g, p, "cell_size", JV_POS, &d->cell_size);
        break;
    }
    case GEN_SPHERE_SHELL: {
        static const char *const keys[] = {"type",         "center",    "radius",
                                           "subdivisions", "cell_size", NULL};
        jv_check_keys(c, g, p, keys);
        jv_vec3(c, g, p, "center", JV_ANY, b->sphere_shell.center);
        jv_num(c, g, p, "radius", JV_POS, &b->sphere_shell.radius);
        jv_int(c, g, p, "subdivisions", 1, 2000, &b->sphere_shell.subdivisions);
        jv_num(c, g, p, "cell_size", JV_POS, &b->sphere_shell.cell_size);
        break;
    }
    case GEN_TORUS_SHELL: {
        static const char *const keys[] = {
            "type", "center", "major_radius", "minor_radius", "sweep", "cells", NULL};
        jv_check_keys(c, g, p, keys);
        defo_torus_shell_def *d = &b->torus_shell;
        jv_vec3(c, g, p, "center", JV_ANY, d->center);
        jv_num(c, g, p, "major_radius", JV_POS, &d->major_radius);
        jv_num(c, g, p, "minor_radius", JV_POS, &d->minor_radius);
        jv_num(c, g, p, "sweep", (jv_range){0, 360, 0, 1}, &d->sweep);
        json_t *cells = jv_arr(c, g, p, "cells");
        jv_path cp = jv_key(p, "cells");
        if (cells && json_array_size(cells) != 2) jv_error(c, cp.s, "expected [around, tube]");
        for (size_t i = 0; cells && json_array_size(cells) == 2 && i < 2; i++) {
            json_t *e = json_array_get(cells, i);
            json_int_t v = json_is_integer(e) ? json_integer_value(e) : 0;
            if (v < (i ? 3 : 1) || v > 2000)
                jv_error(c, cp.s, "expected [around ≥ 1, tube ≥ 3] integers up to 2000");
            else
                d->cells[i] = (int)v;
        }
        if (!(d->minor_radius < d->major_radius))
            jv_error(c, p->s, "minor_radius %g must be smaller than major_radius %g",
                     d->minor_radius, d->major_radius);
        break;
    }
    }
}

/* The scripted rigid motion object shared by colliders and fixed sets. */
static void parse_motion(jv_ctx *c, json_t *m, const jv_path *mp, defo_motion_def *md) {
    static const char *const mk[] = {"velocity", "pivot", "axis", "angular_speed", NULL};
    jv_check_keys(c, m, mp, mk);
    jv_vec3(c, m, mp, "velocity", JV_ANY, md->velocity);
    jv_vec3(c, m, mp, "pivot", JV_ANY, md->pivot);
    jv_dir(c, m, mp, "axis", md->angular_axis);
    jv_num(c, m, mp, "angular_speed", JV_ANY, &md->angular_speed);
}

/* One region of f (box, sphere, plane when allow_plane, or tag) into x; the
 * caller checks the keys.  Returns 1 when exactly one region is given. */
int scene_parse_region(jv_ctx *c, json_t *f, const jv_path *fp, scene_fix *x, int allow_plane) {
    int kinds = 0;
    json_t *v;
    if ((v = jv_obj(c, f, fp, "box"))) {
        kinds++;
        jv_path kp = jv_key(fp, "box");
        static const char *const bk[] = {"min", "max", NULL};
        jv_check_keys(c, v, &kp, bk);
        double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
        if (!jv_vec3(c, v, &kp, "min", JV_ANY, lo) || !jv_vec3(c, v, &kp, "max", JV_ANY, hi))
            jv_error(c, kp.s, "needs \"min\" and \"max\" corners");
        x->region = defo_region_box(lo, hi);
    }
    if ((v = jv_obj(c, f, fp, "sphere"))) {
        kinds++;
        jv_path kp = jv_key(fp, "sphere");
        static const char *const sk[] = {"center", "radius", NULL};
        jv_check_keys(c, v, &kp, sk);
        double ctr[3] = {0, 0, 0}, r = 1;
        if (!jv_vec3(c, v, &kp, "center", JV_ANY, ctr) || !jv_num(c, v, &kp, "radius", JV_POS, &r))
            jv_error(c, kp.s, "needs \"center\" and \"radius\"");
        x->region = defo_region_sphere(ctr, r);
    }
    if ((v = jv_obj(c, f, fp, "plane"))) {
        kinds++;
        jv_path kp = jv_key(fp, "plane");
        if (!allow_plane) {
            jv_error(c, kp.s, "not available for loads (use a box, sphere or tag region)");
            return 0;
        }
        static const char *const pk[] = {"point", "normal", NULL};
        jv_check_keys(c, v, &kp, pk);
        double pt[3] = {0, 0, 0}, nr[3] = {0, 0, 1};
        if (!jv_vec3(c, v, &kp, "point", JV_ANY, pt) || !jv_dir(c, v, &kp, "normal", nr))
            jv_error(c, kp.s, "needs \"point\" and \"normal\"");
        x->region = defo_region_plane(pt, nr);
    }
    int tag = 0;
    if (jv_int(c, f, fp, "tag", 1, INT32_MAX, &tag)) {
        kinds++;
        x->region = defo_region_tag(tag);
    }
    if (kinds != 1) {
        jv_error(c, fp->s, "give exactly one of box, sphere%s or tag (found %d)",
                 allow_plane ? ", plane" : "", kinds);
        return 0;
    }
    return 1;
}

static void parse_fixed(jv_ctx *c, json_t *arr, const jv_path *p, const defo_scene *s,
                        scene_body *b) {
    size_t n = json_array_size(arr);
    if (!n) return;
    b->fixed = defo_calloc(n, sizeof *b->fixed);
    if (!b->fixed) {
        c->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(arr, i);
        jv_path fp = jv_index(p, i);
        if (!json_is_object(f)) {
            jv_error(c, fp.s,
                     "expected an object ({\"box\": ..}, {\"sphere\": ..}, {\"plane\": ..} "
                     "or {\"tag\": N}), got %s",
                     jv_type_name(f));
            continue;
        }
        static const char *const keys[] = {"box",    "sphere", "plane",   "tag",
                                           "motion", "bone",   "release", NULL};
        jv_check_keys(c, f, &fp, keys);
        scene_fix *x = &b->fixed[b->num_fixed];
        memset(x, 0, sizeof *x);
        x->release = INFINITY;
        jv_num(c, f, &fp, "release", JV_NONNEG, &x->release);
        json_t *m = jv_obj(c, f, &fp, "motion");
        if (m) {
            jv_path mp = jv_key(&fp, "motion");
            x->has_motion = 1;
            x->motion = defo_default_motion_def();
            parse_motion(c, m, &mp, &x->motion);
        }
        /* TSIF05 §11: the set follows a bone of the scene's skeleton */
        defo_motion_def bm = defo_default_motion_def();
        if (scene_parse_bone(c, f, &fp, s, &bm)) {
            if (m) {
                jv_path bp = jv_key(&fp, "bone");
                jv_error(c, bp.s, "give \"bone\" or \"motion\", not both");
            }
            x->has_motion = 1;
            x->motion = bm;
        }
        if (scene_parse_region(c, f, &fp, x, 1)) b->num_fixed++;
    }
}

/* "forces" (value key "force", N per node) or "tractions" ("traction", Pa). */
static void parse_loads(jv_ctx *c, json_t *arr, const jv_path *p, const char *value_key,
                        scene_load **out, int *count) {
    size_t n = json_array_size(arr);
    if (!n) return;
    *out = defo_calloc(n, sizeof **out);
    if (!*out) {
        c->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(arr, i);
        jv_path fp = jv_index(p, i);
        if (!json_is_object(f)) {
            jv_error(c, fp.s,
                     "expected an object ({\"box\": ..} or {\"sphere\": ..} or {\"tag\": N} "
                     "with \"%s\"), got %s",
                     value_key, jv_type_name(f));
            continue;
        }
        const char *keys[] = {"box", "sphere", "plane", "tag", value_key, NULL};
        (void)0;
        jv_check_keys(c, f, &fp, keys);
        scene_load *l = &(*out)[*count];
        memset(l, 0, sizeof *l);
        int ok = scene_parse_region(c, f, &fp, &l->region, 1);
        if (!json_object_get(f, value_key)) {
            jv_error(c, fp.s, "needs \"%s\" ([3] %s)", value_key,
                     !strcmp(value_key, "force") ? "N per node" : "Pa");
            ok = 0;
        } else if (!jv_vec3(c, f, &fp, value_key, JV_ANY, l->value)) {
            ok = 0;
        }
        if (ok) (*count)++;
    }
}

static void parse_body(jv_ctx *c, json_t *o, const jv_path *p, defo_scene *s, scene_body *b,
                       size_t index) {
    const char *base = s->base_dir;
    static const char *const keys[] = {"name",
                                       "mesh",
                                       "generator",
                                       "surface",
                                       "transform",
                                       "velocity",
                                       "angular_velocity",
                                       "material",
                                       "material_changes",
                                       "formulation",
                                       "fixed",
                                       "forces",
                                       "tractions",
                                       "plasticity",
                                       "material_regions",
                                       "anneal",
                                       "fracture",
                                       "embedded",
                                       "integrator",
                                       "collide",
                                       "self_contact",
                                       "friction",
                                       "activation",
                                       NULL};
    jv_check_keys(c, o, p, keys);
    snprintf(b->name, sizeof b->name, "body%zu", index);
    b->collide = 1;
    b->self_contact = 0;
    b->friction = 0.5;
    jv_bool(c, o, p, "collide", &b->collide);
    jv_bool(c, o, p, "self_contact", &b->self_contact);
    jv_num(c, o, p, "friction", JV_NONNEG, &b->friction);
    const char *name = jv_str(c, o, p, "name");
    if (name) snprintf(b->name, sizeof b->name, "%s", name);
    b->box = defo_default_box_def();
    b->sphere = defo_default_sphere_def();
    b->cylinder = defo_default_cylinder_def();
    b->torus = defo_default_torus_def();
    b->rectangle = defo_default_rectangle_def();
    b->sphere_shell = defo_default_sphere_shell_def();
    b->torus_shell = defo_default_torus_shell_def();
    b->mesher = defo_default_mesher_def();
    b->material = defo_default_material();
    identity(b->rotation);
    b->scale[0] = b->scale[1] = b->scale[2] = 1;

    int sources = 0;
    json_t *v;
    if ((v = json_object_get(o, "mesh"))) {
        sources++;
        b->source = SRC_FILE;
        jv_path mp = jv_key(p, "mesh");
        if (json_is_string(v)) {
            jv_file(c, o, p, "mesh", base, b->file);
        } else if (json_is_object(v)) {
            static const char *const mk[] = {"file", NULL};
            jv_check_keys(c, v, &mp, mk);
            if (!json_object_get(v, "file"))
                jv_error(c, mp.s, "needs \"file\"");
            else
                jv_file(c, v, &mp, "file", base, b->file);
        } else {
            jv_error(c, mp.s, "expected a file name, got %s", jv_type_name(v));
        }
    }
    if ((v = jv_obj(c, o, p, "generator"))) {
        sources++;
        b->source = SRC_GENERATOR;
        jv_path gp = jv_key(p, "generator");
        parse_generator(c, v, &gp, b);
    }
    if ((v = jv_obj(c, o, p, "surface"))) {
        sources++;
        b->source = SRC_SURFACE;
        jv_path sp = jv_key(p, "surface");
        static const char *const sk[] = {"file", "cells", "cell_size", "order", NULL};
        jv_check_keys(c, v, &sp, sk);
        if (!json_object_get(v, "file"))
            jv_error(c, sp.s, "needs \"file\" (a closed surface: .obj .stl .off .ply)");
        else
            jv_file(c, v, &sp, "file", base, b->file);
        jv_int(c, v, &sp, "cells", 2, 1000, &b->mesher.cells);
        jv_num(c, v, &sp, "cell_size", JV_POS, &b->mesher.cell_size);
        jv_int(c, v, &sp, "order", 1, 2, &b->mesher.order);
    }
    if (sources != 1)
        jv_error(c, p->s, "give exactly one of \"mesh\", \"generator\" or \"surface\" (found %d)",
                 sources);

    if ((v = jv_obj(c, o, p, "transform"))) {
        jv_path tp = jv_key(p, "transform");
        static const char *const tk[] = {"translate", "rotate", "scale", NULL};
        jv_check_keys(c, v, &tp, tk);
        jv_vec3(c, v, &tp, "translate", JV_ANY, b->translate);
        parse_rotate(c, v, &tp, "rotate", b->rotation);
        json_t *sc = json_object_get(v, "scale");
        if (sc && json_is_number(sc)) {
            double k = 1;
            if (jv_num(c, v, &tp, "scale", JV_POS, &k)) b->scale[0] = b->scale[1] = b->scale[2] = k;
        } else if (sc) {
            jv_vec3(c, v, &tp, "scale", JV_POS, b->scale);
        }
    }
    jv_vec3(c, o, p, "velocity", JV_ANY, b->velocity);
    jv_vec3(c, o, p, "angular_velocity", JV_ANY, b->angular_velocity);

    const char *form = jv_str(c, o, p, "formulation");
    b->formulation = DEFO_FORMULATION_INVERTIBLE;
    if (form) {
        static const char *const forms[] = {"invertible", "corotated", "quadratic", NULL};
        jv_path fp = jv_key(p, "formulation");
        int k = jv_word(c, form, &fp, forms);
        if (k == 1) b->formulation = DEFO_FORMULATION_COROTATED;
        if (k == 2)
            jv_error(c, fp.s,
                     "'quadratic' is not a formulation: quadratic tetrahedra (tet10) come from the "
                     "mesh — \"order\": 2 in \"generator\" or \"surface\", or a tet10 mesh "
                     "file — with either formulation");
    }
    json_t *bi = jv_obj(c, o, p, "integrator");
    if (bi) {
        jv_path ip = jv_key(p, "integrator");
        b->integrator = scene_add_integrator(c, bi, &ip, s);
    }
    if ((v = jv_obj(c, o, p, "material"))) {
        jv_path mp = jv_key(p, "material");
        parse_material(c, v, &mp, &b->material);
        json_t *fib = json_object_get(v, "fibres");
        if (fib && json_is_object(fib)) {
            jv_path fp = jv_key(&mp, "fibres");
            scene_parse_fibre_source(c, fib, &fp, b);
        }
    }
    json_t *mat = json_object_get(o, "material");
    if (b->source == SRC_GENERATOR && b->generator >= GEN_RECTANGLE &&
        !(json_is_object(mat) && json_object_get(mat, "thickness"))) {
        jv_path mp = jv_key(p, "material"), tp = jv_key(&mp, "thickness");
        jv_error(c, tp.s, "missing: a shell (tri3) needs a thickness > 0 [m]");
    }
    if ((v = json_object_get(o, "activation"))) {
        jv_path ap = jv_key(p, "activation");
        scene_parse_activation(c, v, &ap, b);
    }
    if ((v = jv_obj(c, o, p, "plasticity"))) {
        jv_path pp = jv_key(p, "plasticity");
        b->has_plasticity = 1;
        b->plasticity = defo_default_plasticity_def();
        parse_plasticity(c, v, &pp, &b->plasticity, b, base);
        /* generated bodies: shell or solid is known here (mesh files: when built) */
        const int solid = b->source == SRC_GENERATOR && b->generator < GEN_RECTANGLE;
        static const char *const bk[] = {"bending_yield", "bending_creep", "bending_max", NULL};
        for (int k = 0; solid && bk[k]; k++)
            if (json_object_get(v, bk[k])) {
                jv_path kp = jv_key(&pp, bk[k]);
                jv_error(c, kp.s,
                         "plastic bending is for shells (tri3 bodies): this body is a "
                         "solid");
            }
    }
    if ((v = jv_arr(c, o, p, "material_regions"))) {
        jv_path rp = jv_key(p, "material_regions");
        const size_t n = json_array_size(v);
        if (n > DEFO_MAX_MATERIAL_REGIONS)
            jv_error(c, rp.s, "%zu regions: at most %d", n, DEFO_MAX_MATERIAL_REGIONS);
        b->regions = n ? defo_calloc(n, sizeof *b->regions) : NULL;
        if (n && !b->regions) c->oom = 1;
        for (size_t i = 0; i < n && b->regions && i < DEFO_MAX_MATERIAL_REGIONS; i++) {
            json_t *e = json_array_get(v, i);
            jv_path ep = jv_index(&rp, i);
            if (!json_is_object(e)) {
                jv_error(c, ep.s,
                         "expected an object {\"name\": .., \"box\"|\"sphere\"|\"plane\"|\"tag\": "
                         ".., \"material\": {..}, \"plasticity\": {..}}");
                continue;
            }
            static const char *const rk[] = {"name", "box",      "sphere",     "plane",
                                             "tag",  "material", "plasticity", NULL};
            jv_check_keys(c, e, &ep, rk);
            scene_region *r = &b->regions[b->num_regions];
            memset(r, 0, sizeof *r);
            snprintf(r->name, sizeof r->name, "region%zu", i);
            const char *rn = jv_str(c, e, &ep, "name");
            if (rn) snprintf(r->name, sizeof r->name, "%s", rn);
            for (int k = 0; k < b->num_regions; k++)
                if (!strcmp(b->regions[k].name, r->name)) {
                    jv_path np = jv_key(&ep, "name");
                    jv_error(c, np.s, "'%s' names material_regions[%d] already", r->name, k);
                }
            /* the body's material with this region's keys */
            r->material = b->material;
            json_t *m = jv_obj(c, e, &ep, "material");
            if (m) {
                jv_path mp = jv_key(&ep, "material");
                parse_material(c, m, &mp, &r->material);
                if (json_object_get(m, "fibres")) {
                    jv_path fp = jv_key(&mp, "fibres");
                    jv_error(c, fp.s,
                             "not in material_regions yet: a fibre term and its directions are "
                             "the body's (give \"fibres\" in the body's material)");
                }
            }
            json_t *pl = jv_obj(c, e, &ep, "plasticity");
            if (pl) {
                jv_path pp = jv_key(&ep, "plasticity");
                r->has_plasticity = 1;
                r->plasticity = b->has_plasticity ? b->plasticity : defo_default_plasticity_def();
                parse_plasticity(c, pl, &pp, &r->plasticity, NULL, base);
                /* generated solids: the bending keys as in the body's plasticity */
                static const char *const bk[] = {"bending_yield", "bending_creep", "bending_max",
                                                 NULL};
                for (int k = 0; b->source == SRC_GENERATOR && b->generator < GEN_RECTANGLE && bk[k];
                     k++)
                    if (json_object_get(pl, bk[k])) {
                        jv_path kp = jv_key(&pp, bk[k]);
                        jv_error(c, kp.s,
                                 "plastic bending is for shells (tri3 bodies): this body is a "
                                 "solid");
                    }
            }
            if (!m && !pl) jv_error(c, ep.s, "needs \"material\" or \"plasticity\" (or both)");
            if (scene_parse_region(c, e, &ep, &r->region, 1)) b->num_regions++;
        }
    }
    if ((v = jv_arr(c, o, p, "material_changes"))) {
        jv_path cp = jv_key(p, "material_changes");
        size_t n = json_array_size(v);
        b->changes = n ? defo_calloc(n, sizeof *b->changes) : NULL;
        if (n && !b->changes) c->oom = 1;
        /* the current material and plasticity of each target (−1: the body) */
        defo_material_def cur[DEFO_MAX_MATERIAL_REGIONS + 1];
        defo_plasticity_def curp[DEFO_MAX_MATERIAL_REGIONS + 1];
        cur[0] = b->material;
        curp[0] = b->has_plasticity ? b->plasticity : defo_default_plasticity_def();
        for (int k = 0; k < b->num_regions; k++) {
            cur[k + 1] = b->regions[k].material;
            curp[k + 1] = b->regions[k].has_plasticity ? b->regions[k].plasticity : curp[0];
        }
        double last = -1;
        for (size_t i = 0; i < n && b->changes; i++) {
            json_t *e = json_array_get(v, i);
            jv_path ep = jv_index(&cp, i);
            if (!json_is_object(e)) {
                jv_error(c, ep.s,
                         "expected an object {\"time\": t, \"material\": {..}, \"plasticity\": "
                         "{..}}");
                continue;
            }
            static const char *const ck[] = {"time", "region", "material", "plasticity", NULL};
            jv_check_keys(c, e, &ep, ck);
            double t = 0;
            if (!json_object_get(e, "time")) jv_error(c, ep.s, "needs \"time\"");
            jv_num(c, e, &ep, "time", JV_NONNEG, &t);
            if (t <= last) jv_error(c, ep.s, "times must increase (%g after %g)", t, last);
            last = t;
            int target = -1;
            const char *rn = jv_str(c, e, &ep, "region");
            if (rn) {
                for (int k = 0; k < b->num_regions && target < 0; k++)
                    if (!strcmp(b->regions[k].name, rn)) target = k;
                if (target < 0) {
                    jv_path rp = jv_key(&ep, "region");
                    jv_error(c, rp.s, "'%s' is none of the body's material_regions", rn);
                }
            }
            scene_change *ch = &b->changes[b->num_changes];
            memset(ch, 0, sizeof *ch);
            ch->time = t;
            ch->region = target;
            json_t *m = jv_obj(c, e, &ep, "material");
            if (m) {
                jv_path mp = jv_key(&ep, "material");
                parse_material(c, m, &mp, &cur[target + 1]); /* edits the previous one */
                if (json_object_get(m, "fibres")) {
                    jv_path fp = jv_key(&mp, "fibres");
                    jv_error(c, fp.s,
                             "not in material_changes: a body's fibre term is fixed (what "
                             "changes over time is its \"activation\")");
                }
                ch->has_material = 1;
            }
            json_t *pl = jv_obj(c, e, &ep, "plasticity");
            if (pl) {
                jv_path pp = jv_key(&ep, "plasticity");
                parse_plasticity(c, pl, &pp, &curp[target + 1], NULL, base);
                ch->has_plasticity = 1;
            }
            if (!m && !pl) jv_error(c, ep.s, "needs \"material\" or \"plasticity\" (or both)");
            ch->material = cur[target + 1];
            ch->plasticity = curp[target + 1];
            b->num_changes++;
        }
    }
    if ((v = jv_arr(c, o, p, "anneal"))) {
        /* MTPS08 §5.3: the current shape becomes the rest shape */
        jv_path ap = jv_key(p, "anneal");
        const size_t n = json_array_size(v);
        b->anneal = n ? defo_calloc(n, sizeof *b->anneal) : NULL;
        if (n && !b->anneal) c->oom = 1;
        double last = -1;
        for (size_t i = 0; i < n && b->anneal; i++) {
            json_t *e = json_array_get(v, i);
            jv_path ep = jv_index(&ap, i);
            if (!json_is_object(e)) {
                jv_error(c, ep.s, "expected an object {\"time\": t}");
                continue;
            }
            static const char *const ak[] = {"time", NULL};
            jv_check_keys(c, e, &ep, ak);
            double t = 0;
            if (!json_object_get(e, "time")) jv_error(c, ep.s, "needs \"time\"");
            if (!jv_num(c, e, &ep, "time", JV_NONNEG, &t)) continue;
            if (t <= last) jv_error(c, ep.s, "times must increase (%g after %g)", t, last);
            last = t;
            b->anneal[b->num_anneal++] = t;
        }
    }
    if ((v = jv_arr(c, o, p, "fixed"))) {
        jv_path fp = jv_key(p, "fixed");
        parse_fixed(c, v, &fp, s, b);
    }
    if ((v = jv_obj(c, o, p, "fracture"))) {
        /* MMDJ01 §2.5 planes after MG04 §4's criterion; which bodies may
         * fracture is checked with the integrator (parse_root) */
        jv_path fp = jv_key(p, "fracture");
        static const char *const fk[] = {"threshold", "radius", "crack_speed", "sliver", NULL};
        jv_check_keys(c, v, &fp, fk);
        b->fracture = defo_default_fracture_def();
        if (!json_object_get(v, "threshold"))
            jv_error(c, fp.s,
                     "needs \"threshold\" (the largest principal stress that breaks, Pa > 0)");
        else
            jv_num(c, v, &fp, "threshold", JV_POS, &b->fracture.threshold);
        jv_num(c, v, &fp, "radius", JV_POS, &b->fracture.radius);
        jv_num(c, v, &fp, "crack_speed", JV_POS, &b->fracture.crack_speed);
        jv_num(c, v, &fp, "sliver", (jv_range){0, 0.45, 1, 1}, &b->fracture.sliver);
        b->has_fracture = 1;
    }
    if ((v = jv_obj(c, o, p, "embedded"))) {
        jv_path ep = jv_key(p, "embedded");
        static const char *const ek[] = {"file", NULL};
        jv_check_keys(c, v, &ep, ek);
        if (!json_object_get(v, "file"))
            jv_error(c, ep.s, "needs \"file\" (a triangle surface: .obj .stl .off .ply)");
        else if (jv_file(c, v, &ep, "file", base, b->embedded_file)) {
            /* a readable triangle surface (read now, so validate catches it) */
            jv_path fp = jv_key(&ep, "file");
            defo_mesh *surf = NULL;
            defo_status st = defo_mesh_read(b->embedded_file, NULL, &surf);
            if (st < 0)
                jv_error(c, fp.s, "'%s' is not a readable surface: %s", b->embedded_file,
                         defo_last_error());
            else if (surf->num_tris == 0 || surf->nodes_per_tri != 3)
                jv_error(c, fp.s, "'%s' has no 3-node triangles (a surface: .obj .stl .off .ply)",
                         b->embedded_file);
            else
                b->has_embedded = 1;
            defo_mesh_destroy(surf);
        }
    }
    if ((v = jv_arr(c, o, p, "forces"))) {
        jv_path fp = jv_key(p, "forces");
        parse_loads(c, v, &fp, "force", &b->forces, &b->num_forces);
    }
    if ((v = jv_arr(c, o, p, "tractions"))) {
        jv_path tp = jv_key(p, "tractions");
        parse_loads(c, v, &tp, "traction", &b->tractions, &b->num_tractions);
    }
}

/* ----------------------------------------------------------- colliders */
static const char *const shape_keys[] = {"type",   "point",  "center",       "normal",
                                         "axis",   "radius", "half_extents", "half_length",
                                         "rotate", "file",   "scale",        NULL};

/* A mesh shape's closed surface (.obj .stl .off .ply) read now, scaled:
 * its triangles are the collider's (the scene keeps them, the collider
 * builds its signed distance from them). */
static void parse_mesh_shape(jv_ctx *c, json_t *o, const jv_path *p, const char *base,
                             defo_shape_def *s, defo_mesh **mesh) {
    char file[SCENE_PATH_MAX];
    jv_path fp = jv_key(p, "file");
    if (!json_object_get(o, "file")) {
        jv_error(c, fp.s,
                 "missing: a mesh collider needs its closed surface (.obj .stl .off .ply)");
        return;
    }
    if (!jv_file(c, o, p, "file", base, file)) return;
    double scale[3] = {1, 1, 1};
    json_t *sc = json_object_get(o, "scale");
    if (sc && json_is_number(sc)) {
        double k = 1;
        if (jv_num(c, o, p, "scale", JV_POS, &k)) scale[0] = scale[1] = scale[2] = k;
    } else if (sc) {
        jv_vec3(c, o, p, "scale", JV_POS, scale);
    }
    defo_mesh *m = NULL;
    defo_status st = defo_mesh_read(file, NULL, &m);
    if (st < 0 || !m || m->num_tris == 0) {
        jv_error(c, fp.s, "%s", st < 0 ? defo_last_error() : "the file holds no triangles");
        defo_mesh_destroy(m);
        return;
    }
    for (defo_index i = 0; i < m->num_nodes; i++)
        for (int k = 0; k < 3; k++) m->x[3 * (size_t)i + (size_t)k] *= scale[k];
    s->mesh = m;
    *mesh = m;
}

static void parse_shape(jv_ctx *c, json_t *o, const jv_path *p, const char *base, defo_shape_def *s,
                        defo_mesh **mesh) {
    *s = defo_default_shape_def();
    const char *type = jv_str(c, o, p, "type");
    jv_path tp = jv_key(p, "type");
    if (!type) {
        if (!json_object_get(o, "type"))
            jv_error(c, tp.s, "missing (plane, sphere, box, cylinder, capsule or mesh)");
        return;
    }
    static const char *const types[] = {"plane",   "sphere", "box", "cylinder",
                                        "capsule", "mesh",   NULL};
    int k = jv_word(c, type, &tp, types);
    if (k < 0) return;
    s->type = (defo_shape_type)k;
    if (s->type == DEFO_SHAPE_MESH) {
        parse_mesh_shape(c, o, p, base, s, mesh);
    } else {
        static const char *const mesh_only[] = {"file", "scale", NULL};
        for (int q = 0; mesh_only[q]; q++)
            if (json_object_get(o, mesh_only[q])) {
                jv_path kp = jv_key(p, mesh_only[q]);
                jv_error(c, kp.s, "only a mesh collider takes \"%s\"", mesh_only[q]);
            }
    }
    jv_vec3(c, o, p, "center", JV_ANY, s->center);
    if (s->type == DEFO_SHAPE_PLANE) jv_vec3(c, o, p, "point", JV_ANY, s->center);
    jv_dir(c, o, p, "normal", s->normal);
    jv_dir(c, o, p, "axis", s->axis);
    jv_num(c, o, p, "radius", JV_POS, &s->radius);
    jv_vec3(c, o, p, "half_extents", JV_POS, s->half_extent);
    jv_num(c, o, p, "half_length", s->type == DEFO_SHAPE_CAPSULE ? JV_NONNEG : JV_POS,
           &s->half_length);
    parse_rotate(c, o, p, "rotate", s->rotation);
}

static void parse_collider(jv_ctx *c, json_t *o, const jv_path *p, const defo_scene *s,
                           scene_collider *col, size_t index) {
    snprintf(col->name, sizeof col->name, "collider%zu", index);
    col->def = defo_default_collider_def();
    int inline_shape = json_object_get(o, "type") != NULL;
    if (inline_shape) {
        static const char *const keys[] = {
            "type",        "point",  "center", "normal", "axis",     "radius", "half_extents",
            "half_length", "rotate", "name",   "motion", "friction", "origin", "separation_speed",
            "bone",        "file",   "scale",  NULL};
        jv_check_keys(c, o, p, keys);
    } else {
        static const char *const keys[] = {"name",   "shapes",           "motion", "friction",
                                           "origin", "separation_speed", "bone",   NULL};
        jv_check_keys(c, o, p, keys);
    }
    const char *name = jv_str(c, o, p, "name");
    if (name) snprintf(col->name, sizeof col->name, "%s", name);
    jv_num(c, o, p, "friction", JV_NONNEG, &col->def.friction);
    jv_num(c, o, p, "separation_speed", JV_POS, &col->def.separation_speed);
    json_t *m = jv_obj(c, o, p, "motion");
    if (m) {
        jv_path mp = jv_key(p, "motion");
        parse_motion(c, m, &mp, &col->def.motion);
    }
    int before = c->errs.count;
    if (inline_shape) {
        col->shapes = defo_calloc(1, sizeof *col->shapes);
        col->meshes = defo_calloc(1, sizeof *col->meshes);
        if (!col->shapes || !col->meshes) {
            c->oom = 1;
            return;
        }
        col->def.num_shapes = 1;
        parse_shape(c, o, p, s->base_dir, &col->shapes[0], &col->meshes[0]);
    } else {
        json_t *arr = jv_arr(c, o, p, "shapes");
        jv_path sp = jv_key(p, "shapes");
        if (!arr || !json_array_size(arr)) {
            if (!json_object_get(o, "shapes") || arr)
                jv_error(c, sp.s, "needs at least one shape (or give \"type\" for a single shape)");
            return;
        }
        size_t n = json_array_size(arr);
        col->shapes = defo_calloc(n, sizeof *col->shapes);
        col->meshes = defo_calloc(n, sizeof *col->meshes);
        if (!col->shapes || !col->meshes) {
            c->oom = 1;
            return;
        }
        col->def.num_shapes = (int)n;
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(arr, i);
            jv_path ep = jv_index(&sp, i);
            col->shapes[i] = defo_default_shape_def();
            if (!json_is_object(e)) {
                jv_error(c, ep.s, "expected an object, got %s", jv_type_name(e));
                continue;
            }
            jv_check_keys(c, e, &ep, shape_keys);
            parse_shape(c, e, &ep, s->base_dir, &col->shapes[i], &col->meshes[i]);
        }
    }
    col->def.shapes = col->shapes;
    /* "origin" places the collider frame: shape rotations turn about it and
     * it is the default rotation pivot (so a gear is written around its own
     * axis).  Shape centres are stored in the frame at the world origin:
     * p = rotation · c' with c' = c + rotationᵀ · origin. */
    double origin[3] = {0, 0, 0};
    if (jv_vec3(c, o, p, "origin", JV_ANY, origin)) {
        for (int i = 0; i < col->def.num_shapes; i++) {
            defo_shape_def *sh = &col->shapes[i];
            for (int k = 0; k < 3; k++)
                sh->center[k] += sh->rotation[k] * origin[0] + sh->rotation[3 + k] * origin[1] +
                                 sh->rotation[6 + k] * origin[2];
        }
        json_t *mo = json_object_get(o, "motion");
        if (!mo || !json_object_get(mo, "pivot"))
            memcpy(col->def.motion.pivot, origin, sizeof origin);
    }
    /* TSIF05 §10–11: a bone's shape, following the bone (shapes given in the
     * bind pose) */
    defo_motion_def bm = defo_default_motion_def();
    if (scene_parse_bone(c, o, p, s, &bm)) {
        if (m) {
            jv_path bp = jv_key(p, "bone");
            jv_error(c, bp.s, "give \"bone\" or \"motion\", not both");
        }
        col->def.motion = bm;
    }
    /* Cross-field checks (orthonormal rotations, sizes) are the collision
     * module's: build and drop one. */
    if (c->errs.count == before) {
        defo_collider *tmp = NULL;
        if (defo_collider_create(&col->def, &tmp) != DEFO_OK)
            jv_error(c, p->s, "%s", defo_last_error());
        defo_collider_destroy(tmp);
    }
}

/* ------------------------------------------------------------- outputs */
static const char *const field_names[] = {"displacement",
                                          "velocity",
                                          "J",
                                          "inverted",
                                          "von_mises",
                                          "max_principal_stress",
                                          "plastic_strain",
                                          "body_id",
                                          "min_principal_stress",
                                          "activation",
                                          "contact",
                                          "plastic_bending",
                                          NULL};

static void parse_outputs(jv_ctx *c, json_t *o, const jv_path *p, defo_scene_outputs *out) {
    static const char *const keys[] = {"vtu",    "surface_obj", "png", "checkpoint",
                                       "fields", "pc2",         "mdd", NULL};
    jv_check_keys(c, o, p, keys);
    jv_bool(c, o, p, "vtu", &out->vtu);
    jv_bool(c, o, p, "pc2", &out->pc2);
    jv_bool(c, o, p, "mdd", &out->mdd);
    jv_bool(c, o, p, "surface_obj", &out->surface_obj);
    jv_bool(c, o, p, "checkpoint", &out->checkpoint);
    json_t *png = json_object_get(o, "png");
    jv_path pp = jv_key(p, "png");
    if (png && json_is_boolean(png)) {
        out->png = json_is_true(png);
    } else if (png && json_is_object(png)) {
        out->png = 1;
        static const char *const pk[] = {"enabled", "width", "height", "color", NULL};
        jv_check_keys(c, png, &pp, pk);
        jv_bool(c, png, &pp, "enabled", &out->png);
        jv_int(c, png, &pp, "width", 16, 8192, &out->png_width);
        jv_int(c, png, &pp, "height", 16, 8192, &out->png_height);
        const char *col = jv_str(c, png, &pp, "color");
        if (col) {
            jv_path cp = jv_key(&pp, "color");
            if (col[0] && jv_word(c, col, &cp, field_names) < 0) {
                /* reported by jv_word */
            } else {
                snprintf(out->png_color, sizeof out->png_color, "%s", col);
            }
        }
    } else if (png) {
        jv_error(c, pp.s, "expected true, false or an object, got %s", jv_type_name(png));
    }
    json_t *f = jv_arr(c, o, p, "fields");
    if (f) {
        jv_path fp = jv_key(p, "fields");
        out->fields = 0;
        for (size_t i = 0; i < json_array_size(f); i++) {
            json_t *e = json_array_get(f, i);
            jv_path ep = jv_index(&fp, i);
            if (!json_is_string(e)) {
                jv_error(c, ep.s, "expected a field name, got %s", jv_type_name(e));
                continue;
            }
            int k = jv_word(c, json_string_value(e), &ep, field_names);
            if (k >= 0) out->fields |= 1u << k;
        }
    }
}

void scene_parse_root(jv_ctx *c, json_t *root, defo_scene *s, const char *base_dir) {
    jv_path p = {{0}};
    static const char *const keys[] = {"name",     "version",    "base_dir", "gravity",
                                       "duration", "integrator", "bodies",   "colliders",
                                       "outputs",  "contact",    "skeleton", NULL};
    jv_check_keys(c, root, &p, keys);
    snprintf(s->name, sizeof s->name, "scene");
    const char *name = jv_str(c, root, &p, "name");
    if (name) snprintf(s->name, sizeof s->name, "%s", name);
    int version = 1;
    jv_int(c, root, &p, "version", 1, 1, &version);
    const char *bd = jv_str(c, root, &p, "base_dir");
    snprintf(s->base_dir, sizeof s->base_dir, "%s", bd ? bd : base_dir ? base_dir : "");
    if (!s->base_dir[0] || s->base_dir[0] != '/') {
        /* absolute, so a copy of the scene resolves files from anywhere */
        char cwd[SCENE_PATH_MAX];
        if (getcwd(cwd, sizeof cwd)) {
            char tmp[SCENE_PATH_MAX];
            if (s->base_dir[0] && strcmp(s->base_dir, "."))
                snprintf(tmp, sizeof tmp, "%.2000s/%.2000s", cwd, s->base_dir);
            else
                snprintf(tmp, sizeof tmp, "%s", cwd);
            memcpy(s->base_dir, tmp, sizeof tmp);
        }
    }

    s->gravity[0] = s->gravity[1] = 0;
    s->gravity[2] = -9.81;
    jv_vec3(c, root, &p, "gravity", JV_ANY, s->gravity);

    s->fps = 30;
    s->frames = 60;
    json_t *d = jv_obj(c, root, &p, "duration");
    if (d) {
        jv_path dp = jv_key(&p, "duration");
        static const char *const dk[] = {"frames", "fps", "seconds", NULL};
        jv_check_keys(c, d, &dp, dk);
        jv_num(c, d, &dp, "fps", (jv_range){0, 1000, 0, 1}, &s->fps);
        jv_int(c, d, &dp, "frames", 1, 1000000, &s->frames);
        double secs = 0;
        if (jv_num(c, d, &dp, "seconds", JV_POS, &secs)) {
            if (json_object_get(d, "frames"))
                jv_error(c, dp.s, "give \"frames\" or \"seconds\", not both");
            double f = ceil(secs * s->fps - 1e-9);
            s->frames = f < 1 ? 1 : f > 1e6 ? 1000000 : (int)f;
        }
    }

    /* the skeleton first: bodies and colliders name its bones */
    json_t *sk = jv_obj(c, root, &p, "skeleton");
    if (sk) {
        jv_path kp = jv_key(&p, "skeleton");
        scene_parse_skeleton(c, sk, &kp, s);
    }

    /* integrators[0]: the top-level "integrator" (newmark when absent) */
    json_t *integ = jv_obj(c, root, &p, "integrator");
    jv_path ip = jv_key(&p, "integrator");
    scene_add_integrator(c, integ, &ip, s);

    json_t *bodies = jv_arr(c, root, &p, "bodies");
    jv_path bp = jv_key(&p, "bodies");
    if (!json_object_get(root, "bodies"))
        jv_error(c, bp.s, "missing: a scene needs at least one body");
    if (bodies) {
        size_t n = json_array_size(bodies);
        if (!n) jv_error(c, bp.s, "empty: a scene needs at least one body");
        s->bodies = n ? defo_calloc(n, sizeof *s->bodies) : NULL;
        if (n && !s->bodies) c->oom = 1;
        for (size_t i = 0; i < n && s->bodies; i++) {
            json_t *o = json_array_get(bodies, i);
            jv_path ep = jv_index(&bp, i);
            if (!json_is_object(o)) {
                jv_error(c, ep.s, "expected an object, got %s", jv_type_name(o));
                continue;
            }
            parse_body(c, o, &ep, s, &s->bodies[s->num_bodies++], i);
        }
        for (int i = 0; i < s->num_bodies; i++)
            for (int j = 0; j < i; j++)
                if (!strcmp(s->bodies[i].name, s->bodies[j].name)) {
                    jv_path ep = jv_index(&bp, (size_t)i);
                    jv_path np = jv_key(&ep, "name");
                    jv_error(c, np.s, "'%s' is already the name of bodies[%d]", s->bodies[i].name,
                             j);
                }
    }
    /* What stays refused, each with its physical reason (docs/scene-format.md). */
    for (int i = 0; i < s->num_bodies; i++) {
        const scene_body *b = &s->bodies[i];
        jv_path ep = jv_index(&bp, (size_t)i);
        scene_check_fibres(c, &ep, b);
        const defo_integrator_kind kind = b->integrator >= 0 && b->integrator < s->num_integrators
                                              ? s->integrators[b->integrator].def.kind
                                              : DEFO_INTEGRATOR_NEWMARK;
        if ((kind == DEFO_INTEGRATOR_RIGID || kind == DEFO_INTEGRATOR_HYBRID) && b->num_fixed > 0) {
            /* MMDJ01 §2.7: such a body moves as one piece */
            jv_path xp = jv_key(&ep, "fixed");
            jv_error(c, xp.s,
                     "a body under the %s integrator moves as one rigid piece and cannot have "
                     "fixed nodes: support it with a collider",
                     defo_integrator_name(kind));
        }
        if (kind == DEFO_INTEGRATOR_HYBRID && b->has_plasticity) {
            jv_path xp = jv_key(&ep, "plasticity");
            jv_error(c, xp.s,
                     "not available under the hybrid integrator (MMDJ01 §2.4's rest-shape reset "
                     "at impacts is not built): its bodies deform only while an impact lasts");
        }
        if (kind == DEFO_INTEGRATOR_HYBRID && b->has_embedded) {
            /* the pieces are new bodies of their own: their surfaces would
             * be the cut surface's components, handed to each piece */
            jv_path xp = jv_key(&ep, "embedded");
            jv_error(c, xp.s,
                     "not available under the hybrid integrator (its fragments become new bodies, "
                     "which do not take the embedded surface's pieces): use \"fracture\" under "
                     "another integrator, or remove \"embedded\"");
        }
    }
    json_t *cols = jv_arr(c, root, &p, "colliders");
    if (cols) {
        jv_path cp = jv_key(&p, "colliders");
        size_t n = json_array_size(cols);
        s->colliders = n ? defo_calloc(n, sizeof *s->colliders) : NULL;
        if (n && !s->colliders) c->oom = 1;
        for (size_t i = 0; i < n && s->colliders; i++) {
            json_t *o = json_array_get(cols, i);
            jv_path ep = jv_index(&cp, i);
            if (!json_is_object(o)) {
                jv_error(c, ep.s, "expected an object, got %s", jv_type_name(o));
                continue;
            }
            parse_collider(c, o, &ep, s, &s->colliders[s->num_colliders++], i);
        }
    }

    /* contact between bodies: on, unless switched off or tuned */
    s->contact = defo_default_contact_def();
    json_t *ct = json_object_get(root, "contact");
    if (ct) {
        jv_path kp = jv_key(&p, "contact");
        if (json_is_boolean(ct)) {
            s->contact.enabled = json_is_true(ct);
        } else if (json_is_object(ct)) {
            static const char *const ck[] = {"enabled",          "thickness", "stiffness",
                                             "separation_speed", "sweeps",    NULL};
            jv_check_keys(c, ct, &kp, ck);
            jv_bool(c, ct, &kp, "enabled", &s->contact.enabled);
            jv_num(c, ct, &kp, "thickness", (jv_range){0, 1, 0, 1}, &s->contact.thickness);
            jv_num(c, ct, &kp, "stiffness", JV_NONNEG, &s->contact.stiffness);
            jv_num(c, ct, &kp, "separation_speed", JV_POS, &s->contact.separation_speed);
            jv_int(c, ct, &kp, "sweeps", 1, 1000, &s->contact.sweeps);
        } else {
            jv_error(c, kp.s, "expected true, false or an object, got %s", jv_type_name(ct));
        }
    }

    defo_scene_outputs *o = &s->outputs;
    o->vtu = 1;
    o->surface_obj = 1;
    o->png = 0;
    o->png_width = 640;
    o->png_height = 480;
    snprintf(o->png_color, sizeof o->png_color, "J");
    o->checkpoint = 1;
    o->fields = DEFO_OUT_FIELD_ALL;
    o->pc2 = 0;
    o->mdd = 0;
    json_t *outs = jv_obj(c, root, &p, "outputs");
    if (outs) {
        jv_path op = jv_key(&p, "outputs");
        parse_outputs(c, outs, &op, o);
    }
}
