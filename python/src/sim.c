/*
 * python/src/sim.c — defo.Scene, defo.Simulation, defo.World, defo.Body and
 * defo.Collider over defo/scene.h, defo/world.h and defo/collision.h.
 *
 * Lifetimes.  A Simulation owns its defo_simulation (which borrows the
 * scene: the Simulation keeps its Scene alive); its World object borrows
 * the simulation's world and keeps the Simulation alive.  A World made in
 * Python owns its defo_world and keeps the Colliders it was given alive.
 * Bodies keep their World alive.  close() ends an object's use at once —
 * every later call raises defo.ClosedError — and frees its memory then, or,
 * while NumPy views of it still live, when the last of them goes (a view
 * never dangles).
 *
 * Views.  A body's positions, velocities, masses and loads are read-only
 * views of the world's arrays (no copy) when the body cannot change its
 * node count; they then follow the simulation as it steps.  A body with
 * fracture gains nodes when it splits and its arrays move, so it gets
 * copies of the state at the call.
 *
 * Steps release the GIL.  While one runs, its world refuses every other call
 * (defo: one object, one thread at a time).  In the main thread, Ctrl-C
 * (SIGINT) during a step stops it at defo's next safe point
 * (defo_interrupt): the world goes back to the frame's start and
 * KeyboardInterrupt is raised.
 */
#define _POSIX_C_SOURCE 200809L
#include "defo_py.h"

#include <signal.h>
#include <string.h>

/* ------------------------------------------------------------ life */
/* What an object that owns defo memory shares with its views. */
typedef struct Life {
    int closed;
    int busy; /* a step in progress (GIL released) */
    Py_ssize_t exports;
} Life;

static int life_check(const Life *l, const char *what) {
    if (l->closed) {
        PyErr_Format(defo_py_ClosedError, "%s: the object was closed", what);
        return -1;
    }
    if (l->busy) {
        PyErr_Format(defo_py_Error, "%s: a step of this world is running in another thread", what);
        return -1;
    }
    return 0;
}

typedef struct Scene {
    PyObject_HEAD defo_scene *scene;
} Scene;

typedef struct Simulation {
    PyObject_HEAD defo_simulation *sim;
    PyObject *scene;     /* the Scene the simulation borrows */
    PyObject *world_obj; /* its World object while one lives (borrowed) */
    Life life;
} Simulation;

typedef struct World {
    PyObject_HEAD defo_world *world;
    PyObject *sim; /* the Simulation owning the world, or NULL: owned here */
    Life own;
    Life *life; /* &own, or the Simulation's */
    PyObject *colliders;
    unsigned char *moves; /* per body: 1 when its arrays may move (fracture) */
    int nmoves;
} World;

typedef struct Body {
    PyObject_HEAD PyObject *world;
    defo_body_id id;
} Body;

typedef struct Collider {
    PyObject_HEAD defo_collider *collider;
} Collider;

/* ------------------------------------------------------------ SceneIssue */
static PyTypeObject *SceneIssue_Type;
static PyStructSequence_Field issue_fields[] = {
    {"text", "the whole line, as `defo validate` prints it"},
    {"path", "JSON path of the value (e.g. 'bodies[1].material.poisson'), or ''"},
    {"message", "what is wrong"},
    {"line", "line of a JSON syntax error (0 otherwise)"},
    {"column", "its column (0 otherwise)"},
    {NULL, NULL}};
static PyStructSequence_Desc issue_desc = {
    "defo.SceneIssue", "One problem of a scene: text, path, message, line, column.", issue_fields,
    5};

static int is_path_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '[' || c == ']';
}

/* "NAME: path: message", "NAME:line:col: message" or "NAME: message". */
static PyObject *issue_from_line(const char *line, const char *name) {
    const char *rest = line;
    size_t nl = strlen(name);
    long ln = 0, col = 0;
    char path[512] = "";
    if (!strncmp(line, name, nl)) {
        rest = line + nl;
        if (rest[0] == ':' && rest[1] >= '0' && rest[1] <= '9') { /* syntax: :line:col: */
            char *end;
            ln = strtol(rest + 1, &end, 10);
            if (*end == ':') col = strtol(end + 1, &end, 10);
            rest = *end == ':' ? end + 1 : end;
        } else if (rest[0] == ':') {
            rest++;
        }
        while (*rest == ' ') rest++;
        if (!ln) { /* a JSON path: identifiers, [k], dots, up to ": " */
            size_t k = 0;
            while (rest[k] && is_path_char(rest[k])) k++;
            int id_start = (rest[0] >= 'a' && rest[0] <= 'z') || (rest[0] >= 'A' && rest[0] <= 'Z');
            if (k && id_start && rest[k] == ':' && rest[k + 1] == ' ' && k < sizeof path) {
                memcpy(path, rest, k);
                path[k] = 0;
                rest += k + 2;
            }
        }
    }
    PyObject *t = PyStructSequence_New(SceneIssue_Type);
    if (!t) return NULL;
    PyStructSequence_SetItem(t, 0, PyUnicode_FromString(line));
    PyStructSequence_SetItem(t, 1, PyUnicode_FromString(path));
    PyStructSequence_SetItem(t, 2, PyUnicode_FromString(rest));
    PyStructSequence_SetItem(t, 3, PyLong_FromLong(ln));
    PyStructSequence_SetItem(t, 4, PyLong_FromLong(col));
    if (PyErr_Occurred()) {
        Py_DECREF(t);
        return NULL;
    }
    return t;
}

/* Raise SceneError with every issue of errs (or defo's message). */
static PyObject *raise_scene(defo_status s, defo_scene_errors *errs, const char *name) {
    if (s == DEFO_ERR_OUT_OF_MEMORY || (s == DEFO_ERR_IO && errs->count == 0)) {
        defo_scene_errors_free(errs);
        return raise_status(s, NULL);
    }
    PyObject *issues = PyList_New(0);
    for (int i = 0; issues && i < errs->count; i++) {
        PyObject *it = issue_from_line(errs->lines[i], name);
        if (!it || PyList_Append(issues, it) < 0) Py_CLEAR(issues);
        Py_XDECREF(it);
    }
    defo_scene_errors_free(errs);
    if (!issues) return NULL;
    if (PyList_GET_SIZE(issues) == 0) {
        PyObject *it = issue_from_line(defo_last_error(), name);
        if (!it || PyList_Append(issues, it) < 0) {
            Py_XDECREF(it);
            Py_DECREF(issues);
            return NULL;
        }
        Py_DECREF(it);
    }
    Py_ssize_t n = PyList_GET_SIZE(issues);
    PyObject *first = PyStructSequence_GetItem(PyList_GET_ITEM(issues, 0), 0);
    PyObject *msg = n > 1 ? PyUnicode_FromFormat("%U (and %zd more: see .issues)", first, n - 1)
                          : PyUnicode_FromFormat("%U", first);
    PyObject *exc = msg ? PyObject_CallOneArg(defo_py_SceneError, msg) : NULL;
    Py_XDECREF(msg);
    if (exc && PyObject_SetAttrString(exc, "issues", issues) == 0)
        PyErr_SetObject(defo_py_SceneError, exc);
    Py_XDECREF(exc);
    Py_DECREF(issues);
    return NULL;
}

/* ------------------------------------------------------------ Scene */
static PyObject *scene_wrap(defo_scene *s) {
    Scene *o = PyObject_New(Scene, &Scene_Type);
    if (!o) {
        defo_scene_destroy(s);
        return NULL;
    }
    o->scene = s;
    return (PyObject *)o;
}

