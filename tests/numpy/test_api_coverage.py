"""Every public name of jax.numpy exists in minijax.numpy (and of jax.numpy.fft/linalg)."""

import jax.numpy as jjnp

import minijax.numpy as jnp

# Names of jax.numpy that minijax.numpy does not have yet. Keep it short, and shrinking:
# a name that appears here but exists in minijax.numpy fails the test too.
MISSING: set[str] = {
    'acos', 'acosh', 'allclose', 'angle', 'append', 'apply_along_axis', 'apply_over_axes',
    'arccos', 'arccosh', 'arcsin', 'arcsinh', 'arctan', 'arctanh', 'argpartition',
    'argwhere', 'array_equal', 'array_equiv', 'array_repr', 'array_str', 'asin', 'asinh',
    'atan', 'atan2', 'atanh', 'average', 'bartlett', 'bincount', 'bitwise_count',
    'bitwise_invert', 'bitwise_left_shift', 'bitwise_right_shift', 'blackman', 'block',
    'broadcast_shapes', 'c_', 'choose', 'column_stack', 'compress', 'concat', 'conj',
    'conjugate', 'convolve', 'copy', 'copysign', 'corrcoef', 'correlate', 'cosh', 'cov',
    'cross', 'cumulative_prod', 'cumulative_sum', 'deg2rad', 'degrees', 'delete', 'diag',
    'diag_indices', 'diag_indices_from', 'diagflat', 'diagonal', 'diff', 'digitize',
    'dsplit', 'dstack', 'ediff1d', 'einsum_path', 'extract', 'fabs', 'fill_diagonal',
    'flatnonzero', 'fmax', 'fmin', 'frexp', 'from_dlpack', 'frombuffer', 'fromfile',
    'fromfunction', 'fromiter', 'frompyfunc', 'fromstring', 'gcd', 'geomspace', 'gradient',
    'hamming', 'hanning', 'heaviside', 'histogram', 'histogram2d', 'histogram_bin_edges',
    'histogramdd', 'hsplit', 'hypot', 'i0', 'imag', 'index_exp', 'indices', 'insert',
    'interp', 'intersect1d', 'isclose', 'iscomplex', 'isin', 'isneginf', 'isposinf',
    'isreal', 'ix_', 'kaiser', 'kron', 'lcm', 'ldexp', 'lexsort', 'load', 'logaddexp',
    'logaddexp2', 'logspace', 'mask_indices', 'matrix_transpose', 'matvec', 'median',
    'meshgrid', 'mgrid', 'modf', 'nan_to_num', 'nanargmax', 'nanargmin', 'nancumprod',
    'nancumsum', 'nanmax', 'nanmean', 'nanmedian', 'nanmin', 'nanpercentile', 'nanprod',
    'nanquantile', 'nanstd', 'nansum', 'nanvar', 'nextafter', 'nonzero', 'ogrid',
    'packbits', 'partition', 'percentile', 'piecewise', 'place', 'poly', 'polyadd',
    'polyder', 'polydiv', 'polyfit', 'polyint', 'polymul', 'polysub', 'polyval', 'ptp',
    'put', 'put_along_axis', 'quantile', 'r_', 'rad2deg', 'radians', 'ravel_multi_index',
    'real', 'resize', 'rint', 'roll', 'rollaxis', 'roots', 'rot90', 's_', 'save', 'savez',
    'searchsorted', 'select', 'setdiff1d', 'setxor1d', 'signbit', 'sinc', 'sinh',
    'sort_complex', 'spacing', 'trace', 'trapezoid', 'tri', 'tril_indices',
    'tril_indices_from', 'trim_zeros', 'triu_indices', 'triu_indices_from', 'trunc',
    'ufunc', 'union1d', 'unique', 'unique_all', 'unique_counts', 'unique_inverse',
    'unique_values', 'unpackbits', 'unravel_index', 'unstack', 'unwrap', 'vander', 'vecdot',
    'vecmat', 'vectorize', 'vsplit',
}


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


def test_every_jax_numpy_name_exists():
    missing = sorted(_public(jjnp) - _public(jnp) - MISSING)
    assert not missing, f"jax.numpy names missing from minijax.numpy: {missing}"


def test_missing_list_is_not_stale():
    stale = sorted(MISSING & _public(jnp))
    assert not stale, f"remove these from MISSING, they exist now: {stale}"
