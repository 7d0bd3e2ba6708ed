"""minijax.numpy.fft and lax.fft against jax.numpy.fft / jax.lax.fft (and NumPy).

Values, shapes and dtypes of every function over several shapes, axes, norms and
n/s paddings and truncations; dtype promotion (x64 too); errors (same exception
types as jax); jit; gradients of real-valued losses against jax.grad and by finite
differences (check_grads); the transposes of the four FFT types against jax.vjp;
vmap over leading and trailing axes.
"""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)


def _real(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _complex(*shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _close(got, want, rtol=2e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=rtol * scale * 8)


def _both(fn):
    """fn applied to minijax's and jax's numpy modules: (minijax result, jax result)."""
    return fn(jnp), fn(jjnp)


def test_every_name_of_jax_numpy_fft():
    names = {n for n in dir(jjnp.fft) if not n.startswith("_")}
    assert len(names) == 18
    assert names <= set(dir(jnp.fft))
    assert jnp.fft is minijax.numpy.fft
    assert [t.name for t in lax.FftType] == [t.name for t in jax.lax.FftType]
    assert [int(t) for t in lax.FftType] == [int(t) for t in jax.lax.FftType]


# ---- values ---------------------------------------------------------------------------

C3 = _complex(4, 6, 5)
R3 = _real(4, 6, 5)

ONE_D = [
    {}, {"n": 4}, {"n": 9, "axis": 0}, {"axis": 1, "norm": "ortho"}, {"norm": "forward"},
    {"norm": "backward", "n": 7, "axis": -2}, {"axis": None},
]


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
@pytest.mark.parametrize("kw", ONE_D, ids=str)
def test_one_dimensional(name, kw):
    x = R3 if name in ("rfft", "ihfft") else C3
    if name in ("hfft", "ihfft") and "axis" in kw and kw["axis"] is None:
        for m in (jjnp, jnp):  # they need one axis
            with pytest.raises(TypeError):
                getattr(m.fft, name)(x, **kw)
        return
    got, want = _both(lambda m: getattr(m.fft, name)(x, **kw))
    _close(got, want)
    if kw.get("axis", -1) is not None:
        _close(got, getattr(np.fft, name)(x, **kw).astype(np.asarray(want).dtype))


N_D = [
    {}, {"s": (3, 8)}, {"axes": (0, 2)}, {"axes": (2, 0), "s": (4, 7), "norm": "ortho"},
    {"axes": (-1, -3), "norm": "forward"}, {"s": (2, 9), "axes": (1, 0)},
]


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
                                  "rfftn", "irfftn"])
@pytest.mark.parametrize("kw", N_D, ids=str)
def test_two_and_n_dimensional(name, kw):
    x = R3 if name.startswith("rfft") else C3
    got, want = _both(lambda m: getattr(m.fft, name)(x, **kw))
    _close(got, want)
    if "s" not in kw or "axes" in kw or name.endswith("2"):  # (NumPy 2 deprecates s alone)
        _close(got, getattr(np.fft, name)(x, **kw).astype(np.asarray(want).dtype))


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
@pytest.mark.parametrize("kw", [{}, {"axes": (0, 1, 2, 3, 5)}, {"s": (3, 2, 4, 3, 2, 5)}],
                         ids=str)
def test_more_than_three_axes(name, kw):
    # XLA transforms at most three axes at once: these run in blocks.
    x = _real(2, 3, 2, 3, 4, 2)
    got, want = _both(lambda m: getattr(m.fft, name)(x, **kw))
    _close(got, want)


def test_zero_sized_and_scalar_inputs():
    for fn in (lambda m: m.fft.fft(m.zeros(0)), lambda m: m.fft.irfft(m.ones(1)),
               lambda m: m.fft.fftn(m.zeros((2, 0, 3))), lambda m: m.fft.rfft(m.zeros((0, 3))),
               lambda m: m.fft.irfft(m.zeros((3, 0))), lambda m: m.fft.fftn(3.0),
               lambda m: m.fft.fftn(m.ones((4, 4)), axes=())):
        _close(*_both(fn))


# ---- dtypes ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float16, jjnp.bfloat16,
                                   np.float32, np.float64, np.complex128])
