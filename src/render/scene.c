/*
 * render/scene.c — from a mesh, a field and colliders to a picture.
 *
 * What it computes (backend independent, so OpenGL and software pictures
 * frame and colour alike):
 *   - the body's boundary surface (defo_mesh_boundary; a tet10 mesh's curved
 *     6-node faces as the 4 flat triangles of defo_tri6_split through their
 *     edge nodes; a triangle mesh is drawn as is) with flat normals at the
 *     drawn positions,
 *     coloured by a scalar field through a colour map (cell fields constant
 *     per face, point fields per vertex); faces of elements with
 *     det[x1-x0, x2-x0, x3-x0] <= 0 are magenta when highlighting is on;
 *   - collider shapes tessellated in the world (planes as squares; a +z
 *     plane is the ground itself);
 *   - a checkered ground below the object whose checks are a round length
 *     (1, 2 or 5 x 10^k m) about R/2.5, R the framing radius, fading out
 *     toward its edge so it meets the background without a seam;
 *   - the camera: perspective (30° vertical field of view), a 3/4 view from
 *     above (azimuth -58°, elevation 28° by default) aimed at the framing
 *     box's centre, at the smallest distance that keeps the box's 8 corners
 *     inside 85% of the picture — so a sequence framed by one box keeps one
 *     camera;
 *   - a directional light up and to the left of the camera, and the
 *     orthographic light matrix of the shadow map, fitted to the casters;
 *   - after the backend: compositing over a vertical gradient, the legend bar
 *     (colour map, min/mid/max labels, field name, count of inverted
 *     elements) and the caption.
 * This module is free of simulation code: it reads meshes and fields only.
 */
#include "render/render_internal.h"
#include "defo/element.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct defo_renderer {
    defo_render_backend backend; /* OPENGL or SOFTWARE once created */
    rn_gl *gl;
    char name[192];
};

static const float body_plain[4] = {0.86f, 0.56f, 0.34f, 1.0f};
static const float collider_col[4] = {0.52f, 0.58f, 0.66f, 1.0f};
static const float inverted_col[4] = {1.0f, 0.0f, 1.0f, 1.0f};

/* ------------------------------------------------------------- lists */
defo_status rn_list_reserve(rn_list *l, size_t more) {
    if (l->count + more <= l->capacity) return DEFO_OK;
    size_t cap = l->capacity ? l->capacity : 1024;
    while (cap < l->count + more) cap *= 2;
    rn_vertex *v = defo_realloc(l->v, cap * sizeof *v);
    if (!v) return defo_error_oom("render vertices", cap * sizeof *v);
    l->v = v;
    l->capacity = cap;
    return DEFO_OK;
}

void rn_list_vertex(rn_list *l, defo_vec3 p, defo_vec3 n, const float col[4]) {
    rn_vertex *v = &l->v[l->count++];
    v->p[0] = (float)p.x;
    v->p[1] = (float)p.y;
    v->p[2] = (float)p.z;
    v->n[0] = (float)n.x;
    v->n[1] = (float)n.y;
    v->n[2] = (float)n.z;
    memcpy(v->c, col, sizeof v->c);
}

static defo_vec3 tri_normal(defo_vec3 a, defo_vec3 b, defo_vec3 c) {
    defo_vec3 n = defo_v3_normalize(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
    if (defo_v3_norm2(n) == 0) n = defo_v3(0, 0, 1); /* degenerate face: any unit normal */
    return n;
}

void rn_list_tri(rn_list *l, defo_vec3 a, defo_vec3 b, defo_vec3 c, const float col[4]) {
    defo_vec3 n = tri_normal(a, b, c);
    rn_list_vertex(l, a, n, col);
    rn_list_vertex(l, b, n, col);
    rn_list_vertex(l, c, n, col);
}

void rn_list_free(rn_list *l) {
    defo_free(l->v);
    memset(l, 0, sizeof *l);
}

/* ---------------------------------------------------------- defaults */
defo_render_def defo_default_render_def(void) {
    defo_render_def d;
    memset(&d, 0, sizeof d);
    d.width = 800;
    d.height = 600;
    d.azimuth_deg = -58;
    d.elevation_deg = 28;
    d.colormap = DEFO_COLORMAP_AUTO;
    d.highlight_inverted = 1;
    d.legend = 1;
    d.ground = 1;
    return d;
}

defo_render_shape defo_render_shape_from(const defo_shape_def *shape) {
    defo_render_shape s;
    memset(&s, 0, sizeof s);
    if (shape) s.shape = *shape;
    s.rotation[0] = s.rotation[4] = s.rotation[8] = 1;
    return s;
}

/* --------------------------------------------------------- renderer */
defo_status defo_renderer_create(defo_render_backend backend, defo_renderer **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_renderer_create: out is NULL");
    *out = NULL;
    if (backend != DEFO_RENDER_AUTO && backend != DEFO_RENDER_OPENGL &&
        backend != DEFO_RENDER_SOFTWARE)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "unknown render backend %d", (int)backend);
    defo_renderer *r = defo_calloc(1, sizeof *r);
    if (!r) return defo_error_oom("renderer", sizeof *r);
    if (backend != DEFO_RENDER_SOFTWARE) {
        defo_status s = rn_gl_create(&r->gl, r->name, sizeof r->name);
        if (s < 0 && backend == DEFO_RENDER_OPENGL) {
            defo_free(r);
            return s;
        }
        if (s < 0) defo_clear_error(); /* AUTO: fall back quietly */
    }
    if (r->gl) {
        r->backend = DEFO_RENDER_OPENGL;
    } else {
        r->backend = DEFO_RENDER_SOFTWARE;
        snprintf(r->name, sizeof r->name, "software");
    }
    *out = r;
    return DEFO_OK;
}

void defo_renderer_destroy(defo_renderer *r) {
    if (!r) return;
    if (r->gl) rn_gl_destroy(r->gl);
    defo_free(r);
}

const char *defo_renderer_name(const defo_renderer *r) {
    return r ? r->name : "";
}

/* ------------------------------------------------------------ fields */
static defo_index cell_count(const defo_mesh *m) {
    return m->num_elems > 0 ? m->num_elems : m->num_tris;
}

/* Find field name (cell first, then point) or raise an error listing the
 * fields the mesh has. */
