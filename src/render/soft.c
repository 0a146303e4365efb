/*
 * render/soft.c — software rasteriser backend (no OpenGL needed).
 *
 * Draws the same triangle lists as the OpenGL backend with the same lighting
 * model and shadow-map test (render_internal.h), so pictures frame and colour
 * alike when EGL is unavailable:
 *   - shadow pass: casters rasterised into a 1024² depth map from the
 *     orthographic light, stored with a slope-scaled bias (as glPolygonOffset);
 *   - colour pass: triangles clipped against the near plane (z_clip > -w_clip,
 *     Sutherland–Hodgman on that one plane), rasterised with edge functions at
 *     pixel centres on a 2x supersampled grid, depth-tested, attributes
 *     interpolated perspective-correctly, shaded per sample with the 5x5 PCF
 *     soft shadow;
 *   - 2x2 box downsampling to premultiplied RGBA8 (anti-aliased edges).
 * Single-threaded and deterministic.
 */
#include "render/render_internal.h"

#include <math.h>
#include <string.h>

enum { SS = 2, NATTR = 10 }; /* supersampling; attributes: pos 3, normal 3, colour 4 */

typedef struct soft_ctx {
    const rn_frame *f;
    int w, h; /* supersampled size */
    float *depth;
    float *color; /* 4 per sample, premultiplied */
    float *smap;  /* shadow depth, RN_SOFT_SHADOW_SIZE² */
    float spec;
} soft_ctx;

static float edge(float ax, float ay, float bx, float by, float px, float py) {
    return (bx - ax) * (py - ay) - (by - ay) * (px - ax);
}

/* ------------------------------------------------------------ shadow */
static void shadow_tri(soft_ctx *c, const rn_vertex *v) {
    const int S = RN_SOFT_SHADOW_SIZE;
    float x[3], y[3], z[3];
    for (int k = 0; k < 3; k++) {
        float q[4];
        rn_mat4_apply(c->f->light_proj, v[k].p, q);
        x[k] = (q[0] * 0.5f + 0.5f) * (float)S;
        y[k] = (q[1] * 0.5f + 0.5f) * (float)S;
        z[k] = q[2] * 0.5f + 0.5f;
    }
    float area = edge(x[0], y[0], x[1], y[1], x[2], y[2]);
    if (fabsf(area) < 1e-12f) return;
    /* slope-scaled bias: depth change over one texel, plus a constant */
    float dzdx = ((z[1] - z[0]) * (y[2] - y[0]) - (z[2] - z[0]) * (y[1] - y[0])) / area;
    float dzdy = ((z[2] - z[0]) * (x[1] - x[0]) - (z[1] - z[0]) * (x[2] - x[0])) / area;
    float bias = 2.0f * (fabsf(dzdx) + fabsf(dzdy)) + 2e-4f;
    int x0 = (int)floorf(fminf(x[0], fminf(x[1], x[2]))),
        x1 = (int)ceilf(fmaxf(x[0], fmaxf(x[1], x[2])));
    int y0 = (int)floorf(fminf(y[0], fminf(y[1], y[2]))),
        y1 = (int)ceilf(fmaxf(y[0], fmaxf(y[1], y[2])));
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > S - 1 ? S - 1 : x1;
    y1 = y1 > S - 1 ? S - 1 : y1;
    for (int py = y0; py <= y1; py++)
        for (int px = x0; px <= x1; px++) {
            float cx = (float)px + 0.5f, cy = (float)py + 0.5f;
            float l0 = edge(x[1], y[1], x[2], y[2], cx, cy) / area;
            float l1 = edge(x[2], y[2], x[0], y[0], cx, cy) / area;
            float l2 = 1.0f - l0 - l1;
            if (l0 < 0 || l1 < 0 || l2 < 0) continue;
            float d = l0 * z[0] + l1 * z[1] + l2 * z[2] + bias;
            float *t = &c->smap[(size_t)py * (size_t)S + (size_t)px];
            if (d < *t) *t = d;
        }
}