def test_dtype_promotion(dtype):
    x = np.arange(6).astype(dtype)
    for name in ("fft", "ifft", "irfft", "fftn"):
        got, want = _both(lambda m: getattr(m.fft, name)(m.asarray(x)))
        _close(got, want, rtol=1e-3)
    if np.dtype(dtype).kind in "biu" or dtype in (np.float32, np.float64):
        _close(*_both(lambda m: m.fft.rfft(m.asarray(x))))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64, np.complex64])
def test_dtypes_x64(dtype):
    x = np.arange(8).astype(dtype)
    for name in ("fft", "ifft2", "irfft", "hfft"):
        got, want = _both(lambda m: getattr(m.fft, name)(m.asarray(x).reshape(2, 4)))
        wide = np.asarray(want).dtype in (np.float64, np.complex128)
        _close(got, want, rtol=1e-12 if wide else 2e-6)
    if dtype != np.complex64:
        got, want = _both(lambda m: m.fft.rfft2(m.asarray(x).reshape(2, 4), norm="ortho"))
        _close(got, want)
    assert jnp.fft.fft(np.ones(4, np.float64)).dtype == np.complex128
    assert jnp.fft.fftfreq(5).dtype == np.float64


def test_float64_without_x64_is_complex64():
    assert jnp.fft.fft(np.ones(4, np.float64)).dtype == np.complex64
    assert jnp.fft.irfft(np.ones(4, np.complex128)).dtype == np.float32


# ---- errors ----------------------------------------------------------------------------

ERRORS = {
    "rfft_complex": lambda m: m.fft.rfft(m.ones(4, m.complex64)),
    "ihfft_complex": lambda m: m.fft.ihfft(m.ones(4, m.complex64)),
    "rfft_float16": lambda m: m.fft.rfft(m.ones(4, m.float16)),
    "list": lambda m: m.fft.fft([1.0, 2.0]),
    "fftshift_list": lambda m: m.fft.fftshift([1.0, 2.0]),
    "scalar_axis": lambda m: m.fft.fft(3.0),
    "bad_norm": lambda m: m.fft.fft(m.ones(4), norm="bad"),
    "n_zero": lambda m: m.fft.fft(m.ones(4), n=0),
    "n_negative": lambda m: m.fft.ifft(m.ones(4), n=-2),
    "n_float": lambda m: m.fft.fft(m.ones(4), n=2.0),
    "axis_tuple": lambda m: m.fft.fft(m.ones(4), axis=(0,)),
    "axis_out_of_range": lambda m: m.fft.rfft(m.ones(4), axis=1),
    "repeated_axes": lambda m: m.fft.fftn(m.ones((4, 4)), axes=(1, 1)),
    "s_axes_lengths": lambda m: m.fft.fftn(m.ones((4, 4)), s=(2,), axes=(0, 1)),
    "s_too_long": lambda m: m.fft.fftn(m.ones((2, 3)), s=(2, 3, 4)),
    "fft2_one_axis": lambda m: m.fft.fft2(m.ones((4, 4)), axes=(0,)),
    "fftfreq_list": lambda m: m.fft.fftfreq([4]),
    "fftfreq_d_list": lambda m: m.fft.rfftfreq(4, [1.0]),
    "fftshift_axis": lambda m: m.fft.fftshift(m.arange(5), axes=1),
    "lax_unknown_type": lambda m: m.lax.fft(m.numpy.ones(4), "foo", (4,)),
    "lax_int_type": lambda m: m.lax.fft(m.numpy.ones(4), 0, (4,)),
    "lax_bad_lengths": lambda m: m.lax.fft(m.numpy.ones(4), "fft", (5,)),
    "lax_too_many_lengths": lambda m: m.lax.fft(m.numpy.ones(4), "fft", (1, 4)),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_jax(name):
    fn = ERRORS[name]
    lax_level = name.startswith("lax")
    with pytest.raises(Exception) as want:
        fn(jax if lax_level else jjnp)
    with pytest.raises(want.type):
        fn(minijax if lax_level else jnp)


def test_rfft_of_empty_axis_is_a_clear_error():
    # jax fails while lowering (StableHLO infers 0 entries, the shape rule says 1).
    with pytest.raises(ValueError, match="empty"):
        jnp.fft.rfft(jnp.zeros(0))


# ---- frequencies and shifts --------------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"d": 0.3}, {"dtype": np.int32}, {"dtype": np.complex64},
                                {"dtype": np.float16, "d": 0.1}], ids=str)