static void Scene_dealloc(Scene *s) {
    defo_scene_destroy(s->scene);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyObject *Scene_load(PyObject *cls, PyObject *arg) {
    (void)cls;
    PyObject *path;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    defo_scene *s = NULL;
    defo_scene_errors errs;
    defo_status st = defo_scene_load(PyBytes_AS_STRING(path), &s, &errs);
    PyObject *r = st < 0 ? raise_scene(st, &errs, PyBytes_AS_STRING(path)) : scene_wrap(s);
    Py_DECREF(path);
    return r;
}

static PyObject *Scene_parse(PyObject *cls, PyObject *args, PyObject *kw) {
    (void)cls;
    static char *kwlist[] = {"text", "name", "base_dir", NULL};
    const char *text, *name = "scene.json";
    Py_ssize_t len;
    PyObject *base = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|sO:parse", kwlist, &text, &len, &name, &base))
        return NULL;
    PyObject *bpath = NULL;
    if (base != Py_None && !PyUnicode_FSConverter(base, &bpath)) return NULL;
    defo_scene *s = NULL;
    defo_scene_errors errs;
    defo_status st = defo_scene_parse(text, (size_t)len, name,
                                      bpath ? PyBytes_AS_STRING(bpath) : NULL, &s, &errs);
    Py_XDECREF(bpath);
    return st < 0 ? raise_scene(st, &errs, name) : scene_wrap(s);
}

static PyObject *Scene_demo(PyObject *cls, PyObject *args) {
    (void)cls;
    (void)args;
    const char *text = defo_scene_demo_text();
    defo_scene *s = NULL;
    defo_scene_errors errs;
    defo_status st = defo_scene_parse(text, strlen(text), "built-in demo", NULL, &s, &errs);
    return st < 0 ? raise_scene(st, &errs, "built-in demo") : scene_wrap(s);
}

static PyObject *Scene_dump(Scene *s, PyObject *args) {
    (void)args;
    char *t = defo_scene_dump(s->scene);
    if (!t) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(t);
    defo_free(t);
    return r;
}

static PyObject *Scene_files(Scene *s, PyObject *args) {
    (void)args;
    static const char *const kinds[] = {"mesh", "surface", "embedded"};
    PyObject *l = PyList_New(0);
    for (int i = 0; l && i < defo_scene_num_files(s->scene); i++) {
        defo_scene_file f = defo_scene_get_file(s->scene, i);
        PyObject *e =
            Py_BuildValue("(siO&)", kinds[f.kind], f.body, PyUnicode_DecodeFSDefault, f.path);
        if (!e || PyList_Append(l, e) < 0) Py_CLEAR(l);
        Py_XDECREF(e);
    }
    return l;
}

static PyObject *simulation_new(PyObject *scene);

static PyObject *Scene_build(Scene *s, PyObject *args) {
    (void)args;
    return simulation_new((PyObject *)s);
}

static PyObject *Scene_get_name(Scene *s, void *c) {
    (void)c;
    return PyUnicode_FromString(defo_scene_name(s->scene));
}
static PyObject *Scene_get_frames(Scene *s, void *c) {
    (void)c;
    return PyLong_FromLong(defo_scene_frames(s->scene));
}
static PyObject *Scene_get_fps(Scene *s, void *c) {
    (void)c;
    return PyFloat_FromDouble(defo_scene_fps(s->scene));
}
static PyObject *Scene_get_hash(Scene *s, void *c) {
    (void)c;
    return PyLong_FromUnsignedLongLong(defo_scene_hash(s->scene));
}
static PyObject *Scene_get_outputs(Scene *s, void *c) {
    (void)c;
    const defo_scene_outputs *o = defo_scene_get_outputs(s->scene);
    static const char *const names[] = {"displacement",   "velocity",  "J",
                                        "inverted",       "von_mises", "max_principal_stress",
                                        "plastic_strain", "body_id",   "min_principal_stress",
                                        "activation",     "contact",   "plastic_bending"};
    PyObject *fields = PyList_New(0);
    for (int k = 0; fields && k < (int)(sizeof names / sizeof names[0]); k++)
        if (o->fields & (1u << k)) {
            PyObject *n = PyUnicode_FromString(names[k]);
            if (!n || PyList_Append(fields, n) < 0) Py_CLEAR(fields);
            Py_XDECREF(n);
        }
    if (!fields) return NULL;
    return Py_BuildValue(
        "{s:O,s:O,s:O,s:i,s:i,s:s,s:O,s:O,s:O,s:N}", "vtu", o->vtu ? Py_True : Py_False,
        "surface_obj", o->surface_obj ? Py_True : Py_False, "png", o->png ? Py_True : Py_False,
        "png_width", o->png_width, "png_height", o->png_height, "png_color", o->png_color,
        "checkpoint", o->checkpoint ? Py_True : Py_False, "pc2", o->pc2 ? Py_True : Py_False, "mdd",
        o->mdd ? Py_True : Py_False, "fields", fields);
}

static PyMethodDef Scene_methods[] = {
    {"load", (PyCFunction)Scene_load, METH_O | METH_CLASS,
     "Scene.load(path) -> Scene: read and validate a scene file (docs/scene-format.md).  "
     "Raises SceneError listing every problem (.issues), FileError when unreadable."},
    {"parse", (PyCFunction)(void (*)(void))Scene_parse, METH_VARARGS | METH_KEYWORDS | METH_CLASS,
     "Scene.parse(text, name='scene.json', base_dir=None) -> Scene: a scene from JSON text; "
     "relative file names resolve against base_dir (None: the current folder)."},
    {"demo", (PyCFunction)Scene_demo, METH_NOARGS | METH_CLASS,
     "Scene.demo() -> Scene: the built-in demo (`defo run` without a scene)."},
    {"dump", (PyCFunction)Scene_dump, METH_NOARGS,
     "dump() -> str: the scene as canonical JSON with its base_dir (what `defo run` saves)."},
    {"files", (PyCFunction)Scene_files, METH_NOARGS,
     "files() -> [(kind, body, path)]: the mesh and surface files the scene reads."},
    {"build", (PyCFunction)Scene_build, METH_NOARGS,
     "build() -> Simulation: load or generate every body and build the world."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Scene_getset[] = {
    {"name", (getter)Scene_get_name, NULL, "The scene's title.", NULL},
    {"frames", (getter)Scene_get_frames, NULL, "Output frames after the initial state.", NULL},
    {"fps", (getter)Scene_get_fps, NULL, "Frames per second.", NULL},
    {"hash", (getter)Scene_get_hash, NULL,
     "64-bit hash of the physics (what checkpoints are tagged with).", NULL},
    {"outputs", (getter)Scene_get_outputs, NULL, "What `defo run` writes (dict).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Scene_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo.Scene",
    .tp_basicsize = sizeof(Scene),
    .tp_dealloc = (destructor)Scene_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A parsed, validated scene (immutable): Scene.load(path), Scene.parse(text), "
              "Scene.demo(); build() makes its Simulation.",
    .tp_methods = Scene_methods,
    .tp_getset = Scene_getset,
};

/* ------------------------------------------------------------ stepping */
static volatile sig_atomic_t got_sigint;
static unsigned long main_thread_id;

static void on_sigint(int sig) {
    (void)sig;
    got_sigint = 1;
    defo_interrupt();
}

/* Run fn(arg) without the GIL, life->busy set; Ctrl-C in the main thread
 * interrupts it.  Returns its status; *interrupted when SIGINT stopped it. */
static defo_status run_unlocked(Life *life, defo_status (*fn)(void *), void *arg,
                                int *interrupted) {
    struct sigaction sa, old;
    const int main_thread = PyThread_get_thread_ident() == main_thread_id;
    if (main_thread) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        got_sigint = 0;
        sigaction(SIGINT, &sa, &old);
    }
    life->busy = 1;
    defo_status s;
    Py_BEGIN_ALLOW_THREADS s = fn(arg);
    Py_END_ALLOW_THREADS life->busy = 0;
    *interrupted = 0;
    if (main_thread) {
        sigaction(SIGINT, &old, NULL);
        if (got_sigint) {
            *interrupted = 1;
            defo_interrupt_clear();
        }
    }
    return s;
}

static PyObject *stats_dict(const defo_world *w) {
    defo_step_stats st;
    defo_world_stats(w, &st);
    return Py_BuildValue(
        "{s:i,s:d,s:i,s:i,s:i,s:d,s:i,s:s,s:l,s:l,s:l,s:l,s:d,s:l,s:i,s:d,s:i,s:i}", "steps",
        st.steps, "dt", st.dt, "newton_iterations", st.newton_iterations, "cg_iterations",
        st.cg_iterations, "cg_max_iterations", st.cg_max_iterations, "residual", st.residual,
        "not_converged", st.not_converged, "reason", defo_convergence_reason_name(st.reason),
        "inverted", (long)st.inverted, "inverted_peak", (long)st.inverted_peak, "collisions",
        (long)st.collisions, "contacts", (long)st.contacts, "contact_depth", st.contact_depth,
        "splits", (long)st.splits, "yielding", st.yielding, "seconds", st.seconds,
        "solver_recoveries", st.solver_recoveries, "impacts", st.impacts);
}

/* ------------------------------------------------------------ World access */
static defo_world *world_get(World *w, const char *what) {
    if (life_check(w->life, what) < 0) return NULL;
    return w->world;
}

static int body_moves(World *w, int index) {
    if (w->sim) {
        Simulation *sim = (Simulation *)w->sim;
        for (int i = 0; i < defo_simulation_num_bodies(sim->sim); i++)
            if (defo_simulation_body(sim->sim, i).index == index)
                return defo_simulation_body_fractures(sim->sim, i);
        return 0;
    }
    return index >= 0 && index < w->nmoves ? w->moves[index] : 0;
}

static PyObject *body_wrap(PyObject *world, defo_body_id id) {
    Body *b = PyObject_New(Body, &Body_Type);
    if (!b) return NULL;
    b->world = world;
    Py_INCREF(world);
    b->id = id;
    return (PyObject *)b;
}

/* The body's world, checked (open, not busy, id valid). */
static defo_world *body_world(Body *b, const char *what) {
    World *w = (World *)b->world;
    defo_world *dw = world_get(w, what);
    if (!dw) return NULL;
    if (!defo_body_is_valid(dw, b->id)) {
        PyErr_Format(defo_py_Error, "%s: this body is no longer part of its world", what);
        return NULL;
    }
    return dw;
}

/* ------------------------------------------------------------ Simulation */
static PyObject *simulation_new(PyObject *scene) {
    defo_simulation *sim = NULL;
    defo_status s;
    Py_BEGIN_ALLOW_THREADS s = defo_simulation_create(((Scene *)scene)->scene, &sim);
    Py_END_ALLOW_THREADS if (s < 0) return raise_status(s, NULL);
    if (s > 0 && warn_status(s) < 0) {
        defo_simulation_destroy(sim);
        return NULL;
    }
    Simulation *o = PyObject_New(Simulation, &Simulation_Type);
    if (!o) {
        defo_simulation_destroy(sim);
        return NULL;
    }
    o->sim = sim;
    o->scene = scene;
    Py_INCREF(scene);
    o->world_obj = NULL;
    memset(&o->life, 0, sizeof o->life);
    return (PyObject *)o;
}

static PyObject *Simulation_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
    (void)t;
    static char *kwlist[] = {"scene", NULL};
    PyObject *scene;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!:Simulation", kwlist, &Scene_Type, &scene))
        return NULL;
    return simulation_new(scene);
}

static void Simulation_dealloc(Simulation *s) {
    defo_simulation_destroy(s->sim);
    Py_XDECREF(s->scene);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static defo_simulation *sim_get(Simulation *s, const char *what) {
    return life_check(&s->life, what) < 0 ? NULL : s->sim;
}

static PyObject *world_of_sim(Simulation *s) {
    if (s->world_obj) {
        Py_INCREF(s->world_obj);
        return s->world_obj;
    }
    World *w = PyObject_New(World, &World_Type);
    if (!w) return NULL;
    w->world = defo_simulation_world(s->sim);
    w->sim = (PyObject *)s;
    Py_INCREF(s);
    memset(&w->own, 0, sizeof w->own);
    w->life = &s->life;
    w->colliders = NULL;
    w->moves = NULL;
    w->nmoves = 0;
    s->world_obj = (PyObject *)w;
    return (PyObject *)w;
}

static PyObject *Simulation_world(Simulation *s, void *c) {
    (void)c;
    if (!sim_get(s, "Simulation.world")) return NULL;
    return world_of_sim(s);
}

static PyObject *Simulation_scene(Simulation *s, void *c) {
    (void)c;
    Py_INCREF(s->scene);
    return s->scene;
}

static PyObject *Simulation_bodies(Simulation *s, void *c) {
    (void)c;
    if (!sim_get(s, "Simulation.bodies")) return NULL;
    PyObject *w = world_of_sim(s);
    if (!w) return NULL;
    const int n = defo_simulation_num_bodies(s->sim);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *b = body_wrap(w, defo_simulation_body(s->sim, i));
        if (!b)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, i, b);
    }
    Py_DECREF(w);
    return l;
}

static PyObject *Simulation_frame(Simulation *s, void *c) {
    (void)c;
    if (!sim_get(s, "Simulation.frame")) return NULL;
    return PyLong_FromLong(defo_simulation_frame(s->sim));
}

static PyObject *Simulation_time(Simulation *s, void *c) {
    (void)c;
    if (!sim_get(s, "Simulation.time")) return NULL;
    return PyFloat_FromDouble(defo_world_time(defo_simulation_world(s->sim)));
}

typedef struct frames_job {
    defo_simulation *sim;
    long frames;
} frames_job;

static defo_status step_frames(void *arg) {
    frames_job *j = arg;
    defo_status s = DEFO_OK;
    for (long f = 0; f < j->frames && s >= 0; f++) s = defo_simulation_step_frame(j->sim);
    return s;
}

static PyObject *Simulation_step(Simulation *s, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"frames", NULL};
    long frames = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|l:step", kwlist, &frames)) return NULL;
    if (!sim_get(s, "Simulation.step")) return NULL;
    if (frames < 1) return PyErr_Format(PyExc_ValueError, "step: frames = %ld is not >= 1", frames);
    frames_job j = {s->sim, frames};
    int interrupted;
    defo_status st = run_unlocked(&s->life, step_frames, &j, &interrupted);
    if (interrupted) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        return NULL;
    }
    if (st < 0) return raise_status(st, NULL);
    return stats_dict(defo_simulation_world(s->sim));
}

