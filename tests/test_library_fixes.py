"""Behaviours the libraries' own test suites (optax, chex) rely on, each against jax."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

jax = pytest.importorskip("jax")


@pytest.mark.parametrize("x", [2.567, 2.5, [1.26, 2.5], np.int32(7), np.float32(-3.5)])
@pytest.mark.parametrize("nd", [(), (None,), (1,)])
def test_round_builtin(x, nd):
    want = round(jax.numpy.asarray(x), *nd)
    got = round(jnp.asarray(x), *nd)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    j = minijax.jit(lambda v: round(v, *nd))(jnp.asarray(x))
    assert j.dtype == want.dtype


def test_jit_signature_without_following_wrapped():
    def foo(x, y=2, *, z=3):
        return x

    want = inspect.signature(jax.jit(foo), follow_wrapped=False)
    assert inspect.signature(minijax.jit(foo), follow_wrapped=False) == want


def test_pmap_axis_size_and_donate_argnums():
    x = np.arange(3.0, dtype=np.float32)[None]
    f = minijax.pmap(lambda v: v * 2, axis_size=1, donate_argnums=0)
    np.testing.assert_array_equal(f(x), jax.pmap(lambda v: v * 2, axis_size=1)(x))
    with pytest.raises(ValueError, match="Specified axis_size 2 doesn't match"):
        minijax.pmap(lambda v: v, axis_size=2)(x)


def test_one_device_named_sharding_survives_computation():
    def run(lib):
        mesh = lib.sharding.Mesh(np.array(lib.devices()[:1]), ("a",))
        s = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("a"))
        x = lib.device_put(np.ones((1, 3), np.float32), s)
        y = x + x
        return y.sharding.spec, np.asarray(lib.numpy.log(y))

    (spec, got), (want_spec, want) = run(minijax), run(jax)
    assert tuple(spec) == tuple(want_spec)
    np.testing.assert_allclose(got, want)


def test_compiler_hook_sees_every_compilation():
    from minijax.runtime import compiler

    seen = []
    inner = compiler.backend_compile_and_load

    def spy(backend, *args, **kwargs):
        seen.append(backend.platform)
        return inner(backend, *args, **kwargs)

    compiler.backend_compile_and_load = spy
    try:
        c = float(np.random.default_rng().uniform(1, 2))  # a module no cache holds
        minijax.jit(lambda v: v * c)(jnp.ones(13))
    finally:
        compiler.backend_compile_and_load = inner
    assert seen and set(seen) == {minijax.default_backend()}


def _both(fn, *args, jit=True):
    """``fn(lib, *args)`` under minijax and jax (jitted unless ``jit=False``)."""
    outs = []
    for lib in (minijax, jax):
        f = (lambda *a, lib=lib: fn(lib, *a))
        outs.append(lib.jit(f)(*args) if jit else f(*args))
    return outs


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("dt", [np.float16, jnp.bfloat16])
@pytest.mark.parametrize("fill", [np.nan, 2.0, 3])
def test_full_with_python_scalar_fill_is_weak(fill, dt, jit):
    # optax's schedule_free: jnp.where(c, jnp.full(w.shape, nan), w) keeps w's half dtype,
    # and so a lax.cond whose other branch returns the half-precision params type-checks.
    w = np.asarray([0.5, 2.0], dt)

    def fn(lib, w):
        full = lib.numpy.full(w.shape, fill)
        picked = lib.numpy.where(w > 1, full, w)
        branch = lib.lax.cond(w[0] > 0, lambda: lib.numpy.where(w > 1, full, w), lambda: w)
        return full, picked, branch, lib.numpy.full((2,), fill, dtype=np.float32) * w

    got, want = _both(fn, w, jit=jit)
    for g, e in zip(got, want):
        assert (g.dtype, g.weak_type, g.shape) == (e.dtype, e.weak_type, e.shape)
        np.testing.assert_array_equal(np.asarray(g, np.float32), np.asarray(e, np.float32))


def test_full_with_array_fill():
    for fill in (lambda lib: np.float32(2), lambda lib: np.asarray([1.0, 2.0]),
                 lambda lib: lib.numpy.asarray(3.0), lambda lib: lib.numpy.asarray([3, 4])):
        got, want = jnp.full((3, 2), fill(minijax)), jax.numpy.full((3, 2), fill(jax))
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError):  # jax: "full requires ndarray or scalar arguments"
        jnp.full((2,), [1.5, 2.5])


_C = np.array([[1 + 2j, 1 + 3j, 0 + 5j, 2 - 1j, 2 - 3j],
               [-1 - 1j, -1 + 0j, -1 + 0j, -4 + 9j, 3 + 0j]], np.complex64)


@pytest.mark.parametrize("name", ["max", "min", "reduce_max", "reduce_min", "jnp_max",
                                  "jnp_min", "cummax", "cummin", "window_max", "maximum"])
def test_complex_min_max_order_lexicographically(name):
    def fn(lib, c):
        lax, np_ = lib.lax, lib.numpy
        return {
            "max": lambda: lax.max(c, c[::-1]),
            "min": lambda: lax.min(c, c[:, ::-1]),
            "reduce_max": lambda: lax.reduce_max(c, (1,)),
            "reduce_min": lambda: lax.reduce_min(c, (0, 1)),
            "jnp_max": lambda: np_.max(c, axis=0),
            "jnp_min": lambda: np_.min(c, axis=1, where=np.array([1, 0, 1, 1, 0], bool),
                                       initial=5 + 0j),
            "cummax": lambda: lax.cummax(c, axis=1),
            "cummin": lambda: lax.cummin(c, axis=1, reverse=True),
            "window_max": lambda: lax.reduce_window(c, -np.inf + 0j, lax.max, (1, 2), (1, 1),
                                                    "VALID"),
            "maximum": lambda: np_.maximum(c, 1 + 2.5j),
        }[name]()

    got, want = _both(fn, _C)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    eager, _ = _both(fn, _C, jit=False)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(want))


@pytest.mark.parametrize("reps,total,axis", [
    ([1, 2, 3], 6, None), ([1, 2, 3], 4, None), ([1, 2, 3], 9, None), ([0, 2, 0], 3, 0),
    ([2, 0, 1], 2, 0), ([3, 1, 2], 5, 1), (2, 5, 1), ([1, 1, 1], 0, 0)])
def test_repeat_traced_repeats_with_total_repeat_length(reps, total, axis):
    x = np.arange(9.0, dtype=np.float32).reshape(3, 3)
    if axis is None:
        x = x[0]

    def fn(lib, x, r):
        return lib.numpy.repeat(x, r, axis=axis, total_repeat_length=total)

    got, want = _both(fn, x, np.asarray(reps, np.int32))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_repeat_traced_repeats_without_total_length_raises():
    f = minijax.jit(lambda x, r: jnp.repeat(x, r))
    with pytest.raises(minijax.errors.ConcretizationTypeError, match="total_repeat_length"):
        f(np.arange(3.0), np.array([1, 2, 3]))


@pytest.mark.parametrize("split,concat,tiled,shape,in_axis", [
    (0, 1, False, (4, 4, 2), 0), (0, 1, True, (4, 8, 2), 0), (1, 0, False, (4, 3, 4), 0),
    (1, 1, True, (4, 3, 8), 0), (0, 0, True, (4, 8), 0), (0, 2, False, (4, 4, 5, 2), 1),
    (2, 0, True, (4, 5, 3, 6), 2)])
def test_all_to_all_over_the_vmapped_axis(split, concat, tiled, shape, in_axis):
    # chex's fake_pmap runs pmapped collectives as vmap over the named axis
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)

    def run(lib):
        f = lambda v: lib.lax.all_to_all(v * 2, "i", split, concat, tiled=tiled)
        return np.asarray(lib.jit(lib.vmap(f, in_axes=in_axis, axis_name="i"))(x))

    got, want = run(minijax), run(jax)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_repeat_traced_repeats_under_vmap_and_grad():
    x = np.arange(3.0, dtype=np.float32)
    r = np.array([[1, 2, 3], [0, 3, 1]], np.int32)

    def run(lib):
        rep = lambda x, r: lib.numpy.repeat(x, r, total_repeat_length=7)
        per_row = lib.vmap(lambda r: rep(x, r))(r)
        grads = lib.jit(lib.vmap(lib.grad(lambda x, r: lib.numpy.sum(rep(x, r) ** 2)),
                                 in_axes=(None, 0)))(x, r)
        return np.asarray(per_row), np.asarray(grads)

    for got, want in zip(run(minijax), run(jax)):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", ["max", "min", "reduce_max", "max_scalar"])
def test_complex_min_max_jvp(op):
    a = np.array([1 + 2j, 1 + 3j, 2 + 0j], np.complex64)
    b = np.array([1 + 1j, 1 + 3j, 3 + 0j], np.complex64)
    ta = np.array([1 + 1j, 2, 3j], np.complex64)
    tb = np.array([5, 6j, 7], np.complex64)

    def run(lib):
        fn = {"max": lambda x, y: lib.lax.max(x, y), "min": lambda x, y: lib.lax.min(x, y),
              "reduce_max": lambda x, y: lib.numpy.max(x + 0 * y),
              "max_scalar": lambda x, y: lib.lax.max(x, y[1])}[op]
        return [np.asarray(v) for v in lib.jvp(fn, (a, b), (ta, tb))]

    for got, want in zip(run(minijax), run(jax)):
        np.testing.assert_array_equal(got, want)


def test_custom_jvp_rule_not_called_without_tangents():
    # optax.perturbations: fun(stop_gradient(x)) inside grad must not need fun's jvp rule
    def run(lib):
        calls = []

        @lib.custom_jvp
        def f(x):
            calls.append("f")
            return lib.numpy.sin(x)

        @f.defjvp
        def f_jvp(p, t):
            calls.append("rule")
            return f(p[0]), t[0] * 3.0

        g = lambda x: f(lib.lax.stop_gradient(x)) * x + f(x)
        grad = lib.grad(g)(0.5)
        out, tan = lib.jvp(g, (0.5,), (1.0,))
        jitted = lib.jit(lib.grad(lambda x: f(lib.lax.stop_gradient(x)) * x))(0.5)
        return [float(grad), float(out), float(tan), float(jitted)], calls

    (got, got_calls), (want, want_calls) = run(minijax), run(jax)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got_calls == want_calls

    @minijax.custom_jvp
    def h(x):
        return x

    @h.defjvp
    def _unused(p, t):
        raise AssertionError("the rule ran")

    assert float(minijax.grad(lambda x: h(minijax.lax.stop_gradient(x)) * x)(2.0)) == 2.0


def test_jax_lib_version_like_jax():
    # equinox's tests read jax.lib.__version__ at import
    import jax
    assert minijax.lib.__version__ == jax.lib.__version__


def _symbolic_zeros_vjp(lib, lnp):
    seen = []

    @lib.custom_vjp
    def f(x, y):
        return x * lnp.sin(y)

    def fwd(x, y):
        seen.append((type(x).__name__, x.perturbed, y.perturbed,
                     len(lib.tree_util.tree_leaves((x, y)))))  # leaves, as jax's
        return f(x.value, y.value), (x.value, y.value)

    def bwd(res, ct):
        x, y = res
        return ct * lnp.sin(y), ct * x * lnp.cos(y)

    f.defvjp(fwd, bwd, symbolic_zeros=True)
    x, y = np.float32(0.7), np.float32(1.3)
    g = lib.grad(lambda x: f(x, y))(x)
    gxy = lib.grad(f, argnums=(0, 1))(x, y)
    vg = lib.vmap(lib.grad(lambda x: f(x, y)))(np.arange(3, dtype=np.float32))
    jg = lib.jit(lib.grad(lambda x, y: f(x, y)))(x, y)
    return [float(g), [float(v) for v in gxy], np.asarray(vg).tolist(), float(jg), seen]


def test_custom_vjp_symbolic_zeros_gives_fwd_perturbed_primals_like_jax():
    # equinox's filter_custom_vjp defines its rules with symbolic_zeros=True: fwd gets
    # CustomVJPPrimal(value, perturbed) per input, under grad, vmap and jit
    import jax
    import jax.numpy as jjnp
    assert _symbolic_zeros_vjp(minijax, jnp) == _symbolic_zeros_vjp(jax, jjnp)


def test_custom_vjp_fwd_sees_literal_arguments_as_typed_values():
    """Under jvp of a jit, a Python-number argument of a custom_vjp reaches fwd as a value
    with shape and dtype (jax: a tracer; equinox's checkpointed while loop reads
    ``x.shape``), and the derivatives match jax's."""
    import jax as rjax

    import minijax as mj

    def run(lib):
        seen = []

        @lib.custom_vjp
        def f(x, n, flag):
            return x * 2.0

        def fwd(x, n, flag):
            seen.append((n.shape, str(n.dtype), flag.shape, str(flag.dtype)))
            return x * 2.0, None

        f.defvjp(fwd, lambda r, g: (g * 2.0, None, None))
        g = lib.jit(lambda x: f(x, 0, True))
        lin = lib.linearize(g, 1.0)[0]
        return float(lin), float(lib.grad(g)(1.5)), seen[0]

    assert run(mj) == run(rjax)