static defo_status resolve_field(const defo_mesh *m, const char *name, const defo_field **out) {
    *out = defo_mesh_find_field(m, name, DEFO_FIELD_CELL);
    if (!*out) *out = defo_mesh_find_field(m, name, DEFO_FIELD_POINT);
    if (*out) {
        const defo_field *f = *out;
        if (f->components < 1 || !f->data)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "field '%s' has no data", name);
        if (f->location == DEFO_FIELD_CELL && m->num_elems == 0 && m->num_tris == 0)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "field '%s': the mesh has no cells", name);
        return DEFO_OK;
    }
    char list[512];
    size_t len = 0;
    list[0] = 0;
    for (int i = 0; i < m->num_fields && len + 80 < sizeof list; i++) {
        int w =
            snprintf(list + len, sizeof list - len, "%s%s (%s)", i ? ", " : "", m->fields[i].name,
                     m->fields[i].location == DEFO_FIELD_CELL ? "cell" : "point");
        if (w > 0) len += (size_t)w;
    }
    if (m->num_fields == 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "no field '%s': the mesh has no fields", name);
    return defo_error(DEFO_ERR_INVALID_ARGUMENT, "no field '%s' (available: %s)", name, list);
}

/* Scalar of entry i: the value, or the Euclidean/Frobenius norm of a vector
 * or tensor. */
static double field_scalar(const defo_field *f, defo_index i) {
    const double *d = f->data + (size_t)i * (size_t)f->components;
    if (f->components == 1) return d[0];
    double s = 0;
    for (int k = 0; k < f->components; k++) s += d[k] * d[k];
    return sqrt(s);
}

static defo_index field_count(const defo_mesh *m, const defo_field *f) {
    return f->location == DEFO_FIELD_CELL ? cell_count(m) : m->num_nodes;
}

defo_status defo_render_field_range(const defo_mesh *mesh, const char *field, double *lo,
                                    double *hi) {
    if (!mesh || !field || !lo || !hi)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_field_range: NULL argument");
    const defo_field *f;
    defo_status s = resolve_field(mesh, field, &f);
    if (s < 0) return s;
    double a = INFINITY, b = -INFINITY;
    defo_index n = field_count(mesh, f);
    for (defo_index i = 0; i < n; i++) {
        double v = field_scalar(f, i);
        if (!isfinite(v)) continue;
        a = v < a ? v : a;
        b = v > b ? v : b;
    }
    if (a > b)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "field '%s' has no finite value", field);
    *lo = a;
    *hi = b;
    return DEFO_OK;
}

/* ----------------------------------------------------------- shapes */
static defo_vec3 mat_apply(const double m[9], defo_vec3 p) {
    return defo_v3(m[0] * p.x + m[1] * p.y + m[2] * p.z, m[3] * p.x + m[4] * p.y + m[5] * p.z,
                   m[6] * p.x + m[7] * p.y + m[8] * p.z);
}

/* shape local -> world point, and direction. */
static defo_vec3 shape_point(const defo_render_shape *s, defo_vec3 p) {
    defo_vec3 c = mat_apply(s->rotation, mat_apply(s->shape.rotation, p));
    return defo_v3_add(c, defo_v3_load(s->translation));
}
static defo_vec3 shape_dir(const defo_render_shape *s, defo_vec3 d) {
    return defo_v3_normalize(mat_apply(s->rotation, mat_apply(s->shape.rotation, d)));
}

/* Two unit vectors completing a to an orthonormal basis. */
static void basis_of(defo_vec3 a, defo_vec3 *e1, defo_vec3 *e2) {
    defo_vec3 t = fabs(a.x) < 0.6 ? defo_v3(1, 0, 0) : defo_v3(0, 1, 0);
    *e1 = defo_v3_normalize(defo_v3_cross(a, t));
    *e2 = defo_v3_cross(a, *e1);
}

enum { SEG = 40, RINGS = 12 };

/* Part of a sphere (local frame: centre c, pole axis a) from polar angle t0
 * to t1 with smooth normals. */
static void emit_sphere_part(rn_list *l, const defo_render_shape *s, defo_vec3 c, defo_vec3 a,
                             double r, double t0, double t1, int rings) {
    defo_vec3 e1, e2;
    basis_of(a, &e1, &e2);
    for (int i = 0; i < rings; i++)
        for (int j = 0; j < SEG; j++) {
            defo_vec3 p[4], n[4];
            for (int k = 0; k < 4; k++) {
                int ii = i + (k == 1 || k == 2), jj = j + (k >= 2);
                double th = t0 + (t1 - t0) * ii / rings, ph = 2 * RN_PI * jj / SEG;
                defo_vec3 d = defo_v3_add(defo_v3_scale(a, cos(th)),
                                          defo_v3_add(defo_v3_scale(e1, sin(th) * cos(ph)),
                                                      defo_v3_scale(e2, sin(th) * sin(ph))));
                p[k] = shape_point(s, defo_v3_axpy(c, r, d));
                n[k] = shape_dir(s, d);
            }
            const int idx[6] = {0, 1, 2, 0, 2, 3};
            for (int k = 0; k < 6; k++) rn_list_vertex(l, p[idx[k]], n[idx[k]], collider_col);
        }
}

/* Side of a cylinder (centre c, axis a, radius r, half length h), optionally capped. */
static void emit_cylinder(rn_list *l, const defo_render_shape *s, defo_vec3 c, defo_vec3 a,
                          double r, double h, int caps) {
    defo_vec3 e1, e2;
    basis_of(a, &e1, &e2);
    for (int j = 0; j < SEG; j++) {
        defo_vec3 d[2], p[4], n[2];
        for (int k = 0; k < 2; k++) {
            double ph = 2 * RN_PI * (j + k) / SEG;
            d[k] = defo_v3_add(defo_v3_scale(e1, cos(ph)), defo_v3_scale(e2, sin(ph)));
            n[k] = shape_dir(s, d[k]);
            p[2 * k] = shape_point(s, defo_v3_axpy(defo_v3_axpy(c, -h, a), r, d[k]));
            p[2 * k + 1] = shape_point(s, defo_v3_axpy(defo_v3_axpy(c, h, a), r, d[k]));
        }
        rn_list_vertex(l, p[0], n[0], collider_col);
        rn_list_vertex(l, p[2], n[1], collider_col);
        rn_list_vertex(l, p[3], n[1], collider_col);
        rn_list_vertex(l, p[0], n[0], collider_col);
        rn_list_vertex(l, p[3], n[1], collider_col);
        rn_list_vertex(l, p[1], n[0], collider_col);
        if (caps) {
            defo_vec3 top = shape_point(s, defo_v3_axpy(c, h, a));
            defo_vec3 bot = shape_point(s, defo_v3_axpy(c, -h, a));
            rn_list_tri(l, top, p[1], p[3], collider_col);
            rn_list_tri(l, bot, p[2], p[0], collider_col);
        }
    }
}

