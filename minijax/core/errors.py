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


class UnexpectedTracerError(Exception):
    """A tracer escaped the function being traced and was used afterwards."""
