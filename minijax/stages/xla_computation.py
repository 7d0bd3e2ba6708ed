"""``xla_computation``: the unoptimized XLA computation of a function, from example args.

The function is traced like ``jit`` (with the named axes of ``axis_env`` bound,
so collectives lower to cross-replica ops whose replica groups come from it),
lowered to StableHLO with the requested sharding and aliasing attributes, and
converted to an XLA ``HloModule``::

    >>> c = minijax.xla_computation(lambda x: x - minijax.lax.psum(x, 'i'),
    ...                             axis_env=[('i', 4)])(2)
    >>> print(c.as_hlo_text())      # all-reduce ... replica_groups={{0,1,2,3}}
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from minijax.core.aval import ShapeDtypeStruct
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.trace import extend_axis_env, gc_paused
from minijax.core.traceback_util import api_boundary, user_stacklevel
from minijax.lowering import mlir
from minijax.lowering.lower import lower_module
from minijax.lowering.types import string_attr
from minijax.stages.common import as_tuple, fun_name, module_name, result_names
from minijax._pytree import tree_flatten

__all__ = ["XlaComputation", "xla_computation"]

# Platforms one may lower for; none of them needs to be present.
_PLATFORMS = ("cpu", "gpu", "cuda", "rocm", "tpu")
# With tuple_args=None, arguments are passed as one tuple above this many.
_TUPLE_ARGS_THRESHOLD = 100


class XlaComputation:
    """An unoptimized XLA computation built by ``xla_computation``.

    Offers jaxlib's ``XlaComputation`` methods (``as_hlo_text``,
    ``as_serialized_hlo_module_proto``, ``as_hlo_dot_graph``, ``as_hlo_module``,
    ``program_shape``, ...) plus the jaxpr it was lowered from (``jaxpr``,
    ``as_jaxpr_dot_graph``) and the StableHLO text (``as_stablehlo_text``).
    """

    def __init__(self, computation, jaxpr: ClosedJaxpr, name: str, stablehlo: str,
                 arg_names: Sequence[str], result_names: Sequence[str]):
        self._computation = computation
        self.jaxpr = jaxpr
        self._name = name
        self._stablehlo = stablehlo
        self._arg_names = list(arg_names)
        self._result_names = list(result_names)

    def as_hlo_text(self, print_large_constants: bool = False) -> str:
        """The HLO module as text."""
        return self._computation.as_hlo_text(print_large_constants)

    def as_serialized_hlo_module_proto(self) -> bytes:
        """The ``HloModuleProto``, serialized."""
        return self._computation.as_serialized_hlo_module_proto()

    def as_hlo_dot_graph(self) -> str:
        """XLA's Graphviz dot graph of the HLO module."""
        return self._computation.as_hlo_dot_graph()

    def as_hlo_module(self):
        """jaxlib's ``HloModule``."""
        return self._computation.as_hlo_module()

    def as_jaxpr_dot_graph(self) -> str:
        """A Graphviz dot graph of the jaxpr: inputs, equations and outputs as nodes."""
        from minijax.stages.dot_graph import jaxpr_to_dot
        return jaxpr_to_dot(self.jaxpr, name=self._name, arg_names=self._arg_names,
                            result_names=self._result_names)

    def as_stablehlo_text(self) -> str:
        """The StableHLO module the HLO was converted from (generic form)."""
        return self._stablehlo

    def __getattr__(self, name: str) -> Any:  # program_shape, get_hlo_module, hash, name
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._computation, name)

    def __repr__(self) -> str:
        return f"<minijax.XlaComputation {self._name}>"


# ---- partition specs (in_parts / out_parts) ------------------------------------------------

def _is_partition_spec(x) -> bool:
    """A partition spec: a (non-namedtuple) tuple or list of ints, one per dimension."""
    return (isinstance(x, (tuple, list)) and not hasattr(x, "_fields")
            and all(isinstance(d, int) and not isinstance(d, bool) for d in x))


def _spec_leaf(x) -> bool:
    return x is None or _is_partition_spec(x)


