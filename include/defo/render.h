/*
 * defo/render.h — headless pictures of simulation frames (library
 * `defo_render`, separate from libdefo: the core library never links GL).
 *
 * A frame is drawn from a defo_mesh (positions from the mesh or an override
 * array), the mesh's boundary surface coloured by a chosen scalar field with a
 * colour map and a legend, the colliders given as simple shapes, a checkered
 * ground plane with soft shadows, and an auto-framed perspective camera
 * looking at the object from above in a 3/4 view.
 *
 * Backends: OpenGL ES 3 through EGL on Mesa's surfaceless platform (llvmpipe
 * runs with no display and no GPU), and a software rasteriser that draws the
 * same triangle list with the same lighting, used when EGL is unavailable or
 * when asked for.  Both give the same framing and colours; edges and shadow
 * softness differ slightly.
 *
 * Coordinates: z is up (gravity is -z in defo).  Units: the mesh's (m).
 * Ownership: everything passed in is borrowed for the duration of the call.
 */
#ifndef DEFO_RENDER_H
#define DEFO_RENDER_H

#include "defo/collision.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An RGB8 image, rows top to bottom, 3 bytes per pixel. */
typedef struct defo_image {
    int width, height;
    unsigned char *rgb; /* width * height * 3, owned (defo_image_free) */
} defo_image;

/* Allocate a width x height image filled with colour rgb (may be NULL: black). */
DEFO_API defo_status defo_image_create(int width, int height, const unsigned char rgb[3],
                                       defo_image *out);
DEFO_API void defo_image_free(defo_image *img);
/* Write an 8-bit RGB PNG atomically (temporary name, then rename). */
DEFO_API defo_status defo_image_write_png(const char *path, const defo_image *img);
/* Read an 8-bit RGB or RGBA PNG (alpha dropped); for tests and tools. */
DEFO_API defo_status defo_image_read_png(const char *path, defo_image *out);
/* Draw text with the built-in 5x7 bitmap font (ASCII 32..126; lower case is
 * drawn as upper case), each font pixel scale x scale image pixels, top-left
 * at (x, y).  Clipped to the image. */
DEFO_API void defo_image_draw_text(defo_image *img, int x, int y, int scale,
                                   const unsigned char rgb[3], const char *text);
/* Width in pixels of text drawn at scale. */
DEFO_API int defo_image_text_width(const char *text, int scale);
/* A straight line from (x0, y0) to (x1, y1) (pixel coordinates, may lie
 * outside: clipped), width pixels wide, in one colour — for plots. */
DEFO_API void defo_image_draw_line(defo_image *img, double x0, double y0, double x1, double y1,
                                   int width, const unsigned char rgb[3]);
/* Copy src into dst with its top-left corner at (x, y), clipped. */
DEFO_API void defo_image_blit(defo_image *dst, const defo_image *src, int x, int y);

typedef enum defo_render_backend {
    DEFO_RENDER_AUTO = 0,    /* OpenGL/EGL when it initialises, else software */
    DEFO_RENDER_OPENGL = 1,  /* OpenGL ES 3 via EGL (surfaceless Mesa); error if unavailable */
    DEFO_RENDER_SOFTWARE = 2 /* built-in rasteriser */
} defo_render_backend;

typedef enum defo_colormap {
    DEFO_COLORMAP_AUTO = 0, /* diverging for a field named "J", else viridis */
    DEFO_COLORMAP_VIRIDIS = 1,
    DEFO_COLORMAP_DIVERGING = 2 /* blue - white - red (Moreland's cool-warm) */
} defo_colormap;

/* A collider shape to draw: a defo_shape_def (collision.h: its centre,
 * normal, axis, sizes and rotation in the collider frame) placed in the world
 * by rotation (row-major, collider -> world) and translation, i.e.
 * x_world = rotation · x_collider + translation.  A plane is drawn as a
 * finite square around the object; a plane with normal +z is the ground. */
