/*
 * force/force_model.c — the force model handle (defo/force_model.h): the
 * per-point state both kernels keep, dispatch to the hyperelastic
 * (kernel_hyperelastic.c) or corotated (kernel_corotated.c) kernel, the
 * model's matrix, and the derived fields a person looks at.
 *
 * Derived fields (per point, then per element and per node): J = det F;
 * principal Cauchy stresses P̂_i σ_i / J for the invertible model (ITF04 §5:
 * σ = P Fᵀ/J = U diag(P̂ σ / J) Uᵀ, J held at ≥ 0.01 so flat and inverted
 * points stay finite with the sign of the Kirchhoff stress) or the
 * eigenvalues of the corotated stress (R σ Rᵀ has those of σ).  tet10 point
 * values become node values through the linear field through the 4 Stroud
 * points (point q sits at λ_q = a, the others b): c_i = (v_i − b Σv)/(a − b)
 * at corner i, edge nodes the mean of their corners.
 *
 * Invariants: the state arrays are sized at create for the mesh's topology;
 * the matrix pattern is built once (first assemble); results never depend
 * on the thread count (slot buffers gathered in slot order).
 */
#include "force/force_internal.h"
#include "math/lanes.h"

#include "defo/solver.h"

defo_force_model_def defo_default_force_model_def(void) {
    defo_force_model_def d;
    memset(&d, 0, sizeof d);
    d.formulation = DEFO_FORMULATION_INVERTIBLE;
    d.definiteness_fix = 1;
    d.rotation_interval = 1;
    return d;
}

const char *defo_formulation_name(defo_formulation f) {
    switch (f) {
    case DEFO_FORMULATION_INVERTIBLE:
        return "invertible";
    case DEFO_FORMULATION_COROTATED:
        return "corotated";
    }
    return "unknown";
}

defo_status defo_formulation_from_name(const char *name, defo_formulation *out) {
    if (name && out) {
        if (strcmp(name, "invertible") == 0) {
            *out = DEFO_FORMULATION_INVERTIBLE;
            return DEFO_OK;
        }
        if (strcmp(name, "corotated") == 0) {
            *out = DEFO_FORMULATION_COROTATED;
            return DEFO_OK;
        }
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                      "formulation '%s' is unknown (invertible, corotated)",
                      name ? name : "(null)");
}

int defo_force_model_forget_history(defo_force_model *fm) {
    if (!fm) return 0;
    fm->all_stale = 1;
    return defo_fm_lazy(&fm->def);
}

int defo_force_model_keeps_rotations(const defo_force_model *fm) {
    return fm && defo_fm_lazy(&fm->def);
}

uint64_t defo_force_model_rotation_serial(const defo_force_model *fm) {
    return fm ? fm->rot_serial : 0;
}

/* History record (lazy rotations only): u64 rot_serial | i32 all_stale |
 * i32 0 | R, M (9 per point each) | F_last (9 per point, when kept) | i32
 * age per point | zeros to a multiple of 8. */
size_t defo_force_model_history_bytes(const defo_force_model *fm) {
    if (fm && fm->shell) return defo_fm_shell_history_bytes(fm); /* hinge branches */
    if (!defo_force_model_keeps_rotations(fm)) return 0;
    const size_t np = (size_t)fm->ne * (size_t)fm->nq;
    const size_t b = 16 + (18 + (fm->F_last ? 9 : 0)) * np * sizeof(double) + 4 * np;
    return (b + 7) / 8 * 8;
}

void defo_force_model_save_history(const defo_force_model *fm, void *out) {
    if (fm->shell) {
        defo_fm_shell_save_history(fm, out);
        return;
    }
    const size_t bytes = defo_force_model_history_bytes(fm);
    if (!bytes) return;
    const size_t np = (size_t)fm->ne * (size_t)fm->nq;
    unsigned char *o = out;
    memset(o, 0, bytes);
    const int32_t head[2] = {fm->all_stale, 0};
    memcpy(o, &fm->rot_serial, 8);
    memcpy(o + 8, head, 8);
    o += 16;
    memcpy(o, fm->R, 9 * np * sizeof(double));
    o += 9 * np * sizeof(double);
    memcpy(o, fm->M, 9 * np * sizeof(double));
    o += 9 * np * sizeof(double);
    if (fm->F_last) {
        memcpy(o, fm->F_last, 9 * np * sizeof(double));
        o += 9 * np * sizeof(double);
    }
    memcpy(o, fm->age, np * sizeof(int32_t));
}