static void emit_box(rn_list *l, const defo_render_shape *s) {
    const defo_shape_def *d = &s->shape;
    defo_vec3 q[8];
    for (int k = 0; k < 8; k++)
        q[k] = shape_point(s, defo_v3(d->center[0] + ((k & 1) ? 1 : -1) * d->half_extent[0],
                                      d->center[1] + ((k & 2) ? 1 : -1) * d->half_extent[1],
                                      d->center[2] + ((k & 4) ? 1 : -1) * d->half_extent[2]));
    /* faces as corner quads, counter-clockwise from outside */
    static const int f[6][4] = {{0, 2, 6, 4}, {1, 5, 7, 3}, {0, 4, 5, 1},
                                {2, 3, 7, 6}, {0, 1, 3, 2}, {4, 6, 7, 5}};
    for (int i = 0; i < 6; i++) {
        rn_list_tri(l, q[f[i][0]], q[f[i][1]], q[f[i][2]], collider_col);
        rn_list_tri(l, q[f[i][0]], q[f[i][2]], q[f[i][3]], collider_col);
    }
}

/* Is shape a plane facing +z (then it is drawn as the ground)?  Its height in *z. */
static int is_ground_plane(const defo_render_shape *s, double *z) {
    if (s->shape.type != DEFO_SHAPE_PLANE) return 0;
    defo_vec3 n = shape_dir(s, defo_v3_load(s->shape.normal));
    if (n.z < 0.999) return 0;
    *z = shape_point(s, defo_v3_load(s->shape.center)).z;
    return 1;
}

static defo_status emit_shape(rn_list *l, const defo_render_shape *s, defo_vec3 target, double R) {
    const defo_shape_def *d = &s->shape;
    defo_vec3 c = defo_v3_load(d->center);
    defo_status st = rn_list_reserve(l, 6 * (size_t)SEG * (2 * RINGS + 4) + 64);
    if (st < 0) return st;
    switch (d->type) {
    case DEFO_SHAPE_PLANE: {
        double z;
        if (is_ground_plane(s, &z)) return DEFO_OK;
        defo_vec3 n = shape_dir(s, defo_v3_load(d->normal)), p0 = shape_point(s, c), e1, e2;
        if (defo_v3_norm2(n) == 0) return DEFO_OK;
        basis_of(n, &e1, &e2);
        /* a square of side 5R around the target's projection on the plane */
        defo_vec3 o = defo_v3_axpy(target, -defo_v3_dot(defo_v3_sub(target, p0), n), n);
        defo_vec3 q[4];
        for (int k = 0; k < 4; k++)
            q[k] = defo_v3_axpy(defo_v3_axpy(o, ((k == 1 || k == 2) ? 2.5 : -2.5) * R, e1),
                                (k >= 2 ? 2.5 : -2.5) * R, e2);
        rn_list_tri(l, q[0], q[1], q[2], collider_col);
        rn_list_tri(l, q[0], q[2], q[3], collider_col);
        return DEFO_OK;
    }
    case DEFO_SHAPE_SPHERE:
        emit_sphere_part(l, s, c, defo_v3(0, 0, 1), d->radius, 0, RN_PI, 2 * RINGS);
        return DEFO_OK;
    case DEFO_SHAPE_BOX:
        emit_box(l, s);
        return DEFO_OK;
    case DEFO_SHAPE_CYLINDER:
    case DEFO_SHAPE_CAPSULE: {
        defo_vec3 a = defo_v3_normalize(defo_v3_load(d->axis));
        if (defo_v3_norm2(a) == 0) a = defo_v3(0, 0, 1);
        int capsule = d->type == DEFO_SHAPE_CAPSULE;
        emit_cylinder(l, s, c, a, d->radius, d->half_length, !capsule);
        if (capsule) {
            emit_sphere_part(l, s, defo_v3_axpy(c, d->half_length, a), a, d->radius, 0, RN_PI / 2,
                             RINGS);
            emit_sphere_part(l, s, defo_v3_axpy(c, -d->half_length, a), a, d->radius, RN_PI / 2,
                             RN_PI, RINGS);
        }
        return DEFO_OK;
    }
    case DEFO_SHAPE_MESH: {
        /* its triangles, placed as the shape: p_collider = R (c + p) */
        const defo_mesh *m = d->mesh;
        if (!m) return DEFO_OK;
        const int np = m->nodes_per_tri;
        st = rn_list_reserve(l, 3 * (size_t)m->num_tris + 3);
        if (st < 0) return st;
        for (defo_index t = 0; t < m->num_tris; t++) {
            defo_vec3 q[3];
            for (int k = 0; k < 3; k++) {
                const double *x = m->x + 3 * (size_t)m->tris[(size_t)np * (size_t)t + (size_t)k];
                q[k] = shape_point(s, defo_v3(c.x + x[0], c.y + x[1], c.z + x[2]));
            }
            rn_list_tri(l, q[0], q[1], q[2], collider_col);
        }
        return DEFO_OK;
    }
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT, "render: unknown shape type %d", (int)d->type);
}

/* ------------------------------------------------------------ ground */
static double nice_length(double x) {
    double e = pow(10.0, floor(log10(x)));
    double m = x / e;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * e;
}

static double smoothstep(double a, double b, double x) {
    double t = (x - a) / (b - a);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return t * t * (3 - 2 * t);
}

