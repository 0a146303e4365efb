/*
 * python/src/defo_py.h — what the files of the extension module defo._defo
 * share.  The extension is a client of defo's public API (include/defo/)
 * and nothing else: it never includes a header of src/.
 *
 * Conventions of the module:
 *   - every defo status < 0 becomes a Python exception of the class for its
 *     code (raise_status), carrying defo_last_error()'s message; a warning
 *     (> 0) becomes a Python warning of class defo.DefoWarning;
 *   - arrays come in through the buffer protocol, checked for dtype, shape
 *     and C-contiguity (get_array) — a wrong one raises, never converts
 *     silently — and go out as NumPy arrays: views of defo's memory through
 *     a small exporter object (View) that keeps the memory's owner alive,
 *     or copies where the memory may move (make_array).
 */
#ifndef DEFO_PY_H
#define DEFO_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <defo/defo.h>

/* ------------------------------------------------------------ errors */
/* Exception classes (module init creates them). */
extern PyObject *defo_py_Error, *defo_py_SceneError, *defo_py_ClosedError, *defo_py_Warning;
/* Raise the exception of status (< 0) with defo_last_error(), prefixed by
 * what ("read_mesh: ...") when what is not NULL.  Returns NULL. */
PyObject *raise_status(defo_status status, const char *what);
/* A warning status (> 0): a Python warning with defo_last_error().
 * Returns -1 when the warning was turned into an exception. */
int warn_status(defo_status status);
/* status < 0: raise and return -1; > 0: warn (0, or -1 if that raised);
 * 0: 0. */
int check_status(defo_status status, const char *what);

/* ------------------------------------------------------------ arrays */
/* A run of memory that owner keeps alive, seen as a C-contiguous array of
 * ndim (1 or 2) dimensions of float64 ('d') or int32 ('i').  Counting:
 * every View adds one to *exports while it lives, so an owner can tell
 * whether its memory is still seen (World.close defers the free). */
typedef struct View {
    PyObject_HEAD PyObject *owner;
    Py_ssize_t *exports;
    void *data;
    char format[2];
    int ndim, readonly;
    Py_ssize_t shape[2], strides[2];
} View;
extern PyTypeObject View_Type;
/* Called with a View's owner when the views it counts fall to 0 (a closed
 * world frees its memory then). */
extern void (*view_unseen_hook)(PyObject *owner);

/* A NumPy array over data (no copy) that keeps owner alive; exports (may be
 * NULL) counts the views of owner.  copy = 1: an array owning a copy. */
PyObject *make_array(PyObject *owner, Py_ssize_t *exports, const void *data, char format, int ndim,
                     Py_ssize_t rows, Py_ssize_t cols, int readonly, int copy);
/* A new, zero-filled float64 NumPy array of rows x cols (cols 0: 1-d). */
PyObject *new_array(Py_ssize_t rows, Py_ssize_t cols, double **data);

/* An array argument: obj must export a C-contiguous buffer of format 'd'
 * (float64), 'i' (int32) or 'I' (int32 or int64: indices; see itemsize),
 * per `format`, of shape (rows, cols) — rows or
 * cols < 0: any; cols 0: 1-d of rows.  Otherwise a ValueError or TypeError
 * saying "name: ..." what was expected and what came.  On success view
 * holds the buffer: PyBuffer_Release it. */
int get_array(PyObject *obj, const char *name, char format, Py_ssize_t rows, Py_ssize_t cols,
              Py_buffer *view);
/* Three doubles from any sequence of 3 numbers. */
int get_vec3(PyObject *obj, const char *name, double out[3]);
PyObject *vec3_tuple(const double v[3]);

/* ------------------------------------------------------------ definitions */
/* defo_*_def structs <-> Python: each kind is a table of fields (name,
 * type, offset).  A definition comes in as a mapping or as any object
 * with attributes of those names (defo.Material and friends); missing
 * fields keep defo's default (defo_default_*()).  Unknown keys of a
 * mapping are a TypeError naming them. */
typedef enum def_kind {
    DEF_MATERIAL,
    DEF_INVERSION,
    DEF_BIPHASIC,
    DEF_FORCE_MODEL,
    DEF_PLASTICITY,
    DEF_FRACTURE,
    DEF_INTEGRATOR,
    DEF_MOTION,
    DEF_MESHER,
    DEF_BOX,
    DEF_SPHERE,
    DEF_CYLINDER,
    DEF_TORUS,
    DEF_SHAPE,
    DEF_CONTACT,
    DEF_COUNT
} def_kind;
/* Fill out (a defo_*_def of kind) from obj (None: the defaults); a field
 * that is None keeps its default. */
int def_from_object(def_kind kind, PyObject *obj, void *out);
/* The same over out's current values (e.g. the kind's own defaults). */
int def_apply(def_kind kind, PyObject *obj, void *out);
/* The definition as a dict, or as an instance of the class registered for
 * its kind (defo.Material, ...). */
PyObject *def_to_dict(def_kind kind, const void *def);
PyObject *def_to_object(def_kind kind, const void *def);
PyObject *py_register(PyObject *self, PyObject *args);
/* Python entry points: defaults(kind_name) and fields(kind_name). */
PyObject *py_defaults(PyObject *self, PyObject *arg);
PyObject *py_fields(PyObject *self, PyObject *arg);
/* defo_region from a mapping or an object with "kind" and that kind's
 * fields (defo.Region). */
int region_from_object(PyObject *obj, defo_region *out);

/* ------------------------------------------------------------ types */
extern PyTypeObject Mesh_Type, Scene_Type, Simulation_Type, World_Type, Body_Type, Collider_Type;

typedef struct Mesh {
    PyObject_HEAD defo_mesh *mesh; /* owned; never changed after creation (views stay valid) */
    Py_ssize_t exports;
} Mesh;
/* A Mesh owning mesh (taken: destroyed with the object). */
PyObject *mesh_wrap(defo_mesh *mesh);

int add_mesh_functions(PyObject *module);
int add_sim_types(PyObject *module);

#endif