defo_status defo_force_model_restore_history(defo_force_model *fm, const void *in, size_t size) {
    if (!fm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: NULL");
    const size_t bytes = defo_force_model_history_bytes(fm);
    if (size != bytes || (bytes && !in))
        return defo_error(DEFO_ERR_PARSE,
                          "force model: a rotation record of %zu bytes, this model keeps %zu", size,
                          bytes);
    if (!bytes) return DEFO_OK;
    if (fm->shell) return defo_fm_shell_restore_history(fm, in);
    const size_t np = (size_t)fm->ne * (size_t)fm->nq;
    const unsigned char *p = in;
    int32_t head[2];
    memcpy(head, p + 8, 8);
    if (head[0] < 0 || head[0] > 1)
        return defo_error(DEFO_ERR_PARSE, "force model: bad rotation record");
    const unsigned char *r = p + 16;
    for (size_t k = 0; k < 18 * np; k++) {
        double v;
        memcpy(&v, r + 8 * k, 8);
        if (!isfinite(v)) return defo_error(DEFO_ERR_PARSE, "force model: non-finite rotation");
    }
    memcpy(&fm->rot_serial, p, 8);
    fm->all_stale = head[0];
    memcpy(fm->R, r, 9 * np * sizeof(double));
    r += 9 * np * sizeof(double);
    memcpy(fm->M, r, 9 * np * sizeof(double));
    r += 9 * np * sizeof(double);
    if (fm->F_last) {
        memcpy(fm->F_last, r, 9 * np * sizeof(double));
        r += 9 * np * sizeof(double);
    }
    memcpy(fm->age, r, np * sizeof(int32_t));
    return DEFO_OK;
}

void defo_force_model_destroy(defo_force_model *fm) {
    if (!fm) return;
    for (int k = 0; k < fm->num_parts; k++) defo_material_destroy(fm->part[k].own);
    defo_free(fm->part);
    defo_incidence_free(&fm->inc);
    defo_free(fm->slot);
    defo_free(fm->elem_energy);
    defo_free(fm->flag);
    defo_free(fm->stable_len);
    defo_free(fm->R);
    defo_free(fm->M);
    defo_free(fm->cvec);
    defo_free(fm->sig);
    defo_free(fm->phat);
    defo_free(fm->direct);
    defo_free(fm->jinv4);
    defo_free(fm->dpdf);
    defo_free(fm->fib);
    defo_free(fm->F_last);
    defo_free(fm->age);
    defo_free(fm->jinv_plastic);
    defo_free(fm->elen_own);
    defo_bcsr_destroy(fm->A);
    defo_fm_shell_destroy(fm->shell);
    defo_free(fm);
}

/* tri3: the shell kernel's model (kernel_shell.c) over the stencils. */
static defo_status create_shell(defo_force_model *fm) {
    defo_status st = defo_fm_shell_create(fm);
    if (st) return st;
    fm->npe = 6;
    fm->nq = 1;
    const size_t ne = (size_t)fm->ne;
    fm->slot = defo_malloc(54 * ne * sizeof(double) + 1);
    fm->elem_energy = defo_calloc(ne + 1, sizeof(double));
    fm->flag = defo_calloc(ne + 1, 1);
    fm->stable_len = defo_calloc(ne + 1, sizeof(double));
    if (!fm->slot || !fm->elem_energy || !fm->flag || !fm->stable_len)
        return defo_error_oom("shell model state", ne * 60 * sizeof(double));
    st = defo_incidence_build(&fm->inc, defo_fm_shell_stencil(fm), fm->ne, 6, fm->n);
    if (!st) st = defo_fm_shell_stable_time(fm);
    return st;
}

/* The four-wide pass's copy of J⁻¹ for block b (elements 4b..4b+3). */
static void fm_pack_lanes(defo_force_model *fm, size_t b) {
    for (int i = 0; i < 9; i++)
        for (int l = 0; l < 4; l++)
            fm->jinv4[36 * b + 4 * (size_t)i + (size_t)l] =
                fm->jinv[9 * (4 * b + (size_t)l) + (size_t)i];
}

/* The rest stable lengths (the eigenvalue length over √r₀, r₀ = the rest
 * tangent bound over λ + 2μ: 3λ + 2μ over λ + 2μ for the isotropic models)
 * and their smallest over the wave speed, the wave time. */
static void fm_rest_times(defo_force_model *fm) {
    double lmin = INFINITY;
    for (defo_index e = 0; e < fm->ne; e++) {
        const fm_part *pt = fm_part_of(fm, e);
        const double len = fm->elen[e] / sqrt(pt->rest_bound / pt->stiffness_scale);
        if (!fm->track_stable_time) fm->stable_len[e] = len;
        lmin = fmin(lmin, len);
    }
    fm->wave_time = fm->ne > 0 && fm->wave_speed > 0 ? lmin / fm->wave_speed : INFINITY;
    if (!fm->track_stable_time) fm->stable_time = fm->wave_time;
}

/* Part k from a material: its moduli, the TSIF05 §9 copy, the CFL data. */
static defo_status fm_part_make(const defo_force_model *fm, const defo_material *material,
                                fm_part *pt) {
    memset(pt, 0, sizeof *pt);
    pt->mat = material;
    pt->mu = defo_material_mu(material);
    pt->lambda = defo_material_lambda(material);
    defo_material_damping_moduli(material, &pt->mu_d, &pt->lambda_d);
    if (fm->def.formulation == DEFO_FORMULATION_INVERTIBLE && fm->def.constant_extrapolation &&
        !fm->shell) { /* (shells: the plane-stress model clamps nothing) */
        /* TSIF05 §9: ψ, P̂ and dP/dF all at σ clamped to the threshold */
        defo_material_def md = *defo_material_get_def(material);
        md.inversion.mode = DEFO_INVERSION_CLAMP;
        defo_status st = defo_material_create(&md, &pt->own);
        if (st) return st;
        pt->mat = pt->own;
    }
    /* CFL data: the dilatational wave speed c = sqrt((λ + 2μ)/ρ) and the
     * rest tangent bound (fibres: the term's at full activation, any level
     * is below) */
    pt->stiffness_scale = defo_material_stiffness_scale(material);
    pt->wave_speed = sqrt(pt->stiffness_scale / defo_material_get_def(material)->density);
    pt->rest_bound = defo_material_stiffness_bound(pt->mat, defo_v3(1, 1, 1)) +
                     defo_material_fibre_bound(pt->mat, 1.0, 1.0);
    return DEFO_OK;
}

/* What depends on every part: damping, the four-wide pass (tet4
 * invertible neo-Hookean on a CPU with lanes: defo_material_eval_direct4's
 * model, its fibre term too; its copy of J⁻¹ only then). */
static void fm_parts_changed(defo_force_model *fm) {
    fm->damping = 0;
    int neo = 1;
    for (int k = 0; k < fm->num_parts; k++) {
        fm->damping |= fm->part[k].mu_d > 0 || fm->part[k].lambda_d > 0;
        neo &= defo_material_get_def(fm->part[k].mat)->model == DEFO_MODEL_NEO_HOOKEAN;
    }
    fm->wave_speed = fm->part[0].wave_speed;
    const int want = neo && fm->npe == 4 && fm->ne >= 4 && defo_lanes_supported() &&
                     fm->def.formulation == DEFO_FORMULATION_INVERTIBLE;
    if (want && !fm->jinv4) {
        const size_t nb = (size_t)fm->ne / 4; /* the last ne % 4 go one by one */
        fm->jinv4 = defo_malloc(36 * nb * sizeof(double));
        for (size_t b = 0; fm->jinv4 && b < nb; b++) fm_pack_lanes(fm, b);
    } else if (!want) {
        defo_free(fm->jinv4);
        fm->jinv4 = NULL;
    }
    fm->lanes = fm->jinv4 != NULL;
}

defo_status defo_force_model_create(const defo_mesh *mesh, const defo_element_rest *rest,
                                    const defo_material *material, const defo_force_model_def *def,
                                    defo_force_model **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: out is NULL");
    *out = NULL;
    if (!mesh || !rest || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: mesh, rest data and material are required");
    defo_force_model_def d = def ? *def : defo_default_force_model_def();
    if (d.formulation != DEFO_FORMULATION_INVERTIBLE && d.formulation != DEFO_FORMULATION_COROTATED)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: formulation %d is unknown",
                          (int)d.formulation);
    if (d.rotation_interval < 0 || !(d.lazy_tolerance >= 0) || !isfinite(d.lazy_tolerance))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: rotation_interval %d / lazy_tolerance %g out of range",
                          d.rotation_interval, d.lazy_tolerance);
    if (d.formulation == DEFO_FORMULATION_COROTATED && d.rotation_interval == 0 &&
        d.lazy_tolerance == 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: rotation_interval 0 needs a lazy_tolerance > 0");
    const defo_element_ops *ops = defo_element_rest_ops(rest);
    if (defo_element_rest_num_elems(rest) != mesh->num_elems || !ops ||
        ops->nodes != mesh->nodes_per_elem)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: the rest data (%ld elements) is not that of this mesh (%ld "
                          "elements of %d nodes; use defo_element_rest_create on it)",
                          (long)defo_element_rest_num_elems(rest), (long)mesh->num_elems,
                          mesh->nodes_per_elem);
    if (ops->kind == DEFO_ELEMENT_TRI3) {
        defo_force_model *fm = defo_calloc(1, sizeof *fm);
        if (!fm) return defo_error_oom("force model", sizeof *fm);
        fm->def = d;
        fm->mesh = mesh;
        fm->rest = rest;
        fm->ops = ops;
        fm->n = mesh->num_nodes;
        fm->ne = mesh->num_elems;
        fm->w = defo_element_rest_weight(rest);
        fm->elen = fm->elen_rest = defo_element_rest_eigen_length(rest);
        /* one part: the shell kernel's membrane data (kernel_shell.c) */
        fm->part = defo_calloc(1, sizeof *fm->part);
        if (!fm->part) {
            defo_force_model_destroy(fm);
            return defo_error_oom("force model", sizeof *fm->part);
        }
        fm->num_parts = 1;
        fm_part *pt = &fm->part[0];
        pt->mat = material;
        pt->mu = defo_material_mu(material);
        pt->lambda = defo_material_lambda(material);
        defo_material_damping_moduli(material, &pt->mu_d, &pt->lambda_d);
        fm->damping = pt->mu_d > 0 || pt->lambda_d > 0;
        defo_status st = create_shell(fm);
        if (st) {
            defo_force_model_destroy(fm);
            return st;
        }
        *out = fm;
        return DEFO_OK;
    }
    const int fibres = defo_material_has_fibres(material);
    if (fibres && d.formulation == DEFO_FORMULATION_COROTATED)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "force model: the corotated formulation cannot carry a fibre term: its "
                          "stress is linear in a lagged rotated strain (MG04 §2.3, MTPS08 §4.4), "
                          "while the fibre stress (ITF04 §6.1) is a nonlinear function of the "
                          "fibre stretch |F a| — use the invertible formulation");
    if (fibres && !defo_element_rest_fibres(rest))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: the material has a fibre term (ITF04 §6.1) but the rest "
                          "data has no fibre directions (defo_element_rest_set_fibres)");
    defo_force_model *fm = defo_calloc(1, sizeof *fm);
    if (!fm) return defo_error_oom("force model", sizeof *fm);
    fm->def = d;
    fm->fix = d.definiteness_fix;
    fm->mesh = mesh;
    fm->rest = rest;
    fm->ops = ops;
    fm->npe = ops->nodes;
    fm->nq = ops->stiffness.num_points;
    fm->n = mesh->num_nodes;
    fm->ne = mesh->num_elems;
    fm->jinv = fm->jinv_rest = defo_element_rest_jinv(rest);
    fm->w = defo_element_rest_weight(rest);
    fm->part = defo_calloc(1, sizeof *fm->part);
    fm->num_parts = fm->part ? 1 : 0;
    defo_status st = fm->part ? fm_part_make(fm, material, &fm->part[0])
                              : defo_error_oom("force model", sizeof *fm->part);
    const size_t ne = (size_t)fm->ne, np = ne * (size_t)fm->nq;
    fm->slot = defo_malloc(9 * (size_t)fm->npe * ne * sizeof(double) + 1);
    fm->elem_energy = defo_calloc(ne + 1, sizeof(double));
    fm->flag = defo_calloc(ne + 1, 1);
    fm->stable_len = defo_calloc(ne + 1, sizeof(double));
    fm->R = defo_malloc(9 * np * sizeof(double) + 1);
    fm->M = defo_malloc(9 * np * sizeof(double) + 1);
    fm->sig = defo_calloc(3 * np + 1, sizeof(double));
    fm->phat = defo_calloc(3 * np + 1, sizeof(double));
    if (d.formulation == DEFO_FORMULATION_INVERTIBLE) {
        fm->dpdf = defo_calloc(np + 1, sizeof(defo_dpdf));
        fm->direct = defo_calloc(np + 1, 1);
        if (fibres) {
            fm->fibres = 1;
            fm->fibre = defo_element_rest_fibres(rest);
            fm->fib = defo_calloc(FM_FIB * np + 1, sizeof(double));
            if (!fm->fib) st = defo_error_oom("fibre state", FM_FIB * np * sizeof(double));
        }
    } else {
        fm->age = defo_calloc(np + 1, sizeof(int32_t));
        if (fm->npe == 10) fm->cvec = defo_malloc(120 * ne * sizeof(double) + 1);
    }
    const int keep_F = defo_fm_lazy(&d) && d.lazy_tolerance > 0;
    if (keep_F) fm->F_last = defo_malloc(9 * np * sizeof(double) + 1);
    if (!st && (!fm->slot || !fm->elem_energy || !fm->flag || !fm->stable_len || !fm->R || !fm->M ||
                !fm->sig || !fm->phat || (!fm->dpdf && !fm->age) || (fm->dpdf && !fm->direct) ||
                (keep_F && !fm->F_last) || (fm->age && fm->npe == 10 && !fm->cvec)))
        st = defo_error_oom("force model state", np * 40 * sizeof(double));
    if (!st) st = defo_incidence_build(&fm->inc, mesh->elems, fm->ne, fm->npe, fm->n);
    if (st) {
        defo_force_model_destroy(fm);
        return st;
    }
    /* rest state: F = I, so U = V = R = I, D̂ = J⁻¹, M = J⁻ᵀ, σ = 1 */
    for (size_t p = 0; p < np; p++) {
        const double *Ji = fm->jinv + 9 * p;
        for (int k = 0; k < 9; k++) {
            fm->R[9 * p + k] = (k % 4 == 0) ? 1.0 : 0.0;
            fm->M[9 * p + k] =
                d.formulation == DEFO_FORMULATION_COROTATED ? Ji[3 * (k % 3) + k / 3] : Ji[k];
            fm->max_jinv = fmax(fm->max_jinv, fabs(Ji[k]));
        }
        if (fm->F_last)
            for (int k = 0; k < 9; k++) fm->F_last[9 * p + k] = (k % 4 == 0) ? 1.0 : 0.0;
        if (d.formulation == DEFO_FORMULATION_INVERTIBLE)
            fm->sig[3 * p] = fm->sig[3 * p + 1] = fm->sig[3 * p + 2] = 1.0;
    }
    fm->all_stale = 1;
    /* each element's stable length at rest, their smallest over the wave
     * speed, the wave time */
    fm->elen = fm->elen_rest = defo_element_rest_eigen_length(rest);
    fm_parts_changed(fm);
    fm_rest_times(fm);
    *out = fm;
    return DEFO_OK;
}

