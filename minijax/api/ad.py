"""The public autodiff functions: ``jvp``, ``vjp``, ``linearize``, ``grad`` and
``value_and_grad``, mirroring jax's.

They handle what users hand in (pytrees, ``argnums``, ``has_aux``, Python scalars, dtype
checks with jax's errors) and hand flat lists to the interpreter in
``minijax.transforms.ad`` (forward mode, partial evaluation, transposition).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.trace import (DebugInfo, Tracer, eval_jaxpr, get_aval, made_in_trace,
                                trace_to_jaxpr)
from minijax.core.traceback_util import api_boundary
from minijax.api.naming import GRAD_DOC, VALUE_AND_GRAD_DOC, index_or_tuple, wraps
from minijax.stages.common import abstractify, fun_name
from minijax.lax.convert import convert_element_type
from minijax.runtime.transfer import device_put
from minijax.transforms.ad import (UndefinedPrimal, Zero, backward_pass, instantiate, jvp_flat,
                                   linearize_flat, tangent_aval)
from minijax._pytree import (Partial, keystr, tree_flatten, tree_flatten_with_path,
                             tree_unflatten)


def _check_tangent(p, t, i):
    pa, ta = get_aval(p), get_aval(t)
    want = tangent_aval(pa)
    if pa.shape != ta.shape:
        raise ValueError(f"jvp called with different primal and tangent shapes at position "
                         f"{i}: primal {pa.str_short()}, tangent {ta.str_short()}")
    if ta.dtype != want.dtype:
        raise TypeError(
            f"primal and tangent arguments to jvp do not match at position {i}: dtypes must "
            f"be equal, or for an integer/boolean primal the tangent dtype must be float0; "
            f"got primal dtype {pa.dtype.name} and tangent dtype {ta.dtype.name}")


@api_boundary
def jvp(fun: Callable, primals, tangents, has_aux: bool = False):
    """``(fun(*primals), J fun(primals) @ tangents)``; mirrors ``jax.jvp``."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("primal and tangent arguments to jvp must be tuples or lists; found "
                        f"{type(primals).__name__} and {type(tangents).__name__}")
    p_flat, p_tree = tree_flatten(tuple(primals))
    t_flat, t_tree = tree_flatten(tuple(tangents))
    if p_tree != t_tree:
        raise TypeError(f"primal and tangent arguments to jvp must have the same tree "
                        f"structure; got {p_tree} and {t_tree}")
    for i, (p, t) in enumerate(zip(p_flat, t_flat)):
        _check_tangent(p, t, i)
    aux_box = []

    def flat_fun(*xs):
        out = fun(*tree_unflatten(p_tree, xs))
        if has_aux:
            out, aux = out
            aux_box.append(aux)
        leaves, tree = tree_flatten(out)
        aux_box.insert(0, tree)
        return leaves

    outs, touts = jvp_flat(flat_fun, p_flat, t_flat)
    out_tree = aux_box[0]
    # as jax: outputs come back as the function made them (a Python float stays one); only
    # symbolic zero tangents are made arrays
    touts = [_as_array(instantiate(t)) if type(t) is Zero else t for t in touts]
    res = (tree_unflatten(out_tree, outs), tree_unflatten(out_tree, touts))
    if has_aux:
        return res + (aux_box[1],)
    return res