@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_fftfreq_rfftfreq(n, kw):
    for name in ("fftfreq", "rfftfreq"):
        _close(*_both(lambda m: getattr(m.fft, name)(n, **kw)))


def test_fftfreq_traced_spacing_and_device():
    f = minijax.jit(lambda d: jnp.fft.fftfreq(6, d) + jnp.fft.rfftfreq(11, d)[:6])
    want = jax.jit(lambda d: jjnp.fft.fftfreq(6, d) + jjnp.fft.rfftfreq(11, d)[:6])
    _close(f(np.float32(0.25)), want(np.float32(0.25)))
    dev = minijax.devices()[0]
    assert jnp.fft.fftfreq(4, device=dev).devices() == {dev}


@pytest.mark.parametrize("axes", [None, 0, 1, -1, (0, 1), (1,)])
def test_fftshift_ifftshift(axes):
    x = np.arange(30).reshape(5, 6)
    for name in ("fftshift", "ifftshift"):
        got, want = _both(lambda m: getattr(m.fft, name)(m.asarray(x), axes=axes))
        _close(got, want)
        _close(got, getattr(np.fft, name)(x, axes=axes).astype(np.int32))
    _close(jnp.fft.ifftshift(jnp.fft.fftshift(x)), x.astype(np.int32))


# ---- jit --------------------------------------------------------------------------------

def test_under_jit():
    def f(m, z, x):
        return (m.fft.fftn(z, s=(3, 8), axes=(2, 0), norm="ortho").sum(0),
                m.fft.irfft2(m.fft.rfft2(x, s=(5, 6)) * 2, axes=(0, 2)))

    got = minijax.jit(lambda z, x: f(jnp, z, x))(C3, R3)
    want = jax.jit(lambda z, x: f(jjnp, z, x))(C3, R3)
    for g, w in zip(got, want):
        _close(g, w)
    x = _real(8)
    assert "fft_type=2" in str(minijax.make_jaxpr(jnp.fft.rfft)(x))
    text = minijax.jit(jnp.fft.irfft).lower(_complex(5)).as_text()
    assert "stablehlo.fft" in text and "IRFFT" in text


def test_eager_and_jit_agree():
    x = _real(16)
    _close(jnp.fft.fft(x), minijax.jit(jnp.fft.fft)(x))
    _close(jnp.fft.fftshift(jnp.asarray(x)), minijax.jit(jnp.fft.fftshift)(x))


# ---- autodiff ----------------------------------------------------------------------------