static PyObject *Simulation_save_checkpoint(Simulation *s, PyObject *arg) {
    PyObject *path;
    if (!sim_get(s, "save_checkpoint") || !PyUnicode_FSConverter(arg, &path)) return NULL;
    defo_status st = defo_simulation_save_checkpoint(s->sim, PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (check_status(st, "save_checkpoint") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Simulation_load_checkpoint(Simulation *s, PyObject *arg) {
    PyObject *path;
    if (!sim_get(s, "load_checkpoint") || !PyUnicode_FSConverter(arg, &path)) return NULL;
    defo_status st = defo_simulation_load_checkpoint(s->sim, PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (check_status(st, "load_checkpoint") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Simulation_embedded_surface(Simulation *s, PyObject *arg) {
    if (!sim_get(s, "embedded_surface")) return NULL;
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return NULL;
    const int n = defo_simulation_num_bodies(s->sim);
    if (i < 0 || i >= n) return PyErr_Format(PyExc_IndexError, "body %ld: the scene has %d", i, n);
    const defo_mesh *sf = defo_simulation_embedded_surface(s->sim, (int)i);
    if (!sf) Py_RETURN_NONE;
    defo_mesh *copy = NULL;
    if (check_status(defo_mesh_clone(sf, &copy), "embedded_surface") < 0) return NULL;
    PyObject *m = mesh_wrap(copy);
    double *x;
    PyObject *pos = m ? new_array(sf->num_nodes, 3, &x) : NULL;
    if (pos &&
        check_status(defo_simulation_embedded_positions(s->sim, (int)i, x), "embedded_surface") < 0)
        Py_CLEAR(pos);
    if (!pos) {
        Py_XDECREF(m);
        return NULL;
    }
    return Py_BuildValue("(NN)", m, pos);
}

static void free_if_unseen_sim(Simulation *s) {
    if (s->life.closed && s->life.exports == 0 && !s->life.busy) {
        defo_simulation_destroy(s->sim);
        s->sim = NULL;
    }
}

static PyObject *Simulation_close(Simulation *s, PyObject *args) {
    (void)args;
    if (s->life.busy)
        return PyErr_Format(defo_py_Error, "close: a step is running in another thread");
    s->life.closed = 1;
    free_if_unseen_sim(s);
    Py_RETURN_NONE;
}

static PyObject *Simulation_enter(PyObject *s, PyObject *args) {
    (void)args;
    Py_INCREF(s);
    return s;
}
static PyObject *Simulation_exit(Simulation *s, PyObject *args) {
    return Simulation_close(s, args);
}

static PyMethodDef Simulation_methods[] = {
    {"step", (PyCFunction)(void (*)(void))Simulation_step, METH_VARARGS | METH_KEYWORDS,
     "step(frames=1) -> dict: advance output frames (1/fps each: scheduled material changes, "
     "then the world's frame), as `defo run` does; returns the last frame's statistics.  On "
     "error the world stays at the last completed frame.  Ctrl-C stops the frame in progress "
     "(KeyboardInterrupt; the state is the last complete frame's)."},
    {"save_checkpoint", (PyCFunction)Simulation_save_checkpoint, METH_O,
     "save_checkpoint(path): the state after the current frame, atomically (the format of "
     "`defo run`'s checkpoint.bin)."},
    {"load_checkpoint", (PyCFunction)Simulation_load_checkpoint, METH_O,
     "load_checkpoint(path): restore a checkpoint of this scene (`defo run`'s too)."},
    {"embedded_surface", (PyCFunction)Simulation_embedded_surface, METH_O,
     "embedded_surface(i) -> (Mesh, positions) or None: body i's embedded surface (MG04 §5.1) "
     "and its current vertex positions (a copy)."},
    {"close", (PyCFunction)Simulation_close, METH_NOARGS,
     "close(): end the simulation; later calls raise ClosedError.  Memory still seen by NumPy "
     "views is freed when they go."},
    {"__enter__", Simulation_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Simulation_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Simulation_getset[] = {
    {"world", (getter)Simulation_world, NULL, "The World being simulated.", NULL},
    {"scene", (getter)Simulation_scene, NULL, "The Scene it was built from.", NULL},
    {"bodies", (getter)Simulation_bodies, NULL, "The bodies, in the scene's order.", NULL},
    {"frame", (getter)Simulation_frame, NULL, "Frames completed.", NULL},
    {"time", (getter)Simulation_time, NULL, "Simulated time [s].", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Simulation_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo.Simulation",
    .tp_basicsize = sizeof(Simulation),
    .tp_dealloc = (destructor)Simulation_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Simulation(scene): a scene built into a world and run frame by frame, as `defo "
              "run` runs it (the same frames bit for bit).  A context manager (closes).",
    .tp_methods = Simulation_methods,
    .tp_getset = Simulation_getset,
    .tp_new = Simulation_new,
};

/* ------------------------------------------------------------ World */
static PyObject *World_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
    (void)t;
    static char *kwlist[] = {"gravity", NULL};
    PyObject *g = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:World", kwlist, &g)) return NULL;
    defo_world_def def = defo_default_world_def();
    if (g != Py_None && get_vec3(g, "gravity", def.gravity) < 0) return NULL;
    defo_world *dw = NULL;
    if (check_status(defo_world_create(&def, &dw), "World") < 0) return NULL;
    World *w = PyObject_New(World, &World_Type);
    if (!w) {
        defo_world_destroy(dw);
        return NULL;
    }
    w->world = dw;
    w->sim = NULL;
    memset(&w->own, 0, sizeof w->own);
    w->life = &w->own;
    w->colliders = PyList_New(0);
    w->moves = NULL;
    w->nmoves = 0;
    if (!w->colliders) {
        Py_DECREF(w);
        return NULL;
    }
    return (PyObject *)w;
}

static void World_dealloc(World *w) {
    if (w->sim) {
        Simulation *s = (Simulation *)w->sim;
        s->world_obj = NULL;
        Py_DECREF(w->sim);
    } else {
        defo_world_destroy(w->world); /* before the colliders it borrows */
    }
    Py_XDECREF(w->colliders);
    PyMem_Free(w->moves);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

/* The last NumPy view of a closed world's memory went: free it now. */
static void world_unseen(PyObject *owner) {
    if (!PyObject_TypeCheck(owner, &World_Type)) return;
    World *w = (World *)owner;
    if (w->sim)
        free_if_unseen_sim((Simulation *)w->sim);
    else if (w->own.closed && w->world) {
        defo_world_destroy(w->world);
        w->world = NULL;
    }
}

static PyObject *World_close(World *w, PyObject *args) {
    (void)args;
    if (w->sim)
        return PyErr_Format(defo_py_Error,
                            "close: this world belongs to a Simulation: close the Simulation");
    if (w->own.busy)
        return PyErr_Format(defo_py_Error, "close: a step is running in another thread");
    w->own.closed = 1;
    if (w->own.exports == 0 && w->world) {
        defo_world_destroy(w->world);
        w->world = NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *World_enter(PyObject *w, PyObject *args) {
    (void)args;
    Py_INCREF(w);
    return w;
}
static PyObject *World_exit(World *w, PyObject *args) {
    if (w->sim) Py_RETURN_NONE;
    return World_close(w, args);
}

static PyObject *World_add_integrator(World *w, PyObject *args, PyObject *kw) {
    defo_world *dw = world_get(w, "add_integrator");
    if (!dw) return NULL;
    if (w->sim)
        return PyErr_Format(defo_py_Error,
                            "add_integrator: this world belongs to a Simulation (its scene says "
                            "its integrators)");
    PyObject *def = NULL, *first = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : NULL;
    if (PyTuple_GET_SIZE(args) > 1 || (first && !PyUnicode_Check(first) && kw))
        return PyErr_Format(PyExc_TypeError,
                            "add_integrator: give a kind and keyword fields, or an Integrator");
    if (first && PyUnicode_Check(first)) { /* add_integrator("bdf2", time_step=0.01) */
        def = kw ? PyDict_Copy(kw) : PyDict_New();
        if (!def || PyDict_SetItemString(def, "kind", first) < 0) {
            Py_XDECREF(def);
            return NULL;
        }
    } else {
        def = first ? first : kw;
        Py_XINCREF(def);
    }
    defo_integrator_def d;
    int r = def_from_object(DEF_INTEGRATOR, def, &d);
    if (r == 0) { /* the kind's own defaults, then the fields given */
        defo_integrator_kind kind = d.kind;
        d = defo_default_integrator_def(kind);
        r = def_apply(DEF_INTEGRATOR, def, &d);
    }
    Py_XDECREF(def);
    if (r < 0) return NULL;
    int index = -1;
    if (check_status(defo_world_add_integrator(dw, &d, &index), "add_integrator") < 0) return NULL;
    return PyLong_FromLong(index);
}

static PyObject *World_add_body(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"mesh",     "material", "force_model",      "integrator",
                             "name",     "velocity", "angular_velocity", "plasticity",
                             "fracture", "collide",  "self_contact",     "friction",
                             NULL};
    PyObject *mesh, *mat = Py_None, *force = Py_None, *vel = Py_None, *ang = Py_None,
                    *plast = Py_None, *frac = Py_None;
    int integrator = -1;
    const char *name = NULL;
    defo_body_def d = defo_default_body_def();
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|OOizOOOOppd:add_body", kwlist, &Mesh_Type, &mesh,
                                     &mat, &force, &integrator, &name, &vel, &ang, &plast, &frac,
                                     &d.collide, &d.self_contact, &d.friction))
        return NULL;
    if (w->sim)
        return PyErr_Format(defo_py_Error,
                            "add_body: this world belongs to a Simulation (its scene says its "
                            "bodies)");
    defo_world *dw = world_get(w, "add_body");
    if (!dw) return NULL;
    defo_plasticity_def pd;
    defo_fracture_def fd;
    d.mesh = ((Mesh *)mesh)->mesh;
    d.integrator = integrator;
    d.name = name;
    if (def_from_object(DEF_MATERIAL, mat, &d.material) < 0) return NULL;
    if (PyUnicode_Check(force)) {
        PyObject *f = Py_BuildValue("{s:O}", "formulation", force);
        int r = f ? def_from_object(DEF_FORCE_MODEL, f, &d.force) : -1;
        Py_XDECREF(f);
        if (r < 0) return NULL;
    } else if (def_from_object(DEF_FORCE_MODEL, force, &d.force) < 0) {
        return NULL;
    }
    if (vel != Py_None && get_vec3(vel, "velocity", d.velocity) < 0) return NULL;
    if (ang != Py_None && get_vec3(ang, "angular_velocity", d.angular_velocity) < 0) return NULL;
    if (plast != Py_None) {
        if (def_from_object(DEF_PLASTICITY, plast, &pd) < 0) return NULL;
        d.plasticity = &pd;
    }
    if (frac != Py_None) {
        if (def_from_object(DEF_FRACTURE, frac, &fd) < 0) return NULL;
        d.fracture = &fd;
    }
    defo_body_id id;
    if (check_status(defo_world_add_body(dw, &d, &id), "add_body") < 0) return NULL;
    if (id.index >= w->nmoves) {
        int n = id.index + 16;
        unsigned char *m = PyMem_Realloc(w->moves, (size_t)n);
        if (!m) return PyErr_NoMemory();
        memset(m + w->nmoves, 0, (size_t)(n - w->nmoves));
        w->moves = m;
        w->nmoves = n;
    }
    w->moves[id.index] = frac != Py_None;
    return body_wrap((PyObject *)w, id);
}

static PyObject *World_add_collider(World *w, PyObject *arg) {
    defo_world *dw = world_get(w, "add_collider");
    if (!dw) return NULL;
    if (!PyObject_TypeCheck(arg, &Collider_Type))
        return PyErr_Format(PyExc_TypeError, "add_collider: expected a defo.Collider, got %.80s",
                            Py_TYPE(arg)->tp_name);
    if (w->sim)
        return PyErr_Format(defo_py_Error,
                            "add_collider: this world belongs to a Simulation (its scene says "
                            "its colliders)");
    if (check_status(defo_world_add_collider(dw, ((Collider *)arg)->collider), "add_collider") < 0)
        return NULL;
    if (PyList_Append(w->colliders, arg) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *World_bodies(World *w, void *c) {
    (void)c;
    defo_world *dw = world_get(w, "World.bodies");
    if (!dw) return NULL;
    const int n = defo_world_num_bodies(dw);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *b = body_wrap((PyObject *)w, defo_world_body(dw, i));
        if (!b)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, i, b);
    }
    return l;
}

static PyObject *World_body(World *w, PyObject *key) {
    defo_world *dw = world_get(w, "World.body");
    if (!dw) return NULL;
    const int n = defo_world_num_bodies(dw);
    if (PyUnicode_Check(key)) {
        const char *name = PyUnicode_AsUTF8(key);
        if (!name) return NULL;
        for (int i = 0; i < n; i++) {
            defo_body_id id = defo_world_body(dw, i);
            if (!strcmp(defo_body_name(dw, id), name)) return body_wrap((PyObject *)w, id);
        }
        return PyErr_Format(PyExc_KeyError, "no body named '%s' in this world", name);
    }
    long i = PyLong_AsLong(key);
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i < 0 || i >= n)
        return PyErr_Format(PyExc_IndexError, "body %ld: the world has %d bod%s", i, n,
                            n == 1 ? "y" : "ies");
    return body_wrap((PyObject *)w, defo_world_body(dw, (int)i));
}

typedef struct world_job {
    defo_world *w;
    double dt;
    long frames;
} world_job;

static defo_status step_world(void *arg) {
    world_job *j = arg;
    defo_status s = DEFO_OK;
    for (long f = 0; f < j->frames && s >= 0; f++) s = defo_world_step(j->w, j->dt);
    return s;
}

static PyObject *World_step(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"dt", "frames", NULL};
    double dt;
    long frames = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "d|l:step", kwlist, &dt, &frames)) return NULL;
    defo_world *dw = world_get(w, "World.step");
    if (!dw) return NULL;
    if (frames < 1) return PyErr_Format(PyExc_ValueError, "step: frames = %ld is not >= 1", frames);
    world_job j = {dw, dt, frames};
    int interrupted;
    defo_status st = run_unlocked(w->life, step_world, &j, &interrupted);
    if (interrupted) {
        PyErr_SetNone(PyExc_KeyboardInterrupt);
        return NULL;
    }
    if (st < 0) return raise_status(st, NULL);
    return stats_dict(dw);
}

static PyObject *World_time(World *w, void *c) {
    (void)c;
    defo_world *dw = world_get(w, "World.time");
    return dw ? PyFloat_FromDouble(defo_world_time(dw)) : NULL;
}
static PyObject *World_frame(World *w, void *c) {
    (void)c;
    defo_world *dw = world_get(w, "World.frame");
    return dw ? PyLong_FromLong(defo_world_frame(dw)) : NULL;
}
static PyObject *World_stats(World *w, void *c) {
    (void)c;
    defo_world *dw = world_get(w, "World.stats");
    return dw ? stats_dict(dw) : NULL;
}
static PyObject *World_contact(World *w, void *c) {
    (void)c;
    defo_world *dw = world_get(w, "World.contact");
    return dw ? def_to_object(DEF_CONTACT, defo_world_contact(dw)) : NULL;
}

static int World_set_contact(World *w, PyObject *v, void *c) {
    (void)c;
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "contact cannot be deleted (enabled=False)");
        return -1;
    }
    defo_world *dw = world_get(w, "World.contact");
    if (!dw) return -1;
    defo_contact_def d = *defo_world_contact(dw);
    if (def_apply(DEF_CONTACT, v, &d) < 0) return -1;
    return check_status(defo_world_set_contact(dw, &d), NULL);
}

static PyObject *World_closed(World *w, void *c) {
    (void)c;
    return PyBool_FromLong(w->life->closed);
}

static PyObject *World_integrators(World *w, void *c) {
    (void)c;
    defo_world *dw = world_get(w, "World.integrators");
    if (!dw) return NULL;
    const int n = defo_world_num_integrators(dw);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *d = def_to_object(DEF_INTEGRATOR, defo_world_integrator(dw, i));
        if (!d)
            Py_CLEAR(l);
        else
            PyList_SET_ITEM(l, i, d);
    }
    return l;
}

static PyObject *World_set_time(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"time", "frame", NULL};
    double t;
    int frame;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "di:set_time", kwlist, &t, &frame)) return NULL;
    defo_world *dw = world_get(w, "set_time");
    if (!dw || check_status(defo_world_set_time(dw, t, frame), "set_time") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *World_steps_per_frame(World *w, PyObject *args) {
    int integrator;
    double dt;
    if (!PyArg_ParseTuple(args, "id:steps_per_frame", &integrator, &dt)) return NULL;
    defo_world *dw = world_get(w, "steps_per_frame");
    if (!dw) return NULL;
    if (integrator < 0 || integrator >= defo_world_num_integrators(dw))
        return PyErr_Format(PyExc_IndexError, "integrator %d: the world has %d", integrator,
                            defo_world_num_integrators(dw));
    return PyLong_FromLong(defo_world_steps_per_frame(dw, integrator, dt));
}

static PyObject *World_save(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "tag", NULL};
    PyObject *path;
    unsigned long long tag = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|K:save", kwlist, PyUnicode_FSConverter, &path,
                                     &tag))
        return NULL;
    defo_world *dw = world_get(w, "save");
    defo_status s = dw ? defo_world_save(dw, tag, PyBytes_AS_STRING(path)) : DEFO_OK;
    Py_DECREF(path);
    if (!dw || check_status(s, "save") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *World_load(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"path", "tag", NULL};
    PyObject *path;
    unsigned long long tag = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|K:load", kwlist, PyUnicode_FSConverter, &path,
                                     &tag))
        return NULL;
    defo_world *dw = world_get(w, "load");
    defo_status s = dw ? defo_world_load(dw, tag, PyBytes_AS_STRING(path)) : DEFO_OK;
    Py_DECREF(path);
    if (!dw || check_status(s, "load") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *World_serialize(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"tag", NULL};
    unsigned long long tag = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|K:serialize", kwlist, &tag)) return NULL;
    defo_world *dw = world_get(w, "serialize");
    if (!dw) return NULL;
    void *data = NULL;
    size_t size = 0;
    if (check_status(defo_world_serialize(dw, tag, &data, &size), "serialize") < 0) return NULL;
    PyObject *b = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
    defo_free(data);
    return b;
}