def _flat_specs(what: str, spec, value_tree, avals: Sequence) -> list[str]:
    """``mhlo.sharding`` text per leaf of ``value_tree``, from the prefix tree ``spec``.

    A leaf of ``spec`` is ``None`` (replicated) or a partition spec (the number of
    pieces each dimension is split into); it applies to every leaf below it.
    """
    spec_leaves, spec_tree = tree_flatten(spec, is_leaf=_spec_leaf)
    try:
        subtrees = spec_tree.flatten_up_to(value_tree)
    except (ValueError, TypeError) as e:
        raise ValueError(
            f"xla_computation {what} specification must be a tree prefix of the "
            f"corresponding value (each entry None or a tuple of ints), got specification "
            f"{spec!r} for value {value_tree!r}: {e}") from None
    out = []
    for s, sub in zip(spec_leaves, subtrees):
        out.extend([s] * len(tree_flatten(sub)[0]))
    return [_sharding_text(what, s, a) for s, a in zip(out, avals)]


def _sharding_text(what: str, spec, aval) -> str:
    if spec is None or (len(spec) == 0 and aval.ndim == 0):
        return "{replicated}"
    spec = tuple(spec)
    if len(spec) != aval.ndim:
        raise ValueError(
            f"xla_computation {what} partition spec {spec} has {len(spec)} entries but the "
            f"value it applies to has rank {aval.ndim} ({aval.str_short()}); give one "
            f"entry per dimension")
    if any(d < 1 for d in spec):
        raise ValueError(f"xla_computation {what} partition spec {spec} must hold "
                         f"positive ints")
    n = math.prod(spec)
    return "{devices=[" + ",".join(map(str, spec)) + "]" + ",".join(map(str, range(n))) + "}"


# ---- donation ----------------------------------------------------------------------------

def _aliases(in_avals, donated: Sequence[bool], out_avals) -> tuple[list[int | None], list]:
    """For each donated input, the first unaliased output of the same type (or None)."""
    free = list(range(len(out_avals)))
    aliases: list[int | None] = []
    unused = []
    for aval, d in zip(in_avals, donated):
        k = None
        if d:
            k = next((j for j in free if out_avals[j].shape == aval.shape
                      and out_avals[j].dtype == aval.dtype), None)
            if k is None:
                unused.append(aval)
            else:
                free.remove(k)
        aliases.append(k)
    return aliases, unused


# ---- the API -----------------------------------------------------------------------------

def _check_axis_env(axis_env) -> tuple:
    if axis_env is None:
        return ()
    env = []
    for item in axis_env:
        try:
            name, size = item
        except (TypeError, ValueError):
            raise TypeError(f"axis_env entries must be (axis_name, size) pairs, got "
                            f"{item!r}") from None
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"axis_env size of axis {name!r} must be a positive int, "
                             f"got {size!r}")
        env.append((name, int(size)))
    names = [n for n, _ in env]
    if len(set(names)) != len(names):
        raise ValueError(f"axis_env names must be distinct, got {names}")
    return tuple(env)


