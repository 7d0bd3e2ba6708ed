"""Operators and methods shared by ``minijax.Array`` and tracers.

Each forwards to the ``minijax.numpy`` function of the same meaning, so an
expression means the same eagerly and under a trace.
"""

from __future__ import annotations

from minijax.core.traceback_util import process_exception, register_boundary


_JNP = []  # minijax.numpy, once imported (it imports this module)


def _jnp():
    if not _JNP:
        import minijax.numpy as jnp
        _JNP.append(jnp)
    return _JNP[0]


# The operators and methods are boundaries for traceback filtering: an error in
# ``x + y`` at top level shows the user's line, not minijax's (core/traceback_util.py).

def _binop(name: str, reflected: bool = False):
    @register_boundary
    def method(self, other):
        try:
            fn = getattr(_jnp(), name)
            if not _is_operand(other):
                return NotImplemented
            return fn(other, self) if reflected else fn(self, other)
        except Exception as e:
            process_exception(e)
            raise
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


_OPERAND_TYPES: tuple = ()


def _is_operand(x) -> bool:
    global _OPERAND_TYPES
    if not _OPERAND_TYPES:
        import numpy as np
        from minijax.core.trace import Tracer
        from minijax.runtime.array import Array
        _OPERAND_TYPES = (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex)
    return isinstance(x, _OPERAND_TYPES)


def _unop(name: str):
    @register_boundary
    def method(self):
        try:
            return getattr(_jnp(), name)(self)
        except Exception as e:
            process_exception(e)
            raise
    return method


def _method(name: str):
    @register_boundary
    def method(self, *args, **kwargs):
        try:
            return getattr(_jnp(), name)(self, *args, **kwargs)
        except Exception as e:
            process_exception(e)
            raise
    method.__name__ = name
    return method


def _setitem(self, idx, value):
    raise TypeError("minijax arrays are immutable and do not support in-place "
                    "item assignment. Instead of x[idx] = y, use x = x.at[idx].set(y) "
                    "(or another .at[] method: add, multiply, min, max, ...).")


@register_boundary
def _getitem(self, idx):
    try:
        return _jnp()._getitem(self, idx)
    except Exception as e:
        process_exception(e)
        raise


_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
    "floordiv": "floor_divide", "mod": "remainder", "pow": "power", "matmul": "matmul",
    "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "left_shift", "rshift": "right_shift",
}
_COMPARE = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
            "gt": "greater", "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "absolute", "invert": "invert"}
_METHODS = ["reshape", "astype", "sum", "mean", "max", "min", "prod", "var", "std", "argmax",
            "argmin", "all", "any", "cumsum", "sort", "argsort", "transpose", "squeeze",
            "flatten", "ravel", "clip", "round", "dot", "swapaxes", "repeat", "conj",
            "conjugate", "argpartition", "choose", "copy", "cumprod", "diagonal", "nonzero",
            "ptp", "searchsorted", "take", "trace"]


@register_boundary
def _round(self, ndigits=None):
    """``round(x)`` (as for a Python float, an integer: the default int dtype) and
    ``round(x, n)`` (``jnp.round(x, n)``, the array's dtype)."""
    try:
        out = _jnp().round(self, decimals=ndigits or 0)
        return out.astype(int) if ndigits is None else out
    except Exception as e:
        process_exception(e)
        raise


@register_boundary
def _compress(self, condition, axis=None, *, size=None, fill_value=0, out=None):
    """``x.compress(condition, ...)`` is ``jnp.compress(condition, x, ...)``."""
    try:
        return _jnp().compress(condition, self, axis, size=size, fill_value=fill_value, out=out)
    except Exception as e:
        process_exception(e)
        raise


def install(cls) -> None:
    """Give ``cls`` the array operators and methods."""
    for op, fn in _BINARY.items():
        setattr(cls, f"__{op}__", _binop(fn))
        setattr(cls, f"__r{op}__", _binop(fn, reflected=True))
    for op, fn in _COMPARE.items():
        setattr(cls, f"__{op}__", _binop(fn))
    for op, fn in _UNARY.items():
        setattr(cls, f"__{op}__", _unop(fn))
    for name in _METHODS:
        setattr(cls, name, _method(name))
    cls.compress = _compress
    cls.__round__ = _round
    cls.__getitem__ = _getitem
    cls.__setitem__ = _setitem
    cls.T = property(lambda self: _jnp().transpose(self))
    cls.mT = property(lambda self: _jnp().swapaxes(self, -1, -2))
    cls.at = property(lambda self: _jnp()._IndexUpdateHelper(self))
    cls.real = property(lambda self: _jnp().real(self))
    cls.imag = property(lambda self: _jnp().imag(self))
    cls.__divmod__ = lambda self, other: _jnp().divmod(self, other)
    cls.__rdivmod__ = lambda self, other: _jnp().divmod(other, self)
