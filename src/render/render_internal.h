/*
 * render/render_internal.h — what the scene builder hands to a backend.
 *
 * The scene builder (scene.c) turns a mesh, a field and colliders into plain
 * triangle lists in world space with per-vertex colours, plus the camera and
 * light matrices.  A backend (gl.c: OpenGL ES 3 over EGL; soft.c: software
 * rasteriser) only rasterises them with the shared lighting model:
 *
 *   n two-sided (flipped toward the eye), V toward the eye,
 *   ambient = 0.24 + 0.12 n.z (hemisphere) + 0.22 max(n.V, 0) (a fill light
 *   at the camera, so faces turned from the sun still read),
 *   diffuse = 0.62 max(n.L, 0) s, specular = k (n.h)^40 s,
 *   s = shadow-map visibility averaged over a 5x5 PCF kernel (soft edges);
 *   colour = albedo (ambient + diffuse) + specular.
 *
 * Backends write premultiplied RGBA (alpha = coverage); the builder composites
 * it over the background gradient and draws the legend and caption.
 */
#ifndef DEFO_RENDER_INTERNAL_H
#define DEFO_RENDER_INTERNAL_H

#include "base/base.h"
#include "defo/math.h"
#include "defo/render.h"

typedef struct rn_vertex {
    float p[3]; /* world position */
    float n[3]; /* unit normal */
    float c[4]; /* albedo 0..1 and opacity (the ground fades out toward its edge) */
} rn_vertex;

/* Growable vertex list, 3 vertices per triangle. */
typedef struct rn_list {
    rn_vertex *v;
    size_t count, capacity;
} rn_list;

defo_status rn_list_reserve(rn_list *l, size_t more);
/* Append one vertex (the list must have room: rn_list_reserve). */
void rn_list_vertex(rn_list *l, defo_vec3 p, defo_vec3 n, const float col[4]);
/* Append one triangle (a, b, c) with its flat normal (room reserved). */
void rn_list_tri(rn_list *l, defo_vec3 a, defo_vec3 b, defo_vec3 c, const float col[4]);
void rn_list_free(rn_list *l);

typedef struct rn_frame {
    int width, height;
    float view_proj[16];    /* column-major, world -> clip */
    float light_proj[16];   /* column-major, world -> light clip (orthographic) */
    float eye[3];           /* camera position */
    float light[3];         /* unit direction toward the light */
    float shadow_texel;     /* one shadow-map texel in light NDC/2 units (1/size) */
    const rn_list *ground;  /* receives shadows, casts none, no specular */
    const rn_list *objects; /* body and colliders: cast and receive */
    int fast;               /* defo_render_def.fast: cheaper shadows, no multisampling */
} rn_frame;

#define RN_PI 3.14159265358979323846

enum { RN_SHADOW_SIZE = 2048, RN_SOFT_SHADOW_SIZE = 1024 };

/* OpenGL ES 3 backend.  rn_gl_create fills name (GL_RENDERER). */
typedef struct rn_gl rn_gl;
defo_status rn_gl_create(rn_gl **out, char *name, size_t name_size);
void rn_gl_destroy(rn_gl *gl);
/* rgba: width*height*4 bytes, premultiplied, rows top to bottom. */
defo_status rn_gl_draw(rn_gl *gl, const rn_frame *f, unsigned char *rgba);

/* Software backend, same contract. */
defo_status rn_soft_draw(const rn_frame *f, unsigned char *rgba);

/* Column-major 4x4 helpers shared by the backends. */
static inline void rn_mat4_apply(const float m[16], const float p[3], float out[4]) {
    for (int i = 0; i < 4; i++)
        out[i] = m[i] * p[0] + m[4 + i] * p[1] + m[8 + i] * p[2] + m[12 + i];
}

#endif
