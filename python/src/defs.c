/*
 * python/src/defs.c — defo's definition structs (defo_*_def, filled by
 * defo_default_*()) to and from Python, one table of fields per struct.
 *
 * The tables are the one place the Python package learns a definition's
 * fields: defo.Material and its siblings (python/defo/_defs.py) are made
 * from defo._defo.fields() with the defaults of defo._defo.defaults(), so a
 * default is never written twice.  Enumerations travel as their names in
 * scene files ("neo_hookean", "backward_euler").
 */
#include "defo_py.h"

#include <stddef.h>
#include <string.h>

typedef enum ftype {
    F_DOUBLE,
    F_INT,
    F_BOOL,
    F_U64,
    F_VEC3,
    F_IVEC3,
    F_MAT3,
    F_ENUM,
    F_NESTED
} ftype;

typedef struct field {
    const char *name;
    ftype type;
    size_t offset;
    const char *const *words; /* F_ENUM: names by value, NULL-terminated */
    def_kind nested;          /* F_NESTED */
    const char *doc;
} field;

typedef struct def_spec {
    const char *name;
    size_t size;
    void (*defaults)(void *out);
    const field *fields;
} def_spec;

/* ------------------------------------------------------------ enum names */
static const char *const w_model[] = {"corotated", "neo_hookean", "stvk", "biphasic", NULL};
static const char *const w_inversion[] = {"none", "c0", "c1", "clamp", NULL};
static const char *const w_formulation[] = {"invertible", "corotated", NULL};
static const char *const w_integrator[] = {"newmark",     "backward_euler", "bdf2",
                                           "quasistatic", "static",         NULL};
static const char *const w_predictor[] = {"none", "linear", "quadratic", "cubic", NULL};
static const char *const w_split[] = {"6", "5", "24", NULL};
static const char *const w_shape[] = {"plane", "sphere", "box", "cylinder", "capsule", NULL};

/* ------------------------------------------------------------ defaults */
#define DEFAULTS(fn, type, expr)                                                                   \
    static void fn(void *out) {                                                                    \
        *(type *)out = expr;                                                                       \
    }
DEFAULTS(d_material, defo_material_def, defo_default_material())
DEFAULTS(d_inversion, defo_inversion_def, defo_default_material().inversion)
DEFAULTS(d_biphasic, defo_biphasic_def, defo_default_material().biphasic)
DEFAULTS(d_force, defo_force_model_def, defo_default_force_model_def())
DEFAULTS(d_plasticity, defo_plasticity_def, defo_default_plasticity_def())
DEFAULTS(d_fracture, defo_fracture_def, defo_default_fracture_def())
DEFAULTS(d_integrator, defo_integrator_def, defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK))
DEFAULTS(d_motion, defo_motion_def, defo_default_motion_def())
DEFAULTS(d_mesher, defo_mesher_def, defo_default_mesher_def())
DEFAULTS(d_box, defo_box_def, defo_default_box_def())
DEFAULTS(d_sphere, defo_sphere_def, defo_default_sphere_def())
DEFAULTS(d_cylinder, defo_cylinder_def, defo_default_cylinder_def())
DEFAULTS(d_torus, defo_torus_def, defo_default_torus_def())
DEFAULTS(d_shape, defo_shape_def, defo_default_shape_def())
DEFAULTS(d_contact, defo_contact_def, defo_default_contact_def())

