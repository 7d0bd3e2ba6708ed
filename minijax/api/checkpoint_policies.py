"""The rematerialization policies of ``checkpoint(policy=...)``, with jax's names
(``minijax.checkpoint_policies.dots_saveable``...).

A policy is called as ``policy(primitive, *input_avals, **params)`` for each equation
of the checkpointed function's forward pass whose result the backward pass needs; True
means the result is saved (a residual), False that it is recomputed; an
``Offloadable(src, dst)`` that it is saved in memory ``dst`` (``"pinned_host"``) and
brought back to ``src`` for the backward pass, as in jax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["checkpoint_dots", "checkpoint_dots_with_no_batch_dims", "dots_saveable",
           "dots_with_no_batch_dims_saveable", "everything_saveable", "nothing_saveable",
           "offload_dot_with_no_batch_dims", "save_and_offload_only_these_names",
           "save_any_names_but_these", "save_anything_except_these_names",
           "save_from_both_policies", "save_only_these_names"]

_DOTS = ("dot_general", "conv_general_dilated")


class Offloadable(NamedTuple):
    """A policy's decision to save a value in memory ``dst`` (a memory kind such as
    ``"pinned_host"``), brought back to memory ``src`` where the backward pass needs it."""

    src: Any
    dst: Any


def everything_saveable(prim, *avals, **params) -> bool:
    """Save every intermediate (no recomputation)."""
    return True


def nothing_saveable(prim, *avals, **params) -> bool:
    """Save nothing: recompute everything (the default)."""
    return False


def dots_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix multiplications and convolutions."""
    return prim.name in _DOTS


def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
    """Save the results of matrix multiplications without batch dimensions."""
    if prim.name != "dot_general":
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


checkpoint_dots = dots_saveable
checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


def _name_of(prim, params) -> str | None:
    """The name given by ``checkpoint_name`` (a ``name`` equation), else None."""
    return params.get("name") if prim.name == "name" else None


def save_only_these_names(*names_which_can_be_saved: str) -> Callable:
    """Save only the values named (with ``checkpoint_name``) in the list."""
    names = frozenset(names_which_can_be_saved)
    return lambda prim, *_, **params: _name_of(prim, params) in names


def save_any_names_but_these(*names_not_to_save: str) -> Callable:
    """Save the named values except those in the list (unnamed values are not saved)."""
    names = frozenset(names_not_to_save)
    return lambda prim, *_, **params: (prim.name == "name"
                                       and _name_of(prim, params) not in names)


def save_anything_except_these_names(*names_not_to_save: str) -> Callable:
    """Save every value except the named ones in the list."""
    names = frozenset(names_not_to_save)
    return lambda prim, *_, **params: _name_of(prim, params) not in names


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """Save what either policy saves."""
    return lambda prim, *avals, **params: bool(policy_1(prim, *avals, **params)
                                               or policy_2(prim, *avals, **params))


def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                      names_which_can_be_offloaded, offload_src,
                                      offload_dst) -> Callable:
    """Save (or offload: here, save) only the values with the names given."""
    saved, offloaded = set(names_which_can_be_saved), set(names_which_can_be_offloaded)
    both = saved & offloaded
    if both:
        raise ValueError(f"The names should be exclusive and should not intersect in "
                         f"`names_which_can_be_saved` and `names_which_can_be_offloaded`. Got "
                         f"names_which_can_be_saved={saved}, names_which_can_be_offloaded="
                         f"{offloaded} and the intersection={both}")
    offload = Offloadable(src=offload_src, dst=offload_dst)

    def policy(prim, *_, **params):
        name = _name_of(prim, params)
        if name in saved:
            return True
        if name in offloaded:
            return offload
        return False
    return policy


def offload_dot_with_no_batch_dims(offload_src, offload_dst) -> Callable:
    """Offload matrix multiplications without batch dimensions (to ``offload_dst``)."""
    offload = Offloadable(src=offload_src, dst=offload_dst)
    return lambda prim, *avals, **params: (
        offload if dots_with_no_batch_dims_saveable(prim, *avals, **params) else False)
