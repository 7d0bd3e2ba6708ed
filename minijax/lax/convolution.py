"""Convolutions: ``conv_general_dilated`` and the helpers around it.

``conv_general_dilated_p`` lowers to one ``stablehlo.convolution``. Its params
mirror jax's: ``window_strides``, ``padding`` (explicit ``(low, high)`` pairs),
``lhs_dilation``, ``rhs_dilation``, ``dimension_numbers`` (a
``ConvDimensionNumbers`` of int tuples), ``feature_group_count``,
``batch_group_count``, ``precision`` (None or a pair of StableHLO precision
names, as ``dot_general``'s) and ``preferred_element_type``.

Complex convolutions are lowered as three real ones (Gauss's trick), as jax does
on CPU, where XLA's complex convolution is a slow loop.

The transposes follow the matmul analogy (ignoring spatial dims, with m = batch,
j = input feature, k = output feature, g = groups)::

    forward        [m, gj] x [j, gk] -> [m, gk]    (feature groups)
    lhs transpose  [m, gk] x [k, gj] -> [m, gj]    a convolution with feature groups
    rhs transpose  [gj, m] x [m, gk] -> [j, gk]    a convolution with batch groups

and with batch groups ``[gm, j] x [j, gk] -> [m, gk]`` the lhs transpose is a
feature-grouped convolution and the rhs transpose a feature-grouped one too.
Spatially, each transpose is the convolution that reads the cotangent with the
forward strides turned into lhs dilation (and, for the kernel, the forward
kernel dilation turned into strides), with the kernel reversed for the lhs.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import Primitive, get_aval
from minijax.lax._util import type_error
from minijax.lax.convert import convert_element_type
from minijax.lax.dot import _canonical_precision, precision_config
from minijax.lax.shape import broadcast_in_dim, reshape, rev, transpose
from minijax.lowering.types import bool_array, dense_i64, i64_array
from minijax.transforms.ad import Zero, defjvp, is_undefined
from minijax.core.aval import no_sharding_constraint

_NAME = "conv_general_dilated"


# ---- dimension numbers ----------------------------------------------------------------------

class ConvDimensionNumbers(NamedTuple):
    """The batch, feature and spatial dimensions of a convolution's operands and result.

    Attributes
    ----------
    lhs_spec : ``(batch dim, feature dim, spatial dims...)`` of the input
    rhs_spec : ``(output feature dim, input feature dim, spatial dims...)`` of the kernel
    out_spec : ``(batch dim, feature dim, spatial dims...)`` of the result
    """

    lhs_spec: Sequence[int]
    rhs_spec: Sequence[int]
    out_spec: Sequence[int]


ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None


def conv_general_permutations(dimension_numbers) -> tuple[tuple[int, ...], ...]:
    """The ``(lhs, rhs, out)`` dimension permutations for string dimension numbers.

    ``('NHWC', 'HWIO', 'NHWC')`` gives ``((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))``:
    batch (``N``/``O``) first, then feature (``C``/``I``), then the spatial dims in
    the order they appear in the kernel spec.
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    charpairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(charpairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters "
                            f"'{a}' and '{b}' exactly once, got {spec}.")
        if len(spec) != len(set(spec)):
            raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate "
                            f"characters, got {spec}.")
    if not (set(lhs_spec) - {"N", "C"} == set(rhs_spec) - {"O", "I"}
            == set(out_spec) - {"N", "C"}):
        raise TypeError(f"convolution dimension_numbers elements must each have the same set "
                        f"of spatial characters, got {dimension_numbers}.")

    def perm(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        spatial = [i for i, c in enumerate(spec) if c not in pair]
        spatial.sort(key=lambda i: rhs_spec.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, charpairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
    """``dimension_numbers`` (None, three layout strings, or a ``ConvDimensionNumbers``)
    as a ``ConvDimensionNumbers`` of int tuples.

    None means ``('NCHW', 'OIHW', 'NCHW')`` (for two spatial dims): batch and
    feature first, in every operand.

    >>> conv_dimension_numbers((1, 5, 5, 2), (3, 3, 2, 4), ('NHWC', 'HWIO', 'NHWC'))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(d) for d in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got "
                        f"{len(lhs_shape)} and {len(rhs_shape)}.")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise TypeError(f"convolution dimension_numbers must be tuple/list or None, got "
                        f"{type(dimension_numbers)}.")
    if len(dimension_numbers) != 3:
        raise TypeError(f"convolution dimension_numbers list/tuple must be length 3, got "
                        f"{len(dimension_numbers)}.")
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise TypeError(f"convolution dimension_numbers elements must be strings, got "
                        f"{tuple(map(type, dimension_numbers))}.")
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the "
                            f"ndim of lhs and rhs, got {len(s)} for lhs and rhs shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)}.")
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


# ---- shapes and padding ---------------------------------------------------------------------

def _dilate_dim(d: int, dilation: int) -> int:
    """The size of ``d`` elements with ``dilation - 1`` holes between neighbours."""
    return 0 if d == 0 else 1 + dilation * (d - 1)


def _dilate_shape(shape, dilation) -> tuple[int, ...]:
    """``shape`` dilated; ``dilation`` applies to its trailing dims."""
    dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
    return tuple(_dilate_dim(int(d), int(r)) for d, r in zip(shape, dilation))


def _stride_dim(d: int, window: int, stride: int) -> int:
    """How many windows of size ``window`` fit in ``d`` at ``stride`` apart."""
    return max((d - window) // stride + 1, 0)


def padtype_to_pads(in_shape, window_shape, window_strides, padding) -> list[tuple[int, int]]:
    """A padding string as ``(low, high)`` pairs, one per dimension.

    ``'VALID'`` pads nothing. ``'SAME'`` pads so that the output has
    ``ceil(in / stride)`` elements, the odd element of padding at the end;
    ``'SAME_LOWER'`` puts it at the start.

    >>> padtype_to_pads((5, 6), (3, 2), (1, 2), 'SAME')
    [(1, 1), (0, 0)]
    """
    if not isinstance(padding, str):
        raise TypeError(f"Unknown padding type: {padding}.")
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise RuntimeError(f"Unrecognized padding type: expected 'VALID', 'SAME', or "
                           f"'SAME_LOWER', got {padding}.")
    pads = []
    for d, w, s in zip(in_shape, window_shape, window_strides):
        d, w, s = int(d), int(w), int(s)
        total = max((-(-d // s) - 1) * s + w - d, 0)
        lo = total // 2 if kind == "SAME" else total - total // 2
        pads.append((lo, total - lo))
    return pads


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count: int = 1):
    """The result shape of a convolution whose operands are in canonical order
    (batch/output feature, feature/input feature, spatial...)."""
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [int(d) + int(lo) + int(hi) for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={tuple(tuple(p) for p in pads)} for "
                         f"lhs_shape[2:]={tuple(int(d) for d in lhs_shape[2:])}")
    space = tuple(_stride_dim(p, int(k), int(s)) for p, k, s in zip(padded, rhs_shape[2:],
                                                                      strides))
    batch = int(lhs_shape[0]) // batch_group_count
    return (batch, int(rhs_shape[0])) + space


def _unpermute(shape_in_canonical_order, perm) -> tuple[int, ...]:
    """Put the dims of a canonical-order shape back where ``perm`` says they live."""
    return tuple(int(d) for d in np.take(shape_in_canonical_order, np.argsort(perm)))


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                             dimension_numbers) -> tuple[int, ...]:
    """The result shape of ``conv_general_dilated`` (no dilation) with string
    ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                           window_strides, padding)
    return _unpermute(out, out_perm)


def _conv_transpose_padding(k: int, s: int, padding) -> tuple[int, int]:
    """The (low, high) padding of one dim of ``conv_transpose`` for a kernel of size ``k``
    and stride ``s``, given the padding of the forward convolution it undoes."""
    if padding == "SAME":
        pad_len = k + s - 2
        pad_a = k - 1 if s > k - 1 else -(-pad_len // 2)
    elif padding == "VALID":
        pad_len = k + s - 2 + max(k - s, 0)
        pad_a = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        pad_a, pad_len = pads[0], sum(pads)
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return pad_a, pad_len - pad_a


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers) -> tuple[int, ...]:
    """The result shape of ``conv_transpose`` with string ``dimension_numbers``."""
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [_conv_transpose_padding(int(k), int(s), padding)
                   for k, s in zip(rhs_t[2:], window_strides)]
    space = [(int(i) - 1) * int(s) - int(k) + 2 + int(sum(p))
             for i, k, s, p in zip(lhs_t[2:], rhs_t[2:], window_strides, padding)]
    return _unpermute((int(lhs_t[0]), int(rhs_t[0]), *space), out_perm)


# ---- the primitive --------------------------------------------------------------------------

conv_general_dilated_p = Primitive(_NAME)
conv_general_dilated_p.pp_params = lambda params: dict(sorted(params.items()))  # as jax


def _check_window_params(nspatial: int, window_strides, padding, lhs_dilation,
                         rhs_dilation) -> None:
    if len(window_strides) != nspatial:
        raise ValueError(f"{_NAME} window and window_strides must have the same number of "
                         f"dimensions, but got {nspatial} and {len(window_strides)}")
    if len(padding) != nspatial:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected {nspatial}, "
                        f"got {len(padding)}.")
    for what, dil in (("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(dil) != nspatial:
            raise TypeError(f"{_NAME} {what} must have one entry per spatial dimension "
                            f"({nspatial}), got {dil}")
        if any(d < 1 for d in dil):
            raise TypeError(f"All dilations must be positive, got {dil}.")
    if any(s < 1 for s in window_strides):
        raise ValueError(f"{_NAME} window_strides must be positive, got {window_strides}")


def _check_groups(lhs, rhs, dn: ConvDimensionNumbers, feature_group_count: int,
                  batch_group_count: int) -> None:
    lhs_features = lhs.shape[dn.lhs_spec[1]]
    rhs_in, rhs_out = rhs.shape[dn.rhs_spec[1]], rhs.shape[dn.rhs_spec[0]]
    if feature_group_count < 1:
        raise ValueError(f"{_NAME} feature_group_count must be a positive integer, got "
                         f"{feature_group_count}.")
    if lhs_features % feature_group_count:
        raise ValueError(f"{_NAME} feature_group_count must divide lhs feature dimension "
                         f"size, but {feature_group_count} does not divide {lhs_features}.")
    if lhs_features // feature_group_count != rhs_in:
        raise ValueError(f"{_NAME} lhs feature dimension size divided by "
                         f"feature_group_count must equal the rhs input feature dimension "
                         f"size, but {lhs_features} // {feature_group_count} != {rhs_in}.")
    if rhs_out % feature_group_count:
        raise ValueError(f"{_NAME} rhs output feature dimension size must be a multiple of "
                         f"feature_group_count, but {rhs_out} is not a multiple of "
                         f"{feature_group_count}.")
    if batch_group_count < 1:
        raise ValueError(f"{_NAME} batch_group_count must be a positive integer, got "
                         f"{batch_group_count}.")
    lhs_batch = lhs.shape[dn.lhs_spec[0]]
    if lhs_batch % batch_group_count:
        raise ValueError(f"{_NAME} batch_group_count must divide lhs batch dimension size, "
                         f"but {batch_group_count} does not divide {lhs_batch}.")
    if rhs_out % batch_group_count:
        raise ValueError(f"{_NAME} rhs output feature dimension size must be a multiple of "
                         f"batch_group_count, but {rhs_out} is not a multiple of "
                         f"{batch_group_count}.")
    if batch_group_count > 1 and feature_group_count > 1:
        raise ValueError(f"At most one of batch_group_count and feature_group_count may be "
                         f"> 1, got batch_group_count={batch_group_count} and "
                         f"feature_group_count={feature_group_count}")


def _check_preferred(input_dtype: np.dtype, preferred: np.dtype, lhs, rhs) -> None:
    """jax's rule: same kind (int -> float allowed), same signedness, not narrower."""
    if not (dtypes.is_int(input_dtype) and dtypes.is_float(preferred)):
        for test in (dtypes.is_int, dtypes.is_float, dtypes.is_complex):
            if test(input_dtype) and not test(preferred):
                raise type_error(_NAME, f"preferred_element_type {preferred.name} is "
                                 f"incompatible with the operand type {input_dtype.name}: the "
                                 f"compatible combinations are (integral, integral), "
                                 f"(integral, floating), (floating, floating), (complex, "
                                 f"complex)", lhs, rhs)
        if dtypes.is_signed(input_dtype) and not dtypes.is_signed(preferred):
            raise type_error(_NAME, "preferred_element_type must have the same signedness as "
                             "the operand type", lhs, rhs)
    if preferred.itemsize < input_dtype.itemsize:
        raise type_error(_NAME, f"preferred_element_type {preferred.name} must not be "
                         f"narrower than the operand type {input_dtype.name}", lhs, rhs)


@conv_general_dilated_p.def_abstract_eval
def _conv_abstract(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type):
    if lhs.ndim != rhs.ndim:
        raise ValueError(f"{_NAME} lhs and rhs must have the same number of dimensions, but "
                         f"got {lhs.shape} and {rhs.shape}.")
    if lhs.ndim < 2:
        raise type_error(_NAME, "operands must have at least 2 dimensions (batch and "
                         "feature)", lhs, rhs)
    dn = dimension_numbers
    for what, spec in zip(("lhs_spec", "rhs_spec", "out_spec"), dn):
        if sorted(spec) != list(range(lhs.ndim)):
            raise type_error(_NAME, f"dimension_numbers.{what} {tuple(spec)} must be a "
                             f"permutation of range({lhs.ndim})", lhs, rhs)
    _check_window_params(lhs.ndim - 2, window_strides, padding, lhs_dilation, rhs_dilation)
    _check_groups(lhs, rhs, dn, feature_group_count, batch_group_count)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"lax.{_NAME} requires arguments to have the same dtypes, got "
                        f"{lhs.dtype.name}, {rhs.dtype.name}.")
    dtype = lhs.dtype
    if preferred_element_type is not None:
        _check_preferred(lhs.dtype, np.dtype(preferred_element_type), lhs, rhs)
        dtype = np.dtype(preferred_element_type)
    lhs_t = _dilate_shape(np.take(lhs.shape, dn.lhs_spec), lhs_dilation)
    rhs_t = _dilate_shape(np.take(rhs.shape, dn.rhs_spec), rhs_dilation)
    out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, batch_group_count)
    return ShapedArray(_unpermute(out_t, dn.out_spec), dtype, lhs.weak_type and rhs.weak_type)


