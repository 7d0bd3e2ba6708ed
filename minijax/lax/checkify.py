"""checkify: functional error values, the ``check`` primitive and the interpreter that
threads an error through a jaxpr (``minijax.experimental.checkify`` is the public API).

An ``Error`` is a pytree: per kind of error (an ``ErrorEffect``: the exception class and
the shapes of its payload) a boolean *pred* (did it happen), an int32 *code* (which check
fired first: codes grow in program order) and a *payload* (the values the message
formats); the static part maps each code to the exception's pytree structure (message
text, the user's source line). ``checkify`` traces the function to a jaxpr and
interprets it with ``checkify_jaxpr_flat``: each equation goes through its primitive's
``"checkify"`` rule, ``rule(error, enabled_errors, *args, **params) -> (error, outs)``,
or is bound unchanged.

Where the rules live:

- ``check_p`` (below): raises eagerly, and is *discharged* by the interpreter (its error
  merged into the threaded one);
- the automatic checks of ordinary primitives (NaN outputs, division by zero,
  out-of-bounds indices) are one table at the end of this file, as in jax: which
  primitives checkify checks is one list;
- primitives with sub-jaxprs (``jit``, ``cond``, ``scan``, ``while``, ``shard_map``,
  ``custom_jvp_call``, ``custom_vjp_call``, ``checkpoint``) carry their rule in their
  own file, built on ``checkify_closed`` and ``Error.add_placeholder_effects`` here.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapeDtypeStruct
from minijax.core.effects import Effect
from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from minijax.core.trace import (DebugInfo, Primitive, trace_state, get_aval, merge_ctx,
                                trace_to_jaxpr, user_source)
from minijax.core.traceback_util import add_equation_source
from minijax.lax import binary as _bin
from minijax.lax import convert as _convert
from minijax.lax.reduce import argmin, reduce_max, reduce_or
from minijax.lax.select import select
from minijax.lax import shape as _shape
from minijax.lax import slicing as _slicing
from minijax.lax import unary as _unary
from minijax._pytree import (register_pytree_node_class, tree_flatten, tree_leaves, tree_map,
                             tree_unflatten)

__all__ = ["DivisionByZeroError", "Error", "ErrorEffect", "FailedCheckError", "JaxException",
           "JaxRuntimeError", "NaNError", "OOBError", "all_checks", "assert_func",
           "automatic_checks", "check_error_value", "check_p", "checkify_closed",
           "checkify_jaxpr", "checkify_jaxpr_flat", "div_checks", "float_checks",
           "index_checks", "init_error", "nan_checks", "user_checks"]


# ---- the exceptions an Error can hold ---------------------------------------------------------

class JaxException(Exception):
    """An error found by checkify; its message can hold values computed at run time.

    ``traceback_info`` is where the failing operation is in the user's code."""

    def __init__(self, traceback_info):
        self.traceback_info = traceback_info

    def __init_subclass__(cls):
        register_pytree_node_class(cls)

    def tree_flatten(self):
        return ([], self.traceback_info)

    @classmethod
    def tree_unflatten(cls, metadata, payload):
        del payload
        return cls(metadata)

    def get_effect_type(self) -> ErrorEffect:
        raise NotImplementedError


class ErrorEffect(Effect):
    """The kind of an error: its exception class and the types of its payload. Also the
    effect of ``check`` equations (which keeps them from being dropped)."""

    __slots__ = ("error_type", "shape_dtypes")

    def __init__(self, error_type: type, shape_dtypes: tuple = ()):
        super().__init__("ErrorEffect")
        self.error_type = error_type
        self.shape_dtypes = tuple(shape_dtypes)

    def _key(self):
        return (self.error_type, tuple((s.shape, str(s.dtype)) for s in self.shape_dtypes))

    def __eq__(self, other):
        return isinstance(other, ErrorEffect) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __lt__(self, other: ErrorEffect):
        # as jax orders them (by the class's str, then the payload types)
        def unpack(e):
            return (str(e.error_type), tuple((s.shape, str(s.dtype)) for s in e.shape_dtypes))
        return unpack(self) < unpack(other)

    def __repr__(self):
        return f"ErrorEffect(error_type={self.error_type}, shape_dtypes={self.shape_dtypes})"


