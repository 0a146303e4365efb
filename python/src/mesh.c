/*
 * python/src/mesh.c — defo.Mesh (defo/mesh.h), mesh files (defo/io.h), the
 * generators and the mesher (defo/mesher.h).
 *
 * A Mesh is immutable once made: nothing may reallocate its arrays, so the
 * NumPy views of its points, elements, triangles and fields stay valid as
 * long as they live (each view keeps the Mesh alive).  New meshes come from
 * the constructor (arrays copied in), the readers, the generators, the
 * mesher, and from bodies (copies of their current mesh).
 */
#include "defo_py.h"

#include <string.h>

/* ------------------------------------------------------------ the type */
PyObject *mesh_wrap(defo_mesh *mesh) {
    Mesh *m = PyObject_New(Mesh, &Mesh_Type);
    if (!m) {
        defo_mesh_destroy(mesh);
        return NULL;
    }
    m->mesh = mesh;
    m->exports = 0;
    return (PyObject *)m;
}

static void Mesh_dealloc(Mesh *m) {
    defo_mesh_destroy(m->mesh);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

/* An index array: int32, or int64 checked to fit; (rows, cols) as
 * get_array.  *out is malloc'ed (PyMem) and holds rows * cols indices. */
static int get_indices(PyObject *obj, const char *name, Py_ssize_t cols_lo, Py_ssize_t cols_hi,
                       defo_index **out, Py_ssize_t *rows, Py_ssize_t *cols) {
    Py_buffer b;
    if (get_array(obj, name, 'I', -1, -1, &b) < 0) return -1;
    *rows = b.shape[0];
    *cols = b.shape[1];
    if (*cols < cols_lo || *cols > cols_hi || (cols_lo == 4 && *cols != 4 && *cols != 10) ||
        (cols_lo == 3 && *cols != 3 && *cols != 6)) {
        PyErr_Format(PyExc_ValueError, "%s: expected %s nodes a row, got %zd", name,
                     cols_lo == 4 ? "4 (tet4) or 10 (tet10)" : "3 or 6", *cols);
        PyBuffer_Release(&b);
        return -1;
    }
    const Py_ssize_t n = *rows * *cols;
    *out = PyMem_Malloc((size_t)(n + 1) * sizeof **out);
    if (!*out) {
        PyBuffer_Release(&b);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = b.itemsize == 4 ? ((const int32_t *)b.buf)[i] : ((const int64_t *)b.buf)[i];
        if (v < 0 || v > DEFO_INDEX_MAX) {
            PyErr_Format(PyExc_ValueError, "%s[%zd, %zd]: node index %lld is out of range", name,
                         i / *cols, i % *cols, v);
            PyMem_Free(*out);
            *out = NULL;
            PyBuffer_Release(&b);
            return -1;
        }
        (*out)[i] = (defo_index)v;
    }
    PyBuffer_Release(&b);
    return 0;
}

static PyObject *Mesh_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    (void)type;
    static char *kwlist[] = {"points", "elements", "triangles", "element_tags", "orient", NULL};
    PyObject *pts, *elems = Py_None, *tris = Py_None, *tags = Py_None;
    int orient = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOOp:Mesh", kwlist, &pts, &elems, &tris, &tags,
                                     &orient))
        return NULL;
    Py_buffer pb;
    if (get_array(pts, "points", 'd', -1, 3, &pb) < 0) return NULL;
    const Py_ssize_t n = pb.shape[0];
    defo_index *e = NULL, *t = NULL;
    Py_ssize_t ne = 0, npe = 0, nt = 0, npt = 0;
    defo_mesh *mesh = NULL;
    PyObject *result = NULL;
    if (n > DEFO_INDEX_MAX) {
        PyErr_SetString(PyExc_ValueError, "points: more than 2^31-1 nodes");
        goto done;
    }
    if (elems != Py_None && get_indices(elems, "elements", 4, 10, &e, &ne, &npe) < 0) goto done;
    if (tris != Py_None && get_indices(tris, "triangles", 3, 6, &t, &nt, &npt) < 0) goto done;
    if (elems == Py_None && tris == Py_None) {
        PyErr_SetString(PyExc_ValueError, "Mesh: give elements (tet4, tet10) or triangles");
        goto done;
    }
    defo_status s = defo_mesh_create(elems == Py_None ? 0 : npe == 10 ? 2 : 1, &mesh);
    if (!s) s = defo_mesh_reserve(mesh, (defo_index)n, (defo_index)ne, (defo_index)nt);
    const double *x = pb.buf;
    for (Py_ssize_t i = 0; i < n && !s; i++)
        s = defo_mesh_add_node(mesh, x[3 * i], x[3 * i + 1], x[3 * i + 2], NULL);
    Py_buffer tb = {0};
    int have_tags = 0;
    if (!s && tags != Py_None) {
        if (get_array(tags, "element_tags", 'i', ne, 0, &tb) < 0) goto done;
        have_tags = 1;
    }
    for (Py_ssize_t i = 0; i < ne && !s; i++)
        s = defo_mesh_add_elem(mesh, e + i * npe, have_tags ? ((const int32_t *)tb.buf)[i] : 0);
    if (have_tags) PyBuffer_Release(&tb);
    for (Py_ssize_t i = 0; i < nt && !s; i++) s = defo_mesh_add_tri(mesh, t + i * npt, (int)npt, 0);
    if (!s) s = defo_mesh_validate(mesh);
    if (!s && orient && ne > 0) {
        defo_index flipped = 0;
        s = defo_mesh_orient(mesh, &flipped);
        if (!s && flipped > 0) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "Mesh: %ld element%s reoriented (negatively oriented as given)", (long)flipped,
                     flipped == 1 ? "" : "s");
            if (PyErr_WarnEx(defo_py_Warning, msg, 1) < 0) goto done;
        }
    }
    if (s < 0) {
        raise_status(s, "Mesh");
        goto done;
    }
    result = mesh_wrap(mesh);
    mesh = NULL;
