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
 * or a buffer exporter other than an Array, ``_donated`` only a bool, a str or
 * a donation site (see mark_donated). An
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
 *
 * Other call shapes (pytrees, keyword arguments, static and donated arguments, Python
 * scalars that change at every call) take the pytree table ``self._tree_fast``: the
 * static arguments are split off, the rest is flattened by jaxlib's C++ pytree, and
 * ``(treedef, statics, *aval ids)`` is looked up; see minijax/stages/dispatch.py.
 * This is exactly minijax.stages.dispatch.PyDispatchBase.__call__, in C.
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

/* 1 for a donation site recorded by mark_donated: (str name, code object, int). */
static int
is_donation_site(PyObject *v)
{
    return PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) == 3 &&
        PyUnicode_Check(PyTuple_GET_ITEM(v, 0)) && PyCode_Check(PyTuple_GET_ITEM(v, 1)) &&
        PyLong_CheckExact(PyTuple_GET_ITEM(v, 2));
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
    if (value == NULL || !(PyBool_Check(value) || PyUnicode_Check(value) ||
                           is_donation_site(value))) {
        PyErr_SetString(PyExc_TypeError, "minijax.Array._donated must be a bool, a str or "
                        "a (name, code, last instruction) tuple");
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

/* A new instance of the registered Array type around buf with type aval (no
 * __init__); every collect_every-th one first calls the collector. */
static PyObject *
wrap_array(PyObject *buf, PyObject *aval)
{
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
    Py_INCREF(buf);
    self->buf = buf;
    Py_INCREF(aval);
    self->aval = aval;
    Py_INCREF(Py_None);
    self->npy = Py_None;
    Py_INCREF(Py_False);
    self->donated = Py_False;
    return (PyObject *)self;
}

/* wrap(buf, aval) -> registered subclass instance, no __init__. */
static PyObject *
speedups_wrap(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "wrap(buf, aval) takes exactly 2 arguments");
        return NULL;
    }
    return wrap_array(args[0], args[1]);
}

/* ---- Runner ------------------------------------------------------------------------ */

/* Runner(execute_sharded, handlers, avals, unflatten): ``run(bufs)`` of an executable
 * without host callbacks, float0 outputs or NaN checks (runtime/executable.py's
 * ``Executable.runner``), in C: execute_sharded(bufs).consume_with_handlers(handlers),
 * each output wrapped as an Array of its aval; then, with unflatten None, the single
 * Array (one aval) or the list; else unflatten(list). Saves the Python frame of the
 * closure it replaces on every jit call. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *execute_sharded;
    PyObject *handlers;   /* list */
    PyObject *avals;      /* tuple */
    PyObject *unflatten;  /* callable or None */
} Runner;

static PyObject *str_consume = NULL;

static PyObject *
Runner_vectorcall(Runner *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "run(bufs) takes exactly one argument");
        return NULL;
    }
    PyObject *results = PyObject_CallOneArg(self->execute_sharded, args[0]);
    if (results == NULL) {
        return NULL;
    }
    PyObject *outs = PyObject_CallMethodOneArg(results, str_consume, self->handlers);
    Py_DECREF(results);
    if (outs == NULL) {
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(self->avals);
    if (!PyList_Check(outs) || PyList_GET_SIZE(outs) != n) {
        Py_DECREF(outs);
        PyErr_SetString(PyExc_SystemError, "an executable returned an unexpected output count");
        return NULL;
    }
    if (n == 1 && self->unflatten == Py_None) {
        PyObject *a = wrap_array(PyList_GET_ITEM(outs, 0), PyTuple_GET_ITEM(self->avals, 0));
        Py_DECREF(outs);
        return a;
    }
    for (Py_ssize_t i = 0; i < n; i++) {  /* replace each buffer by its Array, in place */
        PyObject *a = wrap_array(PyList_GET_ITEM(outs, i), PyTuple_GET_ITEM(self->avals, i));
        if (a == NULL) {
            Py_DECREF(outs);
            return NULL;
        }
        PyObject *old = PyList_GET_ITEM(outs, i);
        PyList_SET_ITEM(outs, i, a);
        Py_DECREF(old);
    }
    if (self->unflatten == Py_None) {
        return outs;
    }
    PyObject *r = PyObject_CallOneArg(self->unflatten, outs);
    Py_DECREF(outs);
    return r;
}