@api_boundary
def vjp(fun: Callable, *primals, has_aux: bool = False):
    """``(fun(*primals), vjp_fn)`` where ``vjp_fn(ct)`` pulls a cotangent back; mirrors
    ``jax.vjp``."""
    p_flat, p_tree = tree_flatten(primals)
    box = []

    def flat_fun(*xs):
        out = fun(*tree_unflatten(p_tree, xs))
        aux_leaves = []
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("has_aux=True requires the function to return a pair "
                                "(output, aux)")
            out, aux = out
            aux_all, aux_tree = tree_flatten(aux)
            # traced aux values are extra (non-differentiated) outputs, so they come out
            # concrete; any other leaf (a string, a concrete array) is handed back as is
            traced = [isinstance(a, Tracer) for a in aux_all]
            aux_leaves = [a for a, t in zip(aux_all, traced) if t]
            box.append((aux_tree, aux_all, traced))
        leaves, tree = tree_flatten(out)
        box.insert(0, (tree, len(leaves)))
        return leaves + aux_leaves

    outs, lin, residuals = linearize_flat(flat_fun, p_flat, fun_name(fun))
    out_tree, n_out = box[0]
    outs, aux_vals = outs[:n_out], outs[n_out:]
    # The pullback is a Partial whose leaves are the residuals, so it is a pytree that can
    # be returned from jit or used as custom_vjp residuals (as in jax).
    spec = _PullbackSpec(lin, p_tree, out_tree, [get_aval(o) for o in outs],
                         [tangent_aval(get_aval(p)) for p in p_flat],
                         [tangent_aval(get_aval(a)) for a in aux_vals])
    vjp_fn = Partial(spec, *residuals)
    primal_out = tree_unflatten(out_tree, outs)  # as the function made them (as jax)
    if has_aux:
        aux_tree, aux_all, traced = box[1]
        it = iter(aux_vals)
        aux = [_as_array(next(it)) if t else a for a, t in zip(aux_all, traced)]
        return primal_out, vjp_fn, tree_unflatten(aux_tree, aux)
    return primal_out, vjp_fn


class _PullbackSpec:
    """The static part of a vjp pullback: the linear jaxpr and the trees."""

    def __init__(self, lin, p_tree, out_tree, out_avals, in_ct_avals, aux_avals=()):
        self.lin = lin
        self.p_tree = p_tree
        self.out_tree = out_tree
        self.out_avals = out_avals
        self.in_ct_avals = in_ct_avals
        self.aux_avals = list(aux_avals)

    @api_boundary
    def __call__(self, *args):
        n_res = len(self.lin.constvars)
        residuals, cts = args[:n_res], args[n_res:]
        if len(cts) != 1:
            raise TypeError(f"the function returned by vjp takes a single argument, the "
                            f"cotangent of the differentiated function's output (a pytree "
                            f"like {self.out_tree}), but was called with {len(cts)} arguments")
        ct_flat, ct_tree = tree_flatten(cts[0])
        if ct_tree != self.out_tree:
            raise ValueError(f"vjp function expected a cotangent with tree structure "
                             f"{self.out_tree} (the function's output), got {ct_tree}")
        for i, (c, a) in enumerate(zip(ct_flat, self.out_avals)):
            ca, expected = get_aval(c), tangent_aval(a)
            if ca.shape != a.shape or (ca.dtype != expected.dtype
                                       and expected.dtype != dtypes.float0) or \
                    getattr(ca, "memory_space", None) is not getattr(a, "memory_space", None):
                if getattr(a, "memory_space", None) is not getattr(expected, "memory_space",
                                                                   None):
                    expected = expected.update(memory_space=a.memory_space)
                raise ValueError(
                    f"unexpected type for the cotangent {_leaf_name(cts[0], i)} given to the "
                    f"vjp function: got {ca.str_short()}, but expected "
                    f"{expected.str_short()} because the corresponding output of the "
                    f"function has type {a.str_short()}")
        args = [UndefinedPrimal(a) for a in self.in_ct_avals]
        cts_all = list(ct_flat) + [Zero(a) for a in self.aux_avals]
        cts_in = backward_pass(self.lin, residuals, args, cts_all)
        cts_in = [_as_array(instantiate(c)) for c in cts_in]
        return tuple(tree_unflatten(self.p_tree, cts_in))


def _leaf_name(tree, i: int) -> str:
    """How to name leaf ``i`` of ``tree`` to a user: its key path (``ct['v'][0]``)."""
    path = tree_flatten_with_path(tree)[0][i][0]
    return "ct" + keystr(path) if path else "ct (the whole cotangent)"