def _conv_dnums_attr(dn: ConvDimensionNumbers) -> str:
    """``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>``."""
    def layout(spec, batch: str, feature: str) -> str:
        names = [""] * len(spec)
        names[spec[0]], names[spec[1]] = batch, feature
        for i, d in enumerate(spec[2:]):
            names[d] = str(i)
        return f"[{', '.join(names)}]"
    return (f"#stablehlo.conv<{layout(dn.lhs_spec, 'b', 'f')}x{layout(dn.rhs_spec, 'o', 'i')}"
            f"->{layout(dn.out_spec, 'b', 'f')}>")


def _emit_conv(ctx, lhs, rhs, out: ShapedArray, *, window_strides, padding, lhs_dilation,
               rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
               precision):
    nspatial = len(window_strides)
    pads = (dense_i64(padding, (nspatial, 2)) if nspatial else "dense<> : tensor<0x2xi64>")
    return ctx.op("stablehlo.convolution", [lhs, rhs], out, {
        "batch_group_count": f"{batch_group_count} : i64",
        "dimension_numbers": _conv_dnums_attr(dimension_numbers),
        "feature_group_count": f"{feature_group_count} : i64",
        "lhs_dilation": i64_array(lhs_dilation),
        "padding": pads,
        "precision_config": precision_config(precision),
        "rhs_dilation": i64_array(rhs_dilation),
        "window_reversal": bool_array([False] * nspatial),
        "window_strides": i64_array(window_strides),
    })


