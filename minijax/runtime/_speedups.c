/* minijax's optional C extension: two small base types for the hot paths.
 *
 * 1. ArrayBase, the C base of minijax.Array: its four fields, a fast constructor
 *    and the buffer protocol.
 * 2. DispatchBase, the C base of jit's Wrapped: its __call__ fast path.
 *
 * Neither knows jaxlib or any primitive; minijax/runtime/_native.py imports this
 * module, and every user has a pure-Python equivalent for when it is not built.
 *
 * ---- ArrayBase ---------------------------------------------------------------
 *
 * Why it exists: NumPy reads an object through the buffer protocol in C, but a
 * Python class on Python 3.11 cannot export one (``__buffer__`` is 3.12+), so
 * ``np.asarray(minijax_array)`` had to go through ``Array.__array__``, a Python
 * call that costs more than the host read itself. This type exports the buffer of
 * the jaxlib array it wraps (or of its cached host copy), so NumPy, ``memoryview``
 * and ``bytes`` read the value directly. Where that buffer cannot be exported
 * (a deleted array, bfloat16, an accelerator buffer), ``BufferError`` is raised and
 * NumPy falls back to ``Array.__array__``, which knows the other routes.
 *
 * ``wrap(buf, aval)`` builds an instance of the registered Python subclass
 * (``minijax.Array``) without running ``__init__``: the dispatch hot path.
 *
 * Nothing here knows jaxlib: the wrapped object is any buffer exporter.
 *
 * ---- DispatchBase --------------------------------------------------------------
 *
 * ``Wrapped(f)(x, y)`` with positional minijax Arrays (or Python scalars that have a
 * device constant in minijax.runtime.transfer.CONSTANTS), at top level (no trace,
 * no metadata context), whose aval ids were seen before: look the run function up
 * in ``self._fast`` by the tuple of ``id(arg.aval)`` and call it with the list of
 * the arguments' ``_buf``. Anything else, and any miss, calls ``self._call(args,
 * kwargs)``. When the run function raises, ``on_error(args)`` may raise a clearer
 * error (a deleted or donated argument); otherwise the original propagates.
 * This is exactly minijax.stages.jit.PyDispatchBase.__call__, in C.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>  /* isnan */

typedef struct {
    PyObject_HEAD
    PyObject *buf;      /* the jaxlib single-device array */
    PyObject *aval;     /* its ShapedArray */
    PyObject *npy;      /* cached host copy (numpy array) or None */
    PyObject *donated;  /* False, True, or where it was donated (str) */
    PyObject *weakrefs;
} ArrayBase;

static PyTypeObject *array_type = NULL; /* the registered subclass (minijax.Array) */

static int
ArrayBase_traverse(ArrayBase *self, visitproc visit, void *arg)
{
    Py_VISIT(self->buf);
    Py_VISIT(self->aval);
    Py_VISIT(self->npy);
    Py_VISIT(self->donated);
    return 0;
}

static int
ArrayBase_clear(ArrayBase *self)
{
    Py_CLEAR(self->buf);
    Py_CLEAR(self->aval);
    Py_CLEAR(self->npy);
    Py_CLEAR(self->donated);
    return 0;
}