static PyObject *
Runner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *execute_sharded, *handlers, *avals, *unflatten;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Runner takes positional arguments only");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "Runner", 4, 4, &execute_sharded, &handlers, &avals,
                           &unflatten)) {
        return NULL;
    }
    if (!PyCallable_Check(execute_sharded) || !PyList_Check(handlers) ||
            !PyTuple_Check(avals) || PyList_GET_SIZE(handlers) != PyTuple_GET_SIZE(avals) ||
            (unflatten != Py_None && !PyCallable_Check(unflatten))) {
        PyErr_SetString(PyExc_TypeError, "Runner(execute_sharded, handlers: list, avals: tuple "
                        "of the same length, unflatten: callable or None)");
        return NULL;
    }
    Runner *self = (Runner *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = (vectorcallfunc)Runner_vectorcall;
    Py_INCREF(execute_sharded);
    self->execute_sharded = execute_sharded;
    Py_INCREF(handlers);
    self->handlers = handlers;
    Py_INCREF(avals);
    self->avals = avals;
    Py_INCREF(unflatten);
    self->unflatten = unflatten;
    return (PyObject *)self;
}

static int
Runner_traverse(Runner *self, visitproc visit, void *arg)
{
    Py_VISIT(self->execute_sharded);
    Py_VISIT(self->handlers);
    Py_VISIT(self->avals);
    Py_VISIT(self->unflatten);
    return 0;
}

static int
Runner_clear(Runner *self)
{
    Py_CLEAR(self->execute_sharded);
    Py_CLEAR(self->handlers);
    Py_CLEAR(self->avals);
    Py_CLEAR(self->unflatten);
    return 0;
}

static void
Runner_dealloc(Runner *self)
{
    PyObject_GC_UnTrack(self);
    Runner_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minijax.runtime._speedups.Runner",
    .tp_doc = "run(bufs) of an executable: execute, wrap the outputs, unflatten (in C).",
    .tp_basicsize = sizeof(Runner),
    .tp_itemsize = 0,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Runner, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_traverse = (traverseproc)Runner_traverse,
    .tp_clear = (inquiry)Runner_clear,
    .tp_dealloc = (destructor)Runner_dealloc,
    .tp_new = Runner_new,
    .tp_free = PyObject_GC_Del,
};

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
    PyObject *fast;       /* dict: tuple of aval ids -> run(bufs) */
    PyObject *tree_fast;  /* dict: (treedef, statics, *aval ids) -> run or (run, aliased, name) */
    PyObject *statics;    /* None, or (frozenset of static argnums, sorted static argnames) */
    char donates;         /* whether any argument may be donated (no shared constants then) */
} DispatchBase;

/* set_dispatch_state(state, empty_ctx, eval_trace, on_error, constants, flatten,
 *                    scalar_specs, numpy_specs, ndarray, generic) */
static PyObject *dispatch_state = NULL;       /* the thread-local trace state */
static PyObject *dispatch_empty_ctx = NULL;   /* state.ctx at top level */
static PyObject *dispatch_eval_trace = NULL;  /* state.trace at top level */
static PyObject *dispatch_on_error = NULL;    /* on_error(args) after a failed run */
static PyObject *dispatch_constants = NULL;   /* transfer.CONSTANTS */
static PyObject *dispatch_flatten = NULL;     /* the pytree registry's flatten */
static PyObject *dispatch_scalar_specs = NULL;  /* transfer.SCALAR_SPECS */
static PyObject *dispatch_numpy_specs = NULL;   /* transfer.NUMPY_SPECS */
static PyObject *numpy_ndarray = NULL, *numpy_generic = NULL;  /* np.ndarray, np.generic */
static PyObject *str_dtype = NULL, *str_shape = NULL;
static PyObject *empty_kwargs = NULL;         /* {} for calls without keyword arguments */
static PyObject *str_ctx = NULL, *str_trace = NULL, *str_call = NULL, *str_is_deleted = NULL;

static int
DispatchBase_traverse(DispatchBase *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fast);
    Py_VISIT(self->tree_fast);
    Py_VISIT(self->statics);
    return 0;
}