def _cut_negative_low_padding(ctx, lhs, *, padding, lhs_dilation, dimension_numbers,
                              **unused):
    """``lhs`` sliced so that no low padding is negative, and the padding that goes with it.

    XLA:CPU (jaxlib 0.10.2) miscomputes convolutions whose padding is negative at the
    start and positive at the end of a dim (jax emits them as they are and gets wrong
    values). Removing those elements with a slice first gives the same convolution
    with a nonnegative low padding.
    """
    if all(lo >= 0 for lo, _ in padding):
        return lhs, padding
    shape = list(lhs.aval.shape)
    start = [0] * len(shape)
    new = []
    for (lo, hi), d, dim in zip(padding, lhs_dilation, dimension_numbers.lhs_spec[2:]):
        n = shape[dim]
        if lo >= 0:
            new.append((lo, hi))
            continue
        r = min(-(lo // d), n)  # whole elements to drop: ceil(-lo / d)
        lo = _dilate_dim(n, d) + lo - _dilate_dim(n - r, d)  # what is left of lo
        if lo < 0:  # nothing of lhs is left; every window sees padding only
            lo, hi = 0, hi + lo
        start[dim] = r
        shape[dim] = n - r
        new.append((lo, hi))
    sliced = ctx.op("stablehlo.slice", [lhs], ShapedArray(tuple(shape), lhs.aval.dtype), {
        "limit_indices": i64_array(lhs.aval.shape), "start_indices": i64_array(start),
        "strides": i64_array([1] * len(shape))})
    return sliced, tuple(new)


@conv_general_dilated_p.def_lowering
def _conv_lower(ctx, lhs, rhs, *, preferred_element_type, **params):
    lhs, padding = _cut_negative_low_padding(ctx, lhs, **params)
    params["padding"] = padding
    out = ctx.avals_out[0]
    if not dtypes.is_complex(lhs.aval.dtype):
        return _emit_conv(ctx, lhs, rhs, out, **params)
    # (a + ib)(c + id) with three real products: k1 = (a + b)c, k2 = a(d - c),
    # k3 = b(c + d); the result is (k1 - k3) + i(k1 + k2).
    real = np.dtype(np.finfo(out.dtype).dtype)
    part = np.dtype(np.finfo(lhs.aval.dtype).dtype)

    def op(name, args, dt):
        return ctx.op(name, args, ShapedArray(args[0].aval.shape, dt))

    a, b = op("stablehlo.real", [lhs], part), op("stablehlo.imag", [lhs], part)
    c, d = op("stablehlo.real", [rhs], part), op("stablehlo.imag", [rhs], part)
    real_out = ShapedArray(out.shape, real)
    k1 = _emit_conv(ctx, op("stablehlo.add", [a, b], part), c, real_out, **params)
    k2 = _emit_conv(ctx, a, op("stablehlo.subtract", [d, c], part), real_out, **params)
    k3 = _emit_conv(ctx, b, op("stablehlo.add", [c, d], part), real_out, **params)
    return ctx.op("stablehlo.complex", [op("stablehlo.subtract", [k1, k3], real),
                                        op("stablehlo.add", [k1, k2], real)], out)


def _ints(values, what: str) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{_NAME} {what} must be a sequence of integers, got "
                        f"{values!r}") from None


def conv_general_dilated(lhs, rhs, window_strides: Sequence[int], padding,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                         feature_group_count: int = 1, batch_group_count: int = 1,
                         precision=None, preferred_element_type=None, out_sharding=None):
    """General n-dimensional convolution with strides, padding, dilation and groups.

    Parameters
    ----------
    lhs : array of rank ``n + 2``, the input
    rhs : array of rank ``n + 2``, the kernel
    window_strides : ``n`` strides
    padding : ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or ``n`` ``(low, high)`` pairs
    lhs_dilation : ``n`` input dilations (a transposed convolution), default 1
    rhs_dilation : ``n`` kernel dilations (an atrous convolution), default 1
    dimension_numbers : None (``('NCHW', 'OIHW', 'NCHW')``), three layout strings such
        as ``('NHWC', 'HWIO', 'NHWC')``, or a ``ConvDimensionNumbers``
    feature_group_count, batch_group_count : grouped convolution (at most one > 1)
    precision : None, a ``Precision``, a name such as ``'highest'``, or a pair of them
    preferred_element_type : the result (and accumulation) dtype, optional

    Returns
    -------
    The convolution, laid out as ``dimension_numbers``' output spec says.

    Examples
    --------
    >>> x = jnp.ones((1, 5, 5, 2)); w = jnp.ones((3, 3, 2, 4))
    >>> conv_general_dilated(x, w, (1, 1), 'SAME',
    ...                      dimension_numbers=('NHWC', 'HWIO', 'NHWC')).shape
    (1, 5, 5, 4)
    """
    if not no_sharding_constraint(out_sharding):
        raise NotImplementedError(f"{_NAME}: out_sharding is not supported (minijax has no "
                                  f"shardings)")
    la, ra = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    nspatial = la.ndim - 2
    window_strides = _ints(window_strides, "window_strides")
    if lhs_dilation is None:
        lhs_dilation = (1,) * nspatial
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise ValueError("String padding is not implemented for transposed convolution using "
                         "this op. Please either exactly specify the required padding or use "
                         "conv_transpose.")
    lhs_dilation = _ints(lhs_dilation, "lhs_dilation")
    rhs_dilation = (1,) * nspatial if rhs_dilation is None else _ints(rhs_dilation,
                                                                       "rhs_dilation")
    if isinstance(padding, str):
        window = [_dilate_dim(ra.shape[d], r) for d, r in zip(dn.rhs_spec[2:], rhs_dilation)]
        pads = padtype_to_pads([la.shape[d] for d in dn.lhs_spec[2:]], window,
                               window_strides, padding)
    else:
        try:
            pads = [(operator.index(lo), operator.index(hi)) for lo, hi in padding]
        except (ValueError, TypeError):
            raise ValueError(f"padding argument to {_NAME} should be a string or a sequence "
                             f"of (low, high) pairs, got {padding}") from None
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize(preferred_element_type)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=tuple(tuple(p) for p in pads),
        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dn,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=_canonical_precision(precision),
        preferred_element_type=preferred_element_type)