static void
ArrayBase_dealloc(ArrayBase *self)
{
    /* For the Python subclass, CPython's subtype_dealloc calls this and then drops
     * the reference to the (heap) subclass itself. */
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    ArrayBase_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
ArrayBase_getbuffer(ArrayBase *self, Py_buffer *view, int flags)
{
    PyObject *source = (self->npy != NULL && self->npy != Py_None) ? self->npy : self->buf;
    if (source == NULL) {
        PyErr_SetString(PyExc_BufferError, "minijax.Array has no buffer");
        return -1;
    }
    /* The view's owner becomes ``source``, so releasing the view releases it there. */
    return PyObject_GetBuffer(source, view, flags);
}

static PyBufferProcs ArrayBase_as_buffer = {
    (getbufferproc)ArrayBase_getbuffer,
    NULL,
};

static PyMemberDef ArrayBase_members[] = {
    {"_buf", T_OBJECT_EX, offsetof(ArrayBase, buf), 0, "the wrapped jaxlib array"},
    {"aval", T_OBJECT_EX, offsetof(ArrayBase, aval), 0, "the array's ShapedArray"},
    {"_npy", T_OBJECT_EX, offsetof(ArrayBase, npy), 0, "cached host copy or None"},
    {"_donated", T_OBJECT_EX, offsetof(ArrayBase, donated), 0, "donation record"},
    {NULL}
};

static PyTypeObject ArrayBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minijax.runtime._speedups.ArrayBase",
    .tp_doc = "C base of minijax.Array (fields and the buffer protocol).",
    .tp_basicsize = sizeof(ArrayBase),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)ArrayBase_traverse,
    .tp_clear = (inquiry)ArrayBase_clear,
    .tp_dealloc = (destructor)ArrayBase_dealloc,
    .tp_weaklistoffset = offsetof(ArrayBase, weakrefs),
    .tp_members = ArrayBase_members,
    .tp_as_buffer = &ArrayBase_as_buffer,
    .tp_new = PyType_GenericNew,  /* so that Array.__init__ can refuse with a message */
    .tp_alloc = PyType_GenericAlloc,
    .tp_free = PyObject_GC_Del,
};

/* wrap(buf, aval) -> registered subclass instance, no __init__. */
static PyObject *
speedups_wrap(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "wrap(buf, aval) takes exactly 2 arguments");
        return NULL;
    }
    if (array_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "minijax.runtime._speedups: no Array type registered");
        return NULL;
    }
    ArrayBase *self = (ArrayBase *)array_type->tp_alloc(array_type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(args[0]);
    self->buf = args[0];
    Py_INCREF(args[1]);
    self->aval = args[1];
    Py_INCREF(Py_None);
    self->npy = Py_None;
    Py_INCREF(Py_False);
    self->donated = Py_False;
    return (PyObject *)self;
}

/* register(cls): the subclass that wrap() builds. */
static PyObject *
speedups_register(PyObject *module, PyObject *cls)
{
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &ArrayBaseType)) {
        PyErr_SetString(PyExc_TypeError, "register() needs a subclass of ArrayBase");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(array_type, (PyTypeObject *)cls);
    Py_RETURN_NONE;
}

/* ---- DispatchBase ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *fast;  /* dict: tuple of aval ids -> run(bufs) */
} DispatchBase;

/* set_dispatch_state(state, empty_ctx, eval_trace, on_error, constants) */
static PyObject *dispatch_state = NULL;       /* the thread-local trace state */
static PyObject *dispatch_empty_ctx = NULL;   /* state.ctx at top level */
static PyObject *dispatch_eval_trace = NULL;  /* state.trace at top level */
static PyObject *dispatch_on_error = NULL;    /* on_error(args) after a failed run */
static PyObject *dispatch_constants = NULL;   /* transfer.CONSTANTS */
static PyObject *str_ctx = NULL, *str_trace = NULL, *str_call = NULL;

static int
DispatchBase_traverse(DispatchBase *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fast);
    return 0;
}

static int
DispatchBase_clear(DispatchBase *self)
{
    Py_CLEAR(self->fast);
    return 0;
}