done:
    defo_mesh_destroy(mesh);
    PyMem_Free(e);
    PyMem_Free(t);
    PyBuffer_Release(&pb);
    return result;
}

/* ------------------------------------------------------------ properties */
static PyObject *Mesh_points(Mesh *m, void *c) {
    (void)c;
    return make_array((PyObject *)m, &m->exports, m->mesh->x, 'd', 2, m->mesh->num_nodes, 3, 1, 0);
}
static PyObject *Mesh_elements(Mesh *m, void *c) {
    (void)c;
    return make_array((PyObject *)m, &m->exports, m->mesh->elems, 'i', 2, m->mesh->num_elems,
                      m->mesh->nodes_per_elem ? m->mesh->nodes_per_elem : 4, 1, 0);
}
static PyObject *Mesh_triangles(Mesh *m, void *c) {
    (void)c;
    return make_array((PyObject *)m, &m->exports, m->mesh->tris, 'i', 2, m->mesh->num_tris,
                      m->mesh->nodes_per_tri ? m->mesh->nodes_per_tri : 3, 1, 0);
}
static PyObject *Mesh_element_tags(Mesh *m, void *c) {
    (void)c;
    if (!m->mesh->elem_tag) Py_RETURN_NONE;
    return make_array((PyObject *)m, &m->exports, m->mesh->elem_tag, 'i', 1, m->mesh->num_elems, 0,
                      1, 0);
}
static PyObject *Mesh_order(Mesh *m, void *c) {
    (void)c;
    return PyLong_FromLong(m->mesh->order);
}
static PyObject *Mesh_num_nodes(Mesh *m, void *c) {
    (void)c;
    return PyLong_FromLong(m->mesh->num_nodes);
}
static PyObject *Mesh_num_elements(Mesh *m, void *c) {
    (void)c;
    return PyLong_FromLong(m->mesh->num_elems);
}
static PyObject *Mesh_num_triangles(Mesh *m, void *c) {
    (void)c;
    return PyLong_FromLong(m->mesh->num_tris);
}