static int
DispatchBase_clear(DispatchBase *self)
{
    Py_CLEAR(self->fast);
    Py_CLEAR(self->tree_fast);
    Py_CLEAR(self->statics);
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

/* A fresh device buffer for x made as ``spec`` (a SCALAR_SPECS or NUMPY_SPECS value:
 * (aval id, put, aval, sharding, devices, semantics, x64)) says, in *buf, its aval id
 * in *id (new references); 0 when made, 1 when it cannot be (a malformed spec, or the
 * put failed, e.g. an int that overflows: the full path raises the proper error), -1
 * on error. ``spec`` is borrowed. */
static int
put_with_spec(PyObject *spec, PyObject *x, PyObject **id, PyObject **buf)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 7) {
        return 1;
    }
    Py_INCREF(spec);  /* the put may run Python code that clears the table */
    PyObject *xs = PyList_New(1);
    if (xs == NULL) {
        Py_DECREF(spec);
        return -1;
    }
    Py_INCREF(x);
    PyList_SET_ITEM(xs, 0, x);
    PyObject *callargs[8] = {PyTuple_GET_ITEM(spec, 2), PyTuple_GET_ITEM(spec, 3), xs,
                             PyTuple_GET_ITEM(spec, 4), Py_False, Py_False,
                             PyTuple_GET_ITEM(spec, 5), PyTuple_GET_ITEM(spec, 6)};
    PyObject *b = PyObject_Vectorcall(PyTuple_GET_ITEM(spec, 1), callargs, 8, NULL);
    Py_DECREF(xs);
    if (b == NULL) {
        Py_DECREF(spec);
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return -1;
        }
        PyErr_Clear();
        return 1;
    }
    *id = PyTuple_GET_ITEM(spec, 0);
    Py_INCREF(*id);
    Py_DECREF(spec);
    *buf = b;
    return 0;
}

/* A fresh device buffer for the Python scalar x (SCALAR_SPECS: type -> spec); as
 * put_with_spec, 1 also when its type has no spec. */
static int
put_scalar(PyObject *x, PyObject **id, PyObject **buf)
{
    if (dispatch_scalar_specs == NULL) {
        return 1;
    }
    PyObject *spec = PyDict_GetItemWithError(dispatch_scalar_specs, (PyObject *)Py_TYPE(x));
    if (spec == NULL) {
        return PyErr_Occurred() ? -1 : 1;
    }
    return put_with_spec(spec, x, id, buf);
}

/* A fresh device buffer for the NumPy array or scalar x (NUMPY_SPECS: (dtype, shape)
 * -> spec, recorded when the full path put such an argument); as put_with_spec, 1 also
 * when (dtype, shape) has no spec. */
static int
put_numpy(PyObject *x, PyObject **id, PyObject **buf)
{
    PyObject *dtype = PyObject_GetAttr(x, str_dtype);
    if (dtype == NULL) {
        return -1;
    }
    PyObject *shape = PyObject_GetAttr(x, str_shape);
    if (shape == NULL) {
        Py_DECREF(dtype);
        return -1;
    }
    PyObject *key = PyTuple_Pack(2, dtype, shape);
    Py_DECREF(dtype);
    Py_DECREF(shape);
    if (key == NULL) {
        return -1;
    }
    PyObject *spec = PyDict_GetItemWithError(dispatch_numpy_specs, key);
    Py_DECREF(key);
    if (spec == NULL) {
        return PyErr_Occurred() ? -1 : 1;
    }
    return put_with_spec(spec, x, id, buf);
}

/* The key part (new reference in *id) and buffer (new reference in *buf) of one
 * argument leaf: a minijax Array's aval id and buffer; for a Python bool/int/float,
 * its device constant's (unless ``fresh``) or else a fresh buffer; for a NumPy array
 * or scalar, a fresh buffer. 0 when found, 1
 * when the leaf cannot take the fast path, -1 on error. */