class DivisionByZeroError(JaxException):

    def __str__(self):
        return "division by zero"

    def get_effect_type(self):
        return ErrorEffect(DivisionByZeroError, ())


class NaNError(JaxException):

    def __init__(self, traceback_info, primitive_name):
        super().__init__(traceback_info)
        self.prim = primitive_name

    def tree_flatten(self):
        return ([], (self.traceback_info, self.prim))

    @classmethod
    def tree_unflatten(cls, metadata, payload):
        del payload
        return cls(*metadata)

    def get_effect_type(self):
        return ErrorEffect(NaNError, ())

    def __str__(self):
        return f"nan generated by primitive: {self.prim}."


class OOBError(JaxException):

    def __init__(self, traceback_info, primitive_name, operand_shape, payload):
        super().__init__(traceback_info)
        self.prim = primitive_name
        self.operand_shape = operand_shape
        self._payload = payload

    def tree_flatten(self):
        return ([self._payload], (self.traceback_info, self.prim, self.operand_shape))

    @classmethod
    def tree_unflatten(cls, metadata, payload):
        return cls(*metadata, payload=payload[0])

    def __str__(self):
        return (f"out-of-bounds indexing for array of "
                f"shape {self.operand_shape}: "
                f"index {self._payload[0]} is out of bounds for axis "
                f"{self._payload[1]} with size {self._payload[2]}. ")

    def get_effect_type(self):
        return ErrorEffect(OOBError, (ShapeDtypeStruct((3,), np.int32),))


class FailedCheckError(JaxException):

    def __init__(self, traceback_info, fmt_string, *a, **k):
        super().__init__(traceback_info)
        self.fmt_string = fmt_string
        self.args = a
        self.kwargs = k

    def tree_flatten(self):
        return ((self.args, self.kwargs), (self.traceback_info, self.fmt_string))

    @classmethod
    def tree_unflatten(cls, metadata, payload):
        args, kwargs = payload
        return cls(*metadata, *args, **kwargs)

    def __str__(self):
        return self.fmt_string.format(*self.args, **self.kwargs) + " (`check` failed)"

    def get_effect_type(self):
        vals = tree_leaves((self.args, self.kwargs))
        return ErrorEffect(FailedCheckError,
                           tuple(ShapeDtypeStruct(get_aval(x).shape, get_aval(x).dtype)
                                 for x in vals))


class BatchedError(JaxException):
    """The errors of a vmapped checkified function, by mapped index."""

    def __init__(self, error_mapping: dict):
        self.error_mapping = error_mapping
        super().__init__(list(error_mapping.values())[0].traceback_info)

    def __str__(self):
        return "\n".join(f"at mapped index {', '.join(map(str, idx))}: {e}"
                         for idx, e in self.error_mapping.items())

    def __repr__(self):
        return f"BatchedError(error_mapping={self.error_mapping!r})"

    def __eq__(self, other):
        return type(other) is BatchedError and self.error_mapping == other.error_mapping

    __hash__ = None


class JaxRuntimeError(ValueError):
    """Raised by ``Error.throw()``, ``check_error`` and a ``check`` run eagerly."""

    _minijax_source = True  # the message is jax's: no "(in check, at ...)" is added


# ---- the error value ------------------------------------------------------------------------