/* ------------------------------------------------------------ tables */
#define FD(s, f, t, doc)                                                                           \
    { #f, t, offsetof(s, f), NULL, 0, doc }
#define FE(s, f, w, doc)                                                                           \
    { #f, F_ENUM, offsetof(s, f), w, 0, doc }
#define FN(s, f, k, doc)                                                                           \
    { #f, F_NESTED, offsetof(s, f), NULL, k, doc }
#define FEND                                                                                       \
    { NULL, 0, 0, NULL, 0, NULL }

static const field f_material[] = {
    FE(defo_material_def, model, w_model,
       "'corotated', 'neo_hookean' (default), 'stvk' or 'biphasic' (ITF04 §5-6)"),
    FD(defo_material_def, youngs_modulus, F_DOUBLE, "Young's modulus E [Pa], > 0"),
    FD(defo_material_def, poisson, F_DOUBLE, "Poisson's ratio, in [0, 0.5)"),
    FD(defo_material_def, density, F_DOUBLE, "[kg/m^3], > 0"),
    FD(defo_material_def, damping_time, F_DOUBLE,
       "ITF04 §6.2 stiffness-proportional damping time [s], >= 0"),
    FN(defo_material_def, inversion, DEF_INVERSION, "the inversion extension (ITF04 §6)"),
    FN(defo_material_def, biphasic, DEF_BIPHASIC, "the biphasic model's curve (ITF04 §6)"),
    FEND};
static const field f_inversion[] = {
    FE(defo_inversion_def, mode, w_inversion, "'none', 'c0', 'c1' (default) or 'clamp'"),
    FD(defo_inversion_def, threshold, F_DOUBLE, "compression threshold, in (0, 1)"), FEND};
static const field f_biphasic[] = {
    FD(defo_biphasic_def, compression_threshold, F_DOUBLE, "stretch in (0, 1)"),
    FD(defo_biphasic_def, elongation_threshold, F_DOUBLE, "stretch > 1"),
    FD(defo_biphasic_def, rest_slope, F_DOUBLE, "x 2 mu, > 0"),
    FD(defo_biphasic_def, compression_slope, F_DOUBLE, "x 2 mu, >= 0"),
    FD(defo_biphasic_def, elongation_slope, F_DOUBLE, "x 2 mu, >= 0"),
    FEND};
static const field f_force[] = {
    FE(defo_force_model_def, formulation, w_formulation,
       "'invertible' (ITF04, default) or 'corotated' (MG04, MTPS08)"),
    FD(defo_force_model_def, definiteness_fix, F_BOOL, "TSIF05 §8 (invertible)"),
    FD(defo_force_model_def, constant_extrapolation, F_BOOL, "TSIF05 §9 (invertible)"),
    FD(defo_force_model_def, linear, F_BOOL, "R = I: plain linear FEM (corotated)"),
    FD(defo_force_model_def, rotation_interval, F_INT, "updates between rotations (corotated)"),
    FD(defo_force_model_def, lazy_tolerance, F_DOUBLE, "MTPS08 §4.4 lazy rotations (corotated)"),
    FEND};
static const field f_plasticity[] = {
    /* "yield" is a Python keyword: yield_ (PEP 8) */
    {"yield_", F_DOUBLE, offsetof(defo_plasticity_def, yield), NULL, 0, "c_yield >= 0 (MG04 §3)"},
    FD(defo_plasticity_def, creep, F_DOUBLE, "c_creep [1/s] >= 0"),
    FD(defo_plasticity_def, max, F_DOUBLE, "c_max >= 0"),
    FD(defo_plasticity_def, bending_yield, F_DOUBLE, "shells: bending strain that starts flow"),
    FD(defo_plasticity_def, bending_creep, F_DOUBLE, "shells: rest-angle flow rate [1/s] >= 0"),
    FD(defo_plasticity_def, bending_max, F_DOUBLE, "shells: largest plastic bending strain"),
    FEND};
static const field f_fracture[] = {
    FD(defo_fracture_def, threshold, F_DOUBLE, "largest principal stress that breaks [Pa] > 0"),
    FD(defo_fracture_def, radius, F_DOUBLE, "r_frac: how far a crack reaches [m] > 0"),
    FD(defo_fracture_def, crack_speed, F_DOUBLE,
       "crack front speed [m/s] > 0 (0: the longitudinal wave speed)"),
    FD(defo_fracture_def, sliver, F_DOUBLE,
       "tet4: nodes this close to a plane lie on it, [0, 0.45]"),
    FD(defo_fracture_def, incubation, F_DOUBLE,
       "stress averaging time [s] >= 0 (0: two element crossings)"),
    FEND};
static const field f_integrator[] = {
    FE(defo_integrator_def, kind, w_integrator,
       "'newmark', 'backward_euler', 'bdf2', 'quasistatic' or 'static'"),
    FD(defo_integrator_def, time_step, F_DOUBLE, "upper bound on a step [s] > 0"),
    FD(defo_integrator_def, cfl, F_DOUBLE, "newmark: fraction of the stable time, (0, 1]"),
    FD(defo_integrator_def, rayleigh_mass, F_DOUBLE, "Rayleigh alpha [1/s] >= 0"),
    FD(defo_integrator_def, rayleigh_stiffness, F_DOUBLE, "Rayleigh beta [s] >= 0"),
    FD(defo_integrator_def, tolerance, F_DOUBLE, "relative residual of the solves, (0, 1)"),
    FE(defo_integrator_def, predictor, w_predictor, "quasistatic starting point"),
    FD(defo_integrator_def, contact_stiffness, F_DOUBLE,
       "quasistatic, static: penalty per node [N/m] (0: automatic)"),
    FEND};
static const field f_motion[] = {
    FD(defo_motion_def, velocity, F_VEC3, "[m/s]"),
    FD(defo_motion_def, pivot, F_VEC3, "rotation centre at t = 0 [m]"),
    FD(defo_motion_def, angular_axis, F_VEC3, "rotation axis (normalised)"),
    FD(defo_motion_def, angular_speed, F_DOUBLE, "[rad/s]"), FEND};
static const field f_mesher[] = {
    FD(defo_mesher_def, cells, F_INT, "lattice cells across the longest side"),
    FD(defo_mesher_def, cell_size, F_DOUBLE, "lattice spacing [m]; > 0 overrides cells"),
    FD(defo_mesher_def, order, F_INT, "1 (tet4) or 2 (tet10)"),
    FD(defo_mesher_def, min_dihedral, F_DOUBLE, "degrees kept while snapping"),
    FD(defo_mesher_def, tet10_min_jacobian, F_DOUBLE, "tet10 edge nodes: det J fraction"),
    FD(defo_mesher_def, band, F_DOUBLE, "boundary band [h]"),
    FD(defo_mesher_def, target_dihedral, F_DOUBLE, "degrees the optimisation reaches"),
    FD(defo_mesher_def, target_altitude, F_DOUBLE, "smallest altitude raised toward [h]"),
    FD(defo_mesher_def, max_boundary_distance, F_DOUBLE, "boundary nodes within [h]"),
    FEND};
static const field f_box[] = {
    FD(defo_box_def, origin, F_VEC3, "minimum corner [m]"),
    FD(defo_box_def, size, F_VEC3, "edge lengths [m]"),
    FD(defo_box_def, cells, F_IVEC3, "cubes per axis (3 integers, or one for all)"),
    FD(defo_box_def, cell_size, F_DOUBLE, "> 0 overrides cells [m]"),
    FE(defo_box_def, split, w_split, "'6', '5' or '24' tets per cube"),
    FD(defo_box_def, order, F_INT, "1 (tet4) or 2 (tet10)"),
    FEND};
static const field f_sphere[] = {
    FD(defo_sphere_def, center, F_VEC3, "[m]"), FD(defo_sphere_def, radius, F_DOUBLE, "[m]"),
    FD(defo_sphere_def, cell_size, F_DOUBLE, "element size [m] (<= 0: radius/4)"),
    FD(defo_sphere_def, order, F_INT, "1 or 2"), FEND};
static const field f_cylinder[] = {
    FD(defo_cylinder_def, center, F_VEC3, "[m]"),
    FD(defo_cylinder_def, radius, F_DOUBLE, "[m]"),
    FD(defo_cylinder_def, height, F_DOUBLE, "along z [m]"),
    FD(defo_cylinder_def, cell_size, F_DOUBLE, "element size [m] (<= 0: radius/4)"),
    FD(defo_cylinder_def, order, F_INT, "1 or 2"),
    FEND};
static const field f_torus[] = {
    FD(defo_torus_def, center, F_VEC3, "[m]"),
    FD(defo_torus_def, major_radius, F_DOUBLE, "axis to tube centre [m]"),
    FD(defo_torus_def, minor_radius, F_DOUBLE, "tube radius [m]"),
    FD(defo_torus_def, cell_size, F_DOUBLE, "element size [m] (<= 0: minor_radius/3)"),
    FD(defo_torus_def, order, F_INT, "1 or 2"),
    FEND};
static const field f_shape[] = {
    FE(defo_shape_def, type, w_shape, "'plane', 'sphere', 'box', 'cylinder' or 'capsule'"),
    FD(defo_shape_def, center, F_VEC3, "centre; plane: a point on it [m]"),
    FD(defo_shape_def, normal, F_VEC3, "plane: outward normal"),
    FD(defo_shape_def, axis, F_VEC3, "cylinder, capsule: axis"),
    FD(defo_shape_def, radius, F_DOUBLE, "[m]"),
    FD(defo_shape_def, half_extent, F_VEC3, "box half sizes [m]"),
    FD(defo_shape_def, half_length, F_DOUBLE, "cylinder, capsule half length [m]"),
    FD(defo_shape_def, rotation, F_MAT3, "row-major rotation, local -> collider frame"),
    FEND};

static const field f_contact[] = {
    FD(defo_contact_def, enabled, F_BOOL, "bodies collide with each other"),
    FD(defo_contact_def, thickness, F_DOUBLE, "skin around surfaces, x mean surface edge, (0, 1]"),
    FD(defo_contact_def, stiffness, F_DOUBLE, "penalty per node [N/m] (0: 10 (2 mu + lambda) h)"),
    FD(defo_contact_def, separation_speed, F_DOUBLE, "overlaps come apart at most this [m/s]"),
    FD(defo_contact_def, sweeps, F_INT, "Jacobi sweeps of the explicit response"),
    FEND};

static const def_spec specs[DEF_COUNT] = {
    [DEF_MATERIAL] = {"material", sizeof(defo_material_def), d_material, f_material},
    [DEF_INVERSION] = {"inversion", sizeof(defo_inversion_def), d_inversion, f_inversion},
    [DEF_BIPHASIC] = {"biphasic", sizeof(defo_biphasic_def), d_biphasic, f_biphasic},
    [DEF_FORCE_MODEL] = {"force_model", sizeof(defo_force_model_def), d_force, f_force},
    [DEF_PLASTICITY] = {"plasticity", sizeof(defo_plasticity_def), d_plasticity, f_plasticity},
    [DEF_FRACTURE] = {"fracture", sizeof(defo_fracture_def), d_fracture, f_fracture},
    [DEF_INTEGRATOR] = {"integrator", sizeof(defo_integrator_def), d_integrator, f_integrator},
    [DEF_MOTION] = {"motion", sizeof(defo_motion_def), d_motion, f_motion},
    [DEF_MESHER] = {"mesher", sizeof(defo_mesher_def), d_mesher, f_mesher},
    [DEF_BOX] = {"box", sizeof(defo_box_def), d_box, f_box},
    [DEF_SPHERE] = {"sphere", sizeof(defo_sphere_def), d_sphere, f_sphere},
    [DEF_CYLINDER] = {"cylinder", sizeof(defo_cylinder_def), d_cylinder, f_cylinder},
    [DEF_TORUS] = {"torus", sizeof(defo_torus_def), d_torus, f_torus},
    [DEF_SHAPE] = {"shape", sizeof(defo_shape_def), d_shape, f_shape},
    [DEF_CONTACT] = {"contact", sizeof(defo_contact_def), d_contact, f_contact},
};

static int kind_of(PyObject *name, def_kind *out) {
    const char *s = PyUnicode_AsUTF8(name);
    if (!s) return -1;
    for (int k = 0; k < DEF_COUNT; k++)
        if (!strcmp(specs[k].name, s)) {
            *out = (def_kind)k;
            return 0;
        }
    PyErr_Format(PyExc_KeyError, "no definition kind '%s'", s);
    return -1;
}

/* ------------------------------------------------------------ to Python */
static PyObject *value_to_py(const field *f, const char *base) {
    const char *p = base + f->offset;
    switch (f->type) {
    case F_DOUBLE:
        return PyFloat_FromDouble(*(const double *)p);
    case F_INT:
        return PyLong_FromLong(*(const int *)p);
    case F_BOOL:
        return PyBool_FromLong(*(const int *)p);
    case F_U64:
        return PyLong_FromUnsignedLongLong(*(const uint64_t *)p);
    case F_VEC3:
        return vec3_tuple((const double *)p);
    case F_IVEC3: {
        const int *c = (const int *)p;
        return Py_BuildValue("(iii)", c[0], c[1], c[2]);
    }
    case F_MAT3: {
        const double *m = (const double *)p;
        return Py_BuildValue("(ddddddddd)", m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8]);
    }
    case F_ENUM: {
        int v;
        memcpy(&v, p, sizeof v);
        int n = 0;
        while (f->words[n]) n++;
        return PyUnicode_FromString(v >= 0 && v < n ? f->words[v] : "unknown");
    }
    case F_NESTED:
        return def_to_dict(f->nested, p);
    }
    Py_RETURN_NONE;
}

PyObject *def_to_dict(def_kind kind, const void *def) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (const field *f = specs[kind].fields; f->name; f++) {
        PyObject *v = value_to_py(f, def);
        if (!v || PyDict_SetItemString(d, f->name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

/* ------------------------------------------------------------ from Python */
static int value_from_py(const field *f, PyObject *v, char *base, const char *where) {
    char *p = base + f->offset;
    char name[160];
    if (where[0])
        snprintf(name, sizeof name, "%s.%s", where, f->name);
    else
        snprintf(name, sizeof name, "%s", f->name);
    switch (f->type) {
    case F_DOUBLE: {
        double x = PyFloat_AsDouble(v);
        if (x == -1.0 && PyErr_Occurred()) goto type_error;
        *(double *)p = x;
        return 0;
    }
    case F_INT:
    case F_BOOL: {
        if (PyFloat_Check(v)) goto type_error; /* 2.5 cells is a mistake, not 2 */
        long x = PyLong_AsLong(v);
        if (x == -1 && PyErr_Occurred()) goto type_error;
        if (x < INT32_MIN || x > INT32_MAX) {
            PyErr_Format(PyExc_OverflowError, "%s: %ld is out of range", name, x);
            return -1;
        }
        *(int *)p = (int)x;
        return 0;
    }
    case F_U64: {
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) goto type_error;
        *(uint64_t *)p = (uint64_t)x;
        return 0;
    }
    case F_VEC3:
        return get_vec3(v, name, (double *)p);
    case F_IVEC3: {
        int *c = (int *)p;
        PyObject *seq = PyLong_Check(v) ? NULL : PySequence_Fast(v, "");
        if (!PyLong_Check(v) && (!seq || PySequence_Fast_GET_SIZE(seq) != 3)) {
            Py_XDECREF(seq);
            goto type_error;
        }
        for (int k = 0; k < 3; k++) {
            PyObject *e = seq ? PySequence_Fast_GET_ITEM(seq, k) : v;
            long x = PyFloat_Check(e) ? -1 : PyLong_AsLong(e);
            if (PyFloat_Check(e) || (x == -1 && PyErr_Occurred()) || x < INT32_MIN ||
                x > INT32_MAX) {
                Py_XDECREF(seq);
                goto type_error;
            }
            c[k] = (int)x;
        }
        Py_XDECREF(seq);
        return 0;
    }
    case F_MAT3: {
        PyObject *seq = PySequence_Fast(v, "");
        if (!seq) goto type_error;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        double m[9];
        int bad = 0;
        if (n == 9) {
            for (int k = 0; k < 9 && !bad; k++) {
                m[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
                bad = m[k] == -1.0 && PyErr_Occurred();
            }
        } else if (n == 3) { /* rows */
            for (int r = 0; r < 3 && !bad; r++) {
                char rn[180];
                snprintf(rn, sizeof rn, "%s[%d]", name, r);
                bad = get_vec3(PySequence_Fast_GET_ITEM(seq, r), rn, m + 3 * r) < 0;
            }
        } else {
            bad = 1;
        }
        Py_DECREF(seq);
        if (bad) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s: expected a 3x3 rotation (9 numbers or 3 rows)",
                         name);
            return -1;
        }
        memcpy(p, m, sizeof m);
        return 0;
    }
    case F_ENUM: {
        const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8(v) : NULL;
        if (!s) goto type_error;
        for (int k = 0; f->words[k]; k++)
            if (!strcmp(f->words[k], s)) {
                int val = k;
                memcpy(p, &val, sizeof val);
                return 0;
            }
        PyObject *all = PyUnicode_FromString("");
        for (int k = 0; all && f->words[k]; k++) {
            PyObject *w = PyUnicode_FromFormat("%s'%s'", k ? ", " : "", f->words[k]);
            PyObject *j = w ? PyUnicode_Concat(all, w) : NULL;
            Py_XDECREF(w);
            Py_SETREF(all, j);
        }
        if (all) PyErr_Format(PyExc_ValueError, "%s: '%s' is not one of %U", name, s, all);
        Py_XDECREF(all);
        return -1;
    }
    case F_NESTED: {
        /* nested definitions start from the enclosing one's values */
        char sub[160];
        snprintf(sub, sizeof sub, "%s", name);
        const def_spec *ns = &specs[f->nested];
        if (PyDict_Check(v)) {
            PyObject *key, *val;
            Py_ssize_t pos = 0;
            while (PyDict_Next(v, &pos, &key, &val)) {
                const char *k = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : NULL;
                const field *g = ns->fields;
                while (k && g->name && strcmp(g->name, k)) g++;
                if (!k || !g->name) {
                    PyErr_Format(PyExc_TypeError, "%s: unknown field %R", sub, key);
                    return -1;
                }
                if (val != Py_None && value_from_py(g, val, p, sub) < 0) return -1;
            }
            return 0;
        }
        for (const field *g = ns->fields; g->name; g++) {
            PyObject *a = PyObject_GetAttrString(v, g->name);
            if (!a) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
                PyErr_Clear();
                continue;
            }
            int r = a == Py_None ? 0 : value_from_py(g, a, p, sub);
            Py_DECREF(a);
            if (r < 0) return -1;
        }
        return 0;
    }
    }
    return 0;
type_error:
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: expected %s, got %.80s", name,
                 f->type == F_DOUBLE                    ? "a number"
                 : f->type == F_ENUM                    ? "a name"
                 : f->type == F_INT || f->type == F_U64 ? "an integer"
                 : f->type == F_IVEC3                   ? "3 integers"
                 : f->type == F_BOOL                    ? "True or False"
                                                        : "a value",
                 Py_TYPE(v)->tp_name);
    return -1;
}

int def_apply(def_kind kind, PyObject *obj, void *out) {
    if (!obj || obj == Py_None) return 0;
    /* the whole definition is one nested field of a one-field table */
    field whole = {specs[kind].name, F_NESTED, 0, NULL, kind, NULL};
    return value_from_py(&whole, obj, (char *)out, "") < 0 ? -1 : 0;
}

int def_from_object(def_kind kind, PyObject *obj, void *out) {
    specs[kind].defaults(out);
    return def_apply(kind, obj, out);
}

/* The Python classes of the definitions (python/defo/_defs.py registers
 * them): def_to_object makes instances of them. */
static PyObject *classes[DEF_COUNT];

PyObject *py_register(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *name, *cls;
    if (!PyArg_ParseTuple(args, "UO:_register", &name, &cls)) return NULL;
    def_kind k;
    if (kind_of(name, &k) < 0) return NULL;
    Py_XSETREF(classes[k], Py_NewRef(cls));
    Py_RETURN_NONE;
}

PyObject *def_to_object(def_kind kind, const void *def) {
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    for (const field *f = specs[kind].fields; f->name; f++) {
        PyObject *v = f->type == F_NESTED ? def_to_object(f->nested, (const char *)def + f->offset)
                                          : value_to_py(f, def);
        if (!v || PyDict_SetItemString(d, f->name, v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    if (!classes[kind]) return d;
    PyObject *empty = PyTuple_New(0);
    PyObject *o = empty ? PyObject_Call(classes[kind], empty, d) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(d);
    return o;
}

PyObject *py_defaults(PyObject *self, PyObject *arg) {
    (void)self;
    def_kind k;
    if (kind_of(arg, &k) < 0) return NULL;
    union {
        defo_material_def a;
        defo_integrator_def b;
        defo_mesher_def c;
        defo_shape_def d;
        defo_box_def e;
        char pad[4096];
    } u;
    specs[k].defaults(&u);
    return def_to_dict(k, &u);
}

static const char *type_name(ftype t) {
    switch (t) {
    case F_DOUBLE:
        return "float";
    case F_INT:
        return "int";
    case F_BOOL:
        return "bool";
    case F_U64:
        return "int";
    case F_VEC3:
        return "vec3";
    case F_IVEC3:
        return "ivec3";
    case F_MAT3:
        return "mat3";
    case F_ENUM:
        return "str";
    case F_NESTED:
        return "nested";
    }
    return "?";
}

PyObject *py_fields(PyObject *self, PyObject *arg) {
    (void)self;
    def_kind k;
    if (kind_of(arg, &k) < 0) return NULL;
    PyObject *l = PyList_New(0);
    for (const field *f = specs[k].fields; l && f->name; f++) {
        PyObject *t = f->type == F_NESTED ? PyUnicode_FromString(specs[f->nested].name)
                                          : PyUnicode_FromString(type_name(f->type));
        PyObject *e = t ? Py_BuildValue("(sNs)", f->name, t, f->doc ? f->doc : "") : NULL;
        if (!e || PyList_Append(l, e) < 0) {
            Py_XDECREF(e);
            Py_CLEAR(l);
            break;
        }
        Py_DECREF(e);
    }
    return l;
}

/* ------------------------------------------------------------ regions */
static PyObject *get_item(PyObject *obj, const char *key) {
    if (PyDict_Check(obj)) {
        PyObject *v = PyDict_GetItemString(obj, key);
        Py_XINCREF(v);
        return v;
    }
    PyObject *v = PyObject_GetAttrString(obj, key);
    if (!v && PyErr_ExceptionMatches(PyExc_AttributeError)) PyErr_Clear();
    return v;
}

int region_from_object(PyObject *obj, defo_region *out) {
    PyObject *kind = get_item(obj, "kind");
    if (!kind) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError,
                         "region: expected a defo.Region (Region.box, .sphere, .plane, .tag), got "
                         "%.80s",
                         Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *k = PyUnicode_Check(kind) ? PyUnicode_AsUTF8(kind) : "";
    static const char *const keys[4][3] = {{"lo", "hi", NULL},
                                           {"center", "radius", NULL},
                                           {"element_tag", NULL},
                                           {"point", "normal", NULL}};
    static const char *const kinds[4] = {"box", "sphere", "tag", "plane"};
    int which = -1;
    for (int i = 0; i < 4; i++)
        if (k && !strcmp(k, kinds[i])) which = i;
    if (which < 0) {
        PyErr_Format(PyExc_ValueError, "region.kind: %R is not 'box', 'sphere', 'plane' or 'tag'",
                     kind);
        Py_DECREF(kind);
        return -1;
    }
    Py_DECREF(kind);
    memset(out, 0, sizeof *out);
    double zero[3] = {0, 0, 0};
    *out = defo_region_box(zero, zero);
    out->kind = (defo_region_kind)(which == 0   ? DEFO_REGION_BOX
                                   : which == 1 ? DEFO_REGION_SPHERE
                                   : which == 2 ? DEFO_REGION_TAG
                                                : DEFO_REGION_PLANE);
    for (int i = 0; keys[which][i]; i++) {
        const char *key = keys[which][i];
        PyObject *v = get_item(obj, key);
        char name[64];
        snprintf(name, sizeof name, "region.%s", key);
        if (!v) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "%s: missing", name);
            return -1;
        }
        int r = 0;
        if (!strcmp(key, "lo")) r = get_vec3(v, name, out->lo);
        if (!strcmp(key, "hi")) r = get_vec3(v, name, out->hi);
        if (!strcmp(key, "center")) r = get_vec3(v, name, out->center);
        if (!strcmp(key, "point")) r = get_vec3(v, name, out->point);
        if (!strcmp(key, "normal")) r = get_vec3(v, name, out->normal);
        if (!strcmp(key, "radius")) {
            out->radius = PyFloat_AsDouble(v);
            r = out->radius == -1.0 && PyErr_Occurred() ? -1 : 0;
        }
        if (!strcmp(key, "element_tag")) {
            long t = PyLong_AsLong(v);
            r = t == -1 && PyErr_Occurred() ? -1 : 0;
            out->tag = (int32_t)t;
        }
        Py_DECREF(v);
        if (r < 0) return -1;
    }
    PyObject *tol = get_item(obj, "tolerance");
    if (tol && tol != Py_None) {
        out->tolerance = PyFloat_AsDouble(tol);
        if (out->tolerance == -1.0 && PyErr_Occurred()) {
            Py_DECREF(tol);
            return -1;
        }
    }
    Py_XDECREF(tol);
    return PyErr_Occurred() ? -1 : 0;
}
