/*
 * python/src/module.c — the module defo._defo: exceptions, the array glue
 * (View, make_array, get_array), small module functions, and the module's
 * initialisation.  The Python package `defo` (python/defo/__init__.py)
 * re-exports what is here with the pure-Python helpers.
 */
#include "defo_py.h"

#include <string.h>

PyObject *defo_py_Error, *defo_py_SceneError, *defo_py_ClosedError, *defo_py_Warning;
static PyObject *status_class[16]; /* by -status */
static PyObject *np_asarray, *np_array, *np_zeros;

/* ------------------------------------------------------------ errors */
static PyObject *class_of(defo_status s) {
    if (s < 0 && -s < (int)(sizeof status_class / sizeof *status_class) && status_class[-s])
        return status_class[-s];
    return defo_py_Error;
}

PyObject *raise_status(defo_status status, const char *what) {
    const char *msg = defo_last_error();
    if (!msg || !msg[0]) {
        if (status == DEFO_ERR_OUT_OF_MEMORY) return PyErr_NoMemory();
        msg = defo_status_name(status);
    }
    PyObject *e = what ? PyUnicode_FromFormat("%s: %s", what, msg) : PyUnicode_FromString(msg);
    if (!e) return NULL;
    PyErr_SetObject(class_of(status), e);
    Py_DECREF(e);
    return NULL;
}

int warn_status(defo_status status) {
    (void)status;
    const char *msg = defo_last_error();
    return PyErr_WarnEx(defo_py_Warning, msg && msg[0] ? msg : "warning", 1);
}

int check_status(defo_status status, const char *what) {
    if (status < 0) {
        raise_status(status, what);
        return -1;
    }
    if (status > 0) return warn_status(status);
    return 0;
}

/* ------------------------------------------------------------ View */
void (*view_unseen_hook)(PyObject *owner);