static defo_status emit_ground(rn_list *l, defo_vec3 target, double R, double z) {
    double cell = nice_length(R / 2.5), G = 4.5 * R;
    int n0x = (int)floor((target.x - G) / cell), n0y = (int)floor((target.y - G) / cell);
    int n = (int)ceil(2 * G / cell) + 1;
    if (n > 120) n = 120;
    defo_status s = rn_list_reserve(l, (size_t)n * (size_t)n * 6);
    if (s < 0) return s;
    const defo_vec3 up = defo_v3(0, 0, 1);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            int gi = n0x + i, gj = n0y + j;
            float shade = ((gi + gj) & 1) ? 0.80f : 0.66f;
            defo_vec3 p[4];
            float col[4][4];
            for (int k = 0; k < 4; k++) {
                p[k] = defo_v3((gi + (k == 1 || k == 2)) * cell, (gj + (k >= 2)) * cell, z);
                double r = hypot(p[k].x - target.x, p[k].y - target.y);
                col[k][0] = shade;
                col[k][1] = shade + 0.01f;
                col[k][2] = shade + 0.03f;
                col[k][3] = (float)(1.0 - smoothstep(0.45 * G, G, r));
            }
            const int idx[6] = {0, 1, 2, 0, 2, 3};
            for (int k = 0; k < 6; k++) rn_list_vertex(l, p[idx[k]], up, col[idx[k]]);
        }
    return DEFO_OK;
}

/* ------------------------------------------------------------ camera */
/* Row-major 4x4 product c = a b. */
static void mat4_mul(const double a[16], const double b[16], double c[16]) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += a[4 * i + k] * b[4 * k + j];
            c[4 * i + j] = s;
        }
}

/* Row-major double -> column-major float (OpenGL's layout). */
static void mat4_to_gl(const double m[16], float out[16]) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) out[4 * j + i] = (float)m[4 * i + j];
}

static defo_vec3 dir_of(double az_deg, double el_deg) {
    double az = az_deg * RN_PI / 180, el = el_deg * RN_PI / 180;
    return defo_v3(cos(el) * cos(az), cos(el) * sin(az), sin(el));
}

typedef struct camera {
    defo_vec3 eye, target;
    double vp[16]; /* row-major view-projection */
} camera;

static void fit_camera(const defo_render_def *def, const double lo[3], const double hi[3],
                       camera *cam) {
    const double fovy = 30.0 * RN_PI / 180, aspect = (double)def->width / def->height;
    const double ty = tan(fovy / 2), tx = ty * aspect;
    defo_vec3 d = dir_of(def->azimuth_deg, def->elevation_deg);
    defo_vec3 f = defo_v3_scale(d, -1);
    defo_vec3 r = defo_v3_normalize(defo_v3_cross(f, defo_v3(0, 0, 1)));
    if (defo_v3_norm2(r) == 0) r = defo_v3(1, 0, 0); /* straight down */
    defo_vec3 u = defo_v3_cross(r, f);
    defo_vec3 c = defo_v3(0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2]));
    double R = 0.5 * sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                          (hi[2] - lo[2]) * (hi[2] - lo[2]));
    double dist = R; /* at least outside the box's sphere */
    for (int k = 0; k < 8; k++) {
        defo_vec3 q =
            defo_v3((k & 1) ? hi[0] : lo[0], (k & 2) ? hi[1] : lo[1], (k & 4) ? hi[2] : lo[2]);
        defo_vec3 rel = defo_v3_sub(q, c);
        double x = fabs(defo_v3_dot(rel, r)), y = fabs(defo_v3_dot(rel, u)),
               z = defo_v3_dot(rel, f);
        dist = fmax(dist, x / (0.85 * tx) - z);
        dist = fmax(dist, y / (0.85 * ty) - z);
    }
    defo_vec3 eye = defo_v3_axpy(c, dist, d);
    double near = fmax(0.5 * (dist - R), 1e-3 * dist), far = dist + 12 * R;
    double view[16] = {r.x,  r.y,  r.z,  -defo_v3_dot(r, eye), u.x, u.y, u.z, -defo_v3_dot(u, eye),
                       -f.x, -f.y, -f.z, defo_v3_dot(f, eye),  0,   0,   0,   1};
    double g = 1 / ty;
    double proj[16] = {g / aspect,
                       0,
                       0,
                       0,
                       0,
                       g,
                       0,
                       0,
                       0,
                       0,
                       (far + near) / (near - far),
                       2 * far * near / (near - far),
                       0,
                       0,
                       -1,
                       0};
    mat4_mul(proj, view, cam->vp);
    cam->eye = eye;
    cam->target = c;
}

/* A flat or point-like object still gets a box relative to its size. */
static void widen_box(double lo[3], double hi[3]) {
    double ext = fmax(hi[0] - lo[0], fmax(hi[1] - lo[1], hi[2] - lo[2]));
    if (!(ext > 0)) ext = 1;
    for (int k = 0; k < 3; k++)
        if (hi[k] - lo[k] < 0.05 * ext) {
            double mid = 0.5 * (lo[k] + hi[k]);
            lo[k] = mid - 0.025 * ext;
            hi[k] = mid + 0.025 * ext;
        }
}

