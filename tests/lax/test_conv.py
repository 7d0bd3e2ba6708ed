"""lax.conv_general_dilated and its helpers vs jax: values, gradients, vmap, lowering."""

import jax
import ml_dtypes
import numpy as np
import pytest

import minijax
from minijax import lax
from minijax.test_util import check_grads

RNG = np.random.default_rng(0)

NHWC = ("NHWC", "HWIO", "NHWC")

# (lhs shape, rhs shape, conv_general_dilated keywords): layouts, strides, padding strings and
# pairs (negative too), both dilations, feature and batch groups, 0 to 3 spatial dims.
CASES = {
    "nchw-valid": ((2, 3, 7, 6), (4, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    "nhwc-same-stride2": ((2, 7, 6, 4), (3, 3, 4, 5),
                          dict(window_strides=(2, 2), padding="SAME", dimension_numbers=NHWC)),
    "same_lower-rhs_dilation": ((2, 7, 6, 4), (3, 2, 4, 5),
                                dict(window_strides=(2, 1), padding="SAME_LOWER",
                                     rhs_dilation=(2, 1), dimension_numbers=NHWC)),
    "pairs-lhs_dilation": ((2, 3, 5, 6), (4, 3, 3, 2),
                           dict(window_strides=(1, 2), padding=((1, 2), (0, 1)),
                                lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    "feature_groups": ((2, 4, 7, 6), (6, 2, 3, 2),
                       dict(window_strides=(2, 1), padding="VALID", feature_group_count=2)),
    "depthwise": ((2, 6, 6, 4), (3, 3, 1, 8),
                  dict(window_strides=(1, 1), padding="SAME", feature_group_count=4,
                       dimension_numbers=NHWC)),
    "batch_groups-dilated": ((6, 5, 5, 3), (3, 3, 3, 4),
                             dict(window_strides=(2, 2), padding=((1, 1), (0, 2)),
                                  batch_group_count=2, lhs_dilation=(1, 2), rhs_dilation=(2, 1),
                                  dimension_numbers=NHWC)),
    "1d-negative_pad": ((2, 9, 3), (3, 3, 4), dict(window_strides=(3,), padding=((2, -1),),
                                                   dimension_numbers=("NWC", "WIO", "NWC"))),
    "3d": ((1, 5, 4, 3, 2), (2, 3, 2, 2, 4),
           dict(window_strides=(1, 2, 1), padding="SAME",
                dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    "odd_layout": ((7, 2, 3, 6), (2, 4, 3, 3),
                   dict(window_strides=(2, 1), padding="SAME",
                        dimension_numbers=("HNCW", "OHWI", "WCNH"))),
    "0d": ((3, 2), (4, 2), dict(window_strides=(), padding=())),
}


def _rand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def _close(got, want, rtol=2e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    wide = np.complex128 if np.iscomplexobj(want) else np.float64
    scale = max(np.abs(want.astype(wide)).max(initial=0.0), 1.0)
    np.testing.assert_allclose(got.astype(wide), want.astype(wide), rtol=0, atol=rtol * scale)


def _convs(kw):
    return (lambda x, w: lax.conv_general_dilated(x, w, **kw),
            lambda x, w: jax.lax.conv_general_dilated(x, w, **kw))


@pytest.mark.parametrize("name", list(CASES))
def test_values_grads_and_vmap_match_jax(name):
    ls, rs, kw = CASES[name]
    fm, fj = _convs(kw)
    x, w = _rand(ls), _rand(rs)
    want = fj(x, w)
    _close(minijax.jit(fm)(x, w), want)
    ct = _rand(want.shape)
    gm = minijax.jit(minijax.grad(lambda x, w: (fm(x, w) * ct).sum(), argnums=(0, 1)))(x, w)
    gj = jax.jit(jax.grad(lambda x, w: (fj(x, w) * ct).sum(), argnums=(0, 1)))(x, w)
    _close(gm[0], gj[0])
    _close(gm[1], gj[1])
    xb, wb = _rand((3,) + ls), _rand((3,) + rs)
    for axes in [(0, None), (None, 0), (0, 0)]:
        args = (xb if axes[0] is not None else x, wb if axes[1] is not None else w)
        _close(minijax.jit(minijax.vmap(fm, in_axes=axes))(*args),
               jax.jit(jax.vmap(fj, in_axes=axes))(*args))


def test_negative_low_padding_is_computed_right():
    # XLA:CPU gets convolutions with negative low and positive high padding wrong (so
    # does jax, which emits them as they are); minijax slices the input instead. The
    # reference: jax's explicit pad (with the lhs dilation as interior padding) + VALID.
    x, w = _rand((2, 9, 3)), _rand((3, 3, 4))
    dn = ("NWC", "WIO", "NWC")
    for pads, ld in [(((-1, 2),), 1), (((-3, 1),), 2), (((-2, 1),), 1)]:
        xp = jax.lax.pad(x, np.float32(0), [(0, 0, 0), (*pads[0], ld - 1), (0, 0, 0)])
        want = jax.lax.conv_general_dilated(xp, w, (3,), "VALID", dimension_numbers=dn)
        got = minijax.jit(lambda x, w: lax.conv_general_dilated(
            x, w, (3,), pads, lhs_dilation=(ld,), dimension_numbers=dn))(x, w)
        _close(got, want)


@pytest.mark.parametrize("name", ["feature_groups", "batch_groups-dilated"])
def test_vmap_of_grad_and_inner_axes(name):
    # vmap of the transposes (grouped convolutions batched) and batch axes in the middle
    ls, rs, kw = CASES[name]
    fm, fj = _convs(kw)
    xb, wb = _rand((2,) + ls), _rand((2,) + rs)
    loss_m = minijax.grad(lambda x, w: (fm(x, w) ** 2).sum(), argnums=(0, 1))
    loss_j = jax.grad(lambda x, w: (fj(x, w) ** 2).sum(), argnums=(0, 1))
    for got, want in zip(minijax.jit(minijax.vmap(loss_m))(xb, wb),
                         jax.jit(jax.vmap(loss_j))(xb, wb)):
        _close(got, want, 1e-4)
    x2, w2 = np.moveaxis(xb, 0, 2), np.moveaxis(wb, 0, 1)
    _close(minijax.jit(minijax.vmap(fm, in_axes=(2, 1)))(x2, w2),
           jax.jit(jax.vmap(fj, in_axes=(2, 1)))(x2, w2))


@pytest.mark.parametrize("name", ["batch_groups-dilated"])
def test_check_grads_float64(x64, name):
    ls, rs, kw = CASES[name]
    fm, fj = _convs(kw)
    x, w = _rand(ls, np.float64), _rand(rs, np.float64)
    out = minijax.jit(fm)(x, w)
    assert out.dtype == np.float64
    _close(out, fj(x, w), 1e-12)
    check_grads(fm, (x, w), order=2, modes=("fwd", "rev"))


def test_complex_values_and_grads():
    ls, rs, kw = CASES["feature_groups"]
    fm, fj = _convs(kw)
    x = (_rand(ls) + 1j * _rand(ls)).astype(np.complex64)
    w = (_rand(rs) + 1j * _rand(rs)).astype(np.complex64)
    _close(minijax.jit(fm)(x, w), fj(x, w), 1e-5)
    ct = (_rand((2, 6, 3, 5)) + 1j * _rand((2, 6, 3, 5))).astype(np.complex64)
    gm = minijax.vjp(fm, x, w)[1](ct)
    gj = jax.vjp(fj, x, w)[1](ct)
    _close(gm[0], gj[0], 1e-5)
    _close(gm[1], gj[1], 1e-5)
    # as jax on CPU: three real convolutions (Gauss's trick)
    text = minijax.jit(fm).lower(x, w).as_text()
    assert text.count("stablehlo.convolution") == 3 and "stablehlo.complex" in text


@pytest.mark.parametrize("dtype,preferred", [
    (np.int8, np.int32), (np.int32, None), (np.float16, np.float32),
    (ml_dtypes.bfloat16, np.float32), (np.bool_, None),
])
def test_dtypes_and_preferred_element_type(dtype, preferred):
    x = RNG.integers(-3, 4, (1, 2, 5, 5)).astype(dtype)
    w = RNG.integers(-3, 4, (3, 2, 3, 3)).astype(dtype)
    got = lax.conv_general_dilated(x, w, (1, 1), "SAME", preferred_element_type=preferred)
    want = jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", preferred_element_type=preferred)
    _close(got, want)


def test_preferred_element_type_gradient_and_lowering():
    x, w = _rand((1, 2, 5, 5), np.float16), _rand((3, 2, 3, 3), np.float16)
    kw = dict(window_strides=(1, 1), padding="SAME", preferred_element_type=np.float32)
    fm, fj = _convs(kw)
    text = minijax.jit(fm).lower(x, w).as_text()
    assert "(tensor<1x2x5x5xf16>, tensor<3x2x3x3xf16>) -> tensor<1x3x5x5xf32>" in text
    gm = minijax.grad(lambda x, w: fm(x, w).sum(), argnums=(0, 1))(x, w)
    gj = jax.grad(lambda x, w: fj(x, w).sum(), argnums=(0, 1))(x, w)
    for a, b in zip(gm, gj):
        _close(a, b, 1e-3)


@pytest.mark.parametrize("precision,text", [
    (lax.Precision.HIGHEST, "precision HIGHEST>, #stablehlo<precision HIGHEST"),
    ("high", "precision HIGH>, #stablehlo<precision HIGH>"),
    ((lax.Precision.DEFAULT, lax.Precision.HIGHEST),
     "precision DEFAULT>, #stablehlo<precision HIGHEST"),
    (None, "precision DEFAULT>, #stablehlo<precision DEFAULT"),
])
def test_precision(precision, text):
    x, w = _rand((1, 2, 5, 5)), _rand((3, 2, 3, 3))
    f = minijax.jit(lambda x, w: lax.conv(x, w, (1, 1), "VALID", precision=precision))
    assert text in f.lower(x, w).as_text()
    as_jax = {p: getattr(jax.lax.Precision, p.name) for p in lax.Precision}
    jax_precision = (tuple(as_jax[p] for p in precision) if isinstance(precision, tuple)
                     else as_jax.get(precision, precision))
    _close(f(x, w), jax.lax.conv(x, w, (1, 1), "VALID", precision=jax_precision))
    assert lax.Precision("highest") is lax.Precision.HIGHEST


def test_hlo_matches_jax():
    # forward and both transposes: the same convolutions (layouts, windows) as jax emits
    x, w = _rand((2, 8, 8, 4)), _rand((3, 3, 4, 4))

    def convs(mod, f, *args):
        text = mod.jit(f).lower(*args).as_text()
        # each convolution's attributes and types, without the SSA names of its operands
        return sorted(line.split("stablehlo.convolution(", 1)[1].split(") ", 1)[1]
                      for line in text.splitlines() if "stablehlo.convolution" in line)

    def loss(L):
        return lambda x, w: L.conv_general_dilated(x, w, (2, 1), "SAME",
                                                   dimension_numbers=NHWC).sum()

    got = convs(minijax, minijax.value_and_grad(loss(lax), argnums=(0, 1)), x, w)
    want = convs(jax, jax.value_and_grad(loss(jax.lax), argnums=(0, 1)), x, w)
    assert len(got) == 3 and got == want


def test_helpers_match_jax():
    lshape, rshape = (2, 9, 8, 4), (3, 2, 4, 6)
    for dn in [NHWC, ("NCHW", "OIHW", "NCHW"), ("HNCW", "OHWI", "WCNH")]:
        assert lax.conv_general_permutations(dn) == jax.lax.conv_general_permutations(dn)
        assert (tuple(lax.conv_dimension_numbers(lshape, rshape, dn))
                == tuple(jax.lax.conv_dimension_numbers(lshape, rshape, dn)))
    dnums = lax.ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    assert lax.conv_dimension_numbers(lshape, rshape, dnums) == dnums
    assert lax.conv_dimension_numbers(lshape, rshape, None) == ((0, 1, 2, 3),) * 3
    for pad in ["SAME", "VALID", [(1, 0), (2, 2)]]:
        args = (lshape, rshape, (2, 3), pad, NHWC)
        assert lax.conv_general_shape_tuple(*args) == jax.lax.conv_general_shape_tuple(*args)
        assert (lax.conv_transpose_shape_tuple(*args)
                == tuple(jax.lax.conv_transpose_shape_tuple(*args)))
    for pad in ["SAME", "SAME_LOWER", "VALID"]:
        args = ((7, 6), (3, 4), (2, 3), pad)
        assert lax.padtype_to_pads(*args) == list(jax.lax.padtype_to_pads(*args))
    assert (lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), "SAME")
            == jax.lax.conv_shape_tuple((2, 3, 9, 8), (4, 3, 3, 2), (2, 1), "SAME"))


@pytest.mark.parametrize("padding,kw", [
    ("SAME", {}), ("VALID", dict(transpose_kernel=True)), ([(1, 2), (0, 1)], {}),
    ([(1, 1), (0, 2)], dict(use_consistent_padding=True, rhs_dilation=(2, 1))),
])
def test_conv_transpose(padding, kw):
    x, w = _rand((2, 5, 6, 3)), _rand((3, 2, 3, 3))
    got = minijax.jit(lambda x, w: lax.conv_transpose(x, w, (2, 1), padding, **kw))(x, w)
    _close(got, jax.lax.conv_transpose(x, w, (2, 1), padding, **kw))


def test_conv_and_conv_with_general_padding():
    x, w = _rand((2, 3, 7, 6)), _rand((4, 3, 3, 2))
    _close(lax.conv(x, w, (2, 1), "SAME"), jax.lax.conv(x, w, (2, 1), "SAME"))
    args = ((1, 2), [(1, 0), (2, 1)], (2, 1), (1, 2))
    _close(lax.conv_with_general_padding(x, w, *args),
           jax.lax.conv_with_general_padding(x, w, *args))


def test_jaxpr_params():
    x, w = _rand((2, 8, 8, 4)), _rand((3, 3, 4, 4))
    text = str(minijax.make_jaxpr(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=NHWC))(x, w))
    assert ("dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, "
            "1), out_spec=(0, 3, 1, 2))") in text
    assert "padding=((1, 1), (1, 1))" in text


@pytest.mark.parametrize("call,exc,match", [
    (lambda x, w: lax.conv_general_dilated(x, w.astype(np.float16), (1, 1), "VALID"),
     TypeError, "same dtypes"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1,), "VALID"), ValueError, "window_strides"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), [(1, 1)]), TypeError,
     "Wrong number of explicit pads"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "FOO"), RuntimeError,
     "Unrecognized padding"),
    (lambda x, w: lax.conv_general_dilated(x, w, (0, 1), "VALID"), ValueError, "positive"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME", lhs_dilation=(2, 1)),
     ValueError, "String padding"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", feature_group_count=3),
     ValueError, "feature_group_count"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", rhs_dilation=(0, 1)),
     TypeError, "dilations must be positive"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), [(-6, 0), (0, 0)]), ValueError,
     "Negative padding"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID",
                                           dimension_numbers=("NCHW", "OIHW", "NCHX")),
     TypeError, "spatial characters"),
    (lambda x, w: lax.conv_general_dilated(x, w[None], (1, 1), "VALID"), TypeError, "ndim"),
    (lambda x, w: lax.conv_general_dilated(x, w, (1.5, 1), "VALID"), TypeError, "integers"),
])
def test_errors(call, exc, match):
    x, w = _rand((1, 2, 5, 5)), _rand((3, 2, 3, 3))
    with pytest.raises(exc, match=match):
        call(x, w)