static void View_dealloc(View *v) {
    if (v->exports && --*v->exports == 0 && view_unseen_hook && v->owner)
        view_unseen_hook(v->owner);
    Py_XDECREF(v->owner);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

static int View_getbuffer(View *v, Py_buffer *b, int flags) {
    if ((flags & PyBUF_WRITABLE) && v->readonly) {
        PyErr_SetString(PyExc_BufferError, "defo array is read-only");
        return -1;
    }
    const Py_ssize_t item = v->format[0] == 'd' ? 8 : 4;
    b->buf = v->data;
    b->obj = (PyObject *)v;
    Py_INCREF(v);
    b->len = item * v->shape[0] * (v->ndim == 2 ? v->shape[1] : 1);
    b->itemsize = item;
    b->readonly = v->readonly;
    b->ndim = v->ndim;
    b->format = (flags & PyBUF_FORMAT) ? v->format : NULL;
    b->shape = (flags & PyBUF_ND) == PyBUF_ND ? v->shape : NULL;
    b->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? v->strides : NULL;
    b->suboffsets = NULL;
    b->internal = NULL;
    return 0;
}

static PyBufferProcs View_buffer = {(getbufferproc)View_getbuffer, NULL};

PyTypeObject View_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo._defo.View",
    .tp_basicsize = sizeof(View),
    .tp_dealloc = (destructor)View_dealloc,
    .tp_as_buffer = &View_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory of a defo object seen as an array (the base of the NumPy arrays defo "
              "returns); keeps its owner alive.",
};

PyObject *make_array(PyObject *owner, Py_ssize_t *exports, const void *data, char format, int ndim,
                     Py_ssize_t rows, Py_ssize_t cols, int readonly, int copy) {
    static const double empty[1] = {0};
    View *v = PyObject_New(View, &View_Type);
    if (!v) return NULL;
    v->owner = owner;
    Py_XINCREF(owner);
    v->exports = exports;
    if (exports) (*exports)++;
    v->data = (void *)(data ? data : empty);
    v->format[0] = format;
    v->format[1] = 0;
    v->ndim = ndim;
    v->readonly = readonly;
    const Py_ssize_t item = format == 'd' ? 8 : 4;
    v->shape[0] = rows;
    v->shape[1] = ndim == 2 ? cols : 0;
    v->strides[0] = ndim == 2 ? cols * item : item;
    v->strides[1] = item;
    PyObject *a = PyObject_CallOneArg(copy ? np_array : np_asarray, (PyObject *)v);
    Py_DECREF(v);
    return a;
}

PyObject *new_array(Py_ssize_t rows, Py_ssize_t cols, double **data) {
    PyObject *shape = cols ? Py_BuildValue("(nn)", rows, cols) : Py_BuildValue("(n)", rows);
    if (!shape) return NULL;
    PyObject *a = PyObject_CallOneArg(np_zeros, shape);
    Py_DECREF(shape);
    if (!a) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(a, &b, PyBUF_CONTIG) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    *data = b.buf; /* the array owns it; the pointer stays valid while it lives */
    PyBuffer_Release(&b);
    return a;
}

/* "float64", "int32", ... of a buffer format character and item size. */
static const char *dtype_name(const char *fmt, Py_ssize_t item, int *big_endian) {
    *big_endian = 0;
    if (!fmt) return "unsigned bytes";
    if (*fmt == '>' || *fmt == '!') *big_endian = 1;
    if (*fmt == '@' || *fmt == '=' || *fmt == '<' || *fmt == '>' || *fmt == '!') fmt++;
    if (fmt[0] && fmt[1]) return "a structured type";
    switch (*fmt) {
    case 'd':
        return "float64";
    case 'f':
        return "float32";
    case 'e':
        return "float16";
    case 'g':
        return "float128";
    case '?':
        return "bool";
    case 'b':
        return "int8";
    case 'B':
        return "uint8";
    case 'h':
        return "int16";
    case 'H':
        return "uint16";
    case 'i':
    case 'l':
    case 'q':
        return item == 4 ? "int32" : item == 8 ? "int64" : "an integer type";
    case 'I':
    case 'L':
    case 'Q':
        return item == 4 ? "uint32" : item == 8 ? "uint64" : "an unsigned type";
    case 'Z':
        return "complex";
    default:
        return "an unknown type";
    }
}

static void shape_text(char *out, size_t n, Py_ssize_t rows, Py_ssize_t cols) {
    char r[32], c[32];
    if (rows < 0)
        snprintf(r, sizeof r, "n");
    else
        snprintf(r, sizeof r, "%zd", rows);
    if (cols < 0)
        snprintf(c, sizeof c, "k");
    else
        snprintf(c, sizeof c, "%zd", cols);
    if (cols == 0)
        snprintf(out, n, "(%s,)", r);
    else
        snprintf(out, n, "(%s, %s)", r, c);
}

int get_array(PyObject *obj, const char *name, char format, Py_ssize_t rows, Py_ssize_t cols,
              Py_buffer *b) {
    const char *want = format == 'd' ? "float64" : format == 'i' ? "int32" : "int32 or int64";
    char want_shape[96];
    shape_text(want_shape, sizeof want_shape, rows, cols);
    if (!PyObject_CheckBuffer(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a NumPy array of %s, shape %s; got %.80s", name,
                     want, want_shape, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyObject_GetBuffer(obj, b, PyBUF_RECORDS_RO) < 0) return -1;
    int big = 0;
    const char *got = dtype_name(b->format, b->itemsize, &big);
    const int dtype_ok =
        format == 'I' ? !strcmp(got, "int32") || !strcmp(got, "int64") : !strcmp(got, want);
    if (!dtype_ok || big) {
        PyErr_Format(PyExc_TypeError,
                     "%s: expected a NumPy array of %s, got %s%s (convert it: "
                     "numpy.asarray(a, dtype=numpy.%s))",
                     name, want, big ? "big-endian " : "", got,
                     format == 'd' ? "float64" : "int32");
        PyBuffer_Release(b);
        return -1;
    }
    const int ndim = cols == 0 ? 1 : 2;
    int shape_ok = b->ndim == ndim && (rows < 0 || b->shape[0] == rows) &&
                   (ndim == 1 || cols < 0 || b->shape[1] == cols);
    if (!shape_ok) {
        char got_shape[96] = "()";
        if (b->ndim == 1)
            snprintf(got_shape, sizeof got_shape, "(%zd,)", b->shape[0]);
        else if (b->ndim == 2)
            snprintf(got_shape, sizeof got_shape, "(%zd, %zd)", b->shape[0], b->shape[1]);
        else if (b->ndim > 2)
            snprintf(got_shape, sizeof got_shape, "%d dimensions", b->ndim);
        PyErr_Format(PyExc_ValueError, "%s: expected shape %s, got %s", name, want_shape,
                     got_shape);
        PyBuffer_Release(b);
        return -1;
    }
    /* C order, no gaps (a dimension of length 1 may have any stride) */
    Py_ssize_t expect = b->itemsize;
    for (int d = b->ndim - 1; d >= 0; d--) {
        if (b->shape[d] > 1 && b->strides[d] != expect) {
            char st[96];
            if (b->ndim == 1)
                snprintf(st, sizeof st, "(%zd,)", b->strides[0]);
            else
                snprintf(st, sizeof st, "(%zd, %zd)", b->strides[0], b->strides[1]);
            PyErr_Format(PyExc_ValueError,
                         "%s: the array is not C-contiguous (strides %s bytes for items of %zd): "
                         "pass numpy.ascontiguousarray(a)",
                         name, st, b->itemsize);
            PyBuffer_Release(b);
            return -1;
        }
        expect *= b->shape[d];
    }
    return 0;
}

int get_vec3(PyObject *obj, const char *name, double out[3]) {
    PyObject *seq = PySequence_Fast(obj, "");
    if (!seq || PySequence_Fast_GET_SIZE(seq) != 3) {
        Py_XDECREF(seq);
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: expected 3 numbers, got %.80s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    for (int k = 0; k < 3; k++) {
        out[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
        if (out[k] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s[%d]: expected a number", name, k);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

PyObject *vec3_tuple(const double v[3]) {
    return Py_BuildValue("(ddd)", v[0], v[1], v[2]);
}

/* ------------------------------------------------------------ functions */
static PyObject *py_version(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyUnicode_FromString(defo_version());
}

static PyObject *py_set_threads(PyObject *self, PyObject *arg) {
    (void)self;
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    if (n < 0 || n > 1024) {
        PyErr_Format(PyExc_ValueError, "set_threads: %ld is not in [0, 1024] (0: all cores)", n);
        return NULL;
    }
    defo_set_threads((int)n);
    Py_RETURN_NONE;
}

static PyObject *py_get_threads(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyLong_FromLong(defo_get_threads());
}

static PyObject *py_allocated_bytes(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    return PyLong_FromLongLong(defo_allocated_bytes());
}

static PyMethodDef module_methods[] = {
    {"version", py_version, METH_NOARGS, "version() -> str: the linked libdefo's version."},
    {"set_threads", py_set_threads, METH_O,
     "set_threads(n): threads of defo's parallel loops (0: OpenMP's default).  Results are "
     "bitwise identical for any count."},
    {"get_threads", py_get_threads, METH_NOARGS, "get_threads() -> int"},
    {"allocated_bytes", py_allocated_bytes, METH_NOARGS,
     "allocated_bytes() -> int: bytes defo has allocated and not freed."},
    {"defaults", py_defaults, METH_O,
     "defaults(kind) -> dict: defo's defaults of a definition ('material', 'integrator', ...)."},
    {"fields", py_fields, METH_O,
     "fields(kind) -> list of (name, type, doc): the fields of a definition."},
    {"_register", py_register, METH_VARARGS,
     "_register(kind, cls): the class definitions of kind come back as."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "defo._defo",
    .m_doc = "defo's C library, on its public API (include/defo/).  Use the package `defo`.",
    .m_size = -1,
    .m_methods = module_methods,
};

static PyObject *new_error(PyObject *m, const char *name, PyObject *base2, const char *doc) {
    char full[96];
    snprintf(full, sizeof full, "defo.%s", name);
    PyObject *bases =
        base2 ? PyTuple_Pack(2, defo_py_Error, base2) : PyTuple_Pack(1, defo_py_Error);
    if (!bases) return NULL;
    PyObject *cls = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    Py_DECREF(bases);
    if (cls && PyModule_AddObjectRef(m, name, cls) < 0) {
        Py_DECREF(cls);
        return NULL;
    }
    return cls;
}

PyMODINIT_FUNC PyInit__defo(void); /* the one exported symbol */
PyMODINIT_FUNC PyInit__defo(void) {
    PyObject *np = PyImport_ImportModule("numpy");
    if (!np) return NULL;
    np_asarray = PyObject_GetAttrString(np, "asarray");
    np_array = PyObject_GetAttrString(np, "array");
    np_zeros = PyObject_GetAttrString(np, "zeros");
    Py_DECREF(np);
    if (!np_asarray || !np_array || !np_zeros) return NULL;
    if (PyType_Ready(&View_Type) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    defo_py_Error = PyErr_NewExceptionWithDoc(
        "defo.Error",
        "Base class of defo's errors.  The message is defo's: what failed and where (file:line, "
        "JSON path, body and element).",
        NULL, NULL);
    if (!defo_py_Error || PyModule_AddObjectRef(m, "Error", defo_py_Error) < 0) goto fail;
    struct {
        defo_status status;
        const char *name;
        PyObject *base;
        const char *doc;
    } errs[] = {
        {DEFO_ERR_INVALID_ARGUMENT, "InvalidArgumentError", PyExc_ValueError,
         "A parameter out of range or an API misuse (DEFO_ERR_INVALID_ARGUMENT)."},
        {DEFO_ERR_OUT_OF_MEMORY, "OutOfMemoryError", PyExc_MemoryError,
         "defo could not allocate (DEFO_ERR_OUT_OF_MEMORY)."},
        {DEFO_ERR_IO, "FileError", PyExc_OSError,
         "A file could not be opened, read or written (DEFO_ERR_IO)."},
        {DEFO_ERR_PARSE, "ParseError", PyExc_ValueError,
         "Malformed input data; the message has file:line (DEFO_ERR_PARSE)."},
        {DEFO_ERR_UNSUPPORTED, "UnsupportedError", PyExc_ValueError,
         "Well-formed input defo cannot use (DEFO_ERR_UNSUPPORTED)."},
        {DEFO_ERR_INVALID_MESH, "MeshError", PyExc_ValueError,
         "Degenerate or inconsistent geometry or topology (DEFO_ERR_INVALID_MESH)."},
        {DEFO_ERR_NUMERICAL, "NumericalError", PyExc_ArithmeticError,
         "A computation would produce NaN or infinity; the world is left at the frame's start "
         "(DEFO_ERR_NUMERICAL)."},
        {DEFO_ERR_INTERNAL, "InternalError", NULL, "A bug in defo: please report it."},
        {DEFO_ERR_INTERRUPTED, "Interrupted", NULL,
         "A step stopped by defo's interrupt flag; the world is at the last complete frame."},
    };
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
        status_class[-errs[i].status] = new_error(m, errs[i].name, errs[i].base, errs[i].doc);
        if (!status_class[-errs[i].status]) goto fail;
    }
    defo_py_SceneError = new_error(
        m, "SceneError", PyExc_ValueError,
        "A scene that is not valid.  .issues lists every problem (SceneIssue: text, path, "
        "message, line, column), as `defo validate` prints them.");
    defo_py_ClosedError =
        new_error(m, "ClosedError", NULL,
                  "An object used after close(), or a body of a world that was closed.");
    if (!defo_py_SceneError || !defo_py_ClosedError) goto fail;
    defo_py_Warning = PyErr_NewExceptionWithDoc(
        "defo.DefoWarning",
        "A usable result with something to say (a repaired mesh, a body starting inside a "
        "collider).",
        PyExc_UserWarning, NULL);
    if (!defo_py_Warning || PyModule_AddObjectRef(m, "DefoWarning", defo_py_Warning) < 0) goto fail;
    if (add_mesh_functions(m) < 0 || add_sim_types(m) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