/* {name: array} of the point (loc 0) or cell (loc 1) fields, as views. */
static PyObject *fields_of(Mesh *m, defo_field_location loc) {
    PyObject *d = PyDict_New();
    for (int i = 0; d && i < m->mesh->num_fields; i++) {
        const defo_field *f = &m->mesh->fields[i];
        if (f->location != loc) continue;
        Py_ssize_t rows = loc == DEFO_FIELD_POINT ? m->mesh->num_nodes : m->mesh->num_elems;
        PyObject *a = make_array((PyObject *)m, &m->exports, f->data, 'd',
                                 f->components == 1 ? 1 : 2, rows, f->components, 1, 0);
        if (!a || PyDict_SetItemString(d, f->name, a) < 0) Py_CLEAR(d);
        Py_XDECREF(a);
    }
    return d;
}
static PyObject *Mesh_point_fields(Mesh *m, void *c) {
    (void)c;
    return fields_of(m, DEFO_FIELD_POINT);
}
static PyObject *Mesh_cell_fields(Mesh *m, void *c) {
    (void)c;
    return fields_of(m, DEFO_FIELD_CELL);
}

static PyGetSetDef Mesh_getset[] = {
    {"points", (getter)Mesh_points, NULL, "(n, 3) float64, read-only view: the rest positions [m].",
     NULL},
    {"elements", (getter)Mesh_elements, NULL,
     "(m, 4) or (m, 10) int32, read-only view: tet4 or tet10 (VTK node order) elements.", NULL},
    {"triangles", (getter)Mesh_triangles, NULL,
     "(t, 3) or (t, 6) int32, read-only view: triangles of a surface (or of a file).", NULL},
    {"element_tags", (getter)Mesh_element_tags, NULL, "(m,) int32 or None: physical tags.", NULL},
    {"order", (getter)Mesh_order, NULL, "0 (triangles only), 1 (tet4) or 2 (tet10).", NULL},
    {"num_nodes", (getter)Mesh_num_nodes, NULL, "Number of nodes.", NULL},
    {"num_elements", (getter)Mesh_num_elements, NULL, "Number of volume elements.", NULL},
    {"num_triangles", (getter)Mesh_num_triangles, NULL, "Number of triangles.", NULL},
    {"point_fields", (getter)Mesh_point_fields, NULL,
     "{name: (n,) or (n, k) float64 view}: fields per node (e.g. a frame's displacement).", NULL},
    {"cell_fields", (getter)Mesh_cell_fields, NULL,
     "{name: (m,) or (m, k) float64 view}: fields per element (e.g. J, von_mises).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* ------------------------------------------------------------ methods */
static PyObject *Mesh_write(Mesh *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "positions", "binary", "compress", "msh_version", NULL};
    PyObject *path, *pos = Py_None;
    int binary = 1, compress = 0, msh_version = 4;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|Oppi:write", kwlist, PyUnicode_FSConverter,
                                     &path, &pos, &binary, &compress, &msh_version))
        return NULL;
    defo_write_options wo = defo_default_write_options();
    wo.binary = binary;
    wo.compress = compress;
    wo.msh_version = msh_version;
    Py_buffer b = {0};
    if (pos != Py_None) {
        if (get_array(pos, "positions", 'd', m->mesh->num_nodes, 3, &b) < 0) {
            Py_DECREF(path);
            return NULL;
        }
        wo.positions = b.buf;
    }
    defo_status s;
    Py_BEGIN_ALLOW_THREADS s = defo_mesh_write(PyBytes_AS_STRING(path), m->mesh, &wo);
    Py_END_ALLOW_THREADS if (pos != Py_None) PyBuffer_Release(&b);
    Py_DECREF(path);
    if (check_status(s, "write") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Mesh_bbox(Mesh *m, PyObject *args) {
    (void)args;
    double lo[3], hi[3];
    if (check_status(defo_mesh_bbox(m->mesh, lo, hi), "bbox") < 0) return NULL;
    return Py_BuildValue("(NN)", vec3_tuple(lo), vec3_tuple(hi));
}

static PyObject *Mesh_volume(Mesh *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"positions", NULL};
    PyObject *pos = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:volume", kwlist, &pos)) return NULL;
    Py_buffer b = {0};
    if (pos != Py_None && get_array(pos, "positions", 'd', m->mesh->num_nodes, 3, &b) < 0)
        return NULL;
    double v = 0;
    defo_status s = defo_element_volume(m->mesh, pos != Py_None ? b.buf : NULL, &v);
    if (pos != Py_None) PyBuffer_Release(&b);
    if (check_status(s, "volume") < 0) return NULL;
    return PyFloat_FromDouble(v);
}