defo_formulation defo_force_model_formulation(const defo_force_model *fm) {
    return fm->def.formulation;
}

static int corotated(const defo_force_model *fm) {
    return fm->def.formulation == DEFO_FORMULATION_COROTATED;
}

/* ------------------------------------------------ distributed evaluation */
defo_status defo_force_model_set_share(defo_force_model *fm, const defo_force_share *share) {
    if (!fm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: NULL");
    fm->shared = 0;
    fm->share_status = DEFO_OK;
    if (!share) return DEFO_OK;
    if (!share->comm || !share->complete || (fm->ne > 0 && !share->counted))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model share: comm, counted flags and complete are needed");
    fm->share = *share;
    fm->shared = 1;
    double t[2] = {fm->wave_time, fm->stable_time};
    defo_status s = defo_comm_min(share->comm, t, 2);
    fm->wave_time = t[0];
    fm->stable_time = t[1];
    return s;
}

/* The outputs of an evaluation made the whole body's (defo_force_share). */
static defo_status share_evaluation(defo_force_model *fm, defo_status st, double *force,
                                    double *energy) {
    const defo_force_share *sh = &fm->share;
    if (!st && fm->share_status) st = fm->share_status;
    fm->share_status = DEFO_OK;
    st = defo_comm_agree(sh->comm, st);
    if (st < 0) return st;
    /* the counted elements' energy and inverted count, the stable time */
    double v[3] = {0.0, 0.0, fm->stable_time};
    for (defo_index e = 0; e < fm->ne; e++) {
        if (!sh->counted[e]) continue;
        if (energy) v[0] += fm->elem_energy[e];
        v[1] += (fm->flag[e] & FM_INVERTED) != 0;
    }
    defo_status s = defo_comm_sum(sh->comm, v, 2);
    if (!s && fm->track_stable_time) s = defo_comm_min(sh->comm, v + 2, 1);
    if (!s && force) s = sh->complete(sh->ctx, force, 3);
    if (s) return s;
    if (energy) *energy = v[0];
    fm->inverted = (defo_index)v[1];
    fm->stable_time = v[2];
    return st;
}

/* A product or diagonal made whole; a failure is told by the next
 * evaluation (these calls have no status). */
static void share_complete(defo_force_model *fm, double *v, int width) {
    if (!fm->shared) return;
    defo_status s = fm->share.complete(fm->share.ctx, v, width);
    if (s && !fm->share_status) fm->share_status = s;
}

defo_status defo_force_model_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                      double *force, double *energy) {
    if (!fm || !x) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: NULL argument");
    if ((flags & DEFO_EVAL_ROTATIONS_ONLY) && (!corotated(fm) || fm->shell || force || energy))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: a rotations-only evaluation is for COROTATED models, "
                          "with no force or energy output");
    defo_status st;
    if (fm->shell)
        st = defo_fm_shell_evaluate(fm, x, flags, force, energy);
    else
        st = corotated(fm) ? defo_fm_corot_evaluate(fm, x, flags, force, energy)
                           : defo_fm_hyper_evaluate(fm, x, flags, force, energy);
    return fm->shared ? share_evaluation(fm, st, force, energy) : st;
}

