"""Exceptions users see, with messages that say how to fix the problem."""

from __future__ import annotations


class ConcretizationTypeError(TypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class TracerBoolConversionError(ConcretizationTypeError):
    pass


class TracerIntegerConversionError(ConcretizationTypeError):
    pass


class TracerArrayConversionError(ConcretizationTypeError):
    pass


class TypePromotionError(ValueError):
    """Operand dtypes that may not be promoted implicitly (``jax_numpy_dtype_promotion``
    is ``strict``), as jax's ``dtypes.TypePromotionError``."""


class UnexpectedTracerError(Exception):
    """A tracer escaped the function being traced and was used afterwards."""


class UnfilteredStackTrace(Exception):
    """The full traceback of an error, minijax's frames included; chained as the
    ``__cause__`` of the error when ``minijax_traceback_filtering`` is ``remove_frames``."""


class IncompatibleShapesError(ValueError, TypeError):
    """Operand shapes that do not fit together: they do not broadcast, or the sizes of
    contracted dimensions differ.

    Both a ``ValueError``, as in NumPy (and in jax for operands of different ranks,
    ``lax.dot`` and ``jnp.where``), and a ``TypeError``, as in jax for operands of
    equal rank and for ``matmul``/``dot_general``: code written against either catches it.
    """


class JAXTypeError(TypeError):
    """A TypeError raised by minijax itself (jax's ``errors.JAXTypeError``)."""


class JAXIndexError(IndexError):
    """An IndexError raised by minijax itself (jax's ``errors.JAXIndexError``)."""


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice (jax's key-reuse checker; minijax does not check reuse, so
    it never raises this)."""


class JaxprTypeError(TypeError):
    """A jaxpr that does not type-check."""


class InconclusiveDimensionOperation(Exception):
    """An operation on symbolic dimensions whose result cannot be decided."""


class ShardingTypeError(Exception):
    """Operands whose explicit shardings (sharding in types) do not fit the operation,
    or an ambiguous result sharding (jax's ``jax._src.core.ShardingTypeError``)."""
