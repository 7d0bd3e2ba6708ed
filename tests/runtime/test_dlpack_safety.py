"""DLPack import checks every capsule before reading a byte of it (issue 23).

The producers here are fakes built on NumPy's own ``__dlpack__``: they edit the
DLTensor inside the capsule (strides, shape, dtype, offset) before handing it over,
as a buggy or hostile library could. Each case runs against jax as the reference for
the exception type; the cases that used to read out of bounds run in a subprocess that
must not die by a signal.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRODUCER = '''
import ctypes
import numpy as np

class DLDevice(ctypes.Structure):
    _fields_ = [("t", ctypes.c_int), ("id", ctypes.c_int)]

class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

_get = ctypes.pythonapi.PyCapsule_GetPointer
_get.restype, _get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]

class Edited:
    """A producer whose capsule (NumPy's, for ``a``) is edited by ``fn(dltensor)``."""
    def __init__(self, a, fn):
        self.a, self.fn, self.calls = a, fn, 0
    def __dlpack_device__(self):
        return (1, 0)
    def __dlpack__(self, stream=None, **kw):
        self.calls += 1
        c = self.a.__dlpack__()
        self.fn(DLTensor.from_address(_get(c, b"dltensor")))
        return c

def stride(s):
    def fn(t):
        t.strides[0] = s
    return fn
'''
ns: dict = {}
exec(PRODUCER, ns)  # noqa: S102 - the fake producer, shared with the subprocesses
Edited, stride = ns["Edited"], ns["stride"]


def _run(code: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-c", PRODUCER + textwrap.dedent(code)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}:\n{r.stderr[-3000:]}"
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    return r


def _same_error(make, match=None):
    """minijax raises an instance of the class jax raises for ``make()``'s producer."""
    with pytest.raises(Exception) as ref:  # noqa: PT011 - the reference decides
        jax.dlpack.from_dlpack(make())
    with pytest.raises(Exception, match=match) as got:  # noqa: PT011
        minijax.dlpack.from_dlpack(make())
    assert isinstance(got.value, type(ref.value)), (type(got.value), type(ref.value))
    return got.value


def test_lying_strides_are_refused_in_a_subprocess():
    r = _run('''
        import minijax
        a = np.arange(4, dtype=np.float32)
        for s in (1 << 26, -1, 2, 0, -(1 << 40)):
            try:
                minijax.dlpack.from_dlpack(Edited(a, stride(s)))
            except minijax.errors.JaxRuntimeError as e:
                assert "only DLPack tensors with trivial (compact) striding" in str(e).lower() \\
                    or "compact" in str(e), e
            else:
                raise AssertionError(f"stride {s} accepted")
        print("ok")
    ''')
    assert r.stdout.strip().endswith("ok")


@pytest.mark.parametrize("s", [1 << 26, -1, 2, 0])
def test_non_compact_strides_raise_like_jax(s):
    a = np.arange(4, dtype=np.float32)
    _same_error(lambda: Edited(a, stride(s)), match="compact")


@pytest.mark.parametrize("view", [
    lambda b: b[:, ::2], lambda b: b[::-1],
    lambda b: np.lib.stride_tricks.as_strided(b, (3, 4), (0, 4))])  # broadcast
def test_strided_numpy_views_are_refused_like_jax(view):
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    _same_error(lambda: view(b), match="compact")


def test_transposed_and_unit_dimensions_are_compact():
    b = np.arange(12, dtype=np.float32).reshape(3, 4)
    for v in (b.T, b.reshape(3, 1, 4), b[None], np.ascontiguousarray(b[:, :1])):
        np.testing.assert_array_equal(minijax.dlpack.from_dlpack(v), v)
        np.testing.assert_array_equal(jax.dlpack.from_dlpack(v), v)


def _edit(field):
    def fn(t):
        if field == "shape":
            t.shape[0] = -1
        elif field == "lanes":
            t.dtype.lanes = 2
        elif field == "bits":
            t.dtype.bits = 24
        elif field == "ndim":
            t.ndim = -1
    return fn


@pytest.mark.parametrize("field", ["shape", "lanes", "bits", "ndim"])
def test_bad_headers_raise_like_jax(field):
    a = np.arange(4, dtype=np.float32)
    _same_error(lambda: Edited(a, _edit(field)))


def test_bad_offsets_and_huge_shapes_are_refused_before_reading():
    # jaxlib itself accepts both and reads past the buffer; minijax refuses
    r = _run('''
        import minijax
        a = np.arange(4, dtype=np.float32)
        def off(t):
            t.byte_offset = 3
        def huge(t):
            t.shape[0] = 1 << 61
        def null(t):
            t.data = None
        for fn in (off, huge, null):
            try:
                minijax.dlpack.from_dlpack(Edited(a, fn))
            except minijax.errors.JaxRuntimeError as e:
                print(fn.__name__, "refused:", e)
            else:
                raise AssertionError(fn.__name__)
    ''')
    assert r.stdout.count("refused") == 3


def test_a_capsule_outside_the_producers_own_buffer_is_refused():
    small, big = np.zeros(2, np.float32), np.arange(1 << 16, dtype=np.float32)

    class Liar:  # says it owns 8 bytes, exports a capsule of 256 KiB
        __array_interface__ = small.__array_interface__

        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, **kw):
            return big.__dlpack__()
    with pytest.raises(minijax.errors.JaxRuntimeError, match="outside the producer"):
        minijax.dlpack.from_dlpack(Liar())


def test_dlpack_is_called_once_and_the_array_says_what_it_holds():
    f32, i32 = np.arange(4, dtype=np.float32), np.arange(4, dtype=np.int32)

    class Fickle:  # first capsule f32, every later one i32
        calls = 0

        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, **kw):
            Fickle.calls += 1
            return (f32 if Fickle.calls == 1 else i32).__dlpack__()
    x = minijax.dlpack.from_dlpack(Fickle())
    assert Fickle.calls == 1
    assert x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), f32)


def test_narrowing_copy_reads_the_checked_capsule():
    p = Edited(np.arange(6.0).reshape(2, 3).T, lambda t: None)  # f64, transposed
    x = jnp.from_dlpack(p)
    assert p.calls == 1 and x.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(x), np.arange(6.0).reshape(2, 3).T)


def test_a_consumed_capsule_is_a_type_error():
    a = np.arange(3.0, dtype=np.float32)
    cap = a.__dlpack__()

    class Twice:
        def __dlpack_device__(self):
            return (1, 0)

        def __dlpack__(self, stream=None, **kw):
            return cap
    minijax.dlpack.from_dlpack(Twice())
    with pytest.raises(TypeError, match="unconsumed"):
        minijax.dlpack.from_dlpack(Twice())
