"""jacfwd, jacrev and hessian: Jacobians by vmapping jvp or vjp over a basis.

Like jax, the result of ``jacfwd(f)(x)`` / ``jacrev(f)(x)`` is a pytree with the
structure of ``f``'s output whose leaves are pytrees with the structure of the
differentiated arguments; each leaf has shape ``out_shape + in_shape``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.core.trace import get_aval
from minijax.core.traceback_util import api_boundary
from minijax.api.naming import JACOBIAN_DOC, index_or_tuple, wraps
from minijax.api.ad import _argnums_tuple, check_input_dtype, check_output_dtype, jvp, vjp
from minijax.api.vmap import vmap
from minijax._pytree import tree_flatten, tree_map, tree_unflatten


def _check_jacfwd_input(x, holomorphic: bool) -> None:
    """jax's TypeError for a ``jacfwd`` input: real ones, or complex ones with
    ``holomorphic=True`` (forward mode pushes a real basis, so a non-holomorphic function of
    complex inputs needs ``jvp`` directly)."""
    dt = get_aval(x).dtype
    if holomorphic:
        if not dtypes.is_complex(dt):
            raise TypeError(f"jacfwd with holomorphic=True requires inputs with complex "
                            f"dtype, but got {dt.name}.")
    elif not dtypes.is_float(dt):
        raise TypeError(f"jacfwd requires real-valued inputs (input dtype that is a "
                        f"sub-dtype of np.floating), but got {dt.name}. For holomorphic "
                        f"differentiation, pass holomorphic=True. For differentiation of "
                        f"non-holomorphic functions involving complex inputs or integer "
                        f"inputs, use jvp directly.")


def _std_basis(leaves) -> list[np.ndarray]:
    """Per leaf, an array of shape ``(N,) + leaf.shape`` (N = total size): an identity."""
    sizes = [int(np.prod(get_aval(x).shape)) for x in leaves]
    n = sum(sizes)
    dt = dtypes.result_type(*((get_aval(x).dtype, False) for x in leaves))[0] if leaves else \
        np.float32
    eye = np.eye(n, dtype=dt)
    out, start = [], 0
    for x, s in zip(leaves, sizes):
        aval = get_aval(x)
        out.append(eye[:, start:start + s].reshape((n,) + aval.shape).astype(aval.dtype))
        start += s
    return out


def _cast_like(block, example):
    """``block`` in the dtype and weak type of ``example``, as jax returns Jacobian blocks:
    the real part where ``block`` is complex and ``example`` real, zeros where ``example``
    is an integer or boolean (whose tangents are float0)."""
    from minijax import numpy as jnp
    from minijax.lax.convert import convert_element_type
    ex, aval = get_aval(example), get_aval(block)
    if (aval.dtype, aval.weak_type) == (ex.dtype, ex.weak_type):
        return block
    if not dtypes.is_inexact(ex.dtype):
        return jnp.zeros(aval.shape, ex.dtype)
    if dtypes.is_complex(aval.dtype) and not dtypes.is_complex(ex.dtype):
        block = jnp.real(block)
    return convert_element_type(block, ex.dtype, weak_type=ex.weak_type)


def _split_last(jac, in_leaves, axis_first: bool):
    """Split the basis axis of ``jac`` (first or last) into one block per input leaf."""
    from minijax import numpy as jnp
    sizes = [int(np.prod(get_aval(x).shape)) for x in in_leaves]
    shape = get_aval(jac).shape
    blocks, start = [], 0
    for x, s in zip(in_leaves, sizes):
        in_shape = get_aval(x).shape
        if axis_first:
            block = jac[start:start + s] if len(sizes) > 1 else jac
            blocks.append(jnp.reshape(block, in_shape + shape[1:]))
        else:
            block = jac[..., start:start + s] if len(sizes) > 1 else jac
            blocks.append(jnp.reshape(block, shape[:-1] + in_shape))
        start += s
    return blocks


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """Jacobian of ``fun`` by forward mode (one jvp per input element, vmapped)."""
    def jacfun(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), ValueError)
        dyn = tuple(args[i] for i in nums)
        in_leaves, in_tree = tree_flatten(dyn)
        for x in in_leaves:
            _check_jacfwd_input(x, holomorphic)

        def f_flat(*xs):
            full = list(args)
            for i, a in zip(nums, tree_unflatten(in_tree, xs)):
                full[i] = a
            return fun(*full, **kwargs)

        def push(*tangents):
            return jvp(f_flat, tuple(in_leaves), tuple(tangents), has_aux=has_aux)

        basis = _std_basis(in_leaves)
        res = vmap(push, out_axes=(None, -1, None) if has_aux else (None, -1))(*basis)
        y, jac, aux = res if has_aux else (*res, None)
        if holomorphic:
            for o in tree_flatten(y)[0]:
                if not dtypes.is_complex(get_aval(o).dtype):
                    raise TypeError(f"jacfwd with holomorphic=True requires outputs with "
                                    f"complex dtype, but got {get_aval(o).dtype.name}.")
        # each output leaf holds a pytree like the differentiated argument(s)
        arg_tree = tree_flatten(dyn[0])[1] if isinstance(argnums, int) else in_tree
        jac = tree_map(lambda o, j: tree_unflatten(
            arg_tree, [_cast_like(b, o) for b in _split_last(j, in_leaves, False)]), y, jac)
        return (jac, aux) if has_aux else jac

    return wraps(fun, JACOBIAN_DOC, argnums=index_or_tuple(argnums))(api_boundary(jacfun))


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Jacobian of ``fun`` by reverse mode (one vjp per output element, vmapped)."""
    def jacfun(*args, **kwargs):
        nums = _argnums_tuple(argnums, len(args), ValueError)
        dyn = tuple(args[i] for i in nums)
        in_leaves, in_tree = tree_flatten(dyn)
        for x in in_leaves:
            check_input_dtype("jacrev", x, holomorphic, allow_int)

        def f_part(*xs):
            full = list(args)
            for i, a in zip(nums, xs):
                full[i] = a
            return fun(*full, **kwargs)

        res = vjp(f_part, *dyn, has_aux=has_aux)
        y, pullback = res[0], res[1]
        out_leaves, out_tree = tree_flatten(y)
        for o in out_leaves:
            check_output_dtype("jacrev", o, holomorphic)
        basis = _std_basis(out_leaves)
        cts = vmap(lambda *c: pullback(tree_unflatten(out_tree, c)))(*basis)
        # cts: tree of dyn with leading basis axis of total output size
        ct_leaves = tree_flatten(cts)[0]
        per_out = [_split_last(c, out_leaves, True) for c in ct_leaves]  # [in][out]
        blocks = [[_cast_like(per_out[i][o], x) for i, x in enumerate(in_leaves)]
                  for o in range(len(out_leaves))]
        arg_tree = tree_flatten(dyn[0])[1] if isinstance(argnums, int) else in_tree
        jac = tree_unflatten(out_tree, [tree_unflatten(arg_tree, b) for b in blocks])
        return (jac, res[2]) if has_aux else jac

    return wraps(fun, JACOBIAN_DOC, argnums=index_or_tuple(argnums))(api_boundary(jacfun))


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian, as ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)





def jacobian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
             holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """Another name for ``jacrev`` (as ``jax.jacobian``)."""
    return jacrev(fun, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                  allow_int=allow_int)
