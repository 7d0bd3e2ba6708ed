"""XLA metadata: attach frontend attributes to the ops minijax emits.

Three forms, as ``jax.experimental.xla_metadata``:

- ``set_xla_metadata(value, key=...)`` tags the op that produced ``value`` (only it,
  and only in the forward pass);
- ``with set_xla_metadata(key=...):`` tags every op created inside, including the
  ops derived from them by ``grad``/``vmap`` and the ops of jitted callees called
  inside (applied when the callee is lowered, without re-tracing it);
- ``@set_xla_metadata(key=...)`` does the same for every call of a function (it
  stacks on ``jit`` too: ``.lower`` of the decorated function is tagged).

Nested contexts merge (the inner value wins) and ``key=None`` removes a key in
the inner region. ``fuse_limit()`` tags ``FUSE_LIMIT="true"``; ``must_fuse_call(id)``
makes a call of a private function tagged ``MUST_FUSE="id"``.
"""

from __future__ import annotations

import functools
from typing import Any
from collections.abc import Callable

import numpy as np

from minijax.core.jaxpr import EqnContext
from minijax.core.trace import Primitive, trace_state, merge_ctx
from minijax.stages.fusion import MustFuseWarning
from minijax.stages.jit import tagged_call
from minijax._pytree import tree_flatten, tree_unflatten

__all__ = ["set_xla_metadata", "fuse_limit", "must_fuse_call", "MustFuseWarning"]


def _render_value(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, float, str, np.integer, np.floating)):
        return str(value)
    raise TypeError(f"set_xla_metadata: the value of {key!r} must be a bool, int, float or "
                    f"str (it becomes an XLA frontend attribute string); got "
                    f"{type(value).__name__} {value!r}")


def _render(kwargs: dict) -> tuple:
    out = []
    for k, v in kwargs.items():
        if not isinstance(k, str) or not k:
            raise TypeError(f"set_xla_metadata: attribute names must be non-empty strings, "
                            f"got {k!r}")
        out.append((k, _render_value(k, v)))
    return tuple(out)


class _MetadataContext:
    """What ``set_xla_metadata(**kw)`` returns: a context manager and a decorator."""

    def __init__(self, metadata: tuple):
        self.metadata = metadata
        self._saved: list = []

    def __enter__(self):
        self._saved.append(trace_state.ctx)
        trace_state.ctx = merge_ctx(trace_state.ctx, EqnContext(self.metadata, ()))
        return self

    def __exit__(self, *exc):
        trace_state.ctx = self._saved.pop()

    def __call__(self, fun: Callable) -> Callable:
        return _Tagged(fun, self.metadata)


class _Tagged:
    """A function (possibly a ``jit``) whose calls and AOT methods run under metadata."""

    def __init__(self, fun: Callable, metadata: tuple):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._metadata = metadata

    def __call__(self, *args, **kwargs):
        with _MetadataContext(self._metadata):
            return self._fun(*args, **kwargs)

    def __getattr__(self, name: str):
        attr = getattr(self._fun, name)
        if name in ("lower", "trace", "eval_shape") and callable(attr):
            @functools.wraps(attr)
            def wrapped(*args, **kwargs):
                with _MetadataContext(self._metadata):
                    return attr(*args, **kwargs)
            return wrapped
        return attr


def set_xla_metadata(*args, **kwargs):
    """Attach XLA frontend attributes (see the module docstring for the three forms).

    >>> y = set_xla_metadata(jnp.sin(x) * 2, breakpoint=True)   # tags the multiply
    >>> with set_xla_metadata(_xla_log=True): ...               # tags every op inside
    """
    metadata = _render(kwargs)
    if len(args) > 1:
        raise TypeError("set_xla_metadata takes at most one positional argument (the value "
                        f"to tag), got {len(args)}")
    if args:
        md = tuple((k, v) for k, v in metadata if v is not None)
        leaves, tree = tree_flatten(args[0])
        return tree_unflatten(tree, [tag_value_p.bind(x, metadata=md) for x in leaves])
    return _MetadataContext(metadata)


def fuse_limit() -> _MetadataContext:
    """Context manager: ops created inside are tagged ``FUSE_LIMIT="true"``, a boundary
    XLA's fusion should not cross."""
    return _MetadataContext((("FUSE_LIMIT", "true"),))


def must_fuse_call(identifier: str | int) -> Callable[[Callable], Callable]:
    """Decorator: the call becomes ``func.call @xla_metadata_call`` tagged
    ``MUST_FUSE="<identifier>"`` (an HLO ``call`` with that frontend attribute)."""
    ident = _render_value("MUST_FUSE", identifier)

    def decorate(fun: Callable) -> Callable:
        @functools.wraps(fun)
        def call(*args, **kwargs):
            return tagged_call(fun, "xla_metadata_call", (("MUST_FUSE", ident),))(*args,
                                                                                **kwargs)
        return call

    return decorate


# ---- the value-tagging primitive --------------------------------------------------------------

tag_value_p = Primitive("xla_metadata_value")
tag_value_p.def_abstract_eval(lambda x, *, metadata: x)


@tag_value_p.def_lowering
def _tag_value_lower(ctx, x, *, metadata):
    # Tag the op that produced x (a function argument has none: nothing to tag).
    if x.op is not None and metadata:
        x.op.add_frontend_attributes(dict(metadata))
    return x


@tag_value_p.def_impl
def _tag_value_impl(x, *, metadata):
    return x


def _tag_value_jvp(primals, tangents, *, metadata):
    # Forward pass only: the tangent is not tagged (as in jax).
    return tag_value_p.bind(primals[0], metadata=metadata), tangents[0]


def _tag_value_batch(trace, vals, dims, *, metadata):
    return tag_value_p.bind(vals[0], metadata=metadata), dims[0]


tag_value_p.def_jvp(_tag_value_jvp)
tag_value_p.def_transpose(lambda ct, x, *, metadata: [ct])
tag_value_p.def_batch(_tag_value_batch)