def test_custom_jvp_rule_sees_literal_arguments_as_typed_values():
    """Under jvp or linearize of a jit, a literal argument of a custom_jvp (a Python number,
    or a scalar array constant) reaches the rule as a value with jax's shape and dtype, not
    as a Python number (equinox's closure-converted checkpointed loop body checks its
    arguments are arrays); derivatives match jax's."""
    import jax as rjax

    import minijax as mj

    def run(lib):
        seen = []

        @lib.custom_jvp
        def f(x, n, flag, m):
            return x * 2.0

        def f_jvp(p, t):
            x, n, flag, m = p
            seen.append(tuple((v.shape, str(v.dtype)) for v in (n, flag, m)))
            return f(*p), t[0] * 2.0

        f.defjvp(f_jvp)
        g = lib.jit(lambda x: f(x, 0, True, lib.numpy.array(3, lib.numpy.int8)))
        lin = lib.linearize(g, 1.0)[1](1.0)
        t = lib.jvp(g, (1.0,), (2.0,))[1]
        return float(lin), float(t), seen[0]

    assert run(mj) == run(rjax)


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64", "int32", "bool"])
def test_aval_to_tangent_aval(dtype):
    """``typeof(x).to_tangent_aval()`` as jax's (equinox's filter_custom_jvp builds its
    symbolic zeros from it)."""
    x = np.zeros((2, 3), dtype)
    want = jax.typeof(jax.numpy.asarray(x)).to_tangent_aval()
    got = minijax.typeof(jnp.asarray(x)).to_tangent_aval()
    assert (got.shape, str(got.dtype), got.weak_type) == (want.shape, str(want.dtype),
                                                           want.weak_type)
    w = jax.typeof(1.0).to_tangent_aval()
    g = minijax.typeof(1.0).to_tangent_aval()
    assert (str(g.dtype), g.weak_type) == (str(w.dtype), w.weak_type)