defo_status defo_render_camera(const defo_render_def *def, double view_proj[16], double eye[3]) {
    if (!def || !view_proj)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_camera: NULL argument");
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        if (!(def->frame_lo[k] < def->frame_hi[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_render_camera: the framing box is not given");
        lo[k] = def->frame_lo[k];
        hi[k] = def->frame_hi[k];
    }
    if (def->width < 16 || def->height < 16)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_camera: picture size %dx%d",
                          def->width, def->height);
    widen_box(lo, hi);
    camera cam;
    fit_camera(def, lo, hi, &cam);
    memcpy(view_proj, cam.vp, sizeof cam.vp);
    if (eye) {
        eye[0] = cam.eye.x;
        eye[1] = cam.eye.y;
        eye[2] = cam.eye.z;
    }
    return DEFO_OK;
}

/* Orthographic light matrix (row-major) looking along -L, covering the
 * casters' extent (capped to 3R around the target: huge colliders would
 * waste the shadow map) and every vertex's depth. */
static void fit_light(defo_vec3 L, defo_vec3 c, double R, const rn_list *objects,
                      const rn_list *ground, double m[16]) {
    defo_vec3 lx, ly;
    basis_of(L, &lx, &ly);
    double half = 0, zmin = INFINITY, zmax = -INFINITY;
    const rn_list *lists[2] = {objects, ground};
    for (int li = 0; li < 2; li++)
        for (size_t i = 0; i < lists[li]->count; i++) {
            const float *p = lists[li]->v[i].p;
            defo_vec3 rel = defo_v3_sub(defo_v3(p[0], p[1], p[2]), c);
            double z = defo_v3_dot(rel, L);
            zmin = fmin(zmin, z);
            zmax = fmax(zmax, z);
            if (li == 0)
                half = fmax(half, fmax(fabs(defo_v3_dot(rel, lx)), fabs(defo_v3_dot(rel, ly))));
        }
    half = fmin(half, 3 * R) * 1.05 + 1e-9 * R;
    double pad = 0.02 * (zmax - zmin) + 1e-9 * R;
    zmin -= pad;
    zmax += pad;
    double dz = zmax - zmin;
    /* ndc = (x·lx, x·ly)/half; depth 1 - 2(z - zmin)/dz: nearer the light is smaller */
    double t[16] = {lx.x / half,
                    lx.y / half,
                    lx.z / half,
                    -defo_v3_dot(lx, c) / half,
                    ly.x / half,
                    ly.y / half,
                    ly.z / half,
                    -defo_v3_dot(ly, c) / half,
                    -2 * L.x / dz,
                    -2 * L.y / dz,
                    -2 * L.z / dz,
                    1 + 2 * (defo_v3_dot(L, c) + zmin) / dz,
                    0,
                    0,
                    0,
                    1};
    memcpy(m, t, sizeof t);
}

/* ------------------------------------------------------------- body */
typedef struct body_colors {
    defo_colormap map;
    double lo, hi;
} body_colors;

static void value_color(const body_colors *bc, double v, float col[4]) {
    unsigned char rgb[3];
    if (!isfinite(v)) {
        col[0] = col[1] = col[2] = 0.5f;
    } else {
        double t = bc->hi > bc->lo ? (v - bc->lo) / (bc->hi - bc->lo) : 0.5;
        defo_colormap_rgb(bc->map, t, rgb);
        for (int k = 0; k < 3; k++) col[k] = rgb[k] / 255.0f;
    }
    col[3] = 1;
}

/* Colour of a vertex: inverted magenta, plain, or the field's value. */
static void vertex_color(const body_colors *bc, const defo_field *f, int inv, double v,
                         float col[4]) {
    if (inv)
        memcpy(col, inverted_col, 4 * sizeof *col);
    else if (!f)
        memcpy(col, body_plain, 4 * sizeof *col);
    else
        value_color(bc, v, col);
}

/* Boundary faces of a volume mesh (or a triangle mesh's triangles) with
 * colours.  A 6-node face (the curved boundary of a tet10 mesh, or a tri6
 * surface) is drawn as the 4 flat triangles of defo_tri6_split through its
 * edge nodes.  inv: per element, 1 when it is drawn magenta (may be NULL). */
static defo_status emit_body(rn_list *l, const defo_mesh *m, const double *x, const defo_field *f,
                             const body_colors *bc, const unsigned char *inv) {
    defo_boundary b;
    memset(&b, 0, sizeof b);
    const defo_index *faces;
    defo_index nf;
    int stride;
    if (m->num_elems > 0) {
        defo_status s = defo_mesh_boundary(m, m->nodes_per_elem == 10, &b);
        if (s < 0) return s;
        faces = b.faces;
        nf = b.num_faces;
        stride = b.nodes_per_face;
    } else {
        faces = m->tris;
        nf = m->num_tris;
        stride = m->nodes_per_tri;
    }
    const int split = stride == 6 ? 4 : 1;
    defo_status s = rn_list_reserve(l, 3 * (size_t)split * (size_t)nf);
    if (s < 0) {
        defo_boundary_free(&b);
        return s;
    }
    static const int flat[1][3] = {{0, 1, 2}};
    const int(*sub)[3] = split == 4 ? defo_tri6_split : flat;
    for (defo_index i = 0; i < nf; i++) {
        const defo_index *face = faces + (size_t)i * (size_t)stride;
        defo_index owner = m->num_elems > 0 ? b.elem[i] : i;
        int magenta = inv && m->num_elems > 0 && inv[owner];
        for (int q = 0; q < split; q++) {
            defo_index t[3];
            defo_vec3 p[3];
            for (int k = 0; k < 3; k++) {
                t[k] = face[sub[q][k]];
                p[k] = defo_v3_load(x + 3 * (size_t)t[k]);
            }
            defo_vec3 n = tri_normal(p[0], p[1], p[2]);
            for (int k = 0; k < 3; k++) {
                float col[4];
                double v = 0;
                if (f) v = field_scalar(f, f->location == DEFO_FIELD_CELL ? owner : t[k]);
                vertex_color(bc, f, magenta, v, col);
                rn_list_vertex(l, p[k], n, col);
            }
        }
    }
    defo_boundary_free(&b);
    return DEFO_OK;
}

/* An embedded surface (MG04 §5.1) standing for volume mesh m: its triangles
 * at their positions, each vertex coloured from the element holding it (a
 * cell field: the element's value; a point field: the element's corner values
 * weighted by its barycentric coordinates), a triangle magenta when an
 * element of its vertices is inverted. */
static defo_status emit_embedded(rn_list *l, const defo_render_part *p, const defo_field *f,
                                 const body_colors *bc, const unsigned char *inv) {
    const defo_mesh *m = p->mesh, *sf = p->surface;
    const double *y = p->surface_positions ? p->surface_positions : sf->x;
    defo_status s = rn_list_reserve(l, 3 * (size_t)sf->num_tris);
    if (s < 0) return s;
    for (defo_index t = 0; t < sf->num_tris; t++) {
        const defo_index *tri = sf->tris + 3 * (size_t)t;
        defo_vec3 q[3];
        int magenta = 0;
        for (int k = 0; k < 3; k++) {
            q[k] = defo_v3_load(y + 3 * (size_t)tri[k]);
            if (inv) magenta |= inv[p->surface_elem[tri[k]]];
        }
        defo_vec3 n = tri_normal(q[0], q[1], q[2]);
        for (int k = 0; k < 3; k++) {
            defo_index v = tri[k], e = p->surface_elem[v];
            double val = 0;
            defo_vec3 nv = n;
            if (p->surface_normals) nv = defo_v3_load(p->surface_normals + 3 * (size_t)v);
            if (f && p->surface_values) {
                val = p->surface_values[v];
            } else if (f && f->location == DEFO_FIELD_CELL) {
                val = field_scalar(f, e);
            } else if (f) {
                const defo_index *c = m->elems + (size_t)e * (size_t)m->nodes_per_elem;
                for (int a = 0; a < 4; a++)
                    val += p->surface_bary[4 * (size_t)v + (size_t)a] * field_scalar(f, c[a]);
            }
            float col[4];
            vertex_color(bc, f, magenta, val, col);
            rn_list_vertex(l, q[k], nv, col);
        }
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------ overlay */
static void fill_rect(defo_image *img, int x0, int y0, int w, int h, const unsigned char rgb[3],
                      double alpha) {
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) {
            if (x < 0 || y < 0 || x >= img->width || y >= img->height) continue;
            unsigned char *d = img->rgb + ((size_t)y * (size_t)img->width + (size_t)x) * 3;
            for (int k = 0; k < 3; k++)
                d[k] = (unsigned char)(d[k] + alpha * (rgb[k] - d[k]) + 0.5);
        }
}

/* The legend in the top right corner: a translucent panel just wide enough
 * for the field name, the range note and the colour bar with its labels;
 * when elements are inverted or folded, the line "inverted N of M" (or
 * "inverted N, folded K of M") with its magenta
 * swatch goes in a strip of its own under the panel, one text line high.
 * The line is the widest text of the legend: sizing the panel by it made a
 * translucent rectangle several times the bar's area across the top of
 * every frame with inversions (tests/test_render.c: the legend's extent). */
static void draw_legend(defo_image *img, const char *name, const char *note, const body_colors *bc,
                        defo_index inverted, defo_index folded, defo_index total) {
    const int sc = img->height >= 480 ? 2 : 1;
    const int margin = 10 * sc, barw = 12 * sc, barh = img->height * 45 / 100, pad = 5 * sc;
    char lab[3][32];
    double vals[3] = {bc->hi, 0.5 * (bc->lo + bc->hi), bc->lo};
    int labw = 0;
    for (int i = 0; i < 3; i++) {
        snprintf(lab[i], sizeof lab[i], "%.4g", vals[i]);
        int w = defo_image_text_width(lab[i], sc);
        labw = w > labw ? w : labw;
    }
    int namew = defo_image_text_width(name, sc);
    int notew = note && note[0] ? defo_image_text_width(note, sc) : 0;
    int panel_w = barw + 6 * sc + labw;
    if (namew > panel_w) panel_w = namew;
    if (notew > panel_w) panel_w = notew;
    int x1 = img->width - margin; /* right edge of the bar */
    int head = notew ? 24 * sc : 14 * sc;
    int bx = x1 - barw, by = margin + head; /* bar top-left */
    const unsigned char white[3] = {255, 255, 255}, ink[3] = {25, 25, 30};
    const int panel_bottom = by + barh + pad; /* exclusive */
    fill_rect(img, x1 - panel_w - pad, margin - pad, panel_w + 2 * pad, panel_bottom - margin + pad,
              white, 0.72);
    defo_image_draw_text(img, x1 - namew, margin, sc, ink, name);
    if (notew) defo_image_draw_text(img, x1 - notew, margin + 10 * sc, sc, ink, note);
    for (int y = 0; y < barh; y++) {
        unsigned char rgb[3];
        defo_colormap_rgb(bc->map, 1.0 - (double)y / (barh - 1), rgb);
        fill_rect(img, bx, by + y, barw, 1, rgb, 1.0);
    }
    for (int i = 0; i < 3; i++) {
        int ty = by + i * (barh - 1) / 2 - 3 * sc;
        if (i == 0) ty = by;
        if (i == 2) ty = by + barh - 7 * sc;
        defo_image_draw_text(img, bx - 4 * sc - defo_image_text_width(lab[i], sc), ty, sc, ink,
                             lab[i]);
    }
    if (inverted > 0 || folded > 0) {
        char inv_text[96];
        if (folded > 0)
            snprintf(inv_text, sizeof inv_text, "inverted %lld, folded %lld of %lld",
                     (long long)inverted, (long long)folded, (long long)total);
        else
            snprintf(inv_text, sizeof inv_text, "inverted %lld of %lld", (long long)inverted,
                     (long long)total);
        const unsigned char mag[3] = {255, 0, 255};
        const int textw = defo_image_text_width(inv_text, sc);
        const int line_w = textw + 4 * sc + barw; /* text, gap, swatch */
        const int y = panel_bottom + 3 * sc;      /* the line's text top */
        fill_rect(img, x1 - line_w - pad, panel_bottom + sc, line_w + 2 * pad, 9 * sc, white, 0.72);
        fill_rect(img, bx, y, barw, 7 * sc, mag, 1.0);
        defo_image_draw_text(img, bx - 4 * sc - textw, y, sc, ink, inv_text);
    }
}

/* Composite premultiplied RGBA over a vertical gradient. */
static void composite(const unsigned char *rgba, defo_image *img) {
    const double top[3] = {228, 233, 241}, bot[3] = {196, 202, 213};
    for (int y = 0; y < img->height; y++) {
        double t = img->height > 1 ? (double)y / (img->height - 1) : 0;
        for (int x = 0; x < img->width; x++) {
            size_t i = (size_t)y * (size_t)img->width + (size_t)x;
            const unsigned char *s = rgba + 4 * i;
            double a = s[3] / 255.0;
            for (int k = 0; k < 3; k++) {
                double bg = top[k] + t * (bot[k] - top[k]);
                double v = s[k] + (1 - a) * bg;
                img->rgb[3 * i + (size_t)k] = (unsigned char)(v > 255 ? 255 : v + 0.5);
            }
        }
    }
}

/* ------------------------------------------------------------- ranges */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

defo_status defo_render_auto_range(const char *field, double *values, size_t count,
                                   double range[2]) {
    if (!field || !range || (count > 0 && !values))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_auto_range: NULL argument");
    if (!strcmp(field, "J")) {
        range[0] = 0; /* white at J = 1 on the diverging map */
        range[1] = 2;
        return DEFO_OK;
    }
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (isfinite(values[i])) values[n++] = values[i];
    if (n == 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "field '%s' has no finite value", field);
    qsort(values, n, sizeof *values, cmp_double);
    /* nearest-rank percentiles: 1 % of the values may lie below, 1 % above */
    size_t a = (size_t)floor(0.01 * (double)(n - 1)), b = (size_t)ceil(0.99 * (double)(n - 1));
    range[0] = values[a];
    range[1] = values[b];
    if (!(range[0] < range[1])) { /* (nearly) constant: the whole span */
        range[0] = values[0];
        range[1] = values[n - 1];
    }
    return DEFO_OK;
}

defo_status defo_render_field_values(const defo_mesh *mesh, const char *field, double *values,
                                     defo_index *count) {
    if (!mesh || !field || !count)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_field_values: NULL argument");
    const defo_field *f;
    defo_status s = resolve_field(mesh, field, &f);
    if (s < 0) return s;
    defo_index n = field_count(mesh, f);
    if (values)
        for (defo_index i = 0; i < n; i++) values[i] = field_scalar(f, i);
    *count = n;
    return DEFO_OK;
}

/* ------------------------------------------------------------- draw */
defo_status defo_render_mesh(defo_renderer *r, const defo_render_def *def, const defo_mesh *mesh,
                             const double *positions, const defo_render_shape *shapes,
                             int num_shapes, defo_image *out) {
    defo_render_part part;
    memset(&part, 0, sizeof part);
    part.mesh = mesh;
    part.positions = positions;
    return defo_render_parts(r, def, &part, mesh ? 1 : 0, shapes, num_shapes, out);
}

static defo_status check_part(const defo_render_part *p, int i) {
    const defo_mesh *m = p->mesh;
    if (!m) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "render: part %d has no mesh", i);
    if (m->num_nodes < 1 || (m->num_elems < 1 && m->num_tris < 1))
        return defo_error(DEFO_ERR_INVALID_MESH, "nothing to draw: the mesh has no %s",
                          m->num_nodes < 1 ? "nodes" : "elements or triangles");
    if (m->num_elems > 0 && m->nodes_per_elem != 3 && m->nodes_per_elem != 4 &&
        m->nodes_per_elem != 10) /* tri3: a shell, its triangles drawn two-sided */
        return defo_error(DEFO_ERR_INVALID_MESH, "render: unsupported element type");
    const double *x = p->positions ? p->positions : m->x;
    for (size_t k = 0; k < 3 * (size_t)m->num_nodes; k++)
        if (!isfinite(x[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "render: node %lld has a non-finite position", (long long)(k / 3));
    if (p->surface) {
        const defo_mesh *sf = p->surface;
        if (m->num_elems < 1 || sf->num_tris < 1 || sf->nodes_per_tri != 3 || !p->surface_elem)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "render: part %d: an embedded surface needs 3-node triangles, a "
                              "volume mesh and the element of each vertex",
                              i);
        const double *y = p->surface_positions ? p->surface_positions : sf->x;
        for (defo_index v = 0; v < sf->num_nodes; v++) {
            if (p->surface_elem[v] < 0 || p->surface_elem[v] >= m->num_elems)
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "render: part %d: surface vertex %lld is in element %lld of %lld",
                                  i, (long long)v, (long long)p->surface_elem[v],
                                  (long long)m->num_elems);
            for (int k = 0; k < 3; k++)
                if (!isfinite(y[3 * (size_t)v + (size_t)k]))
                    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                      "render: part %d: surface vertex %lld is not finite", i,
                                      (long long)v);
        }
    }
    return DEFO_OK;
}