def _as_array(x):
    """Values handed back to users are minijax arrays, never NumPy or Python values."""
    if type(x) in (int, float, complex, bool):
        return made_in_trace(device_put(x), x)
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != dtypes.float0:
        return made_in_trace(device_put(x), x) if not x.ndim else device_put(x)
    return x


@api_boundary
def linearize(fun: Callable, *primals):
    """``(fun(*primals), f_jvp)`` with ``f_jvp(*tangents)`` the linearized function."""
    p_flat, p_tree = tree_flatten(primals)
    box = []

    def flat_fun(*xs):
        leaves, tree = tree_flatten(fun(*tree_unflatten(p_tree, xs)))
        box.append(tree)
        return leaves

    outs, lin, residuals = linearize_flat(flat_fun, p_flat)
    # As in jax, f_jvp is a Partial whose leaves are the residuals: a pytree that can be
    # passed to and returned from jit.
    spec = _LinearizedSpec(lin, p_tree, box[0], [get_aval(p) for p in p_flat])
    return tree_unflatten(box[0], outs), Partial(spec, *residuals)


def _long(aval) -> str:
    """``float32[2,3]``: an aval as jax's messages show it."""
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


class _LinearizedSpec:
    """The static part of the function ``linearize`` returns: the linear jaxpr, the
    primal avals and the trees."""

    def __init__(self, lin, p_tree, out_tree, p_avals):
        self.lin, self.p_tree, self.out_tree, self.p_avals = lin, p_tree, out_tree, p_avals

    @api_boundary
    def __call__(self, *args):
        n_res = len(self.lin.constvars)
        residuals, tangents = args[:n_res], args[n_res:]
        t_flat, t_tree = tree_flatten(tangents)
        if t_tree != self.p_tree:
            raise TypeError(f"linearized function expected tangents with tree {self.p_tree}, "
                            f"got {t_tree}")
        for t, p in zip(t_flat, self.p_avals):
            got, want = get_aval(t), tangent_aval(p)
            if got.shape != want.shape or got.dtype != want.dtype:
                raise ValueError(f"linearized function called on tangent values inconsistent "
                                 f"with the original primal values:\nGot tangent aval "
                                 f"{_long(got)} for primal aval {_long(p)} but expected "
                                 f"{_long(want)}.")
        return tree_unflatten(self.out_tree, eval_jaxpr(self.lin, residuals, *t_flat))


def with_args_at(fun: Callable, args: Sequence, nums: Sequence[int],
                 kwargs: dict | None = None) -> Callable:
    """``fun`` as a function of its positional arguments at ``nums`` only, the others fixed
    to ``args`` (and the keyword arguments to ``kwargs``)."""
    def partial_fun(*dyn):
        full = list(args)
        for i, a in zip(nums, dyn):
            full[i] = a
        return fun(*full, **(kwargs or {}))
    return partial_fun


def _argnums_tuple(argnums, nargs: int, error: type[Exception] = TypeError) -> tuple[int, ...]:
    """``argnums`` as non-negative indices into ``nargs`` positional arguments; ``error``
    when one is out of range (jax: TypeError from grad, ValueError from jacfwd/jacrev)."""
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    for a in nums:
        if not isinstance(a, int) or not -nargs <= a < nargs:
            raise error(f"differentiating with respect to argnums={argnums} requires at "
                        f"least {max(nums) + 1} positional arguments, got {nargs}")
    return tuple(a % nargs for a in nums)