@pytest.mark.parametrize("transform", ["jit", "grad", "jit_grad", "vmap"])
def test_make_jaxpr_closing_over_outer_tracer_keeps_it_as_const(transform):
    """make_jaxpr of a function closing over a tracer of an enclosing transformation gives
    that tracer among the ClosedJaxpr's consts (as jax), so ``eval_jaxpr(jaxpr, consts,
    *args)`` runs it (equinox's filter_closure_convert does this)."""
    import jax as rjax

    import minijax as mj

    def run(lib):
        shapes = []

        def outer(w):
            def f(x):
                return lib.numpy.dot(w, x) + lib.numpy.sin(w).sum()
            cj = lib.make_jaxpr(f)(lib.numpy.ones(3))
            shapes.append((len(cj.jaxpr.constvars), len(cj.consts), len(cj.jaxpr.invars)))
            return lib.core.eval_jaxpr(cj.jaxpr, cj.consts, lib.numpy.arange(3.0))[0]

        w = np.array([1.0, 2.0, 3.0], np.float32)
        if transform == "jit":
            out = lib.jit(outer)(w)
        elif transform == "grad":
            out = lib.grad(outer)(w)
        elif transform == "jit_grad":
            out = lib.jit(lib.grad(outer))(w)
        else:
            out = lib.vmap(outer)(np.stack([w, 2 * w]))
        return np.asarray(out).tolist(), shapes[0]

    assert run(mj) == run(rjax)


