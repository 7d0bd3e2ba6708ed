"""Every public name of jax.numpy exists in minijax.numpy (and of jax.numpy.fft/linalg)."""

import jax.numpy as jjnp

import minijax.numpy as jnp

# Names of jax.numpy that minijax.numpy does not have yet. Keep it short, and shrinking:
# a name that appears here but exists in minijax.numpy fails the test too.
MISSING: set[str] = {
    'append', 'apply_along_axis', 'apply_over_axes', 'array_equal', 'array_equiv',
    'array_repr', 'array_str', 'average', 'bartlett', 'bincount', 'blackman', 'block',
    'broadcast_shapes', 'c_', 'choose', 'column_stack', 'concat', 'convolve', 'copy',
    'corrcoef', 'correlate', 'cov', 'cross', 'cumulative_prod', 'cumulative_sum', 'delete',
    'diag', 'diag_indices', 'diag_indices_from', 'diagflat', 'diagonal', 'diff', 'digitize',
    'dsplit', 'dstack', 'ediff1d', 'einsum_path', 'fill_diagonal', 'from_dlpack',
    'frombuffer', 'fromfile', 'fromfunction', 'fromiter', 'frompyfunc', 'fromstring',
    'geomspace', 'gradient', 'hamming', 'hanning', 'histogram', 'histogram2d',
    'histogram_bin_edges', 'histogramdd', 'hsplit', 'index_exp', 'indices', 'insert',
    'interp', 'ix_', 'kaiser', 'kron', 'load', 'logspace', 'mask_indices',
    'matrix_transpose', 'matvec', 'median', 'meshgrid', 'mgrid', 'nanargmax', 'nanargmin',
    'nancumprod', 'nancumsum', 'nanmax', 'nanmean', 'nanmedian', 'nanmin', 'nanpercentile',
    'nanprod', 'nanquantile', 'nanstd', 'nansum', 'nanvar', 'ogrid', 'packbits',
    'percentile', 'piecewise', 'place', 'poly', 'polyadd', 'polyder', 'polydiv', 'polyfit',
    'polyint', 'polymul', 'polysub', 'polyval', 'ptp', 'put', 'put_along_axis', 'quantile',
    'r_', 'ravel_multi_index', 'resize', 'roll', 'rollaxis', 'roots', 'rot90', 's_', 'save',
    'savez', 'select', 'trace', 'trapezoid', 'tri', 'tril_indices', 'tril_indices_from',
    'triu_indices', 'triu_indices_from', 'ufunc', 'unpackbits', 'unravel_index', 'unstack',
    'unwrap', 'vander', 'vecdot', 'vecmat', 'vectorize', 'vsplit',
}


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


def test_every_jax_numpy_name_exists():
    missing = sorted(_public(jjnp) - _public(jnp) - MISSING)
    assert not missing, f"jax.numpy names missing from minijax.numpy: {missing}"


def test_missing_list_is_not_stale():
    stale = sorted(MISSING & _public(jnp))
    assert not stale, f"remove these from MISSING, they exist now: {stale}"