static float visibility(const soft_ctx *c, const float p[3]) {
    const int S = RN_SOFT_SHADOW_SIZE;
    float q[4];
    rn_mat4_apply(c->f->light_proj, p, q);
    float u = q[0] * 0.5f + 0.5f, v = q[1] * 0.5f + 0.5f, z = q[2] * 0.5f + 0.5f;
    if (!(u > 0 && u < 1 && v > 0 && v < 1 && z < 1)) return 1.0f;
    float lit = 0;
    for (int i = -2; i <= 2; i++)
        for (int j = -2; j <= 2; j++) {
            int sx = (int)((u + 1.5f * (float)i * c->f->shadow_texel) * (float)S);
            int sy = (int)((v + 1.5f * (float)j * c->f->shadow_texel) * (float)S);
            sx = sx < 0 ? 0 : sx > S - 1 ? S - 1 : sx;
            sy = sy < 0 ? 0 : sy > S - 1 ? S - 1 : sy;
            lit += z <= c->smap[(size_t)sy * (size_t)S + (size_t)sx] ? 1.0f : 0.0f;
        }
    return lit / 25.0f;
}

/* The lighting model of render_internal.h. */
static void shade(const soft_ctx *c, const float *a, float out[4]) {
    const rn_frame *f = c->f;
    float n[3] = {a[3], a[4], a[5]}, V[3], h[3];
    float nl = sqrtf(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
    if (nl > 0)
        for (int k = 0; k < 3; k++) n[k] /= nl;
    for (int k = 0; k < 3; k++) V[k] = f->eye[k] - a[k];
    float vl = sqrtf(V[0] * V[0] + V[1] * V[1] + V[2] * V[2]);
    if (vl > 0)
        for (int k = 0; k < 3; k++) V[k] /= vl;
    if (n[0] * V[0] + n[1] * V[1] + n[2] * V[2] < 0)
        for (int k = 0; k < 3; k++) n[k] = -n[k];
    float sh = visibility(c, a);
    float ndl = fmaxf(n[0] * f->light[0] + n[1] * f->light[1] + n[2] * f->light[2], 0.0f);
    float amb = 0.24f + 0.12f * n[2] + 0.22f * fmaxf(n[0] * V[0] + n[1] * V[1] + n[2] * V[2], 0.0f);
    for (int k = 0; k < 3; k++) h[k] = V[k] + f->light[k];
    float hl = sqrtf(h[0] * h[0] + h[1] * h[1] + h[2] * h[2]);
    float ndh = hl > 0 ? fmaxf((n[0] * h[0] + n[1] * h[1] + n[2] * h[2]) / hl, 0.0f) : 0.0f;
    float sp = c->spec * powf(ndh, 40.0f) * sh;
    float alpha = a[9];
    for (int k = 0; k < 3; k++)
        out[k] = fminf(a[6 + k] * (amb + 0.62f * ndl * sh) + sp, 1.0f) * alpha;
    out[3] = alpha;
}

/* ------------------------------------------------------------ colour */
typedef struct cvert {
    float clip[4];
    float a[NATTR];
} cvert;

static void raster_tri(soft_ctx *c, const cvert *v) {
    float x[3], y[3], z[3], iw[3];
    for (int k = 0; k < 3; k++) {
        iw[k] = 1.0f / v[k].clip[3];
        x[k] = (v[k].clip[0] * iw[k] * 0.5f + 0.5f) * (float)c->w;
        y[k] = (0.5f - v[k].clip[1] * iw[k] * 0.5f) * (float)c->h;
        z[k] = v[k].clip[2] * iw[k] * 0.5f + 0.5f;
    }
    float area = edge(x[0], y[0], x[1], y[1], x[2], y[2]);
    if (fabsf(area) < 1e-12f) return;
    float fx0 = fminf(x[0], fminf(x[1], x[2])), fx1 = fmaxf(x[0], fmaxf(x[1], x[2]));
    float fy0 = fminf(y[0], fminf(y[1], y[2])), fy1 = fmaxf(y[0], fmaxf(y[1], y[2]));
    if (fx1 < 0 || fy1 < 0 || fx0 > (float)c->w || fy0 > (float)c->h) return;
    int x0 = fx0 < 0 ? 0 : (int)fx0, y0 = fy0 < 0 ? 0 : (int)fy0;
    int x1 = fx1 > (float)(c->w - 1) ? c->w - 1 : (int)fx1;
    int y1 = fy1 > (float)(c->h - 1) ? c->h - 1 : (int)fy1;
    for (int py = y0; py <= y1; py++)
        for (int px = x0; px <= x1; px++) {
            float cx = (float)px + 0.5f, cy = (float)py + 0.5f;
            float l0 = edge(x[1], y[1], x[2], y[2], cx, cy) / area;
            float l1 = edge(x[2], y[2], x[0], y[0], cx, cy) / area;
            float l2 = 1.0f - l0 - l1;
            if (l0 < 0 || l1 < 0 || l2 < 0) continue;
            float d = l0 * z[0] + l1 * z[1] + l2 * z[2];
            size_t i = (size_t)py * (size_t)c->w + (size_t)px;
            if (!(d >= 0 && d <= 1) || d >= c->depth[i]) continue;
            float w0 = l0 * iw[0], w1 = l1 * iw[1], w2 = l2 * iw[2], ws = w0 + w1 + w2;
            float a[NATTR];
            for (int k = 0; k < NATTR; k++)
                a[k] = (w0 * v[0].a[k] + w1 * v[1].a[k] + w2 * v[2].a[k]) / ws;
            c->depth[i] = d;
            shade(c, a, c->color + 4 * i);
        }
}

/* Clip a triangle against the near plane z_clip + w_clip > 0 and raster the
 * (up to 2) resulting triangles. */
static void color_tri(soft_ctx *c, const rn_vertex *tri) {
    cvert in[3], out[4];
    for (int k = 0; k < 3; k++) {
        rn_mat4_apply(c->f->view_proj, tri[k].p, in[k].clip);
        memcpy(in[k].a, tri[k].p, 3 * sizeof(float));
        memcpy(in[k].a + 3, tri[k].n, 3 * sizeof(float));
        memcpy(in[k].a + 6, tri[k].c, 4 * sizeof(float));
    }
    int n = 0;
    for (int k = 0; k < 3; k++) {
        const cvert *p = &in[k], *q = &in[(k + 1) % 3];
        float dp = p->clip[2] + p->clip[3], dq = q->clip[2] + q->clip[3];
        if (dp > 0) out[n++] = *p;
        if ((dp > 0) != (dq > 0)) {
            float t = dp / (dp - dq);
            cvert *r = &out[n++];
            for (int j = 0; j < 4; j++) r->clip[j] = p->clip[j] + t * (q->clip[j] - p->clip[j]);
            for (int j = 0; j < NATTR; j++) r->a[j] = p->a[j] + t * (q->a[j] - p->a[j]);
        }
    }
    for (int k = 1; k + 1 < n; k++) {
        cvert t[3] = {out[0], out[k], out[k + 1]};
        raster_tri(c, t);
    }
}

defo_status rn_soft_draw(const rn_frame *f, unsigned char *rgba) {
    soft_ctx c;
    memset(&c, 0, sizeof c);
    c.f = f;
    c.w = f->width * SS;
    c.h = f->height * SS;
    size_t ns = (size_t)c.w * (size_t)c.h, nsm = (size_t)RN_SOFT_SHADOW_SIZE * RN_SOFT_SHADOW_SIZE;
    c.depth = defo_malloc(ns * sizeof(float));
    c.color = defo_calloc(ns * 4, sizeof(float));
    c.smap = defo_malloc(nsm * sizeof(float));
    if (!c.depth || !c.color || !c.smap) {
        defo_free(c.depth);
        defo_free(c.color);
        defo_free(c.smap);
        return defo_error_oom("software render buffers", ns * 5 * sizeof(float));
    }
    for (size_t i = 0; i < ns; i++) c.depth[i] = 1.0f;
    for (size_t i = 0; i < nsm; i++) c.smap[i] = 1.0f;
    for (size_t t = 0; t + 2 < f->objects->count; t += 3) shadow_tri(&c, f->objects->v + t);
    c.spec = 0.0f;
    for (size_t t = 0; t + 2 < f->ground->count; t += 3) color_tri(&c, f->ground->v + t);
    c.spec = 0.25f;
    for (size_t t = 0; t + 2 < f->objects->count; t += 3) color_tri(&c, f->objects->v + t);
    for (int y = 0; y < f->height; y++)
        for (int x = 0; x < f->width; x++) {
            float acc[4] = {0, 0, 0, 0};
            for (int sy = 0; sy < SS; sy++)
                for (int sx = 0; sx < SS; sx++) {
                    const float *s =
                        c.color + 4 * ((size_t)(y * SS + sy) * (size_t)c.w + (size_t)(x * SS + sx));
                    for (int k = 0; k < 4; k++) acc[k] += s[k];
                }
            unsigned char *d = rgba + 4 * ((size_t)y * (size_t)f->width + (size_t)x);
            for (int k = 0; k < 4; k++) {
                float v = acc[k] / (SS * SS) * 255.0f + 0.5f;
                d[k] = (unsigned char)(v > 255.0f ? 255.0f : v);
            }
        }
    defo_free(c.depth);
    defo_free(c.color);
    defo_free(c.smap);
    return DEFO_OK;
}