def conv(lhs, rhs, window_strides: Sequence[int], padding: str, precision=None,
         preferred_element_type=None):
    """``conv_general_dilated`` in the ``('NCHW', 'OIHW', 'NCHW')`` layout, no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides: Sequence[int], padding,
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision=None,
                              preferred_element_type=None):
    """``conv_general_dilated`` in the ``('NCHW', 'OIHW', 'NCHW')`` layout."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_DEFAULT_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                              4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides: Sequence[int], padding,
                   rhs_dilation: Sequence[int] | None = None,
                   dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                   transpose_kernel: bool = False, precision=None,
                   preferred_element_type=None, use_consistent_padding: bool = False):
    """The "transposed" (fractionally strided) convolution, computed directly.

    The input is dilated by ``strides`` and convolved with the kernel. ``'SAME'`` and
    ``'VALID'`` name the padding of the forward convolution this one undoes; explicit
    pairs are this convolution's own padding unless ``use_consistent_padding``, when
    they too are the forward convolution's. ``transpose_kernel=True`` flips the
    kernel's spatial dims and swaps its input/output feature dims (the gradient of a
    forward convolution, as Keras' ``Conv2DTranspose``). The layout defaults to
    TensorFlow's (``'NHWC', 'HWIO', 'NHWC'`` for two spatial dims).
    """
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise TypeError(f"conv_transpose: lhs and rhs must have the same rank (at least 2), "
                        f"got shapes {la.shape} and {ra.shape}")
    if dimension_numbers is None:
        if la.ndim not in _TRANSPOSE_DEFAULT_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_DEFAULT_LAYOUTS[la.ndim]
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    kernel = [ra.shape[d] for d in dn.rhs_spec[2:]]
    strides = _ints(strides, "strides")
    rhs_dilation = (1,) * (ra.ndim - 2) if rhs_dilation is None else _ints(rhs_dilation,
                                                                           "rhs_dilation")
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_dim = [padding] * len(strides) if isinstance(padding, str) else \
            [tuple(p) for p in padding]
        pads = [_conv_transpose_padding(_dilate_dim(k, r), s, p)
                for k, r, s, p in zip(kernel, rhs_dilation, strides, per_dim)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, dn.rhs_spec[2:])
        perm = list(range(ra.ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (la.ndim - 2), pads, strides, rhs_dilation,
                                dn, precision=precision,
                                preferred_element_type=preferred_element_type)


# ---- transformation rules -------------------------------------------------------------------

def _reshape_axis_into(src: int, dst: int, x):
    """Merge axis ``src`` of ``x`` into axis ``dst`` (numbered without ``src``) as its
    major part."""
    shape = get_aval(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [d for i, d in enumerate(shape) if i != src]
    new[dst] *= shape[src]
    return reshape(x, new, perm)


def _reshape_axis_out_of(src: int, size: int, x):
    """Split axis ``src`` of ``x`` into ``(size, rest)``."""
    shape = list(get_aval(x).shape)
    shape[src:src + 1] = [size, shape[src] // size]
    return reshape(x, shape)


def _spec_t(spec) -> tuple[int, ...]:
    """``spec`` with its first two entries (batch and feature) swapped."""
    return (spec[1], spec[0]) + tuple(spec[2:])


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation) -> tuple[tuple[int, int], ...]:
    """The padding of the convolution that maps an output cotangent back onto the
    (dilated) input positions."""
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window, rhs_dilation)
    out_d = _dilate_shape(out_shape, strides)
    before = [k - lo - 1 for k, (lo, _) in zip(rhs_d, padding)]
    after = [ld + k - 1 - od - b for ld, k, od, b in zip(lhs_d, rhs_d, out_d, before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation) -> tuple[tuple[int, int], ...]:
    """The padding of the convolution of the input with the output cotangent that
    gives the kernel's cotangent."""
    lhs_d = _dilate_shape(in_shape, lhs_dilation)
    rhs_d = _dilate_shape(window, rhs_dilation)
    out_d = _dilate_shape(out_shape, strides)
    return tuple((lo, od - ld + k - lo - 1)
                 for (lo, _), ld, k, od in zip(padding, lhs_d, rhs_d, out_d))


def _transpose_lhs(g, rhs, lhs_aval: ShapedArray, *, window_strides, padding, lhs_dilation,
                   rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                   precision, preferred_element_type):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs_shape = get_aval(rhs).shape
    groups = max(feature_group_count, batch_group_count)
    if groups > 1:  # the groups move from the kernel's output to its input features
        rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    pads = _vjp_lhs_padding(np.take(lhs_aval.shape, lhs_spec[2:]),
                            np.take(rhs_shape, rhs_spec[2:]), window_strides,
                            np.take(get_aval(g).shape, out_spec[2:]), padding, lhs_dilation,
                            rhs_dilation)
    kernel = rev(rhs, rhs_spec[2:])
    if get_aval(kernel).dtype != get_aval(g).dtype:
        kernel = convert_element_type(kernel, get_aval(g).dtype)
    out = conv_general_dilated_p.bind(
        g, kernel, window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides,
        rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(out_spec, _spec_t(rhs_spec), lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision,
        preferred_element_type=preferred_element_type)
    if get_aval(out).dtype != lhs_aval.dtype:
        out = convert_element_type(out, lhs_aval.dtype)
    if batch_group_count > 1:  # the groups go back from the features to the batch
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _transpose_rhs(g, lhs, rhs_aval: ShapedArray, *, window_strides, padding, lhs_dilation,
                   rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                   precision, preferred_element_type):
    if get_aval(g).size == 0:  # a kernel of spatial size 0 is not a convolution
        return Zero(rhs_aval)
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    # feature groups become batch groups and the other way round
    fgc, bgc = batch_group_count, feature_group_count
    pads = _vjp_rhs_padding(np.take(get_aval(lhs).shape, lhs_spec[2:]),
                            np.take(rhs_aval.shape, rhs_spec[2:]), window_strides,
                            np.take(get_aval(g).shape, out_spec[2:]), padding, lhs_dilation,
                            rhs_dilation)
    if get_aval(lhs).dtype != get_aval(g).dtype:
        lhs = convert_element_type(lhs, get_aval(g).dtype)
    out = conv_general_dilated_p.bind(
        lhs, g, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides,
        dimension_numbers=ConvDimensionNumbers(_spec_t(lhs_spec), _spec_t(out_spec),
                                               _spec_t(rhs_spec)),
        feature_group_count=fgc, batch_group_count=bgc, precision=precision,
        preferred_element_type=preferred_element_type)
    if get_aval(out).dtype != rhs_aval.dtype:
        out = convert_element_type(out, rhs_aval.dtype)
    return out


def _conv_transpose_rule(ct, lhs, rhs, **params):
    if is_undefined(lhs) and is_undefined(rhs):
        raise NotImplementedError(f"{_NAME} is not linear in both operands at once")
    if is_undefined(lhs):
        return [_transpose_lhs(ct, rhs, lhs.aval, **params), None]
    return [None, _transpose_rhs(ct, lhs, rhs.aval, **params)]


def _conv_batch(trace, vals, dims, **params):
    """Fold the vmapped axis into the convolution: into the batch dim for a mapped
    input, into the output features for a mapped kernel (groups keep the examples
    apart when both are mapped)."""
    lhs, rhs = vals
    lbd, rbd = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    size = trace.axis_size
    if size == 0:  # reshaping a size-0 axis into another loses the other's size
        la, ra = get_aval(lhs), get_aval(rhs)
        one = ShapedArray(tuple(d for i, d in enumerate(la.shape) if i != lbd), la.dtype)
        two = ShapedArray(tuple(d for i, d in enumerate(ra.shape) if i != rbd), ra.dtype)
        out = _conv_abstract(one, two, **params)
        return broadcast_in_dim(np.zeros((), out.dtype), (0,) + out.shape, ()), 0
    bind = conv_general_dilated_p.bind
    if lbd is not None and rbd is not None:
        if bgc > 1:
            new_lhs = _reshape_axis_into(lbd, lhs_spec[0], lhs)
            params = dict(params, batch_group_count=bgc * size)
        else:
            new_lhs = _reshape_axis_into(lbd, lhs_spec[1], lhs)
            params = dict(params, feature_group_count=fgc * size)
        out = bind(new_lhs, _reshape_axis_into(rbd, rhs_spec[0], rhs), **params)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if lbd is not None:
        if bgc == 1:
            out = bind(_reshape_axis_into(lbd, lhs_spec[0], lhs), rhs, **params)
            return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
        # batch groups must stay outermost in the batch dim: (group, example, rest)
        new = _reshape_axis_out_of(lhs_spec[0] + int(lbd <= lhs_spec[0]), bgc, lhs)
        new = _reshape_axis_into(lbd + int(lhs_spec[0] < lbd), lhs_spec[0] + 1, new)
        new = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new)
        out = bind(new, rhs, **params)
        return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    if fgc == 1 and bgc == 1:
        out = bind(lhs, _reshape_axis_into(rbd, rhs_spec[0], rhs), **params)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # groups must stay outermost in the kernel's output features: (group, example, rest)
    groups = max(fgc, bgc)
    new = _reshape_axis_out_of(rhs_spec[0] + int(rbd <= rhs_spec[0]), groups, rhs)
    new = _reshape_axis_into(rbd + int(rhs_spec[0] < rbd), rhs_spec[0] + 1, new)
    new = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new)
    out = bind(lhs, new, **params)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
    return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


# conv_general_dilated is bilinear: each operand's tangent is convolved with the other.
defjvp(conv_general_dilated_p,
       lambda t, lhs, rhs, **params: conv_general_dilated_p.bind(t, rhs, **params),
       lambda t, lhs, rhs, **params: conv_general_dilated_p.bind(lhs, t, **params))
conv_general_dilated_p.def_transpose(_conv_transpose_rule)
conv_general_dilated_p.def_batch(_conv_batch)
