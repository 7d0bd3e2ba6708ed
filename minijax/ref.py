"""Mutable array references, as ``jax.ref``."""

from minijax.core.ref import AbstractRef
from minijax.lax.state import Ref, empty_ref, free_ref, freeze, new_ref


def get(ref: Ref, idx=Ellipsis):
    """``ref[idx]``."""
    return ref[idx]


def set(ref: Ref, idx, value) -> None:  # noqa: A001 (jax's name)
    """``ref[idx] = value``."""
    ref[idx] = value


def swap(ref: Ref, idx, value):
    """``ref[idx] = value``, returning the old ``ref[idx]``."""
    return ref.swap(idx, value)


def addupdate(ref: Ref, idx, value) -> None:
    """``ref[idx] += value``."""
    ref.addupdate(idx, value)


__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]
