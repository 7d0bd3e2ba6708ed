"""pbroadcast, pshuffle, pswapaxes, pcast: collectives written with parallel.py's.

- ``pbroadcast(x, axis_name, source)``: every member gets member ``source``'s ``x``
  (its slice of an ``all_gather``).
- ``pshuffle(x, axis_name, perm)``: member ``i`` gets member ``perm[i]``'s ``x`` (a
  ``ppermute``).
- ``pswapaxes(x, axis_name, axis)``: ``all_to_all`` splitting and concatenating
  ``axis``.
- ``pcast(x, axis_name, to=...)``: jax's cast between varying and invariant types for
  shard_map's checks; minijax infers replication itself, so the value is returned
  unchanged (after checking ``to``).

``psend``/``precv`` (point-to-point with tokens) and ``ragged_all_to_all`` raise
NotImplementedError.
"""

from __future__ import annotations

from minijax.core.trace import Primitive
from minijax.lax.parallel import all_gather, all_to_all, ppermute
from minijax.lax.slicing import index_in_dim
from minijax._pytree import tree_map

ragged_all_to_all_p = Primitive("ragged_all_to_all")


def _no_ragged_all_to_all(*args, **params):
    raise NotImplementedError("ragged_all_to_all is not supported in minijax: XLA:CPU's "
                              "collectives here have no ragged all-to-all")


# Registration (no rules: binding it raises).
ragged_all_to_all_p.def_abstract_eval(_no_ragged_all_to_all)


def pbroadcast(x, axis_name, source: int):
    """Every member of ``axis_name`` gets member ``source``'s ``x`` (mirrors
    ``jax.lax.pbroadcast``)."""
    source = int(source)
    return tree_map(lambda v: index_in_dim(all_gather(v, axis_name), source, 0, False), x)


def pshuffle(x, axis_name, perm):
    """Member ``i`` of ``axis_name`` gets member ``perm[i]``'s ``x`` (mirrors
    ``jax.lax.pshuffle``)."""
    perm = [int(p) for p in perm]
    if set(perm) != set(range(len(perm))):
        raise ValueError(f"`perm` does not represent a permutation: {perm}")
    return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


def pswapaxes(x, axis_name, axis: int, *, axis_index_groups=None):
    """Swap the named axis ``axis_name`` with positional ``axis`` (an ``all_to_all``
    splitting and concatenating ``axis``; mirrors ``jax.lax.pswapaxes``)."""
    if axis_index_groups is not None:
        raise NotImplementedError("pswapaxes: axis_index_groups is not supported in minijax")
    return all_to_all(x, axis_name, axis, axis)


_CASTS = ("varying", "invariant", "unreduced", "reduced")


def pcast(x, axis_name, *, to: str):
    """jax's cast of ``x``'s type along ``axis_name`` (``to='varying'``, ...) for
    shard_map's replication checks; minijax tracks replication itself, so the values are
    returned unchanged."""
    if to not in _CASTS:
        raise ValueError(f"pcast: `to` must be one of {list(_CASTS)}, got {to!r}")
    return x


def psend(x, axis_name, perm):
    """Point-to-point send (not supported in minijax: raises NotImplementedError)."""
    raise NotImplementedError("lax.psend needs XLA tokens, which minijax does not model; use "
                              "ppermute")


def precv(token, out_shape, axis_name, perm):
    """Point-to-point receive (not supported in minijax: raises NotImplementedError)."""
    raise NotImplementedError("lax.precv needs XLA tokens, which minijax does not model; use "
                              "ppermute")


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes,
                      *, axis_name, axis_index_groups=None):
    """Ragged all-to-all (not supported in minijax: raises NotImplementedError)."""
    _no_ragged_all_to_all()