defo_status defo_force_model_energy_of(const defo_force_model *fm, const double *x,
                                       const defo_index *elems, defo_index count, double *energy) {
    if (!fm || !x || !energy || (count > 0 && !elems))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model energy: NULL argument");
    if (corotated(fm))
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "force model energy of an element set: INVERTIBLE only");
    for (defo_index k = 0; k < count; k++)
        if (elems[k] < 0 || elems[k] >= fm->ne)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "force model energy: element %ld out of range [0, %ld)",
                              (long)elems[k], (long)fm->ne);
    if (fm->shell) return defo_fm_shell_energy_of(fm, x, elems, count, energy);
    if (!fm->shared) return defo_fm_hyper_energy_of(fm, x, elems, count, energy);
    /* the listed elements this process counts, then the sum over processes */
    double e = 0.0;
    defo_status s = DEFO_OK;
    for (defo_index k = 0; k < count && !s; k++) {
        double ek = 0.0;
        if (fm->share.counted[elems[k]]) s = defo_fm_hyper_energy_of(fm, x, elems + k, 1, &ek);
        e += ek;
    }
    s = defo_comm_agree(fm->share.comm, s);
    if (!s) s = defo_comm_sum(fm->share.comm, &e, 1);
    if (!s) *energy = e;
    return s;
}

void defo_force_model_tangent_apply(defo_force_model *fm, const double *d, double *y) {
    if (fm->shell)
        defo_fm_shell_tangent_apply(fm, d, y);
    else if (corotated(fm))
        defo_fm_corot_apply(fm, d, y, 0);
    else
        defo_fm_hyper_tangent_apply(fm, d, y);
    share_complete(fm, y, 3);
}

void defo_force_model_tangent_diagonal(defo_force_model *fm, double *blocks) {
    if (corotated(fm))
        defo_fm_corot_diagonal(fm, blocks, 0);
    else if (fm->shell)
        defo_fm_shell_tangent_diagonal(fm, blocks);
    else
        defo_fm_hyper_tangent_diagonal(fm, blocks);
    share_complete(fm, blocks, 9);
}

int defo_force_model_has_damping(const defo_force_model *fm) {
    return fm->damping;
}

void defo_force_model_damping_apply(defo_force_model *fm, const double *v, double *y) {
    if (!fm->damping) {
        memset(y, 0, 3 * (size_t)fm->n * sizeof *y);
        return;
    }
    if (fm->shell)
        defo_fm_shell_damping_apply(fm, v, y);
    else if (corotated(fm))
        defo_fm_corot_apply(fm, v, y, 1);
    else
        defo_fm_hyper_damping_apply(fm, v, y);
    share_complete(fm, y, 3);
}

void defo_force_model_damping_diagonal(defo_force_model *fm, double *blocks) {
    if (!fm->damping) {
        memset(blocks, 0, 9 * (size_t)fm->n * sizeof *blocks);
        return;
    }
    if (fm->shell)
        defo_fm_shell_damping_diagonal(fm, blocks);
    else if (corotated(fm))
        defo_fm_corot_diagonal(fm, blocks, 1);
    else
        defo_fm_hyper_damping_diagonal(fm, blocks);
    share_complete(fm, blocks, 9);
}

defo_bcsr *defo_force_model_assemble(defo_force_model *fm, double k, double c, const double *mass,
                                     double m) {
    if (!fm->A) {
        const defo_index *conn = fm->shell ? defo_fm_shell_stencil(fm) : fm->mesh->elems;
        defo_status st = defo_bcsr_create(conn, fm->ne, fm->npe, fm->n, &fm->A);
        if (st) {
            defo_error_prefix("force model matrix");
            return NULL;
        }
    }
    if (fm->shell)
        defo_fm_shell_assemble(fm, k, c);
    else if (corotated(fm))
        defo_fm_corot_assemble(fm, k, c);
    else
        defo_fm_hyper_assemble(fm, k, c);
    if (mass && m != 0.0) defo_bcsr_add_diagonal(fm->A, mass, m);
    return fm->A;
}

