"""minijax.numpy: NumPy's API on minijax arrays, with jax.numpy's semantics."""

import numpy as _np

from minijax import lax as _lax
from minijax.core import dtypes as _dtypes

from minijax.numpy import _array_api
from minijax.numpy._array_api import __array_api_version__, __array_namespace_info__
from minijax.numpy._creation import array, asarray, empty, full, ones, zeros
from minijax.numpy._dtypes_api import (
    ComplexWarning, bfloat16, bool_, can_cast, cdouble, character, complex64, complex128,
    complex_, complexfloating, csingle, double, euler_gamma, finfo, flexible, float4_e2m1fn,
    float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float8_e4m3fn,
    float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, float16, float32, float64,
    float_, floating, generic, get_printoptions, iinfo, inexact, int1, int2, int4, int8, int16,
    int32, int64, int_, integer, iscomplexobj, isdtype, isrealobj, isscalar, issubdtype,
    iterable, ndim, number, object_, printoptions, promote_types, result_type,
    set_printoptions, shape, signedinteger, single, size, uint, uint1, uint2, uint4, uint8,
    uint16, uint32, uint64, unsignedinteger)
from minijax.numpy._arrays import (
    append, apply_along_axis, apply_over_axes, array_equal, array_equiv, block,
    broadcast_shapes, choose, column_stack, concat, copy, cross, delete, diag, diagflat,
    diagonal, diff, dsplit, dstack, ediff1d, einsum_path, hsplit, insert, kron, matrix_transpose,
    matvec, piecewise, resize, roll, rollaxis, rot90, select, trace, tri, unstack, vecdot,
    vecmat, vsplit)
from minijax.numpy._construct import (array_repr, array_str, from_dlpack, frombuffer, fromfile,
                                      fromfunction, fromiter, fromstring, geomspace, load,
                                      logspace, packbits, save, savez, unpackbits)
from minijax.numpy._index_tricks import (
    c_, diag_indices, diag_indices_from, fill_diagonal, index_exp, indices, ix_, mask_indices,
    meshgrid, mgrid, ogrid, place, put, put_along_axis, r_, ravel_multi_index, s_,
    tril_indices, tril_indices_from, triu_indices, triu_indices_from, unravel_index)
from minijax.numpy._math import (
    acos, acosh, allclose, angle, arccos, arccosh, arcsin, arcsinh, arctan, arctanh, asin,
    asinh, atan, atan2, atanh, bitwise_count, bitwise_invert, bitwise_left_shift,
    bitwise_right_shift, conj, conjugate, copysign, cosh, deg2rad, degrees, fabs, fmax, fmin,
    frexp, gcd, heaviside, hypot, i0, imag, iscomplex, isclose, isneginf, isposinf, isreal,
    lcm, ldexp, logaddexp, logaddexp2, modf, nan_to_num, nextafter, rad2deg, radians, real,
    rint, signbit, sinc, sinh, spacing, trunc)
from minijax.numpy._linalg_ops import (dot, einsum, inner, matmul, outer, tensordot,
                                       vdot)
from minijax.numpy._indexing import (NonConcreteBooleanIndexError, _getitem,
                                      _IndexUpdateHelper, take, take_along_axis)
from minijax.numpy._reductions import (all, amax, amin, any, argmax, argmin, count_nonzero,
                                       cumprod, cumsum, max, mean, min, prod, std, sum, var)
from minijax.numpy._polynomial import (convolve, correlate, poly, polyadd, polyder, polydiv,
                                       polyfit, polyint, polymul, polysub, polyval, roots,
                                       vander)
from minijax.numpy._setops import (
    argpartition, argwhere, compress, extract, flatnonzero, intersect1d, isin, lexsort,
    nonzero, partition, searchsorted, setdiff1d, setxor1d, sort_complex, trim_zeros, union1d,
    unique, unique_all, unique_counts, unique_inverse, unique_values)
from minijax.numpy._shape import (arange, array_split, astype, atleast_1d, atleast_2d,
                                   atleast_3d, broadcast_arrays, broadcast_to, concatenate,
                                   empty_like, expand_dims, eye, flatten, flip, fliplr, flipud,
                                   full_like, hstack, identity, linspace, moveaxis, ones_like,
                                   pad, permute_dims, ravel, repeat, reshape, split, squeeze,
                                   stack, swapaxes, tile, transpose, tril, triu, vstack,
                                   zeros_like)
from minijax.numpy._sorting import argsort, sort
from minijax.numpy._statistics import (
    average, bincount, corrcoef, cov, cumulative_prod, cumulative_sum, digitize, gradient,
    histogram, histogram2d, histogram_bin_edges, histogramdd, interp, median, nanargmax,
    nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmedian, nanmin, nanpercentile, nanprod,
    nanquantile, nanstd, nansum, nanvar, percentile, ptp, quantile, trapezoid, unwrap)
from minijax.numpy._ufuncs import (abs, absolute, add, arctan2, around, bitwise_and,
                                   bitwise_not, bitwise_or, bitwise_xor, cbrt, ceil, clip, cos,
                                   divide, divmod, equal, exp, exp2, expm1, float_power, floor,
                                   floor_divide, fmod, greater, greater_equal, invert, isfinite,
                                   isinf, isnan, left_shift, less, less_equal, log, log1p, log2,
                                   log10, logical_and, logical_not, logical_or, logical_xor,
                                   maximum, minimum, mod, multiply, negative, not_equal,
                                   positive, pow, power, reciprocal, remainder, right_shift,
                                   round, sign, sin, sqrt, square, subtract, tan, tanh,
                                   true_divide)
from minijax.numpy._ufuncs import where_ as _where3
from minijax.numpy._vectorize import frompyfunc, ufunc, vectorize
from minijax.numpy._windows import bartlett, blackman, hamming, hanning, kaiser
from minijax.numpy import linalg
from minijax.numpy import fft  # noqa: F401  (the minijax.numpy.fft module)

from minijax.runtime.basearray import Array as ndarray

# dtypes
dtype = _np.dtype
bool = bool_  # noqa: A001
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
newaxis = None


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):  # noqa: F811
    """``x`` where ``condition`` else ``y``; with ``condition`` alone, ``nonzero(condition)``
    (``size``/``fill_value`` make that jit-compatible)."""
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise TypeError(f"where requires ndarray or scalar arguments, got None for "
                        f"{'x' if x is None else 'y'}: either both or neither of x and y must be "
                        f"given.")
    if size is not None or fill_value is not None:
        raise ValueError("size and fill_value arguments cannot be used in three-term where "
                         "function.")
    ext = _dtypes.extended_operands("where", (x, y))
    if ext is not None:  # typed keys: select among their words (the key dimensions trail)
        dt, (xw, yw) = ext
        cond = asarray(condition, dtype=bool_)
        shape = broadcast_shapes(cond.shape, x.shape, y.shape)
        full = (*shape, *dt.element_shape)
        cond = _lax.broadcast_in_dim(cond, full,
                                     tuple(range(len(shape) - cond.ndim, len(shape))))
        return dt.from_physical(_lax.select(cond, broadcast_to(xw, full),
                                            broadcast_to(yw, full)))
    return _where3(condition, x, y)