@register_pytree_node_class
class Error:
    """A functional error value: which checks failed, the first failure's message."""

    __slots__ = ("_pred", "_code", "_metadata", "_payload")

    def __init__(self, pred: dict, code: dict, metadata: dict, payload: dict):
        object.__setattr__(self, "_pred", pred)
        object.__setattr__(self, "_code", code)
        object.__setattr__(self, "_metadata", metadata)
        object.__setattr__(self, "_payload", payload)

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def get(self) -> str | None:
        """The error message if an error happened, else None."""
        exc = self.get_exception()
        return None if exc is None else str(exc)

    def get_exception(self) -> JaxException | None:
        """The Python exception if an error happened, else None."""
        if any(np.shape(v) for v in self._pred.values()):
            return self._get_batched_exception()
        min_code, cur = None, None
        for effect, code in self._code.items():
            if self._pred[effect]:
                if min_code is None or code < min_code:
                    min_code, cur = code, effect
        if cur is None:
            return None
        return tree_unflatten(self._metadata[int(min_code)], self._payload[cur])

    def throw(self):
        """Raise ``JaxRuntimeError`` with the message if an error happened."""
        check_error_value(self)

    def __str__(self):
        return f"Error({self.get()})"

    def __repr__(self):
        return (f"Error(_pred={self._pred!r}, _code={self._code!r}, "
                f"_metadata={self._metadata!r}, _payload={self._payload!r})")

    def __eq__(self, other):
        return (type(other) is Error and self._pred == other._pred and
                self._code == other._code and self._metadata == other._metadata and
                self._payload == other._payload)

    __hash__ = None

    def _get_batched_exception(self) -> BatchedError | None:
        shape = np.shape(list(self._pred.values())[0])
        preds = {e: np.asarray(p) for e, p in self._pred.items()}
        codes = {e: np.asarray(c) for e, c in self._code.items()}
        mapping = {}
        for idx in np.ndindex(*shape):
            min_code, cur = None, None
            for effect, code in codes.items():
                if preds[effect][idx]:
                    if min_code is None or code[idx] < min_code:
                        min_code, cur = code[idx], effect
            if cur is not None:
                payload = tree_map(lambda x, i=idx: x[i], self._payload[cur])
                mapping[idx] = tree_unflatten(self._metadata[int(min_code)], payload)
        return BatchedError(mapping) if mapping else None

    def _update(self, effect: ErrorEffect, pred, code, metadata, payload) -> Error:
        return Error({**self._pred, effect: pred}, {**self._code, effect: code},
                     {**self._metadata, **metadata}, {**self._payload, effect: payload})

    def add_placeholder_effects(self, effects) -> Error:
        """This error with an entry (never set) for each of ``effects`` it lacks: a
        control-flow primitive's branches or iterations all see one error type."""
        pred, code, payload = dict(self._pred), dict(self._code), dict(self._payload)
        for effect in sorted(effects):
            if effect not in pred:
                pred[effect] = np.bool_(False)
                payload[effect] = [np.ones(s.shape, s.dtype) for s in effect.shape_dtypes]
                code[effect] = np.int32(-1)
        return Error(pred, code, self._metadata, payload)

    _add_placeholder_effects = add_placeholder_effects

    def _replace(self, **kw) -> Error:
        fields = {"pred": self._pred, "code": self._code, "metadata": self._metadata,
                  "payload": self._payload}
        for k, v in kw.items():
            fields[k.lstrip("_")] = v
        return Error(**fields)

    def tree_flatten(self):
        return ((self._pred, self._code, self._payload), self._metadata)

    @classmethod
    def tree_unflatten(cls, metadata, data):
        pred, code, payload = data
        return cls(pred, code, metadata, payload)


init_error = Error({}, {}, {}, {})  # no error yet
_next_code = itertools.count(1).__next__  # codes grow in program order, process-wide


def _or(a, b):
    if a is False:
        a = np.bool_(False)
    return _bin.bitwise_or(a, b)


def assert_func(error: Error, pred, new_error: JaxException) -> Error:
    """``error`` updated with ``new_error`` where ``pred`` (and no earlier error of its
    kind) holds."""
    code = _next_code()
    effect = new_error.get_effect_type()
    payload, metadata = tree_flatten(new_error)
    return update_error(error, pred, code, {code: metadata}, payload, effect)


def update_error(error: Error, pred, code, metadata: dict, payload, effect) -> Error:
    had = error._pred.get(effect, False)
    out_pred = _or(had, pred)
    had_arr = np.bool_(had) if had is False else had
    if isinstance(code, int):
        code = np.int32(code)
    out_code = select(had_arr, error._code.get(effect, np.int32(-1)), code)
    cur = error._payload.get(effect)
    if cur is not None:
        out_payload = tree_map(lambda old, new: select(had_arr, old, new), cur, payload)
    else:
        out_payload = payload
    return error._update(effect, out_pred, out_code, metadata, out_payload)


def get_traceback():
    """Where the equation being checked was made (or the caller, outside the interpreter)."""
    src = trace_state.source
    return src if src is not None else user_source(2)


# ---- the interpreter ----------------------------------------------------------------------------

def _default_rule(prim: Primitive, error, enabled, *args, **params):
    return error, prim.bind(*args, **params)