static PyObject *World_deserialize(World *w, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"data", "tag", NULL};
    Py_buffer b;
    unsigned long long tag = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*|K:deserialize", kwlist, &b, &tag)) return NULL;
    defo_world *dw = world_get(w, "deserialize");
    defo_status s = dw ? defo_world_deserialize(dw, tag, b.buf, (size_t)b.len) : DEFO_OK;
    PyBuffer_Release(&b);
    if (!dw || check_status(s, "deserialize") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef World_methods[] = {
    {"add_integrator", (PyCFunction)(void (*)(void))World_add_integrator,
     METH_VARARGS | METH_KEYWORDS,
     "add_integrator(kind_or_integrator, **fields) -> int: an integrator for bodies to use "
     "('newmark', 'backward_euler', 'bdf2', 'quasistatic', 'static'; the kind's defaults for "
     "the fields not given).  Returns its index (add_body's integrator)."},
    {"add_body", (PyCFunction)(void (*)(void))World_add_body, METH_VARARGS | METH_KEYWORDS,
     "add_body(mesh, material=None, force_model=None, integrator=-1, name=None, velocity=None, "
     "angular_velocity=None, plasticity=None, fracture=None, collide=True, self_contact=False, "
     "friction=0.5) -> Body\n\n"
     "A body at its rest positions: a tet4/tet10 Mesh (copied), a Material, a ForceModel (or "
     "'invertible' / 'corotated'), an integrator index (-1: the first, a newmark one being "
     "added when there is none), Plasticity (MG04 §3) and Fracture (MG04 §4) or None; contact "
     "with other bodies (collide), with itself, and its Coulomb coefficient against them."},
    {"add_collider", (PyCFunction)World_add_collider, METH_O,
     "add_collider(collider): a rigid Collider the bodies meet (kept alive by the world)."},
    {"body", (PyCFunction)World_body, METH_O,
     "body(index_or_name) -> Body (IndexError / KeyError when there is none)."},
    {"step", (PyCFunction)(void (*)(void))World_step, METH_VARARGS | METH_KEYWORDS,
     "step(dt, frames=1) -> dict: advance every body by frames frames of dt seconds (each cut "
     "into its integrator's steps: fracture, plasticity, the stepper); returns the last "
     "frame's statistics.  On error the world stays at the frame's start.  Ctrl-C stops the "
     "frame (KeyboardInterrupt)."},
    {"set_time", (PyCFunction)(void (*)(void))World_set_time, METH_VARARGS | METH_KEYWORDS,
     "set_time(time, frame): the simulated time and frame count."},
    {"steps_per_frame", (PyCFunction)World_steps_per_frame, METH_VARARGS,
     "steps_per_frame(integrator, dt) -> int: steps a frame of dt takes."},
    {"save", (PyCFunction)(void (*)(void))World_save, METH_VARARGS | METH_KEYWORDS,
     "save(path, tag=0): checkpoint (state, topology, plastic strains, integrator history), "
     "atomically."},
    {"load", (PyCFunction)(void (*)(void))World_load, METH_VARARGS | METH_KEYWORDS,
     "load(path, tag=0): restore a checkpoint of this world (same tag, bodies and sizes)."},
    {"serialize", (PyCFunction)(void (*)(void))World_serialize, METH_VARARGS | METH_KEYWORDS,
     "serialize(tag=0) -> bytes: the checkpoint in memory."},
    {"deserialize", (PyCFunction)(void (*)(void))World_deserialize, METH_VARARGS | METH_KEYWORDS,
     "deserialize(data, tag=0): restore serialize()'s bytes."},
    {"close", (PyCFunction)World_close, METH_NOARGS,
     "close(): free the world (when no NumPy view of it lives; else when the last goes); "
     "later calls raise ClosedError."},
    {"__enter__", World_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)World_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef World_getset[] = {
    {"bodies", (getter)World_bodies, NULL, "The bodies, in creation order.", NULL},
    {"time", (getter)World_time, NULL, "Simulated time [s].", NULL},
    {"frame", (getter)World_frame, NULL, "Frames stepped.", NULL},
    {"stats", (getter)World_stats, NULL, "Statistics of the last frame (dict).", NULL},
    {"integrators", (getter)World_integrators, NULL, "The integrators' definitions.", NULL},
    {"contact", (getter)World_contact, (setter)World_set_contact,
     "Contact between bodies (a Contact); assign one, or a dict of some of its fields.", NULL},
    {"closed", (getter)World_closed, NULL, "True once closed.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject World_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo.World",
    .tp_basicsize = sizeof(World),
    .tp_dealloc = (destructor)World_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "World(gravity=(0, 0, -9.81)): bodies, their integrators and colliders, stepped "
              "on one frame clock (defo/world.h).  A context manager (closes).",
    .tp_methods = World_methods,
    .tp_getset = World_getset,
    .tp_new = World_new,
};

/* ------------------------------------------------------------ Body */
static void Body_dealloc(Body *b) {
    Py_XDECREF(b->world);
    Py_TYPE(b)->tp_free((PyObject *)b);
}

/* Rows of 3 (or 1) doubles of the body: a view, or a copy when it may move. */
static PyObject *body_array(Body *b, const double *data, Py_ssize_t rows, Py_ssize_t cols) {
    World *w = (World *)b->world;
    const int copy = body_moves(w, b->id.index);
    return make_array(b->world, &w->life->exports, data, 'd', cols ? 2 : 1, rows, cols, 1, copy);
}

#define BODY_ARRAY(fn, what, getter, cols)                                                         \
    static PyObject *fn(Body *b, void *c) {                                                        \
        (void)c;                                                                                   \
        defo_world *dw = body_world(b, what);                                                      \
        if (!dw) return NULL;                                                                      \
        return body_array(b, getter(dw, b->id), defo_body_num_nodes(dw, b->id), cols);             \
    }
BODY_ARRAY(Body_positions, "positions", defo_body_positions, 3)
BODY_ARRAY(Body_velocities, "velocities", defo_body_velocities, 3)
BODY_ARRAY(Body_masses, "masses", defo_body_masses, 0)
BODY_ARRAY(Body_loads, "loads", defo_body_loads, 3)

static PyObject *Body_external_force(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "external_force");
    if (!dw) return NULL;
    return body_array(b, defo_body_external_force(dw, b->id), defo_body_num_nodes(dw, b->id), 3);
}

static int Body_set_external_force(Body *b, PyObject *v, void *c) {
    (void)c;
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "external_force cannot be deleted (set zeros)");
        return -1;
    }
    defo_world *dw = body_world(b, "external_force");
    if (!dw) return -1;
    const defo_index n = defo_body_num_nodes(dw, b->id);
    Py_buffer buf;
    if (get_array(v, "external_force", 'd', n, 3, &buf) < 0) return -1;
    memcpy(defo_body_external_force(dw, b->id), buf.buf, 3 * (size_t)n * sizeof(double));
    PyBuffer_Release(&buf);
    return 0;
}

