"""Gaussian kernel density estimation (``jax.scipy.stats.gaussian_kde``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from minijax import lax
from minijax import numpy as jnp
from minijax import random
from minijax.api.vmap import vmap
from minijax.numpy._promote import check_args, promote_dtypes_inexact
from minijax.scipy import special
from minijax.stages.jit import jit
from minijax._pytree import register_pytree_node_class

__all__ = ["gaussian_kde"]


def _is_complex(x) -> bool:
    return jnp.issubdtype(jnp.result_type(x), np.complexfloating)


def _solve_spd(chol, rhs):
    """``A^-1 rhs`` for ``A = chol @ chol.T`` (``chol`` lower triangular)."""
    y = lax.linalg.triangular_solve(chol, rhs, left_side=True, lower=True)
    return lax.linalg.triangular_solve(chol, y, left_side=True, lower=True, transpose_a=True)


def _convolve(chol, norm, target, weights, mean):
    """Integral of the product of the weighted kernels at ``target`` with a Gaussian at
    ``mean``, the covariances summing to ``chol @ chol.T``."""
    diff = target - mean[:, None]
    arg = 0.5 * jnp.sum(diff * _solve_spd(chol, diff), axis=0)
    return norm * jnp.sum(jnp.exp(-arg) * weights)


@jit
def _integrate(cov, target, target_weights, means, mean_weights):
    """Weighted sum over the columns of ``means`` of ``_convolve`` with covariance ``cov``."""
    chol = jnp.linalg.cholesky(cov)
    norm = 1.0 / (jnp.sqrt(2 * np.pi) ** cov.shape[0] * jnp.prod(jnp.diag(chol)))
    at = vmap(functools.partial(_convolve, chol, norm, target, target_weights),
              in_axes=1)(means)
    return jnp.sum(at * mean_weights)


@jit
def _neff(weights):
    return 1 / jnp.sum(weights ** 2)


@functools.partial(jit, static_argnames=("rule",))
def _bandwidth(dataset, weights, neff, factor, rule):
    """The kernel covariance and its inverse: the data's weighted covariance scaled by the
    squared bandwidth ``factor`` (or that of Scott's or Silverman's ``rule``)."""
    d = dataset.shape[0]
    if rule == "scott":
        factor = jnp.power(neff, -1.0 / (d + 4))
    elif rule == "silverman":
        factor = jnp.power(neff * (d + 2) / 4.0, -1.0 / (d + 4))
    data_cov = jnp.atleast_2d(jnp.cov(dataset, rowvar=1, bias=False, aweights=weights))
    return data_cov * factor ** 2, jnp.linalg.inv(data_cov) / factor ** 2


@functools.partial(jit, static_argnums=0)
def _kernel_sums(in_log: bool, points, values, xi, precision):
    """For each row of ``xi``: the sum over the rows of ``points`` of ``values`` times the
    Gaussian kernel with ``precision`` (its log, by logsumexp, when ``in_log``)."""
    points, values, xi, precision = promote_dtypes_inexact(points, values, xi, precision)
    d = points.shape[1]
    if xi.shape[1] != d:
        raise ValueError("points and xi must have same trailing dim")
    if precision.shape != (d, d):
        raise ValueError("precision matrix must match data dims")
    whiten = jnp.linalg.cholesky(precision)
    points, xi = jnp.dot(points, whiten), jnp.dot(xi, whiten)
    log_norm = jnp.sum(jnp.log(jnp.diag(whiten))) - 0.5 * d * jnp.log(2 * np.pi)

    def kernel(x_test, x_train, y_train):
        arg = log_norm - 0.5 * jnp.sum(jnp.square(x_train - x_test))
        return jnp.log(y_train) + arg if in_log else y_train * jnp.exp(arg)

    reduce = special.logsumexp if in_log else jnp.sum
    return vmap(lambda x: reduce(vmap(kernel, in_axes=(None, 0, 0))(x, points, values),
                                 axis=0))(xi)


@register_pytree_node_class
@dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:  # noqa: N801  (jax's name)
    """A Gaussian kernel density estimate of the ``(d, n)`` data ``dataset`` (a 1-D
    dataset is ``d = 1``), with optional ``weights`` and bandwidth ``bw_method``
    (``"scott"``, ``"silverman"``, a scalar factor, or a callable of the estimator).
    A pytree, so it can pass through ``jit`` and ``vmap``.

    >>> kde = gaussian_kde(jnp.array([0.0, 1.0, 1.5, 4.0]))
    >>> kde.evaluate(jnp.array([1.0, 2.0]))
    """

    neff: object
    dataset: object
    weights: object
    covariance: object
    inv_cov: object

    def __init__(self, dataset, bw_method=None, weights=None):
        check_args("gaussian_kde", (dataset,))
        dataset = jnp.atleast_2d(dataset)
        if _is_complex(dataset):
            raise NotImplementedError("gaussian_kde does not support complex data")
        if not dataset.size > 1:
            raise ValueError("`dataset` input should have multiple elements.")
        d, n = dataset.shape
        if weights is not None:
            check_args("gaussian_kde", (weights,))
            dataset, weights = promote_dtypes_inexact(dataset, weights)
            weights = jnp.atleast_1d(weights)
            weights = weights / jnp.sum(weights)
            if weights.ndim != 1:
                raise ValueError("`weights` input should be one-dimensional.")
            if len(weights) != n:
                raise ValueError("`weights` input should be of length n")
        else:
            (dataset,) = promote_dtypes_inexact(dataset)
            weights = jnp.full(n, 1.0 / n, dtype=dataset.dtype)
        self._set("dataset", dataset)
        self._set("weights", weights)
        neff = self._set("neff", _neff(weights))
        if bw_method is None or (isinstance(bw_method, str) and bw_method == "scott"):
            factor = "scott"
        elif isinstance(bw_method, str) and bw_method == "silverman":
            factor = "silverman"
        elif jnp.isscalar(bw_method) and not isinstance(bw_method, str):
            factor = bw_method
        elif callable(bw_method):
            factor = bw_method(self)
        else:
            raise ValueError(
                "`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
        rule = factor if isinstance(factor, str) else None
        covariance, inv_cov = _bandwidth(dataset, weights, neff,
                                         None if rule else factor, rule)
        self._set("covariance", covariance)
        self._set("inv_cov", inv_cov)

    def _set(self, name, value):
        object.__setattr__(self, name, value)
        return value

    def tree_flatten(self):
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        kde = cls.__new__(cls)
        for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"),
                               children):
            kde._set(name, value)
        return kde

    @property
    def d(self):
        """The number of dimensions of the data."""
        return self.dataset.shape[0]

    @property
    def n(self):
        """The number of data points."""
        return self.dataset.shape[1]

    def _reshape_points(self, points):
        if _is_complex(points):
            raise NotImplementedError("gaussian_kde does not support complex coordinates")
        points = jnp.atleast_2d(points)
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                return jnp.reshape(points, (self.d, 1))
            raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
        return points

    def evaluate(self, points):
        """The estimated density at ``points`` (``(d, m)``, or ``(m,)`` when ``d = 1``)."""
        check_args("evaluate", (points,))
        points = self._reshape_points(points)
        return _kernel_sums(False, self.dataset.T, self.weights[:, None], points.T,
                            self.inv_cov)[:, 0]

    def __call__(self, points):
        return self.evaluate(points)

    def pdf(self, x):
        """The estimated density at ``x`` (as ``evaluate``)."""
        return self.evaluate(x)

    def logpdf(self, x):
        """The log of the estimated density at ``x`` (by logsumexp, accurate in the tails)."""
        check_args("logpdf", (x,))
        x = self._reshape_points(x)
        return _kernel_sums(True, self.dataset.T, self.weights[:, None], x.T,
                            self.inv_cov)[:, 0]

    def integrate_gaussian(self, mean, cov):
        """The integral of the estimate times the Gaussian with ``mean`` and ``cov``."""
        mean = jnp.atleast_1d(jnp.squeeze(mean))
        cov = jnp.atleast_2d(cov)
        if mean.shape != (self.d,):
            raise ValueError(f"mean does not have dimension {self.d}")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"covariance does not have dimension {self.d}")
        return _integrate(self.covariance + cov, self.dataset, self.weights, mean[:, None],
                          jnp.ones(1, self.weights.dtype))

    def integrate_box_1d(self, low, high):
        """The estimate's mass between the scalars ``low`` and ``high`` (1-D data only)."""
        if self.d != 1:
            raise ValueError("integrate_box_1d() only handles 1D pdfs")
        if np.ndim(low) != 0 or np.ndim(high) != 0:
            raise ValueError("the limits of integration in integrate_box_1d must be scalars")
        return _box_1d(self, low, high)

    def integrate_kde(self, other):
        """The integral of the product of this estimate and ``other``."""
        if other.d != self.d:
            raise ValueError("KDEs are not the same dimensionality")
        small, large = (self, other) if self.n < other.n else (other, self)
        return _integrate(self.covariance + other.covariance, large.dataset, large.weights,
                          small.dataset, small.weights)

    def resample(self, key, shape=()):
        """Draw ``shape`` points from the estimate: a ``(d, *shape)`` array."""
        return _resample(self, key, tuple(shape))

    def integrate_box(self, low_bounds, high_bounds, maxpts=None):
        """Not supported (as in jax): use ``integrate_box_1d``."""
        raise NotImplementedError(
            "only 1D box integrations are supported; use `integrate_box_1d`")

    def set_bandwidth(self, bw_method=None):
        """Not supported (as in jax): the estimator is immutable."""
        raise NotImplementedError(
            "dynamically changing the bandwidth method is not supported")


@jit
def _box_1d(kde, low, high):
    sigma = jnp.squeeze(jnp.sqrt(kde.covariance))
    lo = jnp.squeeze((low - kde.dataset) / sigma)
    hi = jnp.squeeze((high - kde.dataset) / sigma)
    return jnp.sum(kde.weights * (special.ndtr(hi) - special.ndtr(lo)))


@functools.partial(jit, static_argnames=("shape",))
def _resample(kde, key, shape):
    ind_key, eps_key = random.split(key)
    ind = random.choice(ind_key, kde.n, shape=shape, p=kde.weights)
    eps = random.multivariate_normal(eps_key, jnp.zeros(kde.d, kde.covariance.dtype),
                                     kde.covariance, shape=shape, dtype=kde.dataset.dtype).T
    return kde.dataset[:, ind] + eps