def checkify_jaxpr_flat(jaxpr: Jaxpr, consts: Sequence[Any], enabled, err_tree,
                        *args) -> tuple[Error, list]:
    """Evaluate ``jaxpr`` under the current trace, threading an error through it.

    ``args`` are the error's leaves (structure ``err_tree``) then the jaxpr's inputs."""
    n = err_tree.num_leaves
    error = tree_unflatten(err_tree, args[:n])
    env: dict = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v] = x
    for v, x in zip(jaxpr.invars, args[n:]):
        env[v] = x

    def read(a):
        return a.val if type(a) is Literal else env[a]

    outer_ctx, outer_src = trace_state.ctx, trace_state.source
    eqn = None
    try:
        for eqn in jaxpr.eqns:
            trace_state.ctx = merge_ctx(outer_ctx, eqn.ctx)
            trace_state.source = eqn.source or outer_src
            rule = eqn.primitive.rules.get("checkify")
            ins = [read(a) for a in eqn.invars]
            if rule is None:
                outs = eqn.primitive.bind(*ins, **eqn.params)
            else:
                error, outs = rule(error, enabled, *ins, **eqn.params)
            if eqn.primitive.multiple_results:
                for v, x in zip(eqn.outvars, outs):
                    env[v] = x
            else:
                env[eqn.outvars[0]] = outs
    except Exception as e:
        if eqn is not None:
            add_equation_source(e, eqn)
        raise
    finally:
        trace_state.ctx, trace_state.source = outer_ctx, outer_src
    return error, [read(a) for a in jaxpr.outvars]


def checkify_jaxpr(closed: ClosedJaxpr, enabled, error: Error, *args) -> tuple[Error, list]:
    err_vals, err_tree = tree_flatten(error)
    return checkify_jaxpr_flat(closed.jaxpr, closed.consts, enabled, err_tree, *err_vals, *args)


def checkify_closed(closed: ClosedJaxpr | Jaxpr, enabled, err_tree, in_avals: Sequence,
                    err_pos: int = 0):
    """The checkified ``closed`` as a closed jaxpr over ``in_avals``: the error's leaves
    (structure ``err_tree``) sit at ``err_pos`` among its inputs, and come first among its
    outputs. Returns ``(checked, out_tree, effects)``: ``out_tree`` is the structure of
    ``(error, outputs)``, ``effects`` the error kinds the output error can hold."""
    if isinstance(closed, Jaxpr):
        closed = ClosedJaxpr(closed, [])
    n = err_tree.num_leaves
    box = []

    def fun(*args):
        errs = args[err_pos:err_pos + n]
        rest = args[:err_pos] + args[err_pos + n:]
        error, outs = checkify_jaxpr_flat(closed.jaxpr, closed.consts, enabled, err_tree,
                                          *errs, *rest)
        flat, tree = tree_flatten((error, outs))
        box.append((tree, set(error._pred)))
        return flat, None

    dbg = closed.jaxpr.debug_info
    debug = dbg if isinstance(dbg, DebugInfo) else DebugInfo("checkify", "checkify", None)
    jaxpr, consts, _ = trace_to_jaxpr(fun, list(in_avals), debug)
    out_tree, effects = box[0]
    return ClosedJaxpr(jaxpr, consts), out_tree, effects


# ---- check_p ----------------------------------------------------------------------------------

check_p = Primitive("check", multiple_results=True)  # no results

functionalization_error_message = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
    "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
    "functionalizing it through `checkify.checkify`.")


def _error_effects(err_tree) -> frozenset:
    error = tree_unflatten(err_tree, [None] * err_tree.num_leaves)
    return frozenset(error._pred)


def _check_impl(*args, err_tree, debug):
    if debug:  # a debug_check runs only when checkified
        return []
    exc = tree_unflatten(err_tree, args).get_exception()
    if exc is not None:
        raise JaxRuntimeError(str(exc)) from exc
    return []


def _check_lower(ctx, *args, err_tree, debug):
    if debug:
        return []
    e = ValueError(functionalization_error_message)
    e._minijax_source = True  # jax's message as it is (no "(in check, at ...)")
    raise e


def _check_jvp(primals, tangents, *, err_tree, debug):
    check_p.bind(*primals, err_tree=err_tree, debug=debug)  # checks the primal values only
    return [], []


def _check_transpose(cts, *args, err_tree, debug):
    return [None] * len(args)


