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
 * (``minijax.Array``) without running ``__init__``: the dispatch hot path. Every
 * ``collect_every``-th array it builds, it first calls ``collect()`` (see
 * ``set_collector``): jaxlib queues Python objects that its worker threads release
 * until someone drains the queue, and a steady loop of calls never triggers the
 * garbage collection that would otherwise do it.
 *
 * Safety: ``_buf`` and ``aval`` are read-only from Python, ``_npy`` accepts only None
 * or a buffer exporter other than an Array, ``_donated`` only a bool or a str. An
 * export checks that the exported buffer holds exactly the bytes the aval describes
 * (a mismatch is a BufferError, never a read past the end), and it runs under the
 * array's host lock, which ``Array.delete`` and the other host operations in
 * runtime/array.py take too (``_host_acquire``/``_host_release``): jaxlib crashes when
 * a buffer is deleted while another thread is using it. The lock is per array (a wait
 * for one array's value never holds up reads of others), reentrant, and waited for
 * with the GIL released.
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
#ifdef _WIN32
#include <windows.h>  /* Sleep */
#else
#include <time.h>  /* nanosleep */
#endif

typedef struct {
    PyObject_HEAD
    PyObject *buf;      /* the jaxlib single-device array */
    PyObject *aval;     /* its ShapedArray */
    PyObject *npy;      /* cached host copy (numpy array) or None */
    PyObject *donated;  /* False, True, or where it was donated (str) */
    PyObject *weakrefs;
    unsigned long lock_owner;  /* the thread holding the host lock (see below) */
    long lock_depth;           /* how many times it holds it; 0: free */
} ArrayBase;

static PyTypeObject ArrayBaseType;
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

/* ---- the per-array host lock --------------------------------------------------------
 *
 * Two fields, read and written only with the GIL held (so no check below can
 * interleave with another thread's): no allocation, a few nanoseconds when free.
 * Reentrant. Contention is rare (a delete() racing a read of the same array), so a
 * waiter polls with the GIL released, backing off from 20 µs to 1 ms, and lets
 * Ctrl-C through. */

static void
sleep_us(long us)
{
#ifdef _WIN32
    Sleep((DWORD)((us + 999) / 1000));
#else
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
#endif
}

static int
array_lock_acquire(ArrayBase *self)
{
    unsigned long me = PyThread_get_thread_ident();
    long wait_us = 20;
    while (self->lock_depth > 0 && self->lock_owner != me) {
        Py_BEGIN_ALLOW_THREADS
        sleep_us(wait_us);
        Py_END_ALLOW_THREADS
        if (wait_us < 1000) {
            wait_us *= 2;
        }
        if (PyErr_CheckSignals() < 0) {
            return -1;
        }
    }
    self->lock_owner = me;
    self->lock_depth++;
    return 0;
}

static int
array_lock_release(ArrayBase *self)
{
    if (self->lock_depth <= 0 || self->lock_owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "minijax.Array: host lock released by a non-owner");
        return -1;
    }
    if (--self->lock_depth == 0) {
        self->lock_owner = 0;
    }
    return 0;
}