static void
DispatchBase_dealloc(DispatchBase *self)
{
    PyObject_GC_UnTrack(self);
    DispatchBase_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* 1 when the thread is at top level (eval trace, empty context), 0 if not, -1 on error. */
static int
at_top_level(void)
{
    if (dispatch_state == NULL) {
        return 0;
    }
    PyObject *v = PyObject_GetAttr(dispatch_state, str_ctx);
    if (v == NULL) {
        return -1;
    }
    int ok = (v == dispatch_empty_ctx);
    Py_DECREF(v);
    if (!ok) {
        return 0;
    }
    v = PyObject_GetAttr(dispatch_state, str_trace);
    if (v == NULL) {
        return -1;
    }
    ok = (v == dispatch_eval_trace);
    Py_DECREF(v);
    return ok;
}

/* The ``CONSTANTS`` entry (id of the aval, buffer) of a Python float/int/bool, as a
 * borrowed reference; NULL without an exception when there is none. The key is the
 * one minijax.runtime.transfer.constant_key builds. */
static PyObject *
lookup_constant(PyObject *x)
{
    PyTypeObject *t = Py_TYPE(x);
    if (dispatch_constants == NULL ||
            (t != &PyFloat_Type && t != &PyLong_Type && t != &PyBool_Type)) {
        return NULL;
    }
    PyObject *key;
    double v = t == &PyFloat_Type ? PyFloat_AS_DOUBLE(x) : 1.0;
    if (v == 0.0 || isnan(v)) {  /* 0.0 vs -0.0, and NaNs: keyed by their 8 bytes */
        unsigned char bits[8];
        if (PyFloat_Pack8(v, (char *)bits, 1) < 0) {
            return NULL;
        }
        key = Py_BuildValue("(Oy#)", (PyObject *)t, (const char *)bits, (Py_ssize_t)8);
    } else {
        key = PyTuple_Pack(2, (PyObject *)t, x);
    }
    if (key == NULL) {
        return NULL;
    }
    PyObject *c = PyDict_GetItemWithError(dispatch_constants, key);
    Py_DECREF(key);
    if (c != NULL && !(PyTuple_Check(c) && PyTuple_GET_SIZE(c) == 2)) {
        return NULL;
    }
    return c;
}

/* The run function for ``args`` from ``fast`` (a borrowed reference) and the list of
 * their buffers in ``*bufs``; NULL without an exception when it does not apply.
 * Arguments are minijax Arrays (key: id of the aval) or Python scalars whose device
 * constant exists (key: id of the constant's aval). */
static PyObject *
lookup_fast(PyObject *fast, PyObject *args, PyObject **bufs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *key = PyTuple_New(n);
    if (key == NULL) {
        return NULL;
    }
    PyObject *list = PyList_New(n);
    if (list == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        PyObject *id, *buf;
        if (Py_TYPE(x) == array_type) {
            ArrayBase *a = (ArrayBase *)x;
            if (a->aval == NULL || a->buf == NULL) {
                goto miss;
            }
            id = PyLong_FromVoidPtr(a->aval);
            if (id == NULL) {
                goto miss;
            }
            buf = a->buf;
        } else {
            PyObject *c = lookup_constant(x);
            if (c == NULL) {
                goto miss;
            }
            id = PyTuple_GET_ITEM(c, 0);
            Py_INCREF(id);
            buf = PyTuple_GET_ITEM(c, 1);
        }
        PyTuple_SET_ITEM(key, i, id);
        Py_INCREF(buf);
        PyList_SET_ITEM(list, i, buf);
    }
    PyObject *run = PyDict_GetItemWithError(fast, key);
    Py_DECREF(key);
    if (run == NULL) {
        Py_DECREF(list);
        return NULL;
    }
    *bufs = list;
    return run;
miss:
    Py_DECREF(key);  /* unset items are NULL, which tuple and list deallocation skip */
    Py_DECREF(list);
    return NULL;
}

static PyObject *
DispatchBase_call(DispatchBase *self, PyObject *args, PyObject *kwargs)
{
    if (self->fast != NULL && PyDict_Check(self->fast) && PyDict_GET_SIZE(self->fast) > 0 &&
            (kwargs == NULL || PyDict_GET_SIZE(kwargs) == 0)) {
        int top = at_top_level();
        if (top < 0) {
            return NULL;
        }
        if (top) {
            PyObject *bufs = NULL;
            PyObject *run = lookup_fast(self->fast, args, &bufs);
            if (run != NULL) {
                Py_INCREF(run);  /* the call may clear the dict */
                PyObject *out = PyObject_CallOneArg(run, bufs);
                Py_DECREF(run);
                Py_DECREF(bufs);
                if (out == NULL && dispatch_on_error != NULL &&
                        PyErr_ExceptionMatches(PyExc_Exception)) {
                    PyObject *type, *value, *tb;
                    PyErr_Fetch(&type, &value, &tb);
                    PyObject *r = PyObject_CallOneArg(dispatch_on_error, args);
                    if (r == NULL) {  /* the clearer error replaces the original */
                        Py_XDECREF(type);
                        Py_XDECREF(value);
                        Py_XDECREF(tb);
                        return NULL;
                    }
                    Py_DECREF(r);
                    PyErr_Restore(type, value, tb);
                }
                return out;
            }
            if (PyErr_Occurred()) {
                return NULL;
            }
        }
    }
    PyObject *kw = kwargs;
    if (kw == NULL) {
        kw = PyDict_New();
        if (kw == NULL) {
            return NULL;
        }
    } else {
        Py_INCREF(kw);
    }
    PyObject *out = PyObject_CallMethodObjArgs((PyObject *)self, str_call, args, kw, NULL);
    Py_DECREF(kw);
    return out;
}

static PyMemberDef DispatchBase_members[] = {
    {"_fast", T_OBJECT_EX, offsetof(DispatchBase, fast), 0,
     "tuple of aval ids -> run(bufs), for positional Array arguments"},
    {NULL}
};

static PyTypeObject DispatchBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minijax.runtime._speedups.DispatchBase",
    .tp_doc = "C base of jit's Wrapped (the __call__ fast path).",
    .tp_basicsize = sizeof(DispatchBase),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)DispatchBase_traverse,
    .tp_clear = (inquiry)DispatchBase_clear,
    .tp_dealloc = (destructor)DispatchBase_dealloc,
    .tp_call = (ternaryfunc)DispatchBase_call,
    .tp_members = DispatchBase_members,
    .tp_new = PyType_GenericNew,
    .tp_alloc = PyType_GenericAlloc,
    .tp_free = PyObject_GC_Del,
};