def _check_batch(trace, vals, dims, *, err_tree, debug):
    from minijax.transforms.batching import bdim_at
    size = trace.axis_size
    vals = [bdim_at(v, d, size, 0) for v, d in zip(vals, dims)]
    bind_error(tree_unflatten(err_tree, vals), debug=debug)
    return [], []


def _check_discharge(error, enabled, *args, err_tree, debug):
    """Under checkify: merge the checked error into the threaded one (the kinds enabled)."""
    del debug
    new = tree_unflatten(err_tree, args)
    out = error
    for effect in new._pred:
        if effect.error_type in enabled:
            out = update_error(out, new._pred[effect], new._code[effect], {},
                               new._payload[effect], effect)
    out = out._replace(metadata={**new._metadata, **out._metadata})
    return out, []


check_p.def_impl(_check_impl)
check_p.def_abstract_eval(lambda *avals, err_tree, debug: [])
check_p.def_lowering(_check_lower)
check_p.def_jvp(_check_jvp)
check_p.def_transpose(_check_transpose)
check_p.def_batch(_check_batch)
check_p.def_rule("effects")(lambda params: _error_effects(params["err_tree"]))
check_p.def_rule("checkify")(_check_discharge)
check_p.pp_params = lambda params: {"debug": params["debug"]}


def _index0(x, idx):
    """``x[idx]`` along the leading axis, ``idx`` a traced scalar."""
    return _slicing.dynamic_index_in_dim(x, idx, 0, keepdims=False)


def _reduce_any_error(error: Error) -> Error:
    """One error out of a batched one: the last mapped element that failed (as jax's
    ``argsort(pred)[-1]``)."""
    out = init_error
    for effect in error._pred:
        pred = error._pred[effect]
        size = get_aval(pred).shape[0]
        pos = _shape.iota(np.int32, size)
        last = reduce_max(select(pred, pos, np.full(size, -1, np.int32)),
                                  (0,))
        idx = select(_bin.lt(last, np.int32(0)), np.int32(size - 1), last)
        pred_i, code_i, payload_i = tree_map(lambda x, i=idx: _index0(x, i),
                                             (pred, error._code[effect], error._payload[effect]))
        out = out._update(effect, pred_i, code_i, {}, payload_i)
    return out._replace(metadata=error._metadata)


def bind_error(error: Error, *, debug: bool = False):
    """Raise ``error`` as a ``check`` does: eagerly, or staged as a ``check`` equation."""
    if any(get_aval(p).shape for p in error._pred.values()):
        error = _reduce_any_error(error)
    leaves, tree = tree_flatten(error)
    return check_p.bind(*leaves, err_tree=tree, debug=debug)


def check_error_value(error: Error) -> None:
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes an Error as argument, got type {type(error)} "
                        f"instead.")
    bind_error(error, debug=False)


# ---- automatic checks ---------------------------------------------------------------------------

user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


def _any(x):
    aval = get_aval(x)
    return reduce_or(x, tuple(range(aval.ndim)))


def _isnan_any(x):
    aval = get_aval(x)
    if not (dtypes.is_inexact(aval.dtype)):
        return None
    return _any(_bin.ne(x, x))


def check_nans(prim: Primitive, error: Error, enabled, out) -> Error:
    if NaNError not in enabled:
        return error
    outs = out if prim.multiple_results else [out]
    found = [f for f in (_isnan_any(o) for o in outs) if f is not None]
    if not found:
        return error
    any_nan = found[0]
    for f in found[1:]:
        any_nan = _bin.bitwise_or(any_nan, f)
    return assert_func(error, any_nan, NaNError(get_traceback(), prim.name))


def _nan_rule(prim: Primitive) -> Callable:
    def rule(error, enabled, *args, **params):
        out = prim.bind(*args, **params)
        return check_nans(prim, error, enabled, out), out
    return rule


def _div_rule(error, enabled, x, y):
    if DivisionByZeroError in enabled:
        zero = dtypes.scalar_const(0, get_aval(y).dtype, False)
        error = assert_func(error, _any(_bin.eq(y, zero)), DivisionByZeroError(get_traceback()))
    out = _bin.div_p.bind(x, y)
    return check_nans(_bin.div_p, error, enabled, out), out


def _as_int32(x):
    return x if get_aval(x).dtype == np.int32 else \
        _convert.convert_element_type(x, np.int32)


def _take(values: Sequence[int], idx):
    """``np.asarray(values, int32)[idx]`` for a traced scalar ``idx``."""
    return _index0(np.asarray(values, np.int32), idx)