typedef struct defo_render_shape {
    defo_shape_def shape;
    double rotation[9];    /* default identity */
    double translation[3]; /* default 0 */
} defo_render_shape;
/* A shape with identity placement. */
DEFO_API defo_render_shape defo_render_shape_from(const defo_shape_def *shape);

typedef struct defo_render_def {
    int width, height; /* pixels, 16..8192; default 800 x 600 */
    /* Camera framing box: when frame_lo < frame_hi on every axis the camera
     * fits this box (pass the bounding box of the object over all frames so a
     * sequence keeps one camera); otherwise the bounding box of the drawn
     * positions. */
    double frame_lo[3], frame_hi[3];
    double azimuth_deg;   /* camera azimuth about +z from +x; default -58 (3/4 view) */
    double elevation_deg; /* camera height angle; default 28 */
    /* Field to colour by: a cell field (constant per boundary face) or point
     * field (interpolated), looked up as cell first.  Vectors and tensors are
     * drawn by magnitude (Euclidean / Frobenius norm).  NULL or "": a plain
     * body colour, no legend.  A missing name is DEFO_ERR_INVALID_ARGUMENT
     * listing the fields the mesh has. */
    const char *field;
    defo_colormap colormap; /* default AUTO */
    /* Colour range; used when range[0] < range[1], else defo_render_auto_range
     * over every part's values: J [0, 2], other fields their 1st-99th
     * percentiles (said in the legend). */
    double range[2];
    /* A line under the field name in the legend (e.g. "1st-99th pct" when the
     * caller computed a percentile range); NULL: none, or the automatic
     * range's own note. */
    const char *range_note;
    int highlight_inverted; /* 1 (default): faces of inverted elements, and of curved ones
                                 folded between their quadrature points, at the drawn
                                 positions (defo_element_fold_state) are magenta
                                 (255, 0, 255) */
    int legend; /* 1 (default): colour bar with min/mid/max labels when a field is drawn, and
                   "inverted N of M" (or "inverted N, folded K of M") counting every element
                   of every part, as defo_body_count_inverted / _folded count them */
    const char *caption;   /* text at the top left (e.g. "frame 12  t = 0.40 s"); may be NULL */
    int ground;            /* 1 (default): checkered ground under the object with soft shadows */
    double ground_height;  /* used when ground_height_set; else the lowest of the framing box
                                 and of any +z plane collider */
    int ground_height_set; /* default 0 */
    int fast; /* 1: a frame for a window (OpenGL: no multisampling, one hardware-filtered
                 shadow comparison instead of 5x5); default 0 */
} defo_render_def;
DEFO_API defo_render_def defo_default_render_def(void);

typedef struct defo_renderer defo_renderer;

/* Create a renderer (an EGL context for the OpenGL backend; reuse it for many
 * frames).  On error *out is NULL and the message says why (e.g. no EGL
 * display).  The OpenGL backend makes every EGL/GL call on a thread of its own,
 * started here and joined by defo_renderer_destroy, so no driver state is left
 * on the caller's threads; a renderer serves one call at a time. */
DEFO_API defo_status defo_renderer_create(defo_render_backend backend, defo_renderer **out);
DEFO_API void defo_renderer_destroy(defo_renderer *r);
/* "opengl: <GL_RENDERER string>" or "software". */
DEFO_API const char *defo_renderer_name(const defo_renderer *r);

/* Draw one frame of mesh (tet4/tet10: the boundary of the volume; a triangle
 * mesh: its triangles) at positions (3 per node; NULL = mesh->x) with the
 * given shapes (may be NULL when num_shapes = 0).  *out receives a new image of
 * def->width x def->height.  def may be NULL (defaults). */
DEFO_API defo_status defo_render_mesh(defo_renderer *r, const defo_render_def *def,
                                      const defo_mesh *mesh, const double *positions,
                                      const defo_render_shape *shapes, int num_shapes,
                                      defo_image *out);