defo_index defo_force_model_count_inverted(const defo_force_model *fm) {
    return fm->inverted;
}

defo_index defo_force_model_count_inverted_at(const defo_force_model *fm, const double *x) {
    if (!fm || !x) return 0;
    if (fm->shell) return defo_fm_shell_count_inverted_at(fm, x);
    /* det F = det H · det J⁻¹ with det J⁻¹ > 0 on a valid rest mesh: the
     * element layer's sign of det J at the stiffness points */
    defo_index count = 0;
    if (defo_element_fold_state(fm->mesh, x, NULL, &count, NULL)) return 0;
    return count;
}

double defo_force_model_wave_time(const defo_force_model *fm) {
    return fm->wave_time;
}

double defo_force_model_stable_time(const defo_force_model *fm) {
    return fm->stable_time;
}

int defo_force_model_track_stable_time(defo_force_model *fm) {
    if (!fm || fm->track_stable_time) return 0;
    fm->track_stable_time = 1;
    return 1;
}

double defo_force_model_shear_modulus(const defo_force_model *fm, defo_index e) {
    return fm_part_of(fm, e)->mu;
}

int defo_force_model_points(const defo_force_model *fm) {
    return fm->nq;
}

const defo_mesh *defo_force_model_mesh(const defo_force_model *fm) {
    return fm ? fm->mesh : NULL;
}

size_t defo_force_model_bytes(const defo_force_model *fm) {
    if (!fm) return 0;
    if (fm->shell)
        return sizeof *fm + defo_fm_shell_bytes(fm) + (size_t)fm->ne * 56 * sizeof(double) +
               (fm->A ? defo_bcsr_bytes(fm->A) : 0);
    const size_t ne = (size_t)fm->ne, np = ne * (size_t)fm->nq;
    size_t b = sizeof *fm + ne * (9 * (size_t)fm->npe + 1) * sizeof(double) + ne +
               np * 24 * sizeof(double) +
               ((size_t)fm->n + 1 + ne * (size_t)fm->npe) * sizeof(int64_t);
    if (fm->dpdf) b += np * sizeof(defo_dpdf);
    if (fm->fib) b += FM_FIB * np * sizeof(double);
    if (fm->age) b += np * sizeof(int32_t);
    if (fm->F_last) b += 9 * np * sizeof(double);
    if (fm->jinv_plastic) b += (9 * np + ne) * sizeof(double);
    if (fm->A) b += defo_bcsr_bytes(fm->A);
    return b;
}

/* The plastic part's data at the listed points (NULL: all) and their
 * elements: J⁻¹ F_p⁻¹, the four-wide copy, the stable lengths. */
static void fm_fold_plastic(defo_force_model *fm, const unsigned char *changed) {
    if (fm->shell) { /* the shell kernel reads F_p⁻¹ itself: stable times only */
        defo_fm_shell_plastic_changed(fm);
        return;
    }
    const int NQ = fm->nq;
    for (defo_index e = 0; e < fm->ne; e++) {
        int any = !changed;
        for (int q = 0; fm->fp_inv && q < NQ; q++) {
            const size_t pq = (size_t)e * (size_t)NQ + (size_t)q;
            if (changed && !changed[pq]) continue;
            any = 1;
            defo_mat3 Ji, A;
            memcpy(Ji.m, fm->jinv_rest + 9 * pq, sizeof Ji.m);
            memcpy(A.m, fm->fp_inv + 9 * pq, sizeof A.m);
            const defo_mat3 J = defo_m3_mul(Ji, A);
            memcpy(fm->jinv_plastic + 9 * pq, J.m, sizeof J.m);
            for (int k = 0; k < 9; k++) { /* a NaN entry is passed over, as by fmax */
                const double a = fabs(J.m[k / 3][k % 3]);
                fm->max_jinv = a > fm->max_jinv ? a : fm->max_jinv;
            }
        }
        if (!any) continue;
        double worst = 1.0; /* the largest ‖F_p⁻¹‖₂ over the points */
        for (int q = 0; fm->fp_inv && q < NQ; q++) {
            const size_t pq = (size_t)e * (size_t)NQ + (size_t)q;
            defo_mat3 A, C;
            defo_vec3 l;
            memcpy(A.m, fm->fp_inv + 9 * pq, sizeof A.m);
            C = defo_m3_tmul(A, A);
            defo_sym3_eigenvalues(&C, &l);
            /* the closed form is good to ~1e-11 ‖C‖: round the norm up */
            const double nq = sqrt((l.x > 0 ? l.x : 0.0) * (1 + 1e-9));
            worst = nq > worst ? nq : worst;
        }
        const double ds = fm->density_scale ? sqrt(fm->density_scale[e]) : 1.0;
        fm->elen_own[e] =
            fm->elen_rest[e] * ds / worst * (fm->wave_speed / fm_part_of(fm, e)->wave_speed);
        if (fm->fp_inv && fm->jinv4 && (size_t)e < 4 * ((size_t)fm->ne / 4))
            fm_pack_lanes(fm, (size_t)e / 4);
    }
    if (fm->fp_inv && fm->def.formulation == DEFO_FORMULATION_COROTATED)
        defo_fm_corot_plastic_changed(fm, changed);
    fm_rest_times(fm);
}

void defo_force_model_set_activation(defo_force_model *fm, const double *activation) {
    fm->activation = activation;
}

/* Own stable lengths (and J⁻¹ F_p⁻¹) when the model needs them. */
static defo_status fm_own_arrays(defo_force_model *fm) {
    const size_t np = (size_t)fm->ne * (size_t)fm->nq;
    if (fm->fp_inv && !fm->jinv_plastic) {
        fm->jinv_plastic = defo_malloc(9 * np * sizeof(double) + 1);
        if (!fm->jinv_plastic) return defo_error_oom("plastic rest data", 9 * np * sizeof(double));
    }
    if (!fm->elen_own) {
        fm->elen_own = defo_malloc((size_t)fm->ne * sizeof(double) + 1);
        if (!fm->elen_own) return defo_error_oom("stable lengths", (size_t)fm->ne * sizeof(double));
    }
    fm->jinv = fm->fp_inv ? fm->jinv_plastic : fm->jinv_rest;
    fm->elen = fm->fp_inv || fm->density_scale || fm->part_of ? fm->elen_own : fm->elen_rest;
    return DEFO_OK;
}