def oob_payload(oob_mask, indices, dims_map: Sequence[int], operand_shape) -> Any:
    """``[index, axis, axis size]`` (int32) of the first out-of-bounds index."""
    shape = get_aval(indices).shape
    size = int(np.prod(shape))
    flat_mask = _shape.reshape(oob_mask, (size,))
    flat_idx = argmin(_unary.bitwise_not(flat_mask), 0, np.int32)
    last_dim = shape[-1] if shape else 1
    pos = _bin.rem(flat_idx, np.int32(last_dim)) if shape else np.int32(0)
    oob_axis = _take(list(dims_map), pos)
    axis_size = _take(list(operand_shape), oob_axis)
    oob_index = _as_int32(_index0(_shape.reshape(indices, (size,)), flat_idx))
    parts = [_shape.reshape(v, (1,)) for v in (oob_index, oob_axis, axis_size)]
    return _shape.concatenate(parts, 0)


def _stack_indices(indices):
    dt = get_aval(indices[0]).dtype
    cols = [_shape.reshape(i if get_aval(i).dtype == dt else
                           _convert.convert_element_type(i, dt), (1,)) for i in indices]
    return _shape.concatenate(cols, 0)


def _dynamic_slice_rule(error, enabled, operand, *start_indices, slice_sizes):
    out = _slicing.dynamic_slice_p.bind(operand, *start_indices, slice_sizes=slice_sizes)
    if OOBError not in enabled or not start_indices:
        return error, out
    starts = _stack_indices(start_indices)
    dt = get_aval(starts).dtype
    shape = get_aval(operand).shape
    bound = np.array(shape, dt) - np.array(slice_sizes, dt)
    mask = _bin.bitwise_or(_bin.lt(starts, np.zeros(len(shape), dt)), _bin.gt(starts, bound))
    payload = oob_payload(mask, starts, range(len(shape)), shape)
    return assert_func(error, _any(mask),
                       OOBError(get_traceback(), "dynamic_slice", shape, payload)), out


def _dynamic_update_slice_rule(error, enabled, operand, update, *start_indices):
    out = _slicing.dynamic_update_slice_p.bind(operand, update, *start_indices)
    if OOBError not in enabled or not start_indices:
        return error, out
    starts = _stack_indices(start_indices)
    dt = get_aval(starts).dtype
    shape = get_aval(operand).shape
    bound = np.array(shape, dt) - np.array(get_aval(update).shape, dt)
    mask = _bin.bitwise_or(_bin.lt(starts, np.zeros(len(shape), dt)), _bin.gt(starts, bound))
    payload = oob_payload(mask, starts, range(len(shape)), shape)
    return assert_func(error, _any(mask),
                       OOBError(get_traceback(), "dynamic_update_slice", shape, payload)), out


def _bounds_mask(indices, upper: np.ndarray):
    """``indices < 0 | indices > upper`` with ``upper`` along the index vector (last) axis."""
    aval = get_aval(indices)
    upper = np.minimum(upper, np.iinfo(aval.dtype).max).astype(aval.dtype)
    ub = _shape.broadcast_in_dim(upper, aval.shape, (aval.ndim - 1,))
    zero = dtypes.scalar_const(0, aval.dtype, False)
    return _bin.bitwise_or(_bin.lt(indices, zero), _bin.gt(indices, ub))


def _gather_rule(error, enabled, operand, indices, **params):
    out = _gather_p().bind(operand, indices, **params)
    if OOBError not in enabled:
        return error, out
    dnums = params["dimension_numbers"]
    shape = get_aval(operand).shape
    smap = np.array(dnums.start_index_map, np.int64)
    upper = np.array(shape, np.int64)[smap] - np.array(params["slice_sizes"], np.int64)[smap]
    mask = _bounds_mask(indices, upper)
    payload = oob_payload(mask, indices, dnums.start_index_map, shape)
    return assert_func(error, _any(mask),
                       OOBError(get_traceback(), "gather", shape, payload)), out


def _gather_p():
    from minijax.lax.gather_scatter import gather_p
    return gather_p