defo_status defo_render_parts(defo_renderer *r, const defo_render_def *def_in,
                              const defo_render_part *parts, int num_parts,
                              const defo_render_shape *shapes, int num_shapes, defo_image *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_parts: out is NULL");
    out->rgb = NULL;
    out->width = out->height = 0;
    if (!r || !parts || num_parts < 1 || num_shapes < 0 || (num_shapes > 0 && !shapes))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_render_parts: bad arguments");
    defo_render_def def = def_in ? *def_in : defo_default_render_def();
    if (def.width < 16 || def.height < 16 || def.width > 8192 || def.height > 8192)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "picture size %dx%d is out of range (16..8192 each way)", def.width,
                          def.height);
    for (int i = 0; i < num_parts; i++) {
        defo_status s = check_part(&parts[i], i);
        if (s < 0) return s;
        if (parts[i].surface && def.field && def.field[0] && !parts[i].surface_bary) {
            const defo_field *f = NULL;
            if (resolve_field(parts[i].mesh, def.field, &f) >= 0 && f->location == DEFO_FIELD_POINT)
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "render: part %d: point field '%s' on an embedded surface needs "
                                  "its barycentric coordinates",
                                  i, def.field);
        }
    }

    /* the field of each part and one colour range over all of them */
    body_colors bc = {def.colormap, 0, 0};
    const defo_field **fields = defo_calloc((size_t)num_parts, sizeof *fields);
    unsigned char **inv = defo_calloc((size_t)num_parts, sizeof *inv);
    if (!fields || !inv) {
        defo_free(fields);
        defo_free(inv);
        return defo_error_oom("render parts", (size_t)num_parts * 16);
    }
    defo_status s = DEFO_OK;
    const char *note = def.range_note;
    if (def.field && def.field[0]) {
        size_t total = 0;
        for (int i = 0; i < num_parts && s >= 0; i++) {
            s = resolve_field(parts[i].mesh, def.field, &fields[i]);
            if (s >= 0) total += (size_t)field_count(parts[i].mesh, fields[i]);
        }
        if (s >= 0 && def.range[0] < def.range[1]) {
            bc.lo = def.range[0];
            bc.hi = def.range[1];
        } else if (s >= 0) {
            double *vals = defo_malloc((total + 1) * sizeof *vals);
            if (!vals) s = defo_error_oom("field values", total * sizeof *vals);
            size_t n = 0;
            for (int i = 0; i < num_parts && s >= 0; i++) {
                defo_index c = field_count(parts[i].mesh, fields[i]);
                for (defo_index k = 0; k < c; k++) vals[n++] = field_scalar(fields[i], k);
            }
            double range[2] = {0, 0};
            if (s >= 0) s = defo_render_auto_range(def.field, vals, n, range);
            defo_free(vals);
            bc.lo = range[0];
            bc.hi = range[1];
            if (!note && strcmp(def.field, "J") != 0) note = "1st-99th pct";
        }
        if (bc.map == DEFO_COLORMAP_AUTO)
            bc.map = strcmp(def.field, "J") == 0 ? DEFO_COLORMAP_DIVERGING : DEFO_COLORMAP_VIRIDIS;
    }
    /* inverted elements, all of them, and curved ones folded between their
     * quadrature points (defo_element_fold_state: the world's counts use the
     * same definition) */
    defo_index inverted = 0, folded = 0, total_elems = 0;
    for (int i = 0; i < num_parts && s >= 0; i++) {
        const defo_mesh *m = parts[i].mesh;
        if (m->num_elems < 1) continue;
        total_elems += m->num_elems;
        inv[i] = defo_calloc((size_t)m->num_elems, 1);
        if (!inv[i]) {
            s = defo_error_oom("inverted flags", (size_t)m->num_elems);
            break;
        }
        defo_index ni = 0, nf = 0;
        s = defo_element_fold_state(m, parts[i].positions, inv[i], &ni, &nf);
        inverted += ni;
        folded += nf;
    }
    if (s < 0) {
        for (int i = 0; i < num_parts; i++) defo_free(inv[i]);
        defo_free(inv);
        defo_free(fields);
        return s;
    }

    /* framing box */
    double lo[3], hi[3];
    int given = 1;
    for (int k = 0; k < 3; k++) given &= def.frame_lo[k] < def.frame_hi[k];
    if (given) {
        memcpy(lo, def.frame_lo, sizeof lo);
        memcpy(hi, def.frame_hi, sizeof hi);
    } else {
        for (int k = 0; k < 3; k++) {
            lo[k] = INFINITY;
            hi[k] = -INFINITY;
        }
        for (int i = 0; i < num_parts; i++) {
            const defo_render_part *p = &parts[i];
            const defo_mesh *m = p->surface ? p->surface : p->mesh;
            const double *x = p->surface ? (p->surface_positions ? p->surface_positions : m->x)
                                         : (p->positions ? p->positions : m->x);
            for (defo_index v = 0; v < m->num_nodes; v++)
                for (int k = 0; k < 3; k++) {
                    lo[k] = fmin(lo[k], x[3 * (size_t)v + (size_t)k]);
                    hi[k] = fmax(hi[k], x[3 * (size_t)v + (size_t)k]);
                }
        }
    }
    widen_box(lo, hi);

    camera cam;
    fit_camera(&def, lo, hi, &cam);
    double R = 0.5 * sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                          (hi[2] - lo[2]) * (hi[2] - lo[2]));

    double ground_z = lo[2];
    int plane_ground = 0;
    for (int i = 0; i < num_shapes; i++) {
        double z;
        if (is_ground_plane(&shapes[i], &z)) {
            ground_z = plane_ground ? fmax(ground_z, z) : z;
            plane_ground = 1;
        }
    }
    if (def.ground_height_set)
        ground_z = def.ground_height;
    else if (!plane_ground)
        ground_z -= 1e-3 * R; /* just below the object: no z-fighting */

    rn_list ground = {0}, objects = {0};
    for (int i = 0; i < num_parts && s >= 0; i++) {
        const defo_render_part *p = &parts[i];
        const unsigned char *hl = def.highlight_inverted ? inv[i] : NULL;
        if (p->surface)
            s = emit_embedded(&objects, p, fields[i], &bc, hl);
        else
            s = emit_body(&objects, p->mesh, p->positions ? p->positions : p->mesh->x, fields[i],
                          &bc, hl);
    }
    for (int i = 0; i < num_shapes && s >= 0; i++)
        s = emit_shape(&objects, &shapes[i], cam.target, R);
    if (s >= 0 && def.ground) s = emit_ground(&ground, cam.target, R, ground_z);
    unsigned char *rgba = NULL;
    if (s >= 0) {
        size_t n = (size_t)def.width * (size_t)def.height * 4;
        rgba = defo_malloc(n);
        if (!rgba) s = defo_error_oom("picture", n);
    }
    if (s >= 0) {
        rn_frame f;
        memset(&f, 0, sizeof f);
        f.width = def.width;
        f.height = def.height;
        mat4_to_gl(cam.vp, f.view_proj);
        defo_vec3 L = dir_of(def.azimuth_deg - 40, 55);
        double lm[16];
        fit_light(L, cam.target, R, &objects, &ground, lm);
        mat4_to_gl(lm, f.light_proj);
        f.eye[0] = (float)cam.eye.x;
        f.eye[1] = (float)cam.eye.y;
        f.eye[2] = (float)cam.eye.z;
        f.light[0] = (float)L.x;
        f.light[1] = (float)L.y;
        f.light[2] = (float)L.z;
        f.ground = &ground;
        f.objects = &objects;
        f.fast = def.fast;
        if (r->gl) {
            f.shadow_texel = 1.0f / RN_SHADOW_SIZE;
            s = rn_gl_draw(r->gl, &f, rgba);
        } else {
            f.shadow_texel = 1.0f / RN_SOFT_SHADOW_SIZE;
            s = rn_soft_draw(&f, rgba);
        }
    }
    if (s >= 0) s = defo_image_create(def.width, def.height, NULL, out);
    if (s >= 0) {
        composite(rgba, out);
        if (def.field && def.field[0] && def.legend)
            draw_legend(out, def.field, note, &bc, inverted, folded, total_elems);
        if (def.caption && def.caption[0]) {
            const unsigned char ink[3] = {25, 25, 30};
            int sc = def.height >= 480 ? 2 : 1;
            defo_image_draw_text(out, 10 * sc, 10 * sc, sc, ink, def.caption);
        }
    }
    defo_free(rgba);
    rn_list_free(&ground);
    rn_list_free(&objects);
    for (int i = 0; i < num_parts; i++) defo_free(inv[i]);
    defo_free(inv);
    defo_free(fields);
    return s < 0 ? s : DEFO_OK;
}