@pytest.mark.parametrize("registry", ["axis_primitive_batchers", "fancy_primitive_batchers",
                                      "primitive_batchers"])
def test_batching_registries_call_rules_like_jax(registry):
    """The three jax batching registries call their rules with jax's arguments:
    ``axis_primitive_batchers``: (axis_size, axis_name, None, vals, dims);
    ``fancy_primitive_batchers``: (axis_data, vals, dims); ``primitive_batchers``: (vals,
    dims). (equinox's internal primitives use the first.)"""
    import jax as rjax

    import minijax as mj

    def run(lib):
        from importlib import import_module
        batching = import_module(lib.__name__ + ".interpreters.batching")
        core = import_module(lib.__name__ + ".extend.core")
        p = core.Primitive(f"twice_{registry}")
        p.def_impl(lambda x: 2 * x)
        p.def_abstract_eval(lambda x: x)
        seen = []

        def rule(*args):
            if registry == "axis_primitive_batchers":
                size, name, trace_type, vals, dims = args
                seen.append((size, name, trace_type))
            elif registry == "fancy_primitive_batchers":
                axis_data, vals, dims = args
                seen.append((axis_data.size, axis_data.name))
            else:
                vals, dims = args
            seen.append(tuple(dims))
            return p.bind(*vals), dims[0]

        getattr(batching, registry)[p] = rule
        out = lib.vmap(p.bind, axis_name="i")(np.arange(3.0, dtype=np.float32))
        return np.asarray(out).tolist(), seen

    assert run(mj) == run(rjax)