static int
leaf_key(PyObject *x, int fresh, PyObject **id, PyObject **buf)
{
    if (Py_TYPE(x) == array_type) {
        ArrayBase *a = (ArrayBase *)x;
        if (a->aval == NULL || a->buf == NULL) {
            return 1;
        }
        *id = PyLong_FromVoidPtr(a->aval);
        if (*id == NULL) {
            return -1;
        }
        *buf = a->buf;
        Py_INCREF(*buf);
        return 0;
    }
    PyTypeObject *t = Py_TYPE(x);
    if (t != &PyFloat_Type && t != &PyLong_Type && t != &PyBool_Type) {
        if (dispatch_numpy_specs != NULL && ((PyObject *)t == numpy_ndarray ||
                PyType_IsSubtype(t, (PyTypeObject *)numpy_generic))) {
            return put_numpy(x, id, buf);
        }
        return 1;
    }
    PyObject *c = fresh ? NULL : lookup_constant(x);
    if (c != NULL) {
        *id = PyTuple_GET_ITEM(c, 0);
        *buf = PyTuple_GET_ITEM(c, 1);
        Py_INCREF(*id);
        Py_INCREF(*buf);
        return 0;
    }
    if (PyErr_Occurred()) {
        return -1;
    }
    return put_scalar(x, id, buf);
}

/* leaf_key for x, stored at index *k of the key tuple and of the buffer list, *k then
 * advanced; leaf_key's result. */
static int
add_leaf(PyObject *x, int fresh, PyObject *key, PyObject *list, Py_ssize_t *k)
{
    PyObject *id, *buf;
    int r = leaf_key(x, fresh, &id, &buf);
    if (r == 0) {
        PyTuple_SET_ITEM(key, *k, id);
        PyList_SET_ITEM(list, *k, buf);
        (*k)++;
    }
    return r;
}

/* 1 when position i of n arguments is static (in the set ``nums`` as i or as i - n),
 * 0 if not, -1 on error. */
static int
static_position(PyObject *nums, Py_ssize_t i, Py_ssize_t n)
{
    PyObject *pos = PyLong_FromSsize_t(i);
    if (pos == NULL) {
        return -1;
    }
    int r = PySet_Contains(nums, pos);
    Py_DECREF(pos);
    if (r != 0) {
        return r;
    }
    PyObject *neg = PyLong_FromSsize_t(i - n);
    if (neg == NULL) {
        return -1;
    }
    r = PySet_Contains(nums, neg);
    Py_DECREF(neg);
    return r;
}

/* The run function from ``fast`` (a borrowed reference) for a call whose arguments
 * are all leaves, and the list of their buffers in ``*bufs``; NULL without an
 * exception when it does not apply. The key is the tuple of the positional
 * arguments' key parts (see leaf_key), followed, with keyword arguments, by theirs
 * and the tuple of their names in call order, or, for a function with static
 * arguments (positional ones only, at most 64 arguments), by the tuple of the static
 * arguments' values. */
