"""The public ``vmap``: in_axes/out_axes over pytrees, axis sizes checked with jax's
errors; the batching interpreter itself is ``minijax.transforms.batching``."""

from __future__ import annotations

from typing import Any
from collections.abc import Callable

import numpy as np

from minijax.core.aval import canonicalize_dim
from minijax.core.trace import trace_state, get_aval, use_trace
from minijax.core.traceback_util import api_boundary
from minijax.api.naming import vmap_doc, wraps
from minijax.transforms.batching import BatchTrace, BatchTracer, bdim_at
from minijax._pytree import (keystr, trailing_dims, tree_flatten, tree_flatten_with_path,
                             tree_unflatten)


# ---- vmap ------------------------------------------------------------------------------------

def _flatten_axes(what: str, tree, axes, paths: list[str]) -> list:
    """Broadcast the pytree prefix ``axes`` to one entry per leaf of ``tree``."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(paths)
    _, treedef = tree_flatten(tree)
    try:
        # A prefix tree: unflatten leaves of `axes`' structure over tree's structure.
        ax_leaves, ax_tree = tree_flatten(axes, is_leaf=lambda x: x is None)
        out = []
        subtrees = ax_tree.flatten_up_to(tree)
        for ax, sub in zip(ax_leaves, subtrees):
            out.extend([ax] * len(tree_flatten(sub)[0]))
        return out
    except (ValueError, TypeError) as e:
        raise ValueError(f"vmap {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {axes} for value tree "
                         f"{treedef}.") from e


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name=None,
         axis_size: int | None = None, spmd_axis_name=None) -> Callable:
    """Vectorize ``fun`` over an axis; mirrors ``jax.vmap``."""
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not (in_axes is None or isinstance(in_axes, (int, tuple, dict))):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries "
                        f"corresponding to the positional arguments passed to the function, "
                        f"but got {in_axes}.")

    def vmap_f(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple of entries "
                             f"corresponding to the positional arguments passed to the "
                             f"function, but got len(in_axes)={len(in_axes)}, "
                             f"len(args)={len(args)}")
        pairs, in_tree = tree_flatten_with_path((args, kwargs))
        leaves = [x for _, x in pairs]
        names = [_arg_path(fun, p) for p, _ in pairs]
        n_pos = len(tree_flatten(args)[0])
        axes = _flatten_axes("in_axes", args, in_axes, names[:n_pos]) + [0] * (len(leaves) - n_pos)
        size = _mapped_size(leaves, axes, names, axis_size)
        trace = BatchTrace(trace_state.trace, size, axis_name)
        # a negative axis counts from the end of a key array's shape, not of its words
        extra = (trailing_dims((args, kwargs)) if any(ax is not None and ax < 0 for ax in axes)
                 else None)
        tracers = []
        for i, (x, ax) in enumerate(zip(leaves, axes)):
            if ax is None:
                tracers.append(x)
                continue
            nd = get_aval(x).ndim - (extra[i] if extra else 0)
            tracers.append(BatchTracer(trace, x, ax % nd))
        a, k = in_tree.unflatten(tracers)
        with use_trace(trace):
            out = fun(*a, **k)
        trace.alive = False
        out_pairs, out_tree = tree_flatten_with_path(out)
        outs = [x for _, x in out_pairs]
        oaxes = _flatten_axes("out_axes", out, out_axes, [""] * len(outs))
        extra = (trailing_dims(out) if any(ax is not None and ax < 0 for ax in oaxes)
                 else None)
        results = []
        for i, ((path, o), oax) in enumerate(zip(out_pairs, oaxes)):
            v, d = trace.split(o)
            if oax is None:
                if d is not None:
                    raise ValueError(f"vmap has mapped output (at result{keystr(path)}) but "
                                     f"out_axes is None")
                results.append(v)
                continue
            rank = get_aval(v).ndim + (1 if d is None else 0) - (extra[i] if extra else 0)
            if not -rank <= oax < rank:
                raise ValueError(f"vmap out_axes {oax} is out of bounds for output "
                                 f"result{keystr(path)} of rank {rank}")
            results.append(_as_array(bdim_at(v, d, size, oax % rank)))
        return tree_unflatten(out_tree, results)

    return wraps(fun, vmap_doc(fun))(api_boundary(vmap_f))


def _as_array(x):
    if isinstance(x, (np.ndarray, np.generic, int, float, bool, complex)):
        from minijax.numpy._promote import ensure_array  # numpy imports vmap
        return ensure_array(x)
    return x


def _arg_path(fun, path) -> str:
    import inspect
    if len(path) >= 2 and getattr(path[0], "idx", None) == 0:
        i = path[1].idx
        try:
            params = [p.name for p in inspect.signature(fun).parameters.values()]
        except (TypeError, ValueError):
            params = []
        base = params[i] if i < len(params) else f"args[{i}]"
        return base + keystr(path[2:])
    if len(path) >= 2:
        return str(path[1].key) + keystr(path[2:])
    return keystr(path)


def _mapped_size(leaves, axes, names, axis_size) -> int:
    if axis_size is not None:
        axis_size = canonicalize_dim(axis_size, "axis_size of vmap")
        if axis_size < 0:  # a TypeError, as jax's
            raise TypeError(f"vmap axis_size must be nonnegative, got {axis_size}")
    sizes = []
    for x, ax, nm in zip(leaves, axes, names):
        if ax is None:
            continue
        aval = get_aval(x)
        if not isinstance(ax, int):
            raise TypeError(f"vmap in_axes leaves must be ints or None, got {ax!r} for {nm}")
        if not -aval.ndim <= ax < aval.ndim or aval.ndim == 0:
            raise ValueError(
                f"vmap was requested to map its argument along axis {ax}, which implies that "
                f"its rank should be at least {ax + 1 if ax >= 0 else -ax}, but is only "
                f"{aval.ndim} (its shape is {aval.shape}) for argument {nm}")
        sizes.append((aval.shape[ax % aval.ndim], nm, ax, aval))
    if not sizes:
        if axis_size is None:
            raise ValueError("vmap must have at least one non-None value in in_axes, or be "
                             "given axis_size")
        return int(axis_size)
    distinct = {s for s, *_ in sizes}
    if axis_size is not None:
        distinct.add(int(axis_size))
    if len(distinct) > 1:
        lines = [f"  * axis {ax} of argument {nm} of type {aval.str_short()} has size {s}"
                 for s, nm, ax, aval in sizes]
        if axis_size is not None:
            lines.append(f"  * axis_size was given as {axis_size}")
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped:\n"
                         + "\n".join(lines))
    return distinct.pop()
