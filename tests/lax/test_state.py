"""Mutable array references (minijax.new_ref / Ref / freeze) against jax's."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import minijax
import minijax.numpy as mnp


def both(fn):
    """``fn(jax, jnp)`` and ``fn(minijax, minijax.numpy)``, as NumPy trees."""
    got = minijax.tree_util.tree_map(np.asarray, fn(minijax, mnp))
    want = jax.tree_util.tree_map(np.asarray, fn(jax, jnp))
    return got, want


def check(fn, rtol=1e-6):
    got, want = both(fn)
    g, w = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
        np.testing.assert_allclose(a, b, rtol=rtol)


def test_eager_read_write_and_type():
    def f(jx, np_):
        r = jx.new_ref(np_.arange(4.0))
        r[1] = 5.0
        r[...] += 1
        r[2:] *= 2
        return r[...], r[0], r[1:3]
    check(f)
    r = minijax.new_ref(mnp.arange(3.0))
    assert isinstance(r, minijax.Ref) and r.shape == (3,) and r.dtype == np.float32
    assert str(minijax.typeof(r)) == "Ref{f32[3]}"
    assert minijax.typeof(r).inner_aval == minijax.typeof(mnp.arange(3.0))
    assert repr(r) == "Ref([0., 1., 2.], dtype=float32)"
    assert repr(r) == repr(jax.new_ref(jnp.arange(3.0)))


def test_freeze_free_ref_and_module():
    check(lambda jx, np_: jx.freeze(jx.new_ref(np_.ones(2))))
    r = minijax.new_ref(1.0)
    minijax.freeze(r)
    with pytest.raises(ValueError, match="freed"):
        r[...]
    r = minijax.new_ref(1.0)
    assert minijax.free_ref(r) == ()
    with pytest.raises(ValueError, match="freed"):
        r[...] = 2.0
    assert sorted(n for n in dir(minijax.ref) if not n.startswith("_")) == sorted(
        n for n in dir(jax.ref) if not n.startswith("_"))

    def swaps(jx, np_):
        r = jx.new_ref(np_.zeros(3))
        old = jx.ref.swap(r, 1, 4.0)
        jx.ref.addupdate(r, ..., np_.ones(3))
        return old, jx.ref.get(r, 1), r[...]
    check(swaps)


def test_empty_ref_in_jit():
    def f(jx, np_):
        def g():
            r = jx.empty_ref(jx.ShapeDtypeStruct((2, 3), np_.float32))
            r[...] = np_.ones((2, 3))
            return jx.freeze(r)
        return jx.jit(g)()
    check(f)


def test_write_errors_like_jax():
    for jx, np_ in ((jax, jnp), (minijax, mnp)):
        r = jx.new_ref(np_.zeros(3))
        with pytest.raises(ValueError, match="Invalid dtype for `swap`"):
            r[...] = np_.arange(3)
        with pytest.raises(ValueError, match="Invalid dtype for `swap`"):
            r[0] = 2  # a Python int is int32, as in jax
        with pytest.raises(ValueError, match=r"Invalid shape for `swap`. Ref shape: \(3,\)"):
            r[...] = np_.ones(4)
        with pytest.raises(ValueError, match=r"Invalid shape for `swap`"):
            r[...] = 1.0  # no broadcasting
        with pytest.raises(ValueError, match=r"Invalid shape for `addupdate`"):
            jx.ref.addupdate(r, ..., 1.0)


def test_jit_argument_refs_are_updated_in_place():
    def f(jx, np_):
        @jx.jit
        def step(r, x):
            r[...] = r[...] * 2 + x
            return r[0]
        r = jx.new_ref(np_.ones(2))
        a = step(r, 1.0)
        b = step(r, 1.0)
        return a, b, r[...]
    check(f)

    def same_ref_twice(jx, np_):
        @jx.jit
        def g(a, b):
            a[...] += 1.0
            b[...] += 10.0
            return a[...]
        r = jx.new_ref(np_.zeros(2))
        with pytest.raises(ValueError, match="only one reference to a mutable array may be "
                                             "passed as an argument.* appeared at both a and b"):
            g(r, r)
        return g(r, jx.new_ref(np_.ones(2))), r[...]
    check(same_ref_twice)


def test_jit_closed_over_ref_read_and_write():
    def f(jx, np_):
        s = jx.new_ref(np_.float32(1.0))
        g = jx.jit(lambda x: x * s[...])
        a = g(2.0)
        s[...] = 3.0
        b = g(2.0)  # reads the ref's current value, not a baked constant
        acc = jx.new_ref(np_.zeros(2))

        @jx.jit
        def h(x):
            acc[...] += x
            return x.sum()
        return a, b, h(np_.ones(2)), h(np_.ones(2)), acc[...]
    check(f)


def test_returning_a_ref_raises_like_jax():
    for jx, np_ in ((jax, jnp), (minijax, mnp)):
        r = jx.new_ref(np_.zeros(3))
        with pytest.raises(ValueError, match="mutable array references cannot be returned"):
            jx.jit(lambda r: r)(r)
        with pytest.raises(ValueError, match="passed in as the argument r"):
            jx.jit(lambda r: r)(r)
        with pytest.raises(ValueError, match="traced for cond returned a mutable array"):
            jx.lax.cond(True, lambda: jx.new_ref(1.0), lambda: jx.new_ref(2.0))


def test_scan_accumulates_into_closed_over_ref():
    def f(jx, np_):
        acc = jx.new_ref(np_.zeros(2))

        def body(c, x):
            acc[...] += x * c
            return c + 1.0, acc[0]
        c, ys = jx.lax.scan(body, 1.0, np_.arange(8.0).reshape(4, 2))
        return c, ys, acc[...]
    check(f)

    def in_jit(jx, np_):
        acc = jx.new_ref(np_.zeros(2))

        @jx.jit
        def g(xs):
            def body(c, x):
                acc[...] += x
                return c, x * 2
            return jx.lax.scan(body, 0.0, xs)[1]
        return g(np_.ones((3, 2))), acc[...], g(np_.ones((3, 2))), acc[...]
    check(in_jit)


def test_fori_while_cond_with_closed_over_refs():
    def f(jx, np_):
        s = jx.new_ref(np_.zeros(3))
        jx.lax.fori_loop(0, 4, lambda i, c: (s.__setitem__(i % 3, s[i % 3] + i), c)[1], 0)
        n = jx.new_ref(0)

        def body(c):
            n[...] += 1
            return c * 2
        out = jx.lax.while_loop(lambda c: c < 100, body, 1)
        q = jx.new_ref(np_.ones(3))
        jx.lax.cond(True, lambda: q.__setitem__(..., q[...] + 1), lambda: None)
        jx.lax.cond(False, lambda: q.__setitem__(0, 10.0), lambda: None)
        return s[...], out, n[...], q[...]
    check(f)


def test_refs_made_inside_grad_vmap_jit_scan():
    def local(jx, np_):
        def e(x):
            r = jx.new_ref(x)
            r[0] = r[1] * x[0]
            r[1:] += 2 * np_.sin(x[1:])
            return jx.freeze(r).sum()
        x = np_.arange(1.0, 4.0)
        return (e(x), jx.grad(e)(x), jx.jit(jx.grad(e))(x),
                jx.vmap(e)(np_.arange(6.0).reshape(2, 3)))
    check(local)


def test_refs_made_inside_a_scan_body_under_transformations():
    def scan_inner(jx, np_):
        def c(x):
            r = jx.new_ref(np_.zeros(()))

            def body(carry, xi):
                r[...] += xi * carry
                return carry * 1.5, None
            jx.lax.scan(body, 1.0, x)
            return r[...]
        x = np_.arange(4.0)
        return jx.jit(c)(x), jx.grad(c)(x), jx.vmap(c)(np_.arange(8.0).reshape(2, 4))
    check(scan_inner)


def test_writing_transformed_values_into_outer_refs_raises():
    for jx, np_ in ((jax, jnp), (minijax, mnp)):
        q = jx.new_ref(np_.zeros(3))
        # jax raises Exception, minijax a ValueError (an Exception) with jax's message
        with pytest.raises(Exception, match="vmapped value on an unbatched array reference .*"
                                            "argument to the vmapped function"):
            jx.vmap(lambda x: (q.__setitem__(..., q[...] + x), x)[1])(np_.ones(3))
        with pytest.raises(Exception, match="differentiated value on a non-differentiated"):
            jx.grad(lambda x: (q.__setitem__(0, x), x * 2)[1])(1.0)
        # reading one is fine: a constant of the transformation
        p = jx.new_ref(np_.full(3, 2.0))
        assert float(jx.grad(lambda x: (p[0] + 1) * x)(1.0)) == 3.0


def test_nested_jit_with_ref_argument():
    def f(jx, np_):
        r = jx.new_ref(np_.ones(2))

        def inner(r, x):
            r[...] = r[...] * 2 + x
            return r[...].sum()
        out = jx.jit(lambda x: jx.jit(inner)(r, x))(1.0)
        return out, r[...]
    check(f)


def test_pallas_and_top_level_refs_share_the_type():
    from minijax.experimental import pallas as pl
    from minijax.experimental.pallas import _core
    assert _core.AbstractRef is minijax.ref.AbstractRef
    x = mnp.arange(8.0)

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2
    out = pl.pallas_call(kernel, out_shape=minijax.ShapeDtypeStruct((8,), mnp.float32),
                         interpret=True)(x)
    np.testing.assert_allclose(np.asarray(out), np.arange(8.0) * 2)