static PyObject *
lookup_fast(PyObject *fast, PyObject *statics_spec, PyObject *args, PyObject *kwargs,
            int fresh, PyObject **bufs)
{
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    Py_ssize_t nk = kwargs != NULL ? PyDict_GET_SIZE(kwargs) : 0;
    PyObject *nums = NULL;
    unsigned long long is_static = 0;  /* bit i: argument i is static */
    Py_ssize_t ns = 0;
    if (statics_spec != NULL && statics_spec != Py_None) {
        if (nk > 0 || n > 64 || !PyTuple_Check(statics_spec) ||
                PyTuple_GET_SIZE(statics_spec) != 2) {
            return NULL;
        }
        nums = PyTuple_GET_ITEM(statics_spec, 0);
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = static_position(nums, i, n);
            if (r < 0) {
                return NULL;
            }
            if (r) {
                is_static |= 1ULL << i;
                ns++;
            }
        }
    }
    Py_ssize_t size = n - ns + nk + (nk > 0 || nums != NULL);
    PyObject *key = PyTuple_New(size);
    if (key == NULL) {
        return NULL;
    }
    PyObject *list = PyList_New(n - ns + nk);
    if (list == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *statics = NULL, *names = NULL, *run = NULL;
    Py_ssize_t k = 0, j = 0;  /* key parts and buffers so far; statics so far */
    if (nums != NULL) {
        statics = PyTuple_New(ns);
        if (statics == NULL) {
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        if (is_static & (1ULL << i)) {
            Py_INCREF(x);
            PyTuple_SET_ITEM(statics, j++, x);
            continue;
        }
        if (add_leaf(x, fresh, key, list, &k) != 0) {
            goto done;
        }
    }
    if (nk > 0) {
        names = PyTuple_New(nk);
        if (names == NULL) {
            goto done;
        }
        Py_ssize_t pos = 0, jn = 0;
        PyObject *name, *x;
        while (PyDict_Next(kwargs, &pos, &name, &x)) {
            if (add_leaf(x, fresh, key, list, &k) != 0) {
                goto done;
            }
            Py_INCREF(name);
            PyTuple_SET_ITEM(names, jn++, name);
        }
        PyTuple_SET_ITEM(key, k, names);
        names = NULL;
        k++;
    } else if (nums != NULL) {
        PyTuple_SET_ITEM(key, k, statics);
        statics = NULL;
        k++;
    }
    run = PyDict_GetItemWithError(fast, key);
    if (run == NULL && PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();  /* an unhashable static argument: the full path says so */
    }
done:
    Py_XDECREF(statics);
    Py_XDECREF(names);
    Py_XDECREF(key);  /* unset items are NULL, which tuple and list deallocation skip */
    if (run == NULL) {
        Py_DECREF(list);
        return NULL;
    }
    *bufs = list;
    return run;
}

/* Calls run(bufs); on an exception, on_error(args) may replace it with a clearer one. */
static PyObject *
run_checked(PyObject *run, PyObject *bufs, PyObject *args)
{
    Py_INCREF(run);  /* the call may clear the dict that holds it */
    PyObject *out = PyObject_CallOneArg(run, bufs);
    Py_DECREF(run);
    if (out == NULL && dispatch_on_error != NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
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

/* The statics of a call and its dynamic arguments, as Wrapped._split makes them:
 * statics = ((i, args[i]) for static positions in order, (k, kwargs[k]) for static
 * names in sorted order). New references in the three outputs; -1 on error. */
static int
split_statics(PyObject *spec, PyObject *args, PyObject *kwargs, PyObject **statics,
              PyObject **dyn_args, PyObject **dyn_kwargs)
{
    PyObject *nums = PyTuple_GET_ITEM(spec, 0), *names = PyTuple_GET_ITEM(spec, 1);
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *st = PyList_New(0), *dyn = PyList_New(0), *kw = NULL;
    if (st == NULL || dyn == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        int r = static_position(nums, i, n);
        if (r == 1) {
            PyObject *pair = Py_BuildValue("(nO)", i, x);
            r = (pair == NULL || PyList_Append(st, pair) < 0) ? -1 : 1;
            Py_XDECREF(pair);
        }
        if (r < 0 || (r == 0 && PyList_Append(dyn, x) < 0)) {
            goto fail;
        }
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0) {
        kw = PyDict_Copy(kwargs);
        if (kw == NULL) {
            goto fail;
        }
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names); j++) {
            PyObject *k = PyTuple_GET_ITEM(names, j);
            PyObject *v = PyDict_GetItemWithError(kw, k);
            if (v == NULL) {
                if (PyErr_Occurred()) {
                    goto fail;
                }
                continue;
            }
            PyObject *pair = PyTuple_Pack(2, k, v);
            int err = pair == NULL || PyList_Append(st, pair) < 0 || PyDict_DelItem(kw, k) < 0;
            Py_XDECREF(pair);
            if (err) {
                goto fail;
            }
        }
    } else {
        kw = empty_kwargs;
        Py_INCREF(kw);
    }
    *statics = PyList_AsTuple(st);
    *dyn_args = PyList_AsTuple(dyn);
    Py_DECREF(st);
    Py_DECREF(dyn);
    if (*statics == NULL || *dyn_args == NULL) {
        Py_XDECREF(*statics);
        Py_XDECREF(*dyn_args);
        Py_DECREF(kw);
        return -1;
    }
    *dyn_kwargs = kw;
    return 0;
fail:
    Py_XDECREF(st);
    Py_XDECREF(dyn);
    Py_XDECREF(kw);
    return -1;
}

/* After a call that donated: marks the donated Arrays whose buffers are gone with
 * where they were donated, as dispatch.mark_donated does, but lazily: the record is
 * (name, code, last instruction) of the caller's frame, which runtime/array.py turns
 * into "to jit(name) at file:line" only for an error message (working out the line
 * and formatting it cost about 1 us per call).
 * ``leaves``: a list or a tuple. */
static int
mark_donated(PyObject *leaves, PyObject *aliased, PyObject *name)
{
    PyObject *site = NULL;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(aliased); j++) {
        Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GET_ITEM(aliased, j));
        if (i < 0 || i >= PySequence_Fast_GET_SIZE(leaves)) {
            if (PyErr_Occurred()) {
                Py_XDECREF(site);
                return -1;
            }
            continue;
        }
        PyObject *x = PySequence_Fast_GET_ITEM(leaves, i);
        if (Py_TYPE(x) != array_type || ((ArrayBase *)x)->buf == NULL) {
            continue;
        }
        ArrayBase *a = (ArrayBase *)x;
        PyObject *r = PyObject_CallMethodNoArgs(a->buf, str_is_deleted);
        if (r == NULL) {
            Py_XDECREF(site);
            return -1;
        }
        int gone = PyObject_IsTrue(r);
        Py_DECREF(r);
        if (gone != 1) {
            continue;
        }
        if (site == NULL) {  /* (name, code, last instruction): formatted when needed */
            PyFrameObject *f = PyEval_GetFrame();  /* borrowed: the caller's frame */
            if (f != NULL) {
                PyCodeObject *code = PyFrame_GetCode(f);
                PyObject *lasti = PyLong_FromLong(PyFrame_GetLasti(f));
                site = lasti != NULL ? PyTuple_Pack(3, name, (PyObject *)code, lasti) : NULL;
                Py_XDECREF(lasti);
                Py_DECREF(code);
            } else {
                site = PyUnicode_FromFormat("to jit(%U)", name);
            }
            if (site == NULL) {
                return -1;
            }
        }
        Py_INCREF(site);
        Py_XSETREF(a->donated, site);
        Py_INCREF(Py_None);
        Py_XSETREF(a->npy, Py_None);
    }
    Py_XDECREF(site);
    return 0;
}