static PyObject *Mesh_boundary(Mesh *m, PyObject *args) {
    (void)args;
    defo_boundary bd;
    defo_status s = defo_mesh_boundary(m->mesh, m->mesh->nodes_per_elem == 10, &bd);
    if (check_status(s, "boundary") < 0) return NULL;
    PyObject *a = make_array(NULL, NULL, bd.faces, 'i', 2, bd.num_faces, bd.nodes_per_face, 0, 1);
    defo_boundary_free(&bd);
    return a;
}

static PyObject *Mesh_count_inverted(Mesh *m, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"positions", NULL};
    PyObject *pos = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:count_inverted", kwlist, &pos)) return NULL;
    Py_buffer b = {0};
    if (pos != Py_None && get_array(pos, "positions", 'd', m->mesh->num_nodes, 3, &b) < 0)
        return NULL;
    defo_index count = 0;
    defo_status s = defo_mesh_count_inverted(m->mesh, pos != Py_None ? b.buf : NULL, &count, NULL);
    if (pos != Py_None) PyBuffer_Release(&b);
    if (check_status(s, "count_inverted") < 0) return NULL;
    return PyLong_FromLong(count);
}

static PyObject *Mesh_to_quadratic(Mesh *m, PyObject *args) {
    (void)args;
    defo_mesh *q = NULL;
    if (check_status(defo_mesh_to_quadratic(m->mesh, &q), "to_quadratic") < 0) return NULL;
    return mesh_wrap(q);
}

static PyObject *Mesh_repr(Mesh *m) {
    const defo_mesh *x = m->mesh;
    if (x->order == 0)
        return PyUnicode_FromFormat("<defo.Mesh surface: %d nodes, %d triangles>",
                                    (int)x->num_nodes, (int)x->num_tris);
    return PyUnicode_FromFormat("<defo.Mesh tet%d: %d nodes, %d elements>", x->order == 2 ? 10 : 4,
                                (int)x->num_nodes, (int)x->num_elems);
}

static PyMethodDef Mesh_methods[] = {
    {"write", (PyCFunction)(void (*)(void))Mesh_write, METH_VARARGS | METH_KEYWORDS,
     "write(path, positions=None, binary=True, compress=False, msh_version=4)\n\n"
     "Write the mesh (.vtu .vtk .msh .node .obj, by extension), atomically; positions "
     "((n, 3) float64) instead of the rest points, e.g. a deformed state."},
    {"bbox", (PyCFunction)Mesh_bbox, METH_NOARGS, "bbox() -> ((x, y, z) lo, (x, y, z) hi)"},
    {"volume", (PyCFunction)(void (*)(void))Mesh_volume, METH_VARARGS | METH_KEYWORDS,
     "volume(positions=None) -> float: the elements' volume [m^3] (tet10 exact)."},
    {"boundary", (PyCFunction)Mesh_boundary, METH_NOARGS,
     "boundary() -> (f, 3) or (f, 6) int32: outward boundary faces (a copy)."},
    {"count_inverted", (PyCFunction)(void (*)(void))Mesh_count_inverted,
     METH_VARARGS | METH_KEYWORDS,
     "count_inverted(positions=None) -> int: elements with det <= 0 at positions."},
    {"to_quadratic", (PyCFunction)Mesh_to_quadratic, METH_NOARGS,
     "to_quadratic() -> Mesh: tet10 with a node at the middle of every edge."},
    {NULL, NULL, 0, NULL}};

PyTypeObject Mesh_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo.Mesh",
    .tp_basicsize = sizeof(Mesh),
    .tp_dealloc = (destructor)Mesh_dealloc,
    .tp_repr = (reprfunc)Mesh_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Mesh(points, elements=None, triangles=None, element_tags=None, orient=True)\n\n"
              "A tet4 / tet10 volume mesh or a triangle surface (points and indices copied in; "
              "int32 or int64 indices).  Immutable: its arrays are read-only NumPy views that "
              "stay valid while they live.  orient=True reorients negatively oriented elements "
              "(with a DefoWarning).",
    .tp_methods = Mesh_methods,
    .tp_getset = Mesh_getset,
    .tp_new = Mesh_new,
};