def xla_computation(fun: Callable, static_argnums: int | Iterable[int] = (),
                    axis_env: Sequence[tuple[Any, int]] | None = None,
                    in_parts=None, out_parts=None, backend: str | None = None,
                    tuple_args: bool | None = False,
                    instantiate_const_outputs: bool | None = None,
                    return_shape: bool = False,
                    donate_argnums: int | Iterable[int] = ()) -> Callable:
    """Make a function that builds ``fun``'s XLA computation from example arguments.

    Parameters
    ----------
    fun : the function.
    static_argnums : positional arguments that are static (as in ``jit``).
    axis_env : ``[(axis_name, size), ...]`` named axes for collectives (as ``pmap``
        would bind them); replicas are numbered row-major over these axes.
    in_parts, out_parts : partitioning of each argument/output (a prefix tree of
        ``None`` = replicated, or a tuple with the number of pieces per dimension),
        written as ``sharding`` annotations in the HLO. ``in_parts`` covers the
        non-static positional arguments; keyword arguments are not annotated.
    backend : platform to lower for ('cpu', 'gpu', 'tpu'); need not be present.
    tuple_args : pass the arguments as one tuple parameter; ``None``: only when there
        are more than 100 of them.
    instantiate_const_outputs : deprecated, does nothing.
    return_shape : also return the output shapes (a pytree of ``ShapeDtypeStruct``).
    donate_argnums : arguments whose buffers the computation may reuse for an output
        of the same type (``input_output_alias`` in the HLO module).

    Returns
    -------
    A function of example arguments (arrays, scalars, or any objects with ``shape``
    and ``dtype``) returning an ``XlaComputation`` (or ``(computation, out_shapes)``).
    """
    if not callable(fun):
        raise TypeError(f"xla_computation expects a callable, got {fun!r}")
    if instantiate_const_outputs is not None:
        warnings.warn("instantiate_const_outputs is deprecated and does nothing",
                      DeprecationWarning, stacklevel=2)
    if backend is not None and backend not in _PLATFORMS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {list(_PLATFORMS)}")
    env = _check_axis_env(axis_env)
    static_nums = as_tuple(static_argnums)
    donate_nums = as_tuple(donate_argnums)
    name = fun_name(fun)
    mod_name = module_name(name, "xla_computation")

    @functools.wraps(fun)
    def computation_maker(*args, **kwargs):
        from minijax.stages.jit import Wrapped, trace_entry
        n = len(args)
        bad = [i for i in static_nums if not -n <= i < n]
        if bad:
            raise ValueError(f"xla_computation of {name} has static_argnums={static_nums} but "
                             f"was called with only {n} positional argument(s)")
        # A fresh Wrapped per call: its trace cache does not know the axis environment.
        wrapped = Wrapped(fun, static_argnums=static_nums, donate_argnums=donate_nums)
        with extend_axis_env(env):
            entry = trace_entry(wrapped, args, kwargs)
        if entry.hoisted:
            raise ValueError(f"xla_computation of {name}: the function closes over traced "
                             "values of an enclosing transformation")
        closed = entry.closed
        in_avals, out_avals = closed.in_avals, closed.out_avals

        arg_attrs = [[] for _ in in_avals]
        if in_parts is not None:
            dyn_args = entry.in_tree.children()[0]  # the dynamic positional arguments
            n_pos = dyn_args.num_leaves
            texts = _flat_specs("in_parts", in_parts, _placeholder_tree(dyn_args),
                                in_avals[:n_pos])
            for i, t in enumerate(texts):
                arg_attrs[i].append(f"mhlo.sharding = {string_attr(t)}")
        aliases, unused = _aliases(in_avals, entry.donated, out_avals)
        for i, k in enumerate(aliases):
            if k is not None:
                arg_attrs[i].append(f"tf.aliasing_output = {k} : i32")
        if unused:
            warnings.warn("Some donated buffers were not usable: "
                          + ", ".join(a.str_short() for a in unused),
                          stacklevel=user_stacklevel())
        res_attrs = None
        if out_parts is not None:
            texts = _flat_specs("out_parts", out_parts, _placeholder_tree(entry.out_tree),
                                out_avals)
            res_attrs = [f"mhlo.sharding = {string_attr(t)}" for t in texts]

        res_names = result_names(entry.out_paths)
        with gc_paused():
            text = lower_module(
                closed, module_name=mod_name,
                name_prefix=f"xla_computation({name})", arg_names=entry.arg_names,
                result_names=res_names, arg_attrs=[", ".join(a) for a in arg_attrs],
                result_attrs=res_attrs, axis_env=env,
                num_replicas=math.prod(s for _, s in env))
        use_tuple = len(in_avals) > _TUPLE_ARGS_THRESHOLD if tuple_args is None \
            else bool(tuple_args)
        built = mlir.to_xla_computation(text, tuple_args=use_tuple, return_tuple=True)
        comp = XlaComputation(built, closed, mod_name, text,
                              entry.arg_names, res_names)
        if not return_shape:
            return comp
        shapes = entry.out_tree.unflatten(
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in out_avals)
        return comp, shapes

    return api_boundary(computation_maker)


class _Leaf:
    """A placeholder leaf for matching a prefix spec against a tree structure."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


def _placeholder_tree(treedef):
    return treedef.unflatten([_Leaf()] * treedef.num_leaves)