/* One thing to draw in a picture of several (defo_render_parts).  mesh: a
 * volume mesh (drawn as its boundary) or a triangle mesh, at positions (3
 * per node; NULL = mesh->x).  A volume mesh may instead be shown through an
 * embedded surface (MG04 §5.1, defo/embed.h): surface's 3-node triangles at
 * surface_positions (NULL = surface->x), each vertex coloured from the
 * element surface_elem[v] of mesh that holds it — a cell field by that
 * element's value, a point field by its corner values weighted with
 * surface_bary (4 per vertex; needed for point fields) — and a triangle is
 * magenta when an element of its vertices is inverted.  The mesh's elements
 * count in the legend's inverted count either way. */
typedef struct defo_render_part {
    const defo_mesh *mesh;
    const double *positions;
    const defo_mesh *surface;
    const double *surface_positions;
    const defo_index *surface_elem;
    const double *surface_bary;
    /* Optional, for an embedded surface: unit normals per vertex (3 each;
     * smooth shading, e.g. defo_embed_update's), NULL: each triangle's own;
     * and the value of the coloured field at each vertex (e.g. a stress
     * interpolated with the element's shape functions, MTPS08 §6.2), NULL:
     * from the mesh's field as above.  The colour range stays the mesh's. */
    const double *surface_normals;
    const double *surface_values;
} defo_render_part;

/* Draw several parts (e.g. every body of a scene) in one picture: one
 * camera, one colour range over all of them; def->field must exist in every
 * part's mesh.  Otherwise as defo_render_mesh. */
DEFO_API defo_status defo_render_parts(defo_renderer *r, const defo_render_def *def,
                                       const defo_render_part *parts, int num_parts,
                                       const defo_render_shape *shapes, int num_shapes,
                                       defo_image *out);

/* The camera a picture of def is drawn with, when def's framing box is
 * given (frame_lo < frame_hi on every axis; else DEFO_ERR_INVALID_ARGUMENT):
 * view_proj maps world points to clip space (row-major 4×4; pixel x =
 * (1 + X/W) width/2, y = (1 − Y/W) height/2 from the top), eye is the camera
 * position.  For picking in a window and drawing over a picture. */
DEFO_API defo_status defo_render_camera(const defo_render_def *def, double view_proj[16],
                                        double eye[3]);

/* Scalar value range of a field (the values defo_render_mesh would colour
 * by), min and max.  Errors as defo_render_mesh. */
DEFO_API defo_status defo_render_field_range(const defo_mesh *mesh, const char *field, double *lo,
                                             double *hi);
/* The scalar values defo_render_* colours by (one per element for a cell
 * field, per node for a point field; vectors and tensors by magnitude) into
 * values (may be NULL: count only); *count receives how many. */
DEFO_API defo_status defo_render_field_values(const defo_mesh *mesh, const char *field,
                                              double *values, defo_index *count);
/* The colour range used when none is given, from the values of every part
 * (and, for a sequence, every frame) to colour: "J" — [0, 2] whatever the
 * values, so white is J = 1 (no volume change) and every picture of every
 * run compares; any other field — its 1st and 99th percentiles (nearest
 * rank over the finite values), so a few outliers (stress at a corner or a
 * crack tip) do not wash out the rest; the whole span when those are equal.
 * values (count of them) may be reordered. */
DEFO_API defo_status defo_render_auto_range(const char *field, double *values, size_t count,
                                            double range[2]);

/* Colour of t in [0, 1] (clamped) under map (AUTO = viridis). */
DEFO_API void defo_colormap_rgb(defo_colormap map, double t, unsigned char rgb[3]);

/* Contact sheet: tiles (all the same size) laid out in cols columns on a dark
 * background with a margin, each with its label (labels may be NULL, or hold
 * NULL entries) under it, and an optional title on top. */
DEFO_API defo_status defo_image_sheet(const defo_image *tiles, const char *const *labels, int count,
                                      int cols, const char *title, defo_image *out);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_RENDER_H */