/* ------------------------------------------------------------ functions */
static PyObject *py_read_mesh(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *kwlist[] = {"path", "reorient", NULL};
    PyObject *path;
    const char *reorient = "repair";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|s:read_mesh", kwlist, PyUnicode_FSConverter,
                                     &path, &reorient))
        return NULL;
    defo_read_options ro = defo_default_read_options();
    if (!strcmp(reorient, "repair"))
        ro.reorient = DEFO_ORIENT_REPAIR;
    else if (!strcmp(reorient, "reject"))
        ro.reorient = DEFO_ORIENT_REJECT;
    else if (!strcmp(reorient, "keep"))
        ro.reorient = DEFO_ORIENT_KEEP;
    else {
        Py_DECREF(path);
        return PyErr_Format(PyExc_ValueError,
                            "read_mesh: reorient '%s' is not 'repair', 'reject' or 'keep'",
                            reorient);
    }
    defo_mesh *m = NULL;
    defo_status s;
    Py_BEGIN_ALLOW_THREADS s = defo_mesh_read(PyBytes_AS_STRING(path), &ro, &m);
    Py_END_ALLOW_THREADS Py_DECREF(path);
    if (s < 0) return raise_status(s, NULL);
    if (s > 0 && warn_status(s) < 0) {
        defo_mesh_destroy(m);
        return NULL;
    }
    return mesh_wrap(m);
}

typedef defo_status (*generator_fn)(const void *def, defo_mesh **out);
static PyObject *generate(def_kind kind, generator_fn fn, const char *what, PyObject *args,
                          PyObject *kw) {
    if (PyTuple_GET_SIZE(args) > 1 || (PyTuple_GET_SIZE(args) == 1 && kw)) {
        PyErr_Format(PyExc_TypeError, "%s: give one definition or keyword arguments", what);
        return NULL;
    }
    PyObject *def = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : kw;
    char buf[4096];
    if (def_from_object(kind, def, buf) < 0) return NULL;
    defo_mesh *m = NULL;
    defo_status s;
    Py_BEGIN_ALLOW_THREADS s = fn(buf, &m);
    Py_END_ALLOW_THREADS if (s < 0) return raise_status(s, what);
    return mesh_wrap(m);
}
static defo_status gen_box(const void *d, defo_mesh **o) {
    return defo_generate_box(d, o);
}
static defo_status gen_sphere(const void *d, defo_mesh **o) {
    return defo_generate_sphere(d, o);
}
static defo_status gen_cylinder(const void *d, defo_mesh **o) {
    return defo_generate_cylinder(d, o);
}
static defo_status gen_torus(const void *d, defo_mesh **o) {
    return defo_generate_torus(d, o);
}
static PyObject *py_box(PyObject *s, PyObject *a, PyObject *k) {
    (void)s;
    return generate(DEF_BOX, gen_box, "box", a, k);
}
static PyObject *py_sphere(PyObject *s, PyObject *a, PyObject *k) {
    (void)s;
    return generate(DEF_SPHERE, gen_sphere, "sphere", a, k);
}
static PyObject *py_cylinder(PyObject *s, PyObject *a, PyObject *k) {
    (void)s;
    return generate(DEF_CYLINDER, gen_cylinder, "cylinder", a, k);
}
static PyObject *py_torus(PyObject *s, PyObject *a, PyObject *k) {
    (void)s;
    return generate(DEF_TORUS, gen_torus, "torus", a, k);
}

static PyObject *quality_dict(const defo_quality_summary *q) {
    return Py_BuildValue("{s:l,s:d,s:d,s:d,s:d,s:l}", "elements", (long)q->num_elems,
                         "min_dihedral", q->min_dihedral, "max_dihedral", q->max_dihedral,
                         "worst_aspect", q->worst_aspect, "mean_aspect", q->mean_aspect, "inverted",
                         (long)q->inverted);
}