static PyObject *Body_rest_positions(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "rest_positions");
    if (!dw) return NULL;
    const defo_mesh *m = defo_body_mesh(dw, b->id);
    return body_array(b, m->x, m->num_nodes, 3);
}

static PyObject *Body_elements(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "elements");
    if (!dw) return NULL;
    const defo_mesh *m = defo_body_mesh(dw, b->id);
    World *w = (World *)b->world;
    return make_array(b->world, &w->life->exports, m->elems, 'i', 2, m->num_elems,
                      m->nodes_per_elem, 1, body_moves(w, b->id.index));
}

static PyObject *Body_parents(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "parents");
    if (!dw) return NULL;
    World *w = (World *)b->world;
    return make_array(b->world, &w->life->exports, defo_body_parents(dw, b->id), 'i', 1,
                      defo_body_num_nodes(dw, b->id), 0, 1, body_moves(w, b->id.index));
}

static PyObject *Body_mesh(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "mesh");
    if (!dw) return NULL;
    defo_mesh *copy = NULL;
    if (check_status(defo_mesh_clone(defo_body_mesh(dw, b->id), &copy), "mesh") < 0) return NULL;
    return mesh_wrap(copy);
}

static PyObject *Body_name(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "name");
    return dw ? PyUnicode_FromString(defo_body_name(dw, b->id)) : NULL;
}
static PyObject *Body_index(Body *b, void *c) {
    (void)c;
    return PyLong_FromLong(b->id.index);
}
static PyObject *Body_num_nodes(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "num_nodes");
    return dw ? PyLong_FromLong(defo_body_num_nodes(dw, b->id)) : NULL;
}
static PyObject *Body_num_elements(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "num_elements");
    return dw ? PyLong_FromLong(defo_body_mesh(dw, b->id)->num_elems) : NULL;
}
static PyObject *Body_integrator(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "integrator");
    return dw ? PyLong_FromLong(defo_body_integrator(dw, b->id)) : NULL;
}
static PyObject *Body_world(Body *b, void *c) {
    (void)c;
    Py_INCREF(b->world);
    return b->world;
}
static PyObject *Body_is_valid(Body *b, void *c) {
    (void)c;
    World *w = (World *)b->world;
    if (w->life->closed || !w->world) Py_RETURN_FALSE;
    return PyBool_FromLong(defo_body_is_valid(w->world, b->id));
}
static PyObject *Body_storage_moves(Body *b, void *c) {
    (void)c;
    return PyBool_FromLong(body_moves((World *)b->world, b->id.index));
}