@pytest.mark.parametrize("how", ["jvp", "linearize", "jit_jvp", "jvp_of_jit", "grad",
                                 "vmap_jvp"])
@pytest.mark.parametrize("symbolic_zeros", [True, False])
def test_custom_jvp_symbolic_zeros_like_jax(how, symbolic_zeros):
    """A custom_jvp rule defined with ``symbolic_zeros=True`` gets a ``SymbolicZero`` for
    each unperturbed input (else zeros), and may return one for an output (a symbolic
    zero tangent), as jax. (equinox's checkpointed while loop finds what a loop body
    perturbs with this.)"""
    import jax as rjax

    import minijax as mj

    def run(lib):
        SZ = lib.custom_derivatives.SymbolicZero
        seen = []

        @lib.custom_jvp
        def f(x, y):
            return x * 2.0, y * 3.0

        def f_jvp(p, t):
            seen.append(tuple(type(v) is SZ for v in t))
            tx, ty = t
            outx = SZ(lib.typeof(p[0])) if type(tx) is SZ else tx * 2.0
            outy = SZ(lib.typeof(p[1])) if type(ty) is SZ else ty * 3.0
            return f(*p), (outx, outy)

        f.defjvp(f_jvp, symbolic_zeros=symbolic_zeros)
        x, y = np.float32(1.5), np.float32(2.0)

        def g(x):
            a, b = f(x, y)
            return a + b

        if how == "jvp":
            out = lib.jvp(g, (x,), (np.float32(1.0),))
        elif how == "linearize":
            p, lin = lib.linearize(g, x)
            out = (p, lin(np.float32(1.0)))
        elif how == "jit_jvp":
            out = lib.jit(lambda x: lib.jvp(g, (x,), (np.float32(1.0),)))(x)
        elif how == "jvp_of_jit":
            out = lib.jvp(lib.jit(g), (x,), (np.float32(1.0),))
        elif how == "grad":
            out = lib.grad(g)(x)
        else:
            xs = np.array([1.0, 2.0], np.float32)
            out = lib.vmap(lambda x: lib.jvp(g, (x,), (np.float32(1.0),)))(xs)
        return [np.asarray(o).tolist() for o in lib.tree_util.tree_leaves(out)], seen[0]

    assert run(mj) == run(rjax)