static PyObject *py_mesh_surface(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    PyObject *surface = NULL, *opts = NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs < 1 || nargs > 2 || (nargs == 2 && kw)) {
        PyErr_SetString(PyExc_TypeError,
                        "mesh_surface(surface, options=None, **fields): a Mesh of triangles, then "
                        "MesherOptions or keyword fields (cells=20, order=1, ...)");
        return NULL;
    }
    surface = PyTuple_GET_ITEM(args, 0);
    opts = nargs == 2 ? PyTuple_GET_ITEM(args, 1) : kw;
    if (!PyObject_TypeCheck(surface, &Mesh_Type)) {
        PyErr_Format(PyExc_TypeError, "mesh_surface: expected a defo.Mesh surface, got %.80s",
                     Py_TYPE(surface)->tp_name);
        return NULL;
    }
    defo_mesher_def def;
    if (def_from_object(DEF_MESHER, opts, &def) < 0) return NULL;
    defo_mesh *out = NULL;
    defo_mesher_report rep;
    defo_status s;
    Py_BEGIN_ALLOW_THREADS s = defo_mesh_surface(((Mesh *)surface)->mesh, &def, &out, &rep);
    Py_END_ALLOW_THREADS if (s < 0) return raise_status(s, "mesh_surface");
    if (s > 0 && warn_status(s) < 0) {
        defo_mesh_destroy(out);
        return NULL;
    }
    PyObject *m = mesh_wrap(out);
    PyObject *r = Py_BuildValue(
        "{s:d,s:d,s:d,s:d,s:d,s:d,s:N,s:d}", "h", rep.h, "surface_volume", rep.surface_volume,
        "volume", rep.volume, "volume_error", rep.volume_error, "max_boundary_distance",
        rep.max_boundary_distance, "mean_boundary_distance", rep.mean_boundary_distance, "quality",
        quality_dict(&rep.quality), "min_altitude", rep.min_altitude);
    if (!m || !r) {
        Py_XDECREF(m);
        Py_XDECREF(r);
        return NULL;
    }
    return Py_BuildValue("(NN)", m, r);
}

static PyMethodDef mesh_functions[] = {
    {"read_mesh", (PyCFunction)(void (*)(void))py_read_mesh, METH_VARARGS | METH_KEYWORDS,
     "read_mesh(path, reorient='repair') -> Mesh\n\n"
     "Read a mesh file: .vtu .vtk .msh (2.2, 4.1) .node/.ele .obj .stl .off .ply.  reorient: "
     "'repair' (negatively oriented elements are flipped, with a DefoWarning), 'reject' (an "
     "error) or 'keep' (as stored)."},
    {"box", (PyCFunction)(void (*)(void))py_box, METH_VARARGS | METH_KEYWORDS,
     "box(origin=(0,0,0), size=(1,1,1), cells=(4,4,4), cell_size=0, split='6', order=1) -> Mesh"},
    {"sphere", (PyCFunction)(void (*)(void))py_sphere, METH_VARARGS | METH_KEYWORDS,
     "sphere(center=(0,0,0), radius=1, cell_size=0, order=1) -> Mesh"},
    {"cylinder", (PyCFunction)(void (*)(void))py_cylinder, METH_VARARGS | METH_KEYWORDS,
     "cylinder(center=(0,0,0), radius=0.5, height=2, cell_size=0, order=1) -> Mesh"},
    {"torus", (PyCFunction)(void (*)(void))py_torus, METH_VARARGS | METH_KEYWORDS,
     "torus(center=(0,0,0), major_radius=1, minor_radius=0.4, cell_size=0, order=1) -> Mesh"},
    {"mesh_surface", (PyCFunction)(void (*)(void))py_mesh_surface, METH_VARARGS | METH_KEYWORDS,
     "mesh_surface(surface, options=None, **fields) -> (Mesh, report)\n\n"
     "Tet mesh of the solid a closed triangle surface bounds (ITF04 §10; MTPS08 §6 for "
     "order=2): its smallest dihedral angle at least target_dihedral, its volume the "
     "surface's.  report: a dict (h, volumes, boundary distances, quality).  A DefoWarning "
     "says what is wrong with an imperfect surface (holes, flipped triangles)."},
    {NULL, NULL, 0, NULL}};

int add_mesh_functions(PyObject *module) {
    if (PyType_Ready(&Mesh_Type) < 0) return -1;
    if (PyModule_AddObjectRef(module, "Mesh", (PyObject *)&Mesh_Type) < 0) return -1;
    return PyModule_AddFunctions(module, mesh_functions);
}