def _scatter_rule(prim: Primitive) -> Callable:
    def rule(error, enabled, operand, indices, updates, **params):
        out = prim.bind(operand, indices, updates, **params)
        if OOBError not in enabled:
            return error, out
        dnums = params["dimension_numbers"]
        shape = get_aval(operand).shape
        ushape = get_aval(updates).shape
        sizes, pos = [], 0
        for i in range(len(shape)):
            if i in dnums.inserted_window_dims or i in getattr(dnums, "operand_batching_dims",
                                                               ()):
                sizes.append(1)
            else:
                sizes.append(ushape[dnums.update_window_dims[pos]])
                pos += 1
        upper = np.array([shape[i] - sizes[i] for i in dnums.scatter_dims_to_operand_dims],
                         np.int64)
        mask = _bounds_mask(indices, upper)
        payload = oob_payload(mask, indices, dnums.scatter_dims_to_operand_dims, shape)
        error = assert_func(error, _any(mask), OOBError(get_traceback(), prim.name, shape,
                                                        payload))
        return check_nans(prim, error, enabled, out), out
    return rule


def _register_automatic_checks() -> None:
    import minijax.lax  # noqa: F401  (every primitive family registered)
    from minijax.core.trace import registered_primitives
    prims = {p.name: p for p in registered_primitives()}
    # Every primitive that can make a NaN (jax's list).
    nan_primitives = [prims[n] for n in (
        "acos", "acosh", "add", "asin", "asinh", "atan2", "atan", "atanh", "bessel_i0e",
        "bessel_i1e", "cbrt", "conv_general_dilated", "cos", "cosh", "cumlogsumexp", "cummax",
        "cummin", "cumprod", "cumsum", "digamma", "dot_general", "erf_inv", "erf", "erfc",
        "exp", "expm1", "fft", "igamma_grad_a", "igamma", "igammac", "integer_pow", "lgamma",
        "custom_linear_solve", "log1p", "log", "logistic", "mul", "pad", "pow", "psum",
        "reduce", "reduce_prod", "reduce_sum", "reduce_window", "reduce_window_sum",
        "regularized_incomplete_beta", "rem", "rng_uniform", "rsqrt", "sin", "sinh", "sqrt",
        "sub", "tan", "tanh")]
    for p in nan_primitives:
        p.def_rule("checkify")(_nan_rule(p))
    _bin.div_p.def_rule("checkify")(_div_rule)
    _slicing.dynamic_slice_p.def_rule("checkify")(_dynamic_slice_rule)
    _slicing.dynamic_update_slice_p.def_rule("checkify")(_dynamic_update_slice_rule)
    prims["gather"].def_rule("checkify")(_gather_rule)
    for p in (prims[n] for n in ("scatter", "scatter-add", "scatter-mul", "scatter-min",
                                 "scatter-max")):
        p.def_rule("checkify")(_scatter_rule(p))


_register_automatic_checks()


def hoist_consts(closed: ClosedJaxpr) -> tuple[ClosedJaxpr, list]:
    """``closed`` with its consts as leading inputs (for primitives whose sub-jaxprs close
    over nothing), and those consts."""
    j = closed.jaxpr
    if not j.constvars:
        return closed, []
    return (ClosedJaxpr(Jaxpr([], [*j.constvars, *j.invars], j.outvars, j.eqns, j.debug_info),
                        []), list(closed.consts))


def hoist_branch_consts(branches: Sequence[ClosedJaxpr]) -> tuple[list[ClosedJaxpr], list]:
    """Branches that close over nothing, each taking every branch's consts first."""
    from minijax.core.jaxpr import Var
    consts = [c for b in branches for c in b.consts]
    new = []
    for i, b in enumerate(branches):
        j = b.jaxpr
        lead = []
        for k, other in enumerate(branches):
            lead.extend(j.constvars if k == i else
                        [Var(v.aval) for v in other.jaxpr.constvars])
        new.append(ClosedJaxpr(Jaxpr([], [*lead, *j.invars], j.outvars, j.eqns, j.debug_info),
                               []))
    return new, consts


def merge_metadata(out_trees, flat) -> Error:
    """The error out of a primitive whose sub-jaxprs (branches) were checkified apart: the
    first one's, with every one's codes."""
    err0, out = tree_unflatten(out_trees[0], flat)
    md = dict(err0._metadata)
    for tree in out_trees[1:]:
        err, _ = tree_unflatten(tree, flat)
        md.update(err._metadata)
    return err0._replace(metadata=md), out
