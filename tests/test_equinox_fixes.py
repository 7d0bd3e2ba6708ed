"""Behaviours equinox's test suite relies on, each compared against jax on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import minijax
import minijax.extend.core
import minijax.interpreters.ad
import minijax.interpreters.batching
import minijax.interpreters.mlir
import minijax.numpy

jax = pytest.importorskip("jax")
import jax.extend.core  # noqa: E402, F811
import jax.interpreters.ad  # noqa: E402
import jax.interpreters.batching  # noqa: E402
import jax.interpreters.mlir  # noqa: E402


class _Lib:
    """jax or minijax, with the modules a library registers primitives through."""

    def __init__(self, top, core, ad, batching, mlir):
        self.top, self.core, self.ad, self.batching, self.mlir = top, core, ad, batching, mlir
        self.jnp = top.numpy


LIBS = {
    "minijax": _Lib(minijax, minijax.extend.core, minijax.interpreters.ad,
                    minijax.interpreters.batching, minijax.interpreters.mlir),
    "jax": _Lib(jax, jax.extend.core, jax.interpreters.ad, jax.interpreters.batching,
                jax.interpreters.mlir),
}


def _both(run):
    got, want = run(LIBS["minijax"]), run(LIBS["jax"])
    return got, want


def _scaled_prim(lib, name, register_batch):
    """A primitive ``x -> 2 * x`` (multiple results) whose batching rule is registered by
    ``register_batch(prim, calls)``; ``calls`` records what the rule was given."""
    p = lib.core.Primitive(name)
    p.multiple_results = True
    p.def_impl(lambda x: [2 * x])
    p.def_abstract_eval(lambda x: [x])
    lib.mlir.register_lowering(p, lib.mlir.lower_fun(lambda x: [2 * x], multiple_results=True))
    calls = []
    register_batch(p, calls)
    return p, calls


def test_axis_primitive_batchers_older_convention_called_unbatched_too():
    def run(lib):
        def register(p, calls):
            def rule(axis_size, axis_name, trace_type, vals, dims):
                calls.append((axis_size, axis_name, trace_type, type(vals).__name__,
                              type(dims).__name__, tuple(dims)))
                (x,), (d,) = vals, dims
                return p.bind(x), [d]
            lib.batching.axis_primitive_batchers[p] = rule
        p, calls = _scaled_prim(lib, "scaled_axis", register)
        x = np.arange(6.0, dtype=np.float32).reshape(3, 2)
        out = lib.top.vmap(lambda v: p.bind(v)[0], axis_name="i")(x)
        # an operand that is not batched: jax still calls the rule
        out2 = lib.top.vmap(lambda v: p.bind(lib.jnp.ones(2))[0] + v, axis_name="j")(x)
        return np.asarray(out), np.asarray(out2), calls

    (o, o2, calls), (wo, wo2, wcalls) = _both(run)
    np.testing.assert_array_equal(o, wo)
    np.testing.assert_array_equal(o2, wo2)
    assert calls == wcalls == [(3, "i", None, "tuple", "tuple", (0,)),
                               (3, "j", None, "tuple", "tuple", (None,))]


def test_fancy_and_plain_primitive_batchers_conventions():
    def run(lib):
        def fancy(p, calls):
            def rule(axis_data, vals, dims):
                calls.append(("fancy", axis_data.size, axis_data.name, type(vals).__name__,
                              tuple(dims)))
                (x,), (d,) = vals, dims
                return p.bind(x), [d]
            lib.batching.fancy_primitive_batchers[p] = rule

        def plain(p, calls):
            def rule(vals, dims):
                calls.append(("plain", type(vals).__name__, type(dims).__name__, tuple(dims)))
                (x,), (d,) = vals, dims
                return p.bind(x), [d]
            lib.batching.primitive_batchers[p] = rule
        pf, cf = _scaled_prim(lib, "scaled_fancy", fancy)
        pp, cp = _scaled_prim(lib, "scaled_plain", plain)
        x = np.arange(4.0, dtype=np.float32)
        outs = []
        for p in (pf, pp):
            outs.append(np.asarray(lib.top.vmap(lambda v: p.bind(v)[0], axis_name="k")(x)))
            outs.append(np.asarray(lib.top.vmap(
                lambda v: p.bind(lib.jnp.ones(()))[0] + v, axis_name="k")(x)))
        return outs, cf + cp

    (outs, calls), (wouts, wcalls) = _both(run)
    for a, b in zip(outs, wouts):
        np.testing.assert_array_equal(a, b)
    assert calls == wcalls


def test_primitive_jvp_rule_gets_tuples():
    def run(lib):
        p = lib.core.Primitive("scaled_jvp")
        p.multiple_results = True
        p.def_impl(lambda x: [2 * x])
        p.def_abstract_eval(lambda x: [x])
        seen = []

        def jvp(primals, tangents):
            seen.append((type(primals).__name__, type(tangents).__name__))
            return p.bind(*primals), [2 * tangents[0]]
        lib.ad.primitive_jvps[p] = jvp
        out = lib.top.jvp(lambda v: p.bind(v)[0], (np.float32(3.0),), (np.float32(1.0),))
        return [float(o) for o in out], seen

    (out, seen), (wout, wseen) = _both(run)
    assert out == wout and seen == wseen == [("tuple", "tuple")]


def test_trace_main_identifies_the_trace_of_its_tracers():
    def run(lib):
        res = []

        def f(x):
            main = lib.core.find_top_trace([x]).main
            y = x * 2
            res.append((main is not None, x._trace.main is main, y._trace.main is main))
            return y
        lib.top.jvp(f, (np.float32(1.0),), (np.float32(1.0),))
        return res

    got, want = _both(run)
    assert got == want == [(True, True, True)]


@pytest.mark.parametrize("kind", ["aval", "struct"])
def test_linear_transpose_at_avals_and_shape_dtype_structs(kind):
    def run(lib):
        if kind == "aval":
            spec = lib.core.ShapedArray((2,), np.float32) if hasattr(lib.core, "ShapedArray") \
                else lib.top.core.ShapedArray((2,), np.float32)
        else:
            spec = lib.top.ShapeDtypeStruct((2,), np.float32)
        (ct,) = lib.top.linear_transpose(lambda v: 3 * v, spec)(np.ones(2, np.float32))
        return np.asarray(ct), str(ct.dtype)

    (ct, dt), (wct, wdt) = _both(run)
    np.testing.assert_array_equal(ct, wct)
    assert dt == wdt


def test_vjp_aux_leaves_that_are_not_arrays_come_back_as_they_are():
    def run(lib):
        def f(x):
            return x * 2, ("hi", object, None, 3, np.ones(2), lib.jnp.sin(x))
        _, _, aux = lib.top.vjp(f, 1.0, has_aux=True)
        (v, aux2), g = lib.top.value_and_grad(f, has_aux=True)(1.0)
        return aux, aux2, float(v), float(g)

    (aux, aux2, v, g), (waux, waux2, wv, wg) = _both(run)
    for a, b in [(aux, waux), (aux2, waux2)]:
        assert a[:4] == b[:4] == ("hi", object, None, 3)
        assert type(a[4]) is type(b[4]) is np.ndarray
        np.testing.assert_allclose(np.asarray(a[5]), np.asarray(b[5]), rtol=1e-6)
    assert (v, g) == (wv, wg)


def test_grad_of_jit_traces_custom_vjp_bwd_once():
    def run(lib):
        n_bwd, n_jvp = [], []

        @lib.top.custom_vjp
        def f(x):
            return x

        f.defvjp(lambda x: (x, None), lambda r, g: (n_bwd.append(1) or g + 2,))

        @lib.top.custom_jvp
        def h(x):
            return x

        h.defjvp(lambda p, t: (n_jvp.append(1) or p[0], 3 * t[0]))
        jf = lib.top.jit(lambda x: h(f(x)))
        x = lib.jnp.array(1.0)
        out = [float(lib.top.grad(jf)(x)) for _ in range(3)]
        return out, len(n_bwd), len(n_jvp)

    got, want = _both(run)
    assert got == want
    assert want[1:] == (1, 1)


@pytest.mark.parametrize("under_jit", [False, True])
def test_jvp_outputs_with_zero_tangent_are_not_jvp_tracers(under_jit):
    def run(lib):
        c, seen = lib.jnp.array(1.0), []

        def h(x, k):
            return x * 2, c * 3 + k, lib.jnp.floor(x)

        def f(x):
            outs = (lib.top.jit(h) if under_jit else h)(x, 1.0)
            seen.append([isinstance(o, lib.ad.JVPTracer) for o in outs])
            return outs
        out, tout = lib.top.jvp(f, (2.0,), (1.0,))
        return seen, [float(o) for o in out], [float(t) for t in tout]

    got, want = _both(run)
    assert got == want
    assert want[0] == [[True, False, False]]


@pytest.mark.parametrize("transform", ["grad", "jit", "vmap", "jvp"])
def test_make_jaxpr_closed_over_tracers_are_consts(transform):
    def run(lib):
        seen = []

        def f(x, y):
            z = x + y
            closed = lib.top.make_jaxpr(lambda a: z + a)(1.0)
            seen.append((len(closed.jaxpr.constvars), len(closed.jaxpr.invars),
                         [c is z for c in closed.consts]))
            return z
        t = lib.top
        if transform == "grad":
            t.grad(f)(1.0, 1.0)
        elif transform == "jit":
            t.jit(f)(1.0, 1.0)
        elif transform == "vmap":
            t.vmap(f)(lib.jnp.ones(2), lib.jnp.ones(2))
        else:
            t.jvp(f, (1.0, 1.0), (1.0, 1.0))
        return seen

    got, want = _both(run)
    assert got == want == [(1, 1, [True])]


def _types(lib, tree):
    return lib.top.tree_util.tree_map(
        lambda a: "array" if isinstance(a, lib.top.Array) else
        "float" if isinstance(a, float) else type(a).__name__, tree)  # jax's TypedFloat too


@pytest.mark.parametrize("fn", ["identity", "consts", "add", "neg", "mul", "custom_jvp",
                                "passthrough"])
def test_jvp_output_types_as_jax(fn):
    def run(lib):
        @lib.top.custom_jvp
        def cj(x):
            return x ** 2 + 1

        cj.defjvp(lambda p, t: (p[0] ** 2 + 1, t[0] ** 2))
        # a primitive whose jvp rule passes the tangent through: it stays as given
        ident = lib.core.Primitive("ident_passthrough")
        ident.def_impl(lambda x: x)
        ident.def_abstract_eval(lambda x: x)
        lib.ad.primitive_jvps[ident] = lambda p, t: (ident.bind(*p), t[0])
        f = {"identity": lambda x: x, "consts": lambda x: (x, 1.0, np.float32(2)),
             "add": lambda x: x + 1, "neg": lambda x: -x, "mul": lambda x: x * 2,
             "custom_jvp": cj,
             "passthrough": ident.bind}[fn]
        out = lib.top.jvp(f, (2.0,), (3.0,))
        vals = lib.top.tree_util.tree_map(float, out)
        return _types(lib, out), vals

    got, want = _both(run)
    assert got == want


def test_vjp_primal_out_as_the_function_made_it():
    def run(lib):
        out, _ = lib.top.vjp(lambda x: (x, 1.0, x * 2), 2.0)
        (v, g) = lib.top.value_and_grad(lambda x: 1.0)(2.0)
        return _types(lib, (out, v)), float(g)

    got, want = _both(run)
    assert got == want


def test_custom_jvp_symbolic_zeros_rule_sees_and_returns_symbolic_zeros():
    def run(lib):
        seen = []

        @lib.top.custom_jvp
        def f(x, y):
            return x + y, x * y

        def f_jvp(p, t):
            x, y = p
            tx, ty = t
            sz = lib.top.custom_derivatives.SymbolicZero
            seen.append((isinstance(tx, sz), isinstance(ty, sz)))
            return f(x, y), (tx, lib.top.custom_derivatives.SymbolicZero(ty.aval))
        f.defjvp(f_jvp, symbolic_zeros=True)
        one = lib.jnp.array(1.0)
        out, tout = lib.top.jvp(lambda x: f(x, one), (one,), (one,))
        return seen, [float(o) for o in out], [float(t) for t in tout]

    got, want = _both(run)
    assert got == want == ([(False, True)], [2.0, 1.0], [1.0, 0.0])


def test_custom_vjp_symbolic_zeros_bwd_sees_symbolic_zero_cotangents():
    def run(lib):
        seen = []
        sz = lib.top.custom_derivatives.SymbolicZero

        @lib.top.custom_vjp
        def f(x, y):
            return x + y, x * y

        def fwd(x, y):
            seen.append(("fwd", x.perturbed, y.perturbed))
            return f(x.value, y.value), (x.value, y.value)

        def bwd(res, ct):
            c1, c2 = ct
            seen.append(("bwd", isinstance(c1, sz), isinstance(c2, sz)))
            return c1, sz(c1.aval)
        f.defvjp(fwd, bwd, symbolic_zeros=True)
        g = lib.top.grad(lambda x: f(x, lib.jnp.array(2.0))[0])(1.0)
        return seen, float(g)

    got, want = _both(run)
    assert got == want == ([("fwd", True, False), ("bwd", False, True)], 1.0)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bfloat16"])
def test_numpy_save_and_load_as_jax(tmp_path, dtype):
    def run(lib):
        path = tmp_path / f"{lib.top.__name__}.npy"
        x = lib.jnp.arange(4).astype(dtype)
        with open(path, "wb") as f:
            lib.jnp.save(f, x)
        y = lib.jnp.load(path)
        return isinstance(y, lib.top.Array), str(y.dtype), np.asarray(y, np.float32)

    (arr, dt, v), (warr, wdt, wv) = _both(run)
    assert (arr, dt) == (warr, wdt) == (True, dtype)
    np.testing.assert_array_equal(v, wv)


def test_dtypes_bfloat16_is_the_scalar_type():
    def run(lib):
        b = lib.top.dtypes.bfloat16
        x = np.float32(1.5).astype(b)
        return (isinstance(b, type), isinstance(x, b), str(np.dtype(b)),
                str(lib.jnp.zeros(2, b).dtype), b == lib.jnp.bfloat16)

    got, want = _both(run)
    assert got == want == (True, True, "bfloat16", "bfloat16", True)


def test_jaxpr_interpreter_with_get_bind_params_and_eqn_effects():
    """An interpreter of jaxprs as libraries write one (equinox's finalise_jaxpr): re-bind
    each equation with ``get_bind_params``, running custom_jvp calls through their
    ``subfuns``; ``eqn.effects`` says which equations have effects."""
    def run(lib):
        @lib.top.custom_jvp
        def cj(x):
            return lib.jnp.sin(x) * 2

        cj.defjvp(lambda p, t: (cj(p[0]), t[0]))

        def f(x):
            lib.top.debug.print("x={x}", x=x)
            return cj(x + 1) * 3

        closed = lib.top.make_jaxpr(f)(1.0)

        def interpret(x):
            env = dict(zip(closed.jaxpr.invars, [x]))
            read = lambda v: v.val if isinstance(v, lib.core.Literal) else env[v]  # noqa: E731
            effects = []
            for eqn in closed.jaxpr.eqns:
                params = eqn.primitive.get_bind_params(eqn.params)
                effects.append((eqn.primitive.name, len(eqn.effects) > 0))
                ins = [read(v) for v in eqn.invars]
                if eqn.primitive.name == "custom_jvp_call":
                    out = params["subfuns"][0].call_wrapped(*ins)
                else:
                    out = eqn.primitive.bind(*ins, **params)
                outs = out if eqn.primitive.multiple_results else [out]
                env.update(zip(eqn.outvars, outs))
            return [read(v) for v in closed.jaxpr.outvars], effects

        (y,), effects = interpret(lib.jnp.array(0.5))
        yj = lib.top.jit(lambda x: interpret(x)[0][0])(lib.jnp.array(0.5))
        return float(y), float(yj), effects

    got, want = _both(run)
    assert got[:2] == pytest.approx(want[:2])
    assert [e for _, e in got[2]] == [e for _, e in want[2]]
    assert [n for n, _ in got[2]] == [n for n, _ in want[2]]


def test_lowering_rule_with_emit_python_callback():
    """A primitive lowered as a host callback through ``mlir.emit_python_callback`` (as
    equinox's noinline): run under jit, vmap of jit and in a scan."""
    def run(lib):
        p = lib.core.Primitive("host_double")
        p.multiple_results = True
        calls = []

        def host(x):
            calls.append(np.shape(x))
            return (np.asarray(x) * 2 + 1,)
        p.def_impl(lambda x: [x * 2 + 1])
        p.def_abstract_eval(lambda x: [x])

        def lowering(ctx, x):
            assert ctx.module_context is not None
            res, token, keep = lib.mlir.emit_python_callback(
                ctx, host, None, [x], ctx.avals_in, ctx.avals_out, has_side_effect=False,
                sharding=None)
            ctx.module_context.add_keepalive(keep)
            return res
        lib.mlir.register_lowering(p, lowering)
        x = np.arange(3.0, dtype=np.float32)
        y = lib.top.jit(lambda v: p.bind(v)[0] + 1)(x)
        z = lib.top.jit(lambda v: lib.top.lax.scan(
            lambda c, e: (c + p.bind(e)[0], None), 0.0, v)[0])(x)
        return np.asarray(y), float(z), len(calls)

    (y, z, n), (wy, wz, wn) = _both(run)
    np.testing.assert_array_equal(y, wy)
    assert (z, n) == (wz, wn)


@pytest.mark.parametrize("x", [np.int32(1), 1.0, np.ones(2, np.float32), True])
def test_aval_to_tangent_aval(x):
    def run(lib):
        t = lib.top.typeof(x).to_tangent_aval()
        return t.shape, str(t.dtype), t.weak_type

    got, want = _both(run)
    assert got == want


def test_unknown_compiler_option_raises_jax_runtime_error():
    def run(lib):
        lowered = lib.top.jit(lambda x: 2 * x).lower(1.0)
        with pytest.raises(lib.top.errors.JaxRuntimeError, match="No such compile option"):
            lowered.compile(compiler_options={"an option that does not make sense": "bad"})
        return True

    assert _both(run) == (True, True)


def test_pmap_lower_compile_and_call():
    def run(lib):
        f = lib.top.pmap(lambda x, y: 2 * x + y, in_axes=(0, None))
        x = lib.jnp.array([3])
        lowered = f.lower(x, 4)
        text = lowered.as_text()
        out = lowered.compile()(x, 4)
        return "stablehlo" in text or "mhlo" in text, np.asarray(out).tolist()

    got, want = _both(run)
    assert got == want == (True, [10])


def test_vmap_of_custom_jvp_keeps_unbatched_operands_unbatched():
    def run(lib):
        calls = []

        def host(v):
            calls.append(1)
            return np.asarray(v)

        @lib.top.custom_jvp
        def f(x, pred):
            branch = lambda: lib.top.pure_callback(  # noqa: E731
                host, lib.top.ShapeDtypeStruct((), np.float32), np.float32(1))
            return lib.top.lax.cond(pred, lambda: x * 0 + branch(), lambda: x * 2)

        f.defjvp(lambda p, t: (f(*p), t[0] * 3))
        xs = lib.jnp.arange(1.0, 4.0)
        out = lib.top.vmap(f, in_axes=(0, None))(xs, False)
        p, t = lib.top.jvp(lambda v: lib.top.vmap(f, in_axes=(0, None))(v, False),
                           (xs,), (lib.jnp.ones(3),))
        return np.asarray(out).tolist(), np.asarray(p).tolist(), np.asarray(t).tolist(), \
            len(calls)

    got, want = _both(run)
    assert got == want
    assert want[3] == 0


def test_failing_callback_is_logged_as_jax_logs_it(caplog):
    import logging

    def run(lib):
        def bad(x):
            raise ValueError("no")
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            with pytest.raises(Exception):
                lib.top.jit(lambda x: lib.top.pure_callback(
                    bad, lib.top.ShapeDtypeStruct((), np.float32), x))(1.0).block_until_ready()
        return [(r.name, r.getMessage()) for r in caplog.records]

    got, want = _both(run)
    assert got == want == [("jax._src.callback", "jax.pure_callback failed")]


_SHARDING_PROGRAM = r"""
import sys
import numpy as np
lib = __import__(sys.argv[1])
lib.config.update("jax_num_cpu_devices", 2)
jnp = lib.numpy
mesh = lib.make_mesh((2,), ("x",), axis_types=(lib.sharding.AxisType.Auto,))
s = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("x"))
x = jnp.zeros(20)
committed = [a.committed for a in [
    x, lib.device_put(x, s), lib.device_put(1.0), x + 1, lib.device_put(x, lib.devices()[1]),
    lib.jit(lambda a: a + 1)(lib.device_put(x, s)), lib.jit(lambda a: a)(x),
    lib.lax.with_sharding_constraint(x, s)]]
out = lib.jit(lambda a: lib.lax.with_sharding_constraint(a + 1, s))(x)
print(committed, out.sharding == s, np.asarray(out).sum())
"""


def test_committed_and_sharding_constraint_inside_jit_places_the_call():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(minijax.__file__)))
    env = dict(os.environ, PYTHONPATH=root)  # the minijax under test
    outs = []
    for name in ("minijax", "jax"):
        r = subprocess.run([sys.executable, "-c", _SHARDING_PROGRAM, name], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(r.stdout.strip().splitlines()[-1])
    assert outs[0] == outs[1]
    assert outs[1].endswith("True 20.0")