defo_status defo_force_model_set_plastic(defo_force_model *fm, const double *fp_inv) {
    if (!fm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: NULL argument");
    const size_t np = (size_t)fm->ne * (size_t)fm->nq;
    for (size_t k = 0; fp_inv && k < 9 * np; k++)
        if (!isfinite(fp_inv[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "force model: plastic part of element %zu is not finite",
                              k / 9 / (size_t)fm->nq);
    const double *old = fm->fp_inv;
    fm->fp_inv = fp_inv;
    defo_status s = fm_own_arrays(fm);
    if (s) {
        fm->fp_inv = old;
        return s;
    }
    if (!fp_inv) { /* back to the rest data's J⁻¹ */
        for (size_t b = 0; fm->jinv4 && b < (size_t)fm->ne / 4; b++) fm_pack_lanes(fm, b);
        if (fm->def.formulation == DEFO_FORMULATION_COROTATED)
            defo_fm_corot_plastic_changed(fm, NULL);
    }
    fm_fold_plastic(fm, NULL);
    return DEFO_OK;
}

defo_status defo_force_model_set_materials(defo_force_model *fm, int count,
                                           const defo_material *const *materials,
                                           const int32_t *material_of) {
    if (!fm || count < 1 || !materials || (count > 1 && !material_of))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model materials: bad arguments");
    for (defo_index e = 0; material_of && e < fm->ne; e++)
        if (material_of[e] < 0 || material_of[e] >= count)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "force model materials: element %ld has material %d of %d", (long)e,
                              (int)material_of[e], count);
    for (int k = 0; fm->shell && k < count; k++) /* what shell create checks */
        if (materials[k] && !(defo_material_get_def(materials[k])->thickness > 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "force model materials: material %d: a shell needs a thickness > 0 "
                              "(it is %g)",
                              k, defo_material_get_def(materials[k])->thickness);
    /* a fibre term anywhere needs what create checks for the first material */
    int fibres = 0;
    for (int k = 0; k < count; k++)
        fibres |= materials[k] && defo_material_has_fibres(materials[k]);
    if (fibres &&
        (fm->def.formulation == DEFO_FORMULATION_COROTATED || !defo_element_rest_fibres(fm->rest)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model materials: a fibre term (ITF04 §6.1) needs the invertible "
                          "formulation and fibre directions in the rest data");
    if (fibres && !fm->fib) {
        const size_t np = (size_t)fm->ne * (size_t)fm->nq;
        fm->fib = defo_calloc(FM_FIB * np + 1, sizeof(double));
        if (!fm->fib) return defo_error_oom("fibre state", FM_FIB * np * sizeof(double));
    }
    fm_part *np = defo_calloc((size_t)count, sizeof *np);
    if (!np) return defo_error_oom("force model materials", (size_t)count * sizeof *np);
    defo_status s = DEFO_OK;
    for (int k = 0; k < count && !s; k++) {
        if (!materials[k])
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model materials: %d is NULL", k);
        else
            s = fm_part_make(fm, materials[k], &np[k]);
    }
    if (s) {
        for (int k = 0; k < count; k++) defo_material_destroy(np[k].own);
        defo_free(np);
        return s;
    }
    for (int k = 0; k < fm->num_parts; k++) defo_material_destroy(fm->part[k].own);
    defo_free(fm->part);
    fm->part = np;
    fm->num_parts = count;
    fm->part_of = count > 1 ? material_of : NULL;
    fm->fibres = fibres;
    fm->fibre = fibres ? defo_element_rest_fibres(fm->rest) : NULL;
    if (fm->shell) s = defo_fm_shell_set_parts(fm); /* its parts' constants and forms */
    fm_parts_changed(fm);
    if (!s) s = fm_own_arrays(fm);
    if (!s) fm_fold_plastic(fm, NULL);
    return s;
}

defo_status defo_force_model_set_density_scale(defo_force_model *fm, const double *scale) {
    if (!fm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model: NULL argument");
    for (defo_index e = 0; scale && e < fm->ne; e++)
        if (!(scale[e] > 0) || !isfinite(scale[e]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "force model: density scale %g of element %ld is not > 0", scale[e],
                              (long)e);
    fm->density_scale = scale;
    defo_status s = fm_own_arrays(fm);
    if (s) {
        fm->density_scale = NULL;
        return s;
    }
    fm_fold_plastic(fm, NULL);
    return DEFO_OK;
}

void defo_force_model_plastic_changed(defo_force_model *fm, const unsigned char *changed) {
    if (fm && fm->fp_inv) fm_fold_plastic(fm, changed);
}

/* F at every point of the elements [e0, e1) (9 each, element-major). */
static void fm_deformation_range(const defo_force_model *fm, const double *x, const double *jinv,
                                 defo_index e0, defo_index e1, double *F) {
    const int P = fm->npe, NQ = fm->nq;
    const defo_quadrature *rule = &fm->ops->stiffness;
    for (defo_index e = e0; e < e1; e++)
        for (int q = 0; q < NQ; q++) {
            const size_t pq = (size_t)e * (size_t)NQ + (size_t)q;
            double H[9];
            if (P == 4)
                fm_grad_sum(4, x, fm->mesh->elems + 4 * (size_t)e, rule->grad, H);
            else
                fm_grad_sum(10, x, fm->mesh->elems + 10 * (size_t)e, rule->grad + 30 * q, H);
            const double *Ji = jinv + 9 * pq;
            double *o = F + 9 * pq;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++)
                    o[3 * r + k] =
                        H[3 * r] * Ji[k] + H[3 * r + 1] * Ji[3 + k] + H[3 * r + 2] * Ji[6 + k];
        }
}

defo_status defo_force_model_deformation(const defo_force_model *fm, const double *x, int elastic,
                                         double *F) {
    if (!fm || !x || !F)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force model deformation: NULL argument");
    if (fm->shell) { /* diag(F₂, 1): the in-plane part in the rest frame */
        defo_fm_shell_deformation(fm, x, elastic, F);
        for (size_t k = 0; k < 9 * (size_t)fm->ne; k++)
            if (!isfinite(F[k]))
                return defo_error(DEFO_ERR_NUMERICAL, "element %ld: non-finite deformation",
                                  (long)(k / 9));
        return DEFO_OK;
    }
    const double *jinv = elastic ? fm->jinv : fm->jinv_rest;
    const defo_index ne = fm->ne;
    const size_t per = 9 * (size_t)fm->nq;
    defo_index bad = 0;
    DEFO_PARALLEL_REGION_IF(DEFO_PARALLEL_WORTH(ne, fm->npe == 4 ? 10 : 80)) {
        DEFO_FOR_SUM(bad)
        for (defo_index e = 0; e < ne; e++) {
            fm_deformation_range(fm, x, jinv, e, e + 1, F);
            double z = 0; /* NaN or ±inf anywhere makes z NaN */
            for (size_t k = 0; k < per; k++) z += 0.0 * F[(size_t)e * per + k];
            bad += z != 0.0;
        }
    }
    for (defo_index e = 0; bad && e < ne; e++)
        for (size_t k = 0; k < per; k++)
            if (!isfinite(F[(size_t)e * per + k]))
                return defo_error(DEFO_ERR_NUMERICAL, "element %ld: non-finite deformation",
                                  (long)e);
    return DEFO_OK;
}

/* The fibre term's Cauchy stress σ_f = P_f Fᵀ/J = T λ t tᵀ / J (J held at
 * ≥ 0.01 as below) added to sig, and the principal values recomputed. */
static void fibre_stress(const defo_force_model *fm, size_t pq, double J, double sig[9],
                         double pr[3]) {
    const double *f = fm->fib + FM_FIB * pq, d = J > 0.01 ? J : 0.01;
    const double c = f[FM_FIB_T] * f[FM_FIB_LAM] / d;
    defo_mat3 S, Q;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) S.m[r][k] = sig[3 * r + k] += c * f[r] * f[k];
    defo_vec3 l;
    defo_sym3_eigen(&S, &l, &Q);
    pr[0] = l.x, pr[1] = l.y, pr[2] = l.z;
}

/* Principal stresses (descending) and J at point pq of the last evaluation. */
static double point_stress(const defo_force_model *fm, size_t pq, double sig[9], double pr[3]) {
    if (corotated(fm)) {
        /* R σ Rᵀ: the world frame; its eigenvalues are σ's */
        const double *a = fm->sig + 3 * pq, *b = fm->phat + 3 * pq, *R = fm->R + 9 * pq;
        const double S[9] = {a[0], b[0], b[2], b[0], a[1], b[1], b[2], b[1], a[2]};
        double RS[9];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                RS[3 * r + k] = R[3 * r] * S[k] + R[3 * r + 1] * S[3 + k] + R[3 * r + 2] * S[6 + k];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                sig[3 * r + k] = RS[3 * r] * R[3 * k] + RS[3 * r + 1] * R[3 * k + 1] +
                                 RS[3 * r + 2] * R[3 * k + 2];
        defo_mat3 Sm, Q;
        defo_vec3 l;
        memcpy(Sm.m, S, sizeof S);
        defo_sym3_eigen(&Sm, &l, &Q);
        pr[0] = l.x, pr[1] = l.y, pr[2] = l.z;
        return NAN; /* J from F: the caller's */
    }
    if (fm->direct[pq]) {
        /* SVD-free point (J > 0): P again from the kept F (the same call
         * that took the path, so it answers again), σ = P Fᵀ / J */
        const double *F = fm->M + 9 * pq;
        defo_mat3 Fm, Pmat, S, Q;
        memcpy(Fm.m, F, sizeof Fm.m);
        const defo_material *mat = fm_part_of(fm, (defo_index)(pq / (size_t)fm->nq))->mat;
        if (!defo_material_eval_direct(mat, &Fm, NULL, &Pmat)) Pmat = defo_m3_zero();
        const double *Pm = &Pmat.m[0][0];
        const double J = defo_m3_det(Fm), d = J > 0.01 ? J : 0.01;
        double t[9];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                t[3 * r + k] = Pm[3 * r] * F[3 * k] + Pm[3 * r + 1] * F[3 * k + 1] +
                               Pm[3 * r + 2] * F[3 * k + 2];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                sig[3 * r + k] = S.m[r][k] = 0.5 * (t[3 * r + k] + t[3 * k + r]) / d;
        defo_vec3 l;
        defo_sym3_eigen(&S, &l, &Q);
        pr[0] = l.x, pr[1] = l.y, pr[2] = l.z;
        if (fm->fibres) fibre_stress(fm, pq, J, sig, pr);
        return J;
    }
    const double *s = fm->sig + 3 * pq, *p = fm->phat + 3 * pq, *U = fm->R + 9 * pq;
    const double J = s[0] * s[1] * s[2], d = J > 0.01 ? J : 0.01;
    for (int i = 0; i < 3; i++) pr[i] = p[i] * s[i] / d;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            sig[3 * r + k] = U[3 * r] * pr[0] * U[3 * k] + U[3 * r + 1] * pr[1] * U[3 * k + 1] +
                             U[3 * r + 2] * pr[2] * U[3 * k + 2];
    if (fm->fibres) fibre_stress(fm, pq, J, sig, pr);
    return J;
}

void defo_force_model_stress(const defo_force_model *fm, defo_index e, int q, double sigma[9]) {
    double pr[3];
    if (fm->shell) {
        defo_fm_shell_stress(fm, e, sigma, pr);
        return;
    }
    point_stress(fm, (size_t)e * (size_t)fm->nq + (size_t)q, sigma, pr);
}

/* Shells: per triangle the area stretch σ1σ2 (as J) and the plane-stress
 * Cauchy stress's von Mises and largest principal values, per node their
 * area-weighted means over the node's triangles. */
static defo_status shell_fields(defo_force_model *fm, defo_force_fields *out) {
    const double *area = defo_element_rest_volume(fm->rest);
    double min_J = INFINITY;
    defo_index inverted = 0;
    for (defo_index e = 0; e < fm->ne; e++) {
        double S[9], pr[3];
        const double J = defo_fm_shell_stress(fm, e, S, pr);
        const double vm =
            sqrt(0.5 * ((pr[0] - pr[1]) * (pr[0] - pr[1]) + (pr[1] - pr[2]) * (pr[1] - pr[2]) +
                        (pr[2] - pr[0]) * (pr[2] - pr[0])));
        const double mp = pr[0];
        if (out->J) out->J[e] = J;
        if (out->von_mises) out->von_mises[e] = vm;
        if (out->max_principal) out->max_principal[e] = mp;
        min_J = fmin(min_J, J);
        inverted += (fm->flag[e] & FM_INVERTED) != 0;
        double *s = fm->slot + 18 * (size_t)e;
        memset(s, 0, 18 * sizeof(double));
        for (int n = 0; n < 3; n++) {
            s[3 * n] = area[e] * vm;
            s[3 * n + 1] = area[e] * mp;
            s[3 * n + 2] = area[e];
        }
    }
    out->inverted = inverted;
    out->min_J = min_J;
    if (out->node_von_mises || out->node_max_principal) {
        const defo_incidence *inc = &fm->inc;
        for (defo_index i = 0; i < fm->n; i++) {
            double s1 = 0, s2 = 0, sw = 0;
            for (int64_t k = inc->offset[i]; k < inc->offset[i + 1]; k++) {
                const double *s = fm->slot + 3 * inc->slot[k];
                s1 += s[0], s2 += s[1], sw += s[2];
            }
            if (out->node_von_mises) out->node_von_mises[i] = sw > 0 ? s1 / sw : 0.0;
            if (out->node_max_principal) out->node_max_principal[i] = sw > 0 ? s2 / sw : 0.0;
        }
    }
    return DEFO_OK;
}

defo_status defo_force_model_fields(defo_force_model *fm, const double *x, defo_force_fields *out) {
    if (!fm || !x || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "force fields: NULL argument");
    /* corotated: the current rotations (fields never change the stepping state) */
    defo_status st = defo_force_model_evaluate(fm, x, DEFO_EVAL_KEEP_ROTATIONS, NULL, NULL);
    if (st) return st;
    if (fm->shell) return shell_fields(fm, out);
    const int P = fm->npe, NQ = fm->nq;
    const defo_quadrature *rule = &fm->ops->stiffness;
    const double a = NQ == 4 ? rule->point[0] : 1.0, b = NQ == 4 ? rule->point[1] : 0.0;
    const double *vol = defo_element_rest_volume(fm->rest);
    double min_J = INFINITY;
    defo_index inverted = 0;
    /* per slot: volume-weighted von Mises and max principal, and the weight */
    double *sl = fm->slot;
    for (defo_index e = 0; e < fm->ne; e++) {
        double vm_q[DEFO_ELEMENT_MAX_POINTS], mp_q[DEFO_ELEMENT_MAX_POINTS];
        double Jm = 0, vm = 0, mp = 0, mn = 0, wsum = 0;
        int inv = 0;
        for (int q = 0; q < NQ; q++) {
            const size_t pq = (size_t)e * NQ + (size_t)q;
            double S[9], pr[3];
            double J = point_stress(fm, pq, S, pr);
            if (corotated(fm) || fm->fp_inv) {
                /* det F of the whole deformation (with a plastic part the
                 * stress is F_e's, the volume change F's) */
                double H[9];
                fm_grad_sum(P == 4 ? 4 : 10, x, fm->mesh->elems + (size_t)e * P,
                            rule->grad + 3 * P * q, H);
                defo_mat3 Hm, Ji;
                memcpy(Hm.m, H, sizeof H);
                memcpy(Ji.m, fm->jinv_rest + 9 * pq, sizeof H);
                J = defo_m3_det(defo_m3_mul(Hm, Ji));
            }
            const double w = fm->w[pq];
            vm_q[q] =
                sqrt(0.5 * ((pr[0] - pr[1]) * (pr[0] - pr[1]) + (pr[1] - pr[2]) * (pr[1] - pr[2]) +
                            (pr[2] - pr[0]) * (pr[2] - pr[0])));
            mp_q[q] = fmax(pr[0], fmax(pr[1], pr[2]));
            Jm += w * J;
            vm += w * vm_q[q];
            mp += w * mp_q[q];
            mn += w * fmin(pr[0], fmin(pr[1], pr[2]));
            wsum += w;
            if (J <= 0) inv = 1;
            min_J = fmin(min_J, J);
        }
        inverted += inv;
        if (out->J) out->J[e] = Jm / wsum;
        if (out->von_mises) out->von_mises[e] = vm / wsum;
        if (out->max_principal) out->max_principal[e] = mp / wsum;
        if (out->min_principal) out->min_principal[e] = mn / wsum;
        /* node values: the constant (tet4) or the linear fit through the points */
        double cv[4], cm[4], sv = 0, sm = 0;
        for (int q = 0; q < NQ; q++) sv += vm_q[q], sm += mp_q[q];
        for (int i = 0; i < 4; i++) {
            cv[i] = NQ == 1 ? vm_q[0] : (vm_q[i] - b * sv) / (a - b);
            cm[i] = NQ == 1 ? mp_q[0] : (mp_q[i] - b * sm) / (a - b);
        }
        double *s = sl + 9 * (size_t)P * (size_t)e;
        for (int n = 0; n < P; n++) {
            double v1, v2;
            if (n < 4) {
                v1 = cv[n], v2 = cm[n];
            } else {
                const int i = defo_tet_edges[n - 4][0], j = defo_tet_edges[n - 4][1];
                v1 = 0.5 * (cv[i] + cv[j]), v2 = 0.5 * (cm[i] + cm[j]);
            }
            s[3 * n] = vol[e] * v1;
            s[3 * n + 1] = vol[e] * v2;
            s[3 * n + 2] = vol[e];
        }
    }
    out->inverted = inverted;
    out->min_J = min_J;
    if (out->node_von_mises || out->node_max_principal) {
        const defo_incidence *inc = &fm->inc;
        for (defo_index i = 0; i < fm->n; i++) {
            double s1 = 0, s2 = 0, sw = 0;
            for (int64_t k = inc->offset[i]; k < inc->offset[i + 1]; k++) {
                const int64_t slot = inc->slot[k], e = slot / P, n = slot - e * P;
                const double *s = sl + 9 * (size_t)P * (size_t)e + 3 * n;
                s1 += s[0], s2 += s[1], sw += s[2];
            }
            if (out->node_von_mises) out->node_von_mises[i] = sw > 0 ? s1 / sw : 0.0;
            if (out->node_max_principal) out->node_max_principal[i] = sw > 0 ? s2 / sw : 0.0;
        }
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------ helpers */
void defo_fm_gather9_team(const defo_force_model *fm, const double *slot9, double *out) {
    const defo_incidence *inc = &fm->inc;
    const defo_index n = fm->n;
    DEFO_FOR
    for (defo_index i = 0; i < n; i++) {
        double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t k = inc->offset[i]; k < inc->offset[i + 1]; k++) {
            const double *p = slot9 + 9 * inc->slot[k];
            for (int j = 0; j < 9; j++) s[j] += p[j];
        }
        memcpy(out + 9 * (size_t)i, s, sizeof s);
    }
}

defo_status defo_fm_report_bad(const defo_force_model *fm, const double *x) {
    for (defo_index e = 0; e < fm->ne; e++) {
        if (!(fm->flag[e] & FM_BAD)) continue;
        const int P = fm->mesh->nodes_per_elem;
        const defo_index *v = fm->mesh->elems + (size_t)e * (size_t)P;
        for (int a = 0; a < P; a++) {
            const double *p = x + 3 * (size_t)v[a];
            if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
                return defo_error(DEFO_ERR_NUMERICAL,
                                  "element %ld: node %ld has a non-finite position", (long)e,
                                  (long)v[a]);
        }
        return defo_error(DEFO_ERR_NUMERICAL,
                          "element %ld: non-finite deformation, stress or energy (node positions "
                          "beyond 1e100 m or an overflow)",
                          (long)e);
    }
    return defo_error(DEFO_ERR_NUMERICAL, "non-finite total elastic energy");
}

double defo_fm_sum_energy(const defo_force_model *fm) {
    /* defo_sum's fixed blocks, in chunks that keep its stack bounded */
    const size_t n = (size_t)fm->ne, chunk = (size_t)64 * 4096;
    double s = 0.0;
    for (size_t i = 0; i < n; i += chunk)
        s += defo_sum(fm->elem_energy + i, n - i < chunk ? n - i : chunk);
    return s;
}