static PyObject *Body_material(Body *b, void *c) {
    (void)c;
    defo_world *dw = body_world(b, "material");
    return dw ? def_to_object(DEF_MATERIAL, defo_body_material(dw, b->id)) : NULL;
}

static int Body_set_material_attr(Body *b, PyObject *v, void *c) {
    (void)c;
    if (!v) {
        PyErr_SetString(PyExc_AttributeError, "a body's material cannot be deleted");
        return -1;
    }
    defo_world *dw = body_world(b, "material");
    if (!dw) return -1;
    defo_material_def d = *defo_body_material(dw, b->id);
    if (def_apply(DEF_MATERIAL, v, &d) < 0) return -1;
    return check_status(defo_body_set_material(dw, b->id, &d), "material");
}

static PyObject *Body_set_material(Body *b, PyObject *args, PyObject *kw) {
    if (PyTuple_GET_SIZE(args) > 1 || (PyTuple_GET_SIZE(args) == 1 && kw))
        return PyErr_Format(PyExc_TypeError, "set_material: give a Material or keyword fields");
    PyObject *v = PyTuple_GET_SIZE(args) ? PyTuple_GET_ITEM(args, 0) : kw;
    if (!v) v = Py_None;
    if (Body_set_material_attr(b, v, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Body_set_state(Body *b, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"positions", "velocities", NULL};
    PyObject *x = Py_None, *v = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:set_state", kwlist, &x, &v)) return NULL;
    defo_world *dw = body_world(b, "set_state");
    if (!dw) return NULL;
    const defo_index n = defo_body_num_nodes(dw, b->id);
    Py_buffer xb = {0}, vb = {0};
    if (x != Py_None && get_array(x, "positions", 'd', n, 3, &xb) < 0) return NULL;
    if (v != Py_None && get_array(v, "velocities", 'd', n, 3, &vb) < 0) {
        if (x != Py_None) PyBuffer_Release(&xb);
        return NULL;
    }
    defo_status s =
        defo_body_set_state(dw, b->id, x != Py_None ? xb.buf : NULL, v != Py_None ? vb.buf : NULL);
    if (x != Py_None) PyBuffer_Release(&xb);
    if (v != Py_None) PyBuffer_Release(&vb);
    if (check_status(s, "set_state") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Body_prescribe(Body *b, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"region", "motion", NULL};
    PyObject *region, *motion = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:prescribe", kwlist, &region, &motion))
        return NULL;
    defo_world *dw = body_world(b, "prescribe");
    if (!dw) return NULL;
    defo_region r;
    defo_motion_def m;
    if (region_from_object(region, &r) < 0) return NULL;
    if (motion != Py_None && def_from_object(DEF_MOTION, motion, &m) < 0) return NULL;
    int set = -1;
    if (check_status(defo_body_prescribe(dw, b->id, &r, motion != Py_None ? &m : NULL, &set),
                     "prescribe") < 0)
        return NULL;
    return PyLong_FromLong(set);
}

static PyObject *Body_release(Body *b, PyObject *arg) {
    long set = PyLong_AsLong(arg);
    if (set == -1 && PyErr_Occurred()) return NULL;
    defo_world *dw = body_world(b, "release");
    if (!dw || check_status(defo_body_release(dw, b->id, (int)set), "release") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Body_set_transform(Body *b, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"set", "rotation", "translation", NULL};
    int set;
    PyObject *R, *T;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iOO:set_transform", kwlist, &set, &R, &T))
        return NULL;
    defo_world *dw = body_world(b, "set_transform");
    if (!dw) return NULL;
    double t[3];
    Py_buffer rb;
    if (get_vec3(T, "translation", t) < 0 || get_array(R, "rotation", 'd', 3, 3, &rb) < 0)
        return NULL;
    defo_status s = defo_body_set_transform(dw, b->id, set, rb.buf, t);
    PyBuffer_Release(&rb);
    if (check_status(s, "set_transform") < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Body_add_traction(Body *b, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"region", "traction", NULL};
    PyObject *region, *tr;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:add_traction", kwlist, &region, &tr))
        return NULL;
    defo_world *dw = body_world(b, "add_traction");
    if (!dw) return NULL;
    defo_region r;
    double t[3], area = 0;
    if (region_from_object(region, &r) < 0 || get_vec3(tr, "traction", t) < 0) return NULL;
    if (check_status(defo_body_add_traction(dw, b->id, &r, t, &area), "add_traction") < 0)
        return NULL;
    return PyFloat_FromDouble(area);
}

static PyObject *Body_energy(Body *b, PyObject *args) {
    (void)args;
    defo_world *dw = body_world(b, "energy");
    if (!dw) return NULL;
    double k = 0, e = 0, g = 0;
    if (check_status(defo_body_energy(dw, b->id, &k, &e, &g), "energy") < 0) return NULL;
    return Py_BuildValue("{s:d,s:d,s:d}", "kinetic", k, "elastic", e, "gravitational", g);
}

static PyObject *Body_fields(Body *b, PyObject *args) {
    (void)args;
    defo_world *dw = body_world(b, "fields");
    if (!dw) return NULL;
    const defo_index ne = defo_body_mesh(dw, b->id)->num_elems, nn = defo_body_num_nodes(dw, b->id);
    double *J, *vm, *mp, *nvm, *nmp, *pl;
    PyObject *aJ = new_array(ne, 0, &J), *avm = new_array(ne, 0, &vm), *amp = new_array(ne, 0, &mp),
             *anvm = new_array(nn, 0, &nvm), *anmp = new_array(nn, 0, &nmp),
             *apl = new_array(ne, 0, &pl);
    PyObject *r = NULL;
    if (aJ && avm && amp && anvm && anmp && apl) {
        defo_force_fields ff = {J, vm, mp, nvm, nmp, 0, 0};
        defo_status s = defo_body_fields(dw, b->id, &ff);
        if (!s) s = defo_body_plastic_strain(dw, b->id, pl);
        if (check_status(s, "fields") == 0)
            r = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:O,s:l,s:d}", "J", aJ, "von_mises", avm,
                              "max_principal_stress", amp, "node_von_mises", anvm,
                              "node_max_principal_stress", anmp, "plastic_strain", apl, "inverted",
                              (long)ff.inverted, "min_J", ff.min_J);
    }
    Py_XDECREF(aJ);
    Py_XDECREF(avm);
    Py_XDECREF(amp);
    Py_XDECREF(anvm);
    Py_XDECREF(anmp);
    Py_XDECREF(apl);
    return r;
}

static PyObject *Body_count_inverted(Body *b, PyObject *args) {
    (void)args;
    defo_world *dw = body_world(b, "count_inverted");
    defo_index n = 0;
    if (!dw || check_status(defo_body_count_inverted(dw, b->id, &n), "count_inverted") < 0)
        return NULL;
    return PyLong_FromLong(n);
}

static PyObject *Body_count_folded(Body *b, PyObject *args) {
    (void)args;
    defo_world *dw = body_world(b, "count_folded");
    defo_index n = 0;
    if (!dw || check_status(defo_body_count_folded(dw, b->id, &n), "count_folded") < 0) return NULL;
    return PyLong_FromLong(n);
}

static PyObject *Body_components(Body *b, PyObject *args) {
    (void)args;
    defo_world *dw = body_world(b, "components");
    defo_index n = 0;
    if (!dw || check_status(defo_body_components(dw, b->id, &n), "components") < 0) return NULL;
    return PyLong_FromLong(n);
}

static PyObject *Body_repr(Body *b) {
    World *w = (World *)b->world;
    if (w->life->closed || !w->world || !defo_body_is_valid(w->world, b->id))
        return PyUnicode_FromFormat("<defo.Body %d of a closed world>", (int)b->id.index);
    return PyUnicode_FromFormat("<defo.Body %d '%s': %d nodes>", (int)b->id.index,
                                defo_body_name(w->world, b->id),
                                (int)defo_body_num_nodes(w->world, b->id));
}

static PyObject *Body_richcompare(PyObject *a, PyObject *o, int op) {
    if (!PyObject_TypeCheck(o, &Body_Type) || (op != Py_EQ && op != Py_NE))
        Py_RETURN_NOTIMPLEMENTED;
    const Body *x = (const Body *)a, *y = (const Body *)o;
    int eq = x->id.index == y->id.index && x->id.world == y->id.world &&
             x->id.generation == y->id.generation;
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static Py_hash_t Body_hash(Body *b) {
    Py_hash_t h = (Py_hash_t)((uint64_t)b->id.world * 1000003u ^ (uint64_t)b->id.index * 31u ^
                              b->id.generation);
    return h == -1 ? -2 : h;
}

static PyMethodDef Body_methods[] = {
    {"set_state", (PyCFunction)(void (*)(void))Body_set_state, METH_VARARGS | METH_KEYWORDS,
     "set_state(positions=None, velocities=None): overwrite the state ((n, 3) float64, "
     "C-contiguous, finite)."},
    {"prescribe", (PyCFunction)(void (*)(void))Body_prescribe, METH_VARARGS | METH_KEYWORDS,
     "prescribe(region, motion=None) -> int: the nodes of a Region (rest positions) follow a "
     "Motion from their rest positions (None: held fixed).  Returns the set's index."},
    {"release", (PyCFunction)Body_release, METH_O,
     "release(set): free the nodes of a prescribed set from the next step on."},
    {"set_transform", (PyCFunction)(void (*)(void))Body_set_transform, METH_VARARGS | METH_KEYWORDS,
     "set_transform(set, rotation, translation): drive a prescribed set by x = R X + T from now "
     "on (a handle, a bone); rotation (3, 3) float64."},
    {"add_traction", (PyCFunction)(void (*)(void))Body_add_traction, METH_VARARGS | METH_KEYWORDS,
     "add_traction(region, traction) -> float: a dead traction [Pa] on the boundary faces the "
     "region selects; returns the loaded area [m^2]."},
    {"set_material", (PyCFunction)(void (*)(void))Body_set_material, METH_VARARGS | METH_KEYWORDS,
     "set_material(material=None, **fields): replace the material, or change some of its "
     "fields (set_material(youngs_modulus=2e5)); the state is kept."},
    {"energy", (PyCFunction)Body_energy, METH_NOARGS,
     "energy() -> {'kinetic', 'elastic', 'gravitational'} [J] at the current state."},
    {"fields", (PyCFunction)Body_fields, METH_NOARGS,
     "fields() -> dict: J, von_mises, max_principal_stress, plastic_strain per element, "
     "node_von_mises, node_max_principal_stress per node (new arrays), inverted, min_J."},
    {"count_inverted", (PyCFunction)Body_count_inverted, METH_NOARGS,
     "count_inverted() -> int: elements with det F <= 0 at a quadrature point."},
    {"count_folded", (PyCFunction)Body_count_folded, METH_NOARGS,
     "count_folded() -> int: curved elements positive at every quadrature point but "
     "folded at a corner, an edge node or the centroid."},
    {"components", (PyCFunction)Body_components, METH_NOARGS,
     "components() -> int: connected pieces (1 until it breaks)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef Body_getset[] = {
    {"positions", (getter)Body_positions, NULL,
     "(n, 3) float64, read-only: current positions [m].  A view of the world's memory (it "
     "follows later steps; .copy() keeps a frame) unless the body can fracture (a copy).",
     NULL},
    {"velocities", (getter)Body_velocities, NULL, "(n, 3) float64 [m/s], as positions.", NULL},
    {"masses", (getter)Body_masses, NULL, "(n,) float64: lumped masses [kg], as positions.", NULL},
    {"loads", (getter)Body_loads, NULL,
     "(n, 3) float64: the loads of the last frame [N] (gravity, dead loads, tractions).", NULL},
    {"external_force", (getter)Body_external_force, (setter)Body_set_external_force,
     "(n, 3) float64: dead loads [N] added every step until changed; assign an (n, 3) float64 "
     "array to change them.",
     NULL},
    {"rest_positions", (getter)Body_rest_positions, NULL, "(n, 3) float64: rest positions.", NULL},
    {"elements", (getter)Body_elements, NULL, "(m, 4|10) int32: the current connectivity.", NULL},
    {"parents", (getter)Body_parents, NULL,
     "(n,) int32: each node's parent (itself, or the node a fracture split it from).", NULL},
    {"mesh", (getter)Body_mesh, NULL, "A Mesh copy of the body's current mesh.", NULL},
    {"name", (getter)Body_name, NULL, "The body's name.", NULL},
    {"index", (getter)Body_index, NULL, "Index in its world.", NULL},
    {"num_nodes", (getter)Body_num_nodes, NULL, "Nodes now (fracture adds some).", NULL},
    {"num_elements", (getter)Body_num_elements, NULL, "Elements.", NULL},
    {"integrator", (getter)Body_integrator, NULL, "Index of its integrator.", NULL},
    {"world", (getter)Body_world, NULL, "Its World.", NULL},
    {"is_valid", (getter)Body_is_valid, NULL, "False once its world is closed.", NULL},
    {"storage_moves", (getter)Body_storage_moves, NULL,
     "True when its arrays may move (fracture): positions and friends are then copies.", NULL},
    {"material", (getter)Body_material, (setter)Body_set_material_attr,
     "Its Material; assign one (or a dict of fields) to change it between steps.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject Body_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo.Body",
    .tp_basicsize = sizeof(Body),
    .tp_dealloc = (destructor)Body_dealloc,
    .tp_repr = (reprfunc)Body_repr,
    .tp_hash = (hashfunc)Body_hash,
    .tp_richcompare = Body_richcompare,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A body of a World (World.add_body, World.bodies, Simulation.bodies).",
    .tp_methods = Body_methods,
    .tp_getset = Body_getset,
};

/* ------------------------------------------------------------ Collider */
static PyObject *Collider_new(PyTypeObject *t, PyObject *args, PyObject *kw) {
    (void)t;
    static char *kwlist[] = {"shapes", "motion", "friction", "separation_speed", NULL};
    PyObject *shapes, *motion = Py_None, *fr = Py_None, *sep = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OOO:Collider", kwlist, &shapes, &motion, &fr,
                                     &sep))
        return NULL;
    defo_collider_def d = defo_default_collider_def();
    PyObject *seq = PySequence_Fast(shapes, "Collider: shapes must be a list of Shape");
    if (!seq) return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    defo_shape_def *sh = PyMem_Calloc((size_t)n + 1, sizeof *sh);
    PyObject *r = NULL;
    if (!sh) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (def_from_object(DEF_SHAPE, PySequence_Fast_GET_ITEM(seq, i), &sh[i]) < 0) goto done;
    d.num_shapes = (int)n;
    d.shapes = sh;
    if (motion != Py_None && def_from_object(DEF_MOTION, motion, &d.motion) < 0) goto done;
    if (fr != Py_None && (d.friction = PyFloat_AsDouble(fr)) == -1.0 && PyErr_Occurred()) goto done;
    if (sep != Py_None && (d.separation_speed = PyFloat_AsDouble(sep)) == -1.0 && PyErr_Occurred())
        goto done;
    defo_collider *c = NULL;
    if (check_status(defo_collider_create(&d, &c), "Collider") < 0) goto done;
    Collider *o = PyObject_New(Collider, &Collider_Type);
    if (!o) {
        defo_collider_destroy(c);
        goto done;
    }
    o->collider = c;
    r = (PyObject *)o;
done:
    PyMem_Free(sh);
    Py_DECREF(seq);
    return r;
}

static void Collider_dealloc(Collider *c) {
    defo_collider_destroy(c->collider);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

PyTypeObject Collider_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "defo.Collider",
    .tp_basicsize = sizeof(Collider),
    .tp_dealloc = (destructor)Collider_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Collider(shapes, motion=None, friction=0.5, separation_speed=0.5): a rigid "
              "obstacle, the union of Shapes, moving by a scripted Motion (defo/collision.h).",
    .tp_new = Collider_new,
};

int add_sim_types(PyObject *module) {
    view_unseen_hook = world_unseen;
    SceneIssue_Type = PyStructSequence_NewType(&issue_desc);
    if (!SceneIssue_Type) return -1;
    if (PyModule_AddObjectRef(module, "SceneIssue", (PyObject *)SceneIssue_Type) < 0) return -1;
    PyTypeObject *types[] = {&Scene_Type, &Simulation_Type, &World_Type, &Body_Type,
                             &Collider_Type};
    const char *names[] = {"Scene", "Simulation", "World", "Body", "Collider"};
    for (int i = 0; i < 5; i++) {
        if (PyType_Ready(types[i]) < 0) return -1;
        if (PyModule_AddObjectRef(module, names[i], (PyObject *)types[i]) < 0) return -1;
    }
    /* Ctrl-C interrupts steps only in the thread Python's signal handlers run in */
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *mt = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
    PyObject *ident = mt ? PyObject_GetAttrString(mt, "ident") : NULL;
    main_thread_id = ident ? PyLong_AsUnsignedLong(ident) : 0;
    Py_XDECREF(ident);
    Py_XDECREF(mt);
    Py_XDECREF(threading);
    return PyErr_Occurred() ? -1 : 0;
}