LOSSES = {
    "abs2_fft": lambda m, L: lambda x: (m.abs(m.fft.fft(x)) ** 2).sum(),
    "abs_fft_pad": lambda m, L: lambda x: m.abs(m.fft.fft(x, n=11, axis=0)).sum(),
    "real_imag_ifft2": lambda m, L: lambda x: (L.real(m.fft.ifft2(x, norm="ortho")) ** 2
                                               + 3 * L.imag(m.fft.ifft2(x))).sum(),
    "irfft": lambda m, L: lambda x: (m.fft.irfft(x, n=10) ** 2 * m.arange(10.0)).sum(),
    "rfft2": lambda m, L: lambda x: (L.real(m.fft.rfft2(x, norm="forward")) ** 3).sum(),
    "rfft_odd": lambda m, L: lambda x: m.abs(m.fft.rfft(x, n=7)).sum(),
    "rfftn_irfftn": lambda m, L: lambda x: (m.fft.irfftn(m.fft.rfftn(x) ** 2, s=x.shape)
                                            ).sum(),
    "hfft_ihfft": lambda m, L: lambda x: (m.fft.hfft(x) ** 2).sum() + m.abs(m.fft.ihfft(x)
                                                                           ).sum(),
    "fftn_4_axes": lambda m, L: lambda x: m.abs(m.fft.fftn(x.reshape(2, 2, 2, 3))).sum(),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_grad_matches_jax(name):
    x = _real(4, 6)
    loss = LOSSES[name]
    got = minijax.grad(loss(jnp, lax))(x)
    want = jax.grad(loss(jjnp, jax.lax))(x)
    _close(got, want, rtol=1e-5)


def test_jit_of_grad():
    loss = LOSSES["rfft2"]
    x = _real(4, 6)
    _close(minijax.jit(minijax.grad(loss(jnp, lax)))(x),
           jax.jit(jax.grad(loss(jjnp, jax.lax)))(x), rtol=1e-5)


REAL_FUNCS = {
    "fft": lambda x: lax.real(jnp.fft.fft(x)) + 2 * lax.imag(jnp.fft.fft(x, n=5)[:, :4]),
    "ifftn": lambda x: lax.imag(jnp.fft.ifftn(x, axes=(0, 1), norm="ortho")),
    "rfft": lambda x: lax.imag(jnp.fft.rfft(x, axis=0)),
    "irfft": lambda x: jnp.fft.irfft(x, n=7),
    "irfft2_even": lambda x: jnp.fft.irfft2(x),
    "hfft": lambda x: jnp.fft.hfft(x, norm="forward"),
}


@pytest.mark.parametrize("name", list(REAL_FUNCS))
def test_check_grads(name):
    x = _real(3, 4)
    check_grads(REAL_FUNCS[name], (x,), order=2, atol=5e-2)


@pytest.mark.parametrize("fft_type,lengths,shape", [
    ("fft", (3, 8), (2, 3, 8)), ("ifft", (8,), (2, 8)), ("rfft", (3, 8), (2, 3, 8)),
    ("rfft", (7,), (2, 7)), ("irfft", (3, 8), (2, 3, 5)), ("irfft", (7,), (2, 4)),
])
def test_lax_fft_jvp_and_transpose_match_jax(fft_type, lengths, shape):
    x = _real(*shape) if fft_type == "rfft" else _complex(*shape)
    out = jax.lax.fft(x, fft_type, lengths)
    ct = _real(*out.shape) if fft_type == "irfft" else _complex(*out.shape)
    got_out, got_vjp = minijax.vjp(lambda x: lax.fft(x, fft_type, lengths), x)
    _, want_vjp = jax.vjp(lambda x: jax.lax.fft(x, fft_type, lengths), x)
    _close(got_out, out)
    _close(got_vjp(ct)[0], want_vjp(ct)[0], rtol=1e-5)
    _, t = minijax.jvp(lambda x: lax.fft(x, fft_type, lengths), (x,), (x,))
    _close(t, out)


def test_lax_fft_type_spellings():
    x = _complex(8)
    for typ in (lax.FftType.FFT, "fft", "FFT"):
        _close(lax.fft(x, typ, (8,)), jax.lax.fft(x, "fft", (8,)))
    _close(lax.fft(x, "ifft", ()), x)  # no dimension transformed


# ---- vmap -------------------------------------------------------------------------------

VMAPPED = {
    "fft": lambda m: m.fft.fft,
    "rfft2": lambda m: lambda x: m.fft.rfft2(x, s=(3, 4)),
    "irfft": lambda m: lambda x: m.fft.irfft(x, n=6, axis=0),
    "fftn_axis0": lambda m: lambda x: m.fft.fftn(x, axes=(0,)),
    "ifft2_norm": lambda m: lambda x: m.fft.ifft2(x, norm="ortho"),
}


@pytest.mark.parametrize("in_axes", [0, 2, -1])
@pytest.mark.parametrize("name", list(VMAPPED))
def test_vmap(name, in_axes):
    x = _real(3, 4, 5)
    got = minijax.vmap(VMAPPED[name](jnp), in_axes=in_axes)(x)
    want = jax.vmap(VMAPPED[name](jjnp), in_axes=in_axes)(x)
    _close(got, want)


def test_vmap_of_grad_and_lax_batch_dims():
    x = _real(3, 8)
    loss = LOSSES["abs2_fft"]
    _close(minijax.vmap(minijax.grad(loss(jnp, lax)))(x),
           jax.vmap(jax.grad(loss(jjnp, jax.lax)))(x), rtol=1e-5)
    # The batch dimension before the transformed ones stays; one among them moves.
    c = _complex(4, 3, 8)
    for ax in (0, 1, 2):
        n = c.shape[1 if ax == 2 else 2]
        got = minijax.vmap(lambda z: lax.fft(z, "fft", (n,)), in_axes=ax)(c)
        want = jax.vmap(lambda z: jax.lax.fft(z, "fft", (n,)), in_axes=ax)(c)
        _close(got, want)