/* Runs a table entry: ``run``, or ``(run, aliased leaves, name)`` for a call that
 * donates, after which the donated Arrays among ``leaves`` are marked. */
static PyObject *
call_entry(PyObject *value, PyObject *bufs, PyObject *leaves)
{
    if (!PyTuple_Check(value)) {
        return run_checked(value, bufs, leaves);
    }
    if (PyTuple_GET_SIZE(value) != 3) {
        PyErr_SetString(PyExc_SystemError, "a dispatch entry must be run or (run, aliased, name)");
        return NULL;
    }
    Py_INCREF(value);
    PyObject *out = run_checked(PyTuple_GET_ITEM(value, 0), bufs, leaves);
    if (out != NULL && mark_donated(leaves, PyTuple_GET_ITEM(value, 1),
                                    PyTuple_GET_ITEM(value, 2)) < 0) {
        Py_CLEAR(out);
    }
    Py_DECREF(value);
    return out;
}

/* The pytree path: flatten (dynamic args, dynamic kwargs) with the C++ pytree, key on
 * (treedef, statics, *aval ids) in tree_fast. Returns the call's result, or NULL with
 * an exception, or NULL without one for a miss (then *miss is set). */
static PyObject *
tree_call(DispatchBase *self, PyObject *args, PyObject *kwargs, int *miss)
{
    PyObject *statics = NULL, *dyn_args = NULL, *dyn_kwargs = NULL, *pair = NULL;
    PyObject *flat = NULL, *key = NULL, *bufs = NULL, *out = NULL;
    *miss = 1;
    if (self->statics != NULL && self->statics != Py_None) {
        if (!PyTuple_Check(self->statics) || PyTuple_GET_SIZE(self->statics) != 2) {
            return NULL;
        }
        if (split_statics(self->statics, args, kwargs, &statics, &dyn_args, &dyn_kwargs) < 0) {
            *miss = 0;
            return NULL;
        }
    } else {
        statics = PyTuple_New(0);
        dyn_args = args;
        Py_INCREF(dyn_args);
        dyn_kwargs = kwargs != NULL ? kwargs : empty_kwargs;
        Py_INCREF(dyn_kwargs);
        if (statics == NULL) {
            goto error;
        }
    }
    pair = PyTuple_Pack(2, dyn_args, dyn_kwargs);
    if (pair == NULL) {
        goto error;
    }
    flat = PyObject_CallOneArg(dispatch_flatten, pair);
    if (flat == NULL) {  /* not a pytree the registry can flatten: the full path says why */
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            goto error;
        }
        PyErr_Clear();
        goto done;
    }
    if (!PyTuple_Check(flat) || PyTuple_GET_SIZE(flat) != 2 ||
            !PyList_Check(PyTuple_GET_ITEM(flat, 0))) {
        goto done;
    }
    PyObject *leaves = PyTuple_GET_ITEM(flat, 0);
    Py_ssize_t n = PyList_GET_SIZE(leaves);
    key = PyTuple_New(n + 2);
    bufs = PyList_New(n);
    if (key == NULL || bufs == NULL) {
        goto error;
    }
    PyObject *treedef = PyTuple_GET_ITEM(flat, 1);
    Py_INCREF(treedef);
    PyTuple_SET_ITEM(key, 0, treedef);
    Py_INCREF(statics);
    PyTuple_SET_ITEM(key, 1, statics);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = NULL, *buf = NULL;
        int r = leaf_key(PyList_GET_ITEM(leaves, i), self->donates, &id, &buf);
        if (r < 0) {
            goto error;
        }
        if (r > 0) {
            goto done;
        }
        PyTuple_SET_ITEM(key, i + 2, id);
        PyList_SET_ITEM(bufs, i, buf);
    }
    PyObject *value = PyDict_GetItemWithError(self->tree_fast, key);
    if (value == NULL) {
        if (PyErr_Occurred()) {  /* an unhashable static argument: the full path says so */
            if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
                goto error;
            }
            PyErr_Clear();
        }
        goto done;
    }
    *miss = 0;
    out = call_entry(value, bufs, leaves);
    goto done;