static PyObject *
speedups_set_dispatch_state(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "set_dispatch_state(state, empty_ctx, eval_trace, on_error, constants)");
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_XSETREF(dispatch_state, args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(dispatch_empty_ctx, args[1]);
    Py_INCREF(args[2]);
    Py_XSETREF(dispatch_eval_trace, args[2]);
    Py_INCREF(args[3]);
    Py_XSETREF(dispatch_on_error, args[3]);
    Py_INCREF(args[4]);
    Py_XSETREF(dispatch_constants, args[4]);
    Py_RETURN_NONE;
}

/* ---- module ------------------------------------------------------------------------ */

static PyMethodDef speedups_methods[] = {
    {"wrap", (PyCFunction)(void (*)(void))speedups_wrap, METH_FASTCALL,
     "wrap(buf, aval): a new instance of the registered Array type."},
    {"register", (PyCFunction)speedups_register, METH_O,
     "register(cls): set the Array type that wrap() builds."},
    {"set_dispatch_state", (PyCFunction)(void (*)(void))speedups_set_dispatch_state,
     METH_FASTCALL,
     "set_dispatch_state(state, empty_ctx, eval_trace, on_error, constants): what "
     "DispatchBase uses."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "minijax.runtime._speedups",
    .m_doc = "C base types of minijax.Array and jit's Wrapped (optional extension).",
    .m_size = -1,
    .m_methods = speedups_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (PyType_Ready(&ArrayBaseType) < 0 || PyType_Ready(&DispatchBaseType) < 0) {
        return NULL;
    }
    str_ctx = PyUnicode_InternFromString("ctx");
    str_trace = PyUnicode_InternFromString("trace");
    str_call = PyUnicode_InternFromString("_call");
    if (str_ctx == NULL || str_trace == NULL || str_call == NULL) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&ArrayBaseType);
    if (PyModule_AddObject(m, "ArrayBase", (PyObject *)&ArrayBaseType) < 0) {
        Py_DECREF(&ArrayBaseType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&DispatchBaseType);
    if (PyModule_AddObject(m, "DispatchBase", (PyObject *)&DispatchBaseType) < 0) {
        Py_DECREF(&DispatchBaseType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