@pytest.mark.parametrize("how", ["grad", "jit_grad", "vmap_grad", "grad_of_jit"])
@pytest.mark.parametrize("symbolic_zeros", [True, False])
def test_custom_vjp_bwd_symbolic_zero_cotangents_like_jax(how, symbolic_zeros):
    """A custom_vjp bwd defined with ``symbolic_zeros=True`` gets a ``SymbolicZero`` for
    each output whose cotangent is zero (else zeros), and may return one for an input, as
    jax. (equinox's checkpointed while loop finds which cotangents are zero this way.)"""
    import jax as rjax

    import minijax as mj

    def run(lib):
        SZ = lib.custom_derivatives.SymbolicZero
        seen = []

        @lib.custom_vjp
        def f(x, y):
            return x * 2.0, y * 3.0

        def fwd(x, y):
            if symbolic_zeros:
                x, y = x.value, y.value
            return f(x, y), None

        def bwd(_, ct):
            ca, cb = ct
            seen.append((type(ca) is SZ, type(cb) is SZ))
            gx = SZ(ca.aval) if type(ca) is SZ else ca * 2.0
            gy = SZ(cb.aval) if type(cb) is SZ else cb * 3.0
            return gx, gy

        f.defvjp(fwd, bwd, symbolic_zeros=symbolic_zeros)

        def g(x, y):
            return f(x, y)[0]

        x, y = np.float32(1.5), np.float32(2.0)
        if how == "grad":
            out = lib.grad(g, argnums=(0, 1))(x, y)
        elif how == "jit_grad":
            out = lib.jit(lib.grad(g, argnums=(0, 1)))(x, y)
        elif how == "grad_of_jit":
            out = lib.grad(lib.jit(g), argnums=(0, 1))(x, y)
        else:
            xs = np.array([1.0, 2.0], np.float32)
            out = lib.vmap(lib.grad(g, argnums=(0, 1)), in_axes=(0, None))(xs, y)
        return [np.asarray(o).tolist() for o in lib.tree_util.tree_leaves(out)], seen[0]

    assert run(mj) == run(rjax)


@pytest.mark.parametrize("how", ["linearize", "vjp"])
def test_integer_input_of_linearize_is_unperturbed_like_jax(how):
    """Under linearize (and vjp), an integer input has a symbolic zero tangent, as in jax: a
    custom_vjp fwd with ``symbolic_zeros=True`` sees it unperturbed (equinox's
    filter_custom_vjp asserts this of its integer arguments), and the results match."""
    import jax as rjax

    import minijax as mj

    def run(lib):
        seen = []

        @lib.custom_vjp
        def f(n, x):
            return x * n

        def fwd(n, x):
            seen.append((n.perturbed, x.perturbed))
            return f(n.value, x.value), n.value

        f.defvjp(fwd, lambda n, g: (None, g * n), symbolic_zeros=True)
        n, x = 3, np.float32(1.5)
        if how == "linearize":
            out, _ = lib.linearize(f, n, x)
            t = 0.0
        else:
            out, vjp = lib.vjp(f, n, x)
            ct = vjp(np.float32(1.0))
            t = ct[1]
            assert ct[0].dtype == lib.dtypes.float0
        return float(out), float(t), seen[0]

    assert run(mj) == run(rjax)


@pytest.mark.parametrize("jit", [False, True])
def test_custom_jvp_float0_tangent_out_is_unperturbed_like_jax(jit):
    """An integer output of a custom_jvp whose rule gives it a float0 (zero) tangent is not
    perturbed, as in jax: a custom_vjp fwd with ``symbolic_zeros=True`` downstream sees
    ``perturbed=False`` for it."""
    import jax as rjax

    import minijax as mj

    def run(lib):
        jnp_ = lib.numpy

        @lib.custom_jvp
        def g(x):
            return x * 2.0, jnp_.int32(3) + 0 * x.astype(jnp_.int32)

        def g_jvp(p, t):
            return g(*p), (t[0] * 2.0, np.zeros((), lib.dtypes.float0))

        g.defjvp(g_jvp)
        seen = []

        @lib.custom_vjp
        def f(n, x):
            return x * n

        def fwd(n, x):
            seen.append((n.perturbed, x.perturbed))
            return f(n.value, x.value), n.value

        f.defvjp(fwd, lambda n, c: (None, c * n), symbolic_zeros=True)

        def h(x):
            y, n = g(x)
            return f(n, y)

        d = lib.grad(h)
        out = (lib.jit(d) if jit else d)(np.float32(1.5))
        return float(out), seen[0]

    assert run(mj) == run(rjax)