error:
    *miss = 0;
done:
    Py_XDECREF(statics);
    Py_XDECREF(dyn_args);
    Py_XDECREF(dyn_kwargs);
    Py_XDECREF(pair);
    Py_XDECREF(flat);
    Py_XDECREF(key);  /* unset items are NULL, which tuple and list deallocation skip */
    Py_XDECREF(bufs);
    return out;
}

static PyObject *
DispatchBase_call(DispatchBase *self, PyObject *args, PyObject *kwargs)
{
    int has_kwargs = kwargs != NULL && PyDict_GET_SIZE(kwargs) > 0;
    int flat_ok = self->fast != NULL && PyDict_Check(self->fast) &&
        PyDict_GET_SIZE(self->fast) > 0;
    int tree_ok = self->tree_fast != NULL && PyDict_Check(self->tree_fast) &&
        PyDict_GET_SIZE(self->tree_fast) > 0 && dispatch_flatten != NULL;
    if (flat_ok || tree_ok) {
        int top = at_top_level();
        if (top < 0) {
            return NULL;
        }
        if (top && flat_ok) {
            PyObject *bufs = NULL;
            PyObject *run = lookup_fast(self->fast, self->statics, args,
                                        has_kwargs ? kwargs : NULL, self->donates, &bufs);
            if (run != NULL) {
                PyObject *out = call_entry(run, bufs, args);
                Py_DECREF(bufs);
                return out;
            }
            if (PyErr_Occurred()) {
                return NULL;
            }
        }
        if (top && tree_ok) {
            int miss;
            PyObject *out = tree_call(self, args, kwargs, &miss);
            if (!miss) {
                return out;
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
    {"_tree_fast", T_OBJECT_EX, offsetof(DispatchBase, tree_fast), 0,
     "(treedef, statics, *aval ids) -> run(bufs) or (run, aliased leaves, name)"},
    {"_dispatch_statics", T_OBJECT, offsetof(DispatchBase, statics), 0,
     "None, or (frozenset of static argnums, sorted tuple of static argnames)"},
    {"_dispatch_donates", T_BOOL, offsetof(DispatchBase, donates), 0,
     "whether arguments may be donated (Python scalars then get fresh buffers)"},
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
    if (nargs != 10 || !PyDict_Check(args[4]) || !PyDict_Check(args[6]) ||
            !PyDict_Check(args[7]) || !PyType_Check(args[8]) || !PyType_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError,
                        "set_dispatch_state(state, empty_ctx, eval_trace, on_error, constants, "
                        "flatten, scalar_specs, numpy_specs, ndarray, generic)");
        return NULL;
    }
    PyObject **slots[10] = {&dispatch_state, &dispatch_empty_ctx, &dispatch_eval_trace,
                            &dispatch_on_error, &dispatch_constants, &dispatch_flatten,
                            &dispatch_scalar_specs, &dispatch_numpy_specs, &numpy_ndarray,
                            &numpy_generic};
    for (int i = 0; i < 10; i++) {
        Py_INCREF(args[i]);
        Py_XSETREF(*slots[i], args[i]);
    }
    Py_RETURN_NONE;
}

/* ---- user_frame -------------------------------------------------------------------- */

/* user_frame(frame, internal, make): from ``frame`` outwards, the first frame whose
 * file ``internal`` (file name -> bool) maps to False, as make(file, line, function);
 * None when there is none; NotImplemented when a file on the way is not in
 * ``internal`` yet (the caller classifies it). minijax.core.trace.user_source in C:
 * tracing asks it for every equation. */
static PyObject *
speedups_user_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyFrame_Check(args[0]) || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "user_frame(frame, internal: dict, make)");
        return NULL;
    }
    PyFrameObject *f = (PyFrameObject *)args[0];
    Py_INCREF(f);
    while (f != NULL) {
        PyCodeObject *code = PyFrame_GetCode(f);
        PyObject *v = PyDict_GetItemWithError(args[1], code->co_filename);
        if (v == NULL) {
            Py_DECREF(code);
            Py_DECREF(f);
            if (PyErr_Occurred()) {
                return NULL;
            }
            Py_RETURN_NOTIMPLEMENTED;
        }
        if (v == Py_False) {
            PyObject *line = PyLong_FromLong(PyFrame_GetLineNumber(f));
            PyObject *out = NULL;
            if (line != NULL) {
                PyObject *callargs[3] = {code->co_filename, line, code->co_name};
                out = PyObject_Vectorcall(args[2], callargs, 3, NULL);
                Py_DECREF(line);
            }
            Py_DECREF(code);
            Py_DECREF(f);
            return out;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
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
    {"user_frame", (PyCFunction)(void (*)(void))speedups_user_frame, METH_FASTCALL,
     "user_frame(frame, internal, make): the first frame outside minijax, as make(file, "
     "line, function)."},
    {"set_dispatch_state", (PyCFunction)(void (*)(void))speedups_set_dispatch_state,
     METH_FASTCALL,
     "set_dispatch_state(state, empty_ctx, eval_trace, on_error, constants, flatten, "
     "scalar_specs, numpy_specs, ndarray, generic): what DispatchBase uses."},
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
    if (PyType_Ready(&ArrayBaseType) < 0 || PyType_Ready(&DispatchBaseType) < 0 ||
            PyType_Ready(&RunnerType) < 0) {
        return NULL;
    }
    str_ctx = PyUnicode_InternFromString("ctx");
    str_trace = PyUnicode_InternFromString("trace");
    str_call = PyUnicode_InternFromString("_call");
    str_is_deleted = PyUnicode_InternFromString("is_deleted");
    str_dtype = PyUnicode_InternFromString("dtype");
    str_consume = PyUnicode_InternFromString("consume_with_handlers");
    str_shape = PyUnicode_InternFromString("shape");
    empty_kwargs = PyDict_New();
    if (str_ctx == NULL || str_trace == NULL || str_call == NULL || str_is_deleted == NULL ||
            str_dtype == NULL || str_shape == NULL || str_consume == NULL ||
            empty_kwargs == NULL) {
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
    Py_INCREF(&RunnerType);
    if (PyModule_AddObject(m, "Runner", (PyObject *)&RunnerType) < 0) {
        Py_DECREF(&RunnerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
