"""A primitive defined the jax way (as in jax's "How primitives work" tutorial, written
with mlir.lower_fun): the same program runs on jax and, in the jax mode, on minijax."""

import json

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend import core
from jax.interpreters import ad, batching, mlir

multiply_add_p = core.Primitive("multiply_add")


def multiply_add(x, y, z):
    return multiply_add_p.bind(x, y, z)


def _impl(x, y, z):
    return np.add(np.multiply(x, y), z)


def _abstract_eval(xs, ys, zs):
    assert xs.shape == ys.shape == zs.shape
    return jax.core.ShapedArray(xs.shape, xs.dtype)


def _lowering(x, y, z):
    return x * y + z


def _jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = (ad.instantiate_zeros(t) for t in tangents)
    out = multiply_add(x, y, z)
    return out, multiply_add(xt, y, multiply_add(x, yt, zt))


def _transpose(ct, x, y, z):
    # linear in z and in one of x, y (the other known), as the jvp above uses it
    zeros = jnp.zeros_like(ct)
    ct_x = multiply_add(ct, y, zeros) if ad.is_undefined_primal(x) else None
    ct_y = multiply_add(x, ct, zeros) if ad.is_undefined_primal(y) else None
    ct_z = ct if ad.is_undefined_primal(z) else None
    return ct_x, ct_y, ct_z


def _batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    args = [batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
    return multiply_add(*args), 0


multiply_add_p.def_impl(_impl)
multiply_add_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(multiply_add_p, mlir.lower_fun(_lowering, multiple_results=False))
ad.primitive_jvps[multiply_add_p] = _jvp
ad.primitive_transposes[multiply_add_p] = _transpose
batching.primitive_batchers[multiply_add_p] = _batch


def sq_add(a, b):
    return multiply_add(a, a, b)


x = np.float32(2.0)
y = np.float32(10.0)
v = np.arange(3, dtype=np.float32)
out = {
    "eager": float(sq_add(x, y)),
    "jit": float(jax.jit(sq_add)(x, y)),
    "grad": float(jax.grad(sq_add)(x, y)),
    "grad_jit": float(jax.jit(jax.grad(sq_add, argnums=(0, 1)))(x, y)[1]),
    "jvp": [float(t) for t in jax.jvp(sq_add, (x, y), (np.float32(1.0), np.float32(1.0)))],
    "vmap": np.asarray(jax.vmap(sq_add, in_axes=(0, None))(v, y)).tolist(),
    "vmap_grad": np.asarray(jax.vmap(jax.grad(sq_add), in_axes=(0, None))(v, y)).tolist(),
    "scan": float(lax.scan(lambda c, a: (sq_add(c, a), None), np.float32(0.5), v)[0]),
    "hlo_has_multiply": "multiply" in jax.jit(sq_add).lower(x, y).as_text(),
    "version": jax.__version__,
}
print(json.dumps(out))