static PyObject *
ArrayBase_host_acquire(ArrayBase *self, PyObject *unused)
{
    if (array_lock_acquire(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
ArrayBase_host_release(ArrayBase *self, PyObject *unused)
{
    if (array_lock_release(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef ArrayBase_methods[] = {
    {"_host_acquire", (PyCFunction)ArrayBase_host_acquire, METH_NOARGS,
     "take this array's host lock (reentrant; waits with the GIL released)"},
    {"_host_release", (PyCFunction)ArrayBase_host_release, METH_NOARGS,
     "release this array's host lock"},
    {NULL}
};

/* ---- ArrayBase: fields and the buffer protocol ---------------------------------- */

/* The size in bytes of an array of type ``aval`` (the product of ``aval.shape`` times
 * ``aval.dtype.itemsize``); -1 with an exception on error. A small direct-mapped cache
 * keyed by the aval object (runtime avals are interned, few and immortal; the cache
 * holds a reference, so a pointer cannot be reused while it is there) saves the
 * attribute lookups on the next export of an array of the same type. */

#define NBYTES_CACHE_SIZE 64
static PyObject *nbytes_cache_key[NBYTES_CACHE_SIZE];
static Py_ssize_t nbytes_cache_value[NBYTES_CACHE_SIZE];

static Py_ssize_t
aval_nbytes(PyObject *aval)
{
    if (aval == NULL) {
        PyErr_SetString(PyExc_BufferError, "minijax.Array has no aval");
        return -1;
    }
    size_t slot = ((size_t)aval >> 4) % NBYTES_CACHE_SIZE;
    if (nbytes_cache_key[slot] == aval) {
        return nbytes_cache_value[slot];
    }
    PyObject *shape = PyObject_GetAttrString(aval, "shape");
    if (shape == NULL) {
        return -1;
    }
    if (!PyTuple_Check(shape)) {
        Py_DECREF(shape);
        PyErr_SetString(PyExc_TypeError, "minijax.Array: aval.shape is not a tuple");
        return -1;
    }
    PyObject *dtype = PyObject_GetAttrString(aval, "dtype");
    PyObject *item = dtype == NULL ? NULL : PyObject_GetAttrString(dtype, "itemsize");
    Py_XDECREF(dtype);
    Py_ssize_t n = item == NULL ? -1 : PyLong_AsSsize_t(item);
    Py_XDECREF(item);
    if (n < 0) {
        Py_DECREF(shape);
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "minijax.Array: bad aval.dtype.itemsize");
        }
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (d < 0) {
            Py_DECREF(shape);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "minijax.Array: negative dimension in aval");
            }
            return -1;
        }
        if (d != 0 && n > PY_SSIZE_T_MAX / d) {
            Py_DECREF(shape);
            PyErr_SetString(PyExc_OverflowError, "minijax.Array: aval size overflows");
            return -1;
        }
        n *= d;
    }
    Py_DECREF(shape);
    Py_INCREF(aval);
    Py_XSETREF(nbytes_cache_key[slot], aval);
    nbytes_cache_value[slot] = n;
    return n;
}

static int
ArrayBase_getbuffer(ArrayBase *self, Py_buffer *view, int flags)
{
    PyObject *source = (self->npy != NULL && self->npy != Py_None) ? self->npy : self->buf;
    if (source == NULL) {
        PyErr_SetString(PyExc_BufferError, "minijax.Array has no buffer");
        return -1;
    }
    if (PyObject_TypeCheck(source, &ArrayBaseType)) {  /* never export through an Array */
        PyErr_SetString(PyExc_BufferError, "minijax.Array wraps another Array");
        return -1;
    }
    Py_ssize_t expected = aval_nbytes(self->aval);
    if (expected < 0) {
        return -1;
    }
    Py_INCREF(source);  /* a concurrent ``_npy = None`` must not free it under us */
    if (array_lock_acquire(self) < 0) {
        Py_DECREF(source);
        return -1;
    }
    /* The view's owner becomes ``source``, so releasing the view releases it there. */
    int r = PyObject_GetBuffer(source, view, flags);
    if (array_lock_release(self) < 0 && r == 0) {
        PyBuffer_Release(view);
        r = -1;
    }
    Py_DECREF(source);
    if (r == 0 && view->len != expected) {
        Py_ssize_t got = view->len;
        PyBuffer_Release(view);
        PyErr_Format(PyExc_BufferError,
                     "minijax.Array: the device buffer holds %zd bytes but the array's "
                     "type needs %zd; refusing to export it", got, expected);
        return -1;
    }
    return r;
}

static PyBufferProcs ArrayBase_as_buffer = {
    (getbufferproc)ArrayBase_getbuffer,
    NULL,
};

static PyObject *
ArrayBase_get_npy(ArrayBase *self, void *closure)
{
    PyObject *v = self->npy != NULL ? self->npy : Py_None;
    Py_INCREF(v);
    return v;
}

static int
ArrayBase_set_npy(ArrayBase *self, PyObject *value, void *closure)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot delete minijax.Array._npy");
        return -1;
    }
    if (value != Py_None &&
            (PyObject_TypeCheck(value, &ArrayBaseType) || !PyObject_CheckBuffer(value))) {
        PyErr_Format(PyExc_TypeError,
                     "minijax.Array._npy must be None or a host (numpy) array, not %.100s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    Py_INCREF(value);
    Py_XSETREF(self->npy, value);
    return 0;
}

static PyObject *
ArrayBase_get_donated(ArrayBase *self, void *closure)
{
    PyObject *v = self->donated != NULL ? self->donated : Py_False;
    Py_INCREF(v);
    return v;
}

static int
ArrayBase_set_donated(ArrayBase *self, PyObject *value, void *closure)
{
    if (value == NULL || !(PyBool_Check(value) || PyUnicode_Check(value))) {
        PyErr_SetString(PyExc_TypeError, "minijax.Array._donated must be a bool or a str");
        return -1;
    }
    Py_INCREF(value);
    Py_XSETREF(self->donated, value);
    return 0;
}

static PyMemberDef ArrayBase_members[] = {
    {"_buf", T_OBJECT_EX, offsetof(ArrayBase, buf), READONLY, "the wrapped jaxlib array"},
    {"aval", T_OBJECT_EX, offsetof(ArrayBase, aval), READONLY, "the array's ShapedArray"},
    {NULL}
};

static PyGetSetDef ArrayBase_getset[] = {
    {"_npy", (getter)ArrayBase_get_npy, (setter)ArrayBase_set_npy,
     "cached host copy (a numpy array) or None", NULL},
    {"_donated", (getter)ArrayBase_get_donated, (setter)ArrayBase_set_donated,
     "donation record: False, True, or where (str)", NULL},
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
    .tp_getset = ArrayBase_getset,
    .tp_methods = ArrayBase_methods,
    .tp_as_buffer = &ArrayBase_as_buffer,
    .tp_new = PyType_GenericNew,  /* so that Array.__init__ can refuse with a message */
    .tp_alloc = PyType_GenericAlloc,
    .tp_free = PyObject_GC_Del,
};

/* set_collector(collect, every): what wrap() calls every ``every`` arrays. */
static PyObject *collector = NULL;
static long collect_every = 0;
static long wrapped_since_collect = 0;

static PyObject *
speedups_set_collector(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    long every;
    if (nargs != 2 || !PyCallable_Check(args[0]) || (every = PyLong_AsLong(args[1])) < 1) {
        if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError,
                            "set_collector(collect, every) needs a callable and an int >= 1");
        }
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_XSETREF(collector, args[0]);
    collect_every = every;
    wrapped_since_collect = 0;
    Py_RETURN_NONE;
}

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
    if (collector != NULL && ++wrapped_since_collect >= collect_every) {
        wrapped_since_collect = 0;
        PyObject *r = PyObject_CallNoArgs(collector);
        if (r == NULL) {  /* housekeeping: report, never fail the caller's operation */
            PyErr_WriteUnraisable(collector);
        }
        Py_XDECREF(r);
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
    {"set_collector", (PyCFunction)(void (*)(void))speedups_set_collector, METH_FASTCALL,
     "set_collector(collect, every): wrap() calls collect() before every every-th array."},
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