def check_input_dtype(name: str, x, holomorphic: bool, allow_int: bool) -> None:
    """Raise jax's TypeError when ``x`` cannot be an input differentiated by reverse mode.

    ``grad``, ``value_and_grad`` and ``jacrev`` take real and complex inputs, integer and
    boolean ones only with ``allow_int``, and with ``holomorphic=True`` complex ones only.
    The gradient of a real-valued ``f`` at a complex ``z = x + 1j * y`` is, as in jax, the
    vjp of the cotangent 1.0: ``df/dx - 1j * df/dy`` (``2 * conj(z)`` for ``abs(z) ** 2``).
    """
    dt = get_aval(x).dtype
    if holomorphic and not dtypes.is_complex(dt):
        raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, "
                        f"but got {dt.name}.")
    if not dtypes.is_inexact(dt) and not allow_int:
        raise TypeError(f"{name} requires real- or complex-valued inputs (input dtype that "
                        f"is a sub-dtype of np.inexact), but got {dt.name}. If you want to "
                        f"use Boolean- or integer-valued inputs, use vjp or set allow_int "
                        f"to True.")


def check_output_dtype(name: str, x, holomorphic: bool) -> None:
    """Raise jax's TypeError when ``x`` cannot be an output differentiated by reverse mode:
    real outputs only, complex ones only (and always) with ``holomorphic=True``."""
    dt = get_aval(x).dtype
    if holomorphic:
        if not dtypes.is_complex(dt):
            raise TypeError(f"{name} with holomorphic=True requires outputs with complex "
                            f"dtype, but got {dt.name}.")
    elif dtypes.is_complex(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                        f"differentiation, pass holomorphic=True. For differentiation of "
                        f"non-holomorphic functions involving complex outputs, use vjp "
                        f"directly.")
    elif not dtypes.is_float(dt):
        raise TypeError(f"{name} requires real-valued outputs (output dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For "
                        f"differentiation of functions with integer outputs, use vjp "
                        f"directly.")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """``(fun(*args), grad(fun)(*args))`` in one pass; mirrors ``jax.value_and_grad``."""
    def vg(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args))
        dyn = [args[i] for i in nums]
        for leaf in tree_flatten(dyn)[0]:
            check_input_dtype("grad", leaf, holomorphic, allow_int)

        res = vjp(with_args_at(fun, args, nums, kwargs), *dyn, has_aux=has_aux)
        out, pullback = res[0], res[1]
        oa = get_aval(out) if not isinstance(out, (tuple, list, dict)) else None
        if oa is None or oa.shape != ():
            shape = oa.shape if oa is not None else type(out).__name__
            raise TypeError(f"Gradient only defined for scalar-output functions. Output had "
                            f"shape: {shape}.")
        check_output_dtype("grad", out, holomorphic)
        one = np.ones((), oa.dtype)
        if oa.weak_type:  # as jax: the cotangent 1 has the output's weak type (so has g)
            py_one = 1.0 if dtypes.is_float(oa.dtype) else complex(1.0)
            # an array (as jax's seed), written as a literal in a traced jaxpr
            one = _as_array(py_one) if get_aval(py_one).dtype == oa.dtype else \
                convert_element_type(one, oa.dtype, weak_type=True)
        g = pullback(one)
        g = g[0] if isinstance(argnums, int) else tuple(g)
        if has_aux:
            return (out, res[2]), g
        return out, g

    # named as ``fun`` (so signature-based argument names follow the user's function)
    return wraps(fun, VALUE_AND_GRAD_DOC, argnums=index_or_tuple(argnums))(api_boundary(vg))


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The gradient of scalar-valued ``fun``; mirrors ``jax.grad``.

    ``fun`` returns a real scalar, or with ``holomorphic=True`` (complex inputs only) a
    complex one, whose gradient is then the complex derivative ``f'(z)``. A real ``fun`` of
    a complex ``z = x + 1j * y`` has, as in jax, the gradient ``df/dx - 1j * df/dy``.
    """
    vg = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    def g(*args, **kwargs):
        res = vg(*args, **kwargs)
        if has_aux:
            (_, aux), gr = res
            return gr, aux
        return res[1]

    return wraps(fun, GRAD_DOC, argnums=argnums)(api_boundary(g))


def linear_transpose(fun: Callable, *primals, reduce_axes=()) -> Callable:
    """The transpose of the linear function ``fun`` at arguments shaped like ``primals``:
    ``f_t(ct_out)`` returns the tuple of input cotangents (as ``jax.linear_transpose``).
    A TypeError when ``fun`` is not linear in its inputs (no transpose rule applies)."""
    if reduce_axes:
        raise NotImplementedError("reduce_axes argument to transpose is deprecated")
    p_flat, in_tree = tree_flatten(primals)
    # only shapes and dtypes matter: avals and ShapeDtypeStructs stand for arrays (as jax)
    in_avals = [x if isinstance(x, ShapedArray) else abstractify(x) for x in p_flat]
    box = []

    def flat_fun(*xs):
        leaves, tree = tree_flatten(fun(*tree_unflatten(in_tree, xs)))
        box.append(tree)
        return leaves, None

    jaxpr, consts, _ = trace_to_jaxpr(flat_fun, in_avals,
                                      DebugInfo("linear_transpose", fun_name(fun), None))
    out_tree = box[0]
    out_avals = [v.aval for v in jaxpr.outvars]
    in_dt, out_dt = [a.dtype for a in in_avals], [a.dtype for a in out_avals]
    if not (all(dtypes.is_inexact(d) for d in in_dt + out_dt)
            or all(dtypes.is_int(d) for d in in_dt + out_dt)):
        raise TypeError(f"linear_transpose only supports [float or complex] -> [float or "
                        f"complex], and integer -> integer functions, but got "
                        f"{[d.name for d in in_dt]} -> {[d.name for d in out_dt]}.")
    spec = _TransposeSpec(jaxpr, in_tree, out_tree, in_avals, out_avals)
    return Partial(spec, *consts)


class _TransposeSpec:
    """The static part of ``linear_transpose``'s result (its consts are the leaves)."""

    def __init__(self, jaxpr, in_tree, out_tree, in_avals, out_avals):
        self.jaxpr, self.in_tree, self.out_tree = jaxpr, in_tree, out_tree
        self.in_avals, self.out_avals = in_avals, out_avals

    @api_boundary
    def __call__(self, *args):
        n = len(self.jaxpr.constvars)
        consts, rest = args[:n], args[n:]
        if len(rest) != 1:
            raise TypeError(f"the function returned by linear_transpose takes one argument, "
                            f"the output cotangent; got {len(rest)}")
        cts, tree = tree_flatten(rest[0])
        if tree != self.out_tree:
            raise TypeError(f"cotangent tree does not match function output, expected "
                            f"{self.out_tree} but got {tree}")
        for c, a in zip(cts, self.out_avals):
            ca = get_aval(c)
            if ca.shape != a.shape or ca.dtype != a.dtype:
                raise TypeError(f"cotangent type does not match function output, expected "
                                f"{[x.str_short() for x in self.out_avals]} but got "
                                f"{[get_aval(x).str_short() for x in cts]}")
        dummies = [UndefinedPrimal(tangent_aval(a)) for a in self.in_avals]
        in_cts = backward_pass(self.jaxpr, list(consts), dummies, cts)
        in_cts = [_as_array(instantiate(Zero(tangent_aval(a)) if c is None else c))
                  for c, a in zip(in_cts, self.in_avals)]
        return tree_unflatten(self.in_tree, in_cts)


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """``(fwd, bwd)``: ``fwd(*args)`` is ``(fun(*args), residuals)`` (plus ``aux`` with
    ``has_aux``) and ``bwd(residuals, ct)`` the cotangents of the ``argnums`` arguments
    (one value for an int ``argnums``), as jax's; both jitted unless ``jitted=False``,
    so the backward pass compiles once however often it is called."""
    def fwd(*args):
        nums = _argnums_tuple(argnums, len(args))
        return vjp(with_args_at(fun, args, nums), *[args[i] for i in nums], has_aux=has_aux)

    def bwd(residuals, ct):
        cts = residuals(ct)
        return cts[0] if isinstance(argnums, int) else cts

    if jitted:
        from minijax.stages.jit import jit
        return jit(fwd), jit(bwd)
    return fwd, bwd
