"""Shape polymorphism (symbolic dimensions) in minijax.export, side by side with jax.export:
dimension expressions, tracing and lowering with symbolic shapes, Exported.call for
several concrete sizes, serialization both ways, grad/vmap of the exported call."""

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax import export as jexport

import minijax
import minijax.numpy as mjnp
from minijax import export as mexport
from minijax.core import InconclusiveDimensionOperation


def _run(fn, *args):
    try:
        return str(fn(*args))
    except (InconclusiveDimensionOperation, jax.errors.InconclusiveDimensionOperation):
        return "Inconclusive"
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return type(e).__name__


_EXPR_CASES = [
    ("b, n", lambda b, n: 2 * b + n - 1),
    ("b, n", lambda b, n: (b * n) // b),
    ("b, n", lambda b, n: b * n + 3 * b - 1),
    ("b, n", lambda b, n: (b + 1) * (b - 1)),
    ("b, n", lambda b, n: b * n * b),
    ("b, n", lambda b, n: b - n),
    ("b, n", lambda b, n: n + b),
    ("b, n", lambda b, n: b // 2),
    ("b, n", lambda b, n: (2 * b + 4) // 2),
    ("b, n", lambda b, n: b % 2),
    ("b, n", lambda b, n: divmod(6 * b + 3, 3)),
    ("b, n", lambda b, n: (b * n) % n),
    ("b, n", lambda b, n: b ** 3),
    ("b, n", lambda b, n: b >= 1),
    ("b, n", lambda b, n: b >= 2),
    ("b, n", lambda b, n: b > 0),
    ("b, n", lambda b, n: b < 1),
    ("b, n", lambda b, n: b == 1),
    ("b, n", lambda b, n: b == b),
    ("b, n", lambda b, n: b != n),
    ("b, n", lambda b, n: b + 1 == 1 + b),
    ("b, n", lambda b, n: b > n),
    ("b, n", lambda b, n: 3 * b > b),
    ("b, n", lambda b, n: b % 3 < 3),
    ("b, n", lambda b, n: int(b)),
    ("b, n", lambda b, n: b * 0),
    ("b, n", lambda b, n: b - b + 4),
    ("b, 2*n+1, mod(b, 3), floordiv(b, n), max(b, 4), min(b, 1)", lambda *a: a),
    ("b, n", lambda b, n: hash(b) == hash(b + 0)),
]


@pytest.mark.parametrize("spec,fn", _EXPR_CASES)
def test_dim_expr_matches_jax(spec, fn):
    got = _run(fn, *mexport.symbolic_shape(spec))
    want = _run(fn, *jexport.symbolic_shape(spec))
    assert got == want


@pytest.mark.parametrize("spec,constraints,fn", [
    ("b, n", ["b >= n"], lambda b, n: b >= n),
    ("b, n", ["b >= n"], lambda b, n: b + 5 >= n),
    ("b, n", ["b <= 15"], lambda b, n: b < 16),
    ("b, n", ["b <= 15"], lambda b, n: b < 15),
    ("b, n", ["b == 2*n"], lambda b, n: b * 2 + n),
    ("b, n", ["b >= 4"], lambda b, n: b >= 3),
])
def test_constraints_match_jax(spec, constraints, fn):
    got = _run(fn, *mexport.symbolic_shape(spec, constraints=constraints))
    want = _run(fn, *jexport.symbolic_shape(spec, constraints=constraints))
    assert got == want


@pytest.mark.parametrize("spec,like", [
    ("b, ,", None), ("b, n+", None), ("b, ...", None), ("b, _", (None,)),
    ("b, 3", (None, 4)), ("", None), ("(b, ...)", (None, 3, 4)), ("b, _, c", (2, 5, 6)),
    ("-3", None), ("b^2", None), ("max(b, 2), 3*b - 1", None),
])
def test_parsing_matches_jax(spec, like):
    got = _run(lambda: mexport.symbolic_shape(spec, like=like))
    want = _run(lambda: jexport.symbolic_shape(spec, like=like))
    assert got == want


def test_unbalanced_spec_is_a_value_error():
    # (jax lets tokenize.TokenError escape here)
    with pytest.raises(ValueError, match="syntax error in symbolic shape"):
        mexport.symbolic_shape("(b, 3")


def test_scopes_and_errors():
    assert issubclass(InconclusiveDimensionOperation,
                      minijax.errors.InconclusiveDimensionOperation)
    a, = mexport.symbolic_shape("a")
    b, = mexport.symbolic_shape("a")
    assert a != b  # different scopes
    with pytest.raises(ValueError, match="Invalid mixing of symbolic scopes"):
        _ = a + b
    with pytest.raises(ValueError, match="Cannot specify both"):
        mexport.symbolic_shape("a", constraints=["a >= 2"], scope=mexport.SymbolicScope())
    with pytest.raises(ValueError, match="Unsatisfiable"):
        mexport.symbolic_shape("a", constraints=["2 >= 3"])
    with pytest.raises(ValueError, match="sequence of strings"):
        mexport.SymbolicScope("a >= 2")
    scope = mexport.SymbolicScope(["a >= 3"])
    a, = mexport.symbolic_shape("a", scope=scope)
    assert a >= 3 and mexport.is_symbolic_dim(a) and not mexport.is_symbolic_dim(3)
    with pytest.raises(InconclusiveDimensionOperation, match="inconclusive"):
        _ = a >= 4


def test_symbolic_args_specs_matches_jax():
    args = (np.zeros((2, 3), np.float32), {"w": np.zeros((4,), np.int32)})
    for specs in ("b, ...", ("b, _", {"w": "n"}), ("b, 3", None)):
        got = mexport.symbolic_args_specs(args, specs)
        want = jexport.symbolic_args_specs(args, specs)
        g, w = minijax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
        assert [(str(s.shape), s.dtype) for s in g] == [(str(s.shape), s.dtype) for s in w]


def _poly_fn(jnp):
    def f(x, y):
        s = jnp.sin(x) + 1.0
        r = s.reshape(-1)
        t = jnp.sum(s, axis=1) + jnp.arange(x.shape[0])
        z = jnp.zeros((x.shape[0], 2)) + x[:, :2]
        d = jnp.dot(x, y)
        c = jnp.concatenate([x, x], axis=0)
        k = x.shape[0] * 2 + x
        w = jnp.broadcast_to(x[:, None, :], (x.shape[0], 2, 3))
        return t, r, z, d, c, k, jnp.max(x, axis=0), x.T @ x, x[1:], w.reshape(x.shape[0], 6)
    return f


def _specs(lib, export):
    b, = export.symbolic_shape("b")
    return (lib.ShapeDtypeStruct((b, 3), np.float32), lib.ShapeDtypeStruct((3, 4), np.float32))


@pytest.fixture(scope="module")
def exports():
    m = mexport.export(minijax.jit(_poly_fn(mjnp)))(*_specs(minijax, mexport))
    j = jexport.export(jax.jit(_poly_fn(jjnp)))(*_specs(jax, jexport))
    return m, j


def _same(a, b):
    a, b = [np.asarray(v) for v in a], [np.asarray(v) for v in b]
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.shape == v.shape and u.dtype == v.dtype
        np.testing.assert_array_equal(u, v)


def test_exported_avals_match_jax(exports):
    m, j = exports
    assert [str(a) for a in m.in_avals] == ["f32[b,3]", "f32[3,4]"]
    assert [a.str_short() for a in m.out_avals] == \
        [a.str_short(short_dtypes=True) for a in j.out_avals]
    assert m.uses_global_constants and j.uses_global_constants


def test_lowered_module_is_dynamic_like_jax(exports):
    m, _ = exports
    text = m.mlir_module()
    assert "jax.uses_shape_polymorphism = true" in text
    assert re.search(r"@main\(%arg0: tensor<\?x3xf32>", text)
    assert 'jax.global_constant = "b"' in text
    for op in ("get_dimension_size", "dynamic_broadcast_in_dim", "dynamic_reshape",
               "dynamic_iota", "real_dynamic_slice", "@_wrapped_jax_export_main"):
        assert op in text, op


@pytest.mark.parametrize("n", [1, 2, 7])
def test_call_matches_jax_both_ways(exports, n):
    m, j = exports
    m_on_j = jexport.deserialize(m.serialize())
    j_on_m = mexport.deserialize(j.serialize())
    assert [str(a) for a in j_on_m.in_avals] == ["f32[b,3]", "f32[3,4]"]
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n + 1, 3)).astype(np.float32)  # x[1:] needs b >= 1 rows after
    y = rng.standard_normal((3, 4)).astype(np.float32)
    ref = j.call(x, y)
    _same(m.call(x, y), ref)
    _same(m_on_j.call(x, y), ref)
    _same(j_on_m.call(x, y), ref)
    _same(minijax.jit(m.call)(x, y), ref)
    _same(minijax.jit(j_on_m.call)(x, y), ref)


def test_call_shape_errors(exports):
    m, _ = exports
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="Shape mismatch"):
        m.call(x, np.zeros((3, 5), np.float32))
    with pytest.raises(ValueError, match="Rank mismatch"):
        m.call(np.zeros((2,), np.float32), np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="Dtype mismatch"):
        m.call(x.astype(np.int32), np.zeros((3, 4), np.float32))


def test_two_dim_vars_and_linear_dims():
    def f(jnp):
        return lambda x, y: (jnp.sum(x.reshape(x.shape[0], -1, 2), axis=2), y * x.shape[1])

    def spec(lib, export):
        b, n = export.symbolic_shape("b, n")
        return lib.ShapeDtypeStruct((b, 2 * n), np.float32), lib.ShapeDtypeStruct((n,),
                                                                                  np.int32)
    m = mexport.export(minijax.jit(f(mjnp)))(*spec(minijax, mexport))
    j = jexport.export(jax.jit(f(jjnp)))(*spec(jax, jexport))
    assert [str(a) for a in m.out_avals] == ["f32[b,n]", "i32[n]"]
    m_on_j = jexport.deserialize(m.serialize())
    for b, n in [(1, 1), (3, 2), (2, 5)]:
        x = np.arange(b * 2 * n, dtype=np.float32).reshape(b, 2 * n)
        y = np.arange(n, dtype=np.int32)
        _same(m.call(x, y), j.call(x, y))
        _same(m_on_j.call(x, y), j.call(x, y))
    with pytest.raises(ValueError, match="polymorphic shapes"):
        m.call(np.zeros((2, 3), np.float32), np.zeros((1,), np.int32))  # 2*n == 3


def test_jaxpr_matches_jax():
    def f(x):
        return (x * x.shape[0]).reshape(-1, 1) + 1

    got = str(minijax.make_jaxpr(f)(minijax.ShapeDtypeStruct(
        mexport.symbolic_shape("b, 2"), np.float32)))
    want = str(jax.make_jaxpr(f)(jax.ShapeDtypeStruct(jexport.symbolic_shape("b, 2"),
                                                      np.float32)))
    strip = lambda s: "\n".join(line.rstrip() for line in s.splitlines())  # noqa: E731
    assert strip(got) == strip(want)


def test_inconclusive_comparison_while_tracing():
    def f(x):
        return x if x.shape[0] > 2 else -x
    spec = minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 2"), np.float32)
    with pytest.raises(InconclusiveDimensionOperation, match="inconclusive"):
        mexport.export(minijax.jit(f))(spec)
    spec = minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 2", constraints=["b >= 3"]),
                                    np.float32)
    exp = mexport.export(minijax.jit(f))(spec)
    x = np.ones((4, 2), np.float32)
    np.testing.assert_array_equal(np.asarray(exp.call(x)), x)


def test_grad_of_exported_call_both_ways():
    def f(jnp):
        return lambda x: jnp.sum(jnp.sin(x) * x.shape[0])

    m = mexport.export(minijax.jit(f(mjnp)))(minijax.ShapeDtypeStruct(
        mexport.symbolic_shape("b, 3"), np.float32))
    j = jexport.export(jax.jit(f(jjnp)))(jax.ShapeDtypeStruct(
        jexport.symbolic_shape("b, 3"), np.float32))
    m_on_j = jexport.deserialize(m.serialize(vjp_order=1))
    j_on_m = mexport.deserialize(j.serialize(vjp_order=1))
    for n in (1, 4):
        x = np.linspace(-1, 1, n * 3, dtype=np.float32).reshape(n, 3)
        ref = np.asarray(jax.grad(j.call)(x))
        np.testing.assert_array_equal(np.asarray(minijax.grad(m.call)(x)), ref)
        np.testing.assert_array_equal(np.asarray(jax.grad(m_on_j.call)(x)), ref)
        np.testing.assert_array_equal(np.asarray(minijax.grad(j_on_m.call)(x)), ref)


def test_vmap_of_exported_call():
    m = mexport.export(minijax.jit(lambda x: mjnp.sum(x, axis=0) + x * 2.0))(
        minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 3"), np.float32))
    xs = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    got = np.asarray(minijax.vmap(m.call)(xs))
    np.testing.assert_array_equal(got, np.stack([np.asarray(m.call(x)) for x in xs]))


_OPS = {
    "mean": lambda jnp, x: jnp.mean(x, axis=0),
    "var_all": lambda jnp, x: jnp.var(x),
    "softmax": lambda jnp, x: jnp.exp(x) / jnp.sum(jnp.exp(x), axis=1, keepdims=True),
    "argmax0": lambda jnp, x: jnp.argmax(x, axis=0),
    "cumsum1": lambda jnp, x: jnp.cumsum(x, axis=1),
    "where": lambda jnp, x: jnp.where(x > 0, x, 0.0),
    "transpose_stack": lambda jnp, x: jnp.stack([x.T, x.T], axis=1),
    "ones_like_full": lambda jnp, x: jnp.ones_like(x) + jnp.full((x.shape[0], 1), 2.0),
    "shape_arith": lambda jnp, x: x.reshape((jnp.shape(x)[0] * 3,)) / x.shape[0],
    "index": lambda jnp, x: x[0] + x[-1],
    "slice_step": lambda jnp, x: x[::2],
    "einsum": lambda jnp, x: jnp.einsum("ij,ik->jk", x, x),
    "pad": lambda jnp, x: jnp.pad(x, ((1, 1), (0, 0))),
    "sort_flip": lambda jnp, x: jnp.flip(jnp.sort(x, axis=0), axis=0),
    "tile": lambda jnp, x: jnp.tile(x, (2, 1)),
    "dim_as_int_array": lambda jnp, x: jnp.array(x.shape[0]) + 1,
    "arange_from_1": lambda jnp, x: jnp.arange(1, x.shape[0] + 1) * 1.0,
    "dot_bb": lambda jnp, x: x @ x.T,
    "unused_arg": lambda jnp, x: jnp.zeros((x.shape[0],)),
    "eye": lambda jnp, x: jnp.eye(x.shape[0]) @ x + jnp.eye(x.shape[0], 3, k=1),
    "take_rows": lambda jnp, x: jnp.take(x, jnp.array([0, 0, 5]), axis=0),
    "take_cols": lambda jnp, x: jnp.take(x, jnp.array([2, 0]), axis=1),
    "fancy_index": lambda jnp, x: x[jnp.array([0, -1]), 1],
    "gather_by_argmax": lambda jnp, x: jnp.take_along_axis(
        x, jnp.argmax(x, axis=1)[:, None], axis=1),
    "scatter_col": lambda jnp, x: x.at[:, 1].add(1.0),
    "scatter_row": lambda jnp, x: x.at[0].set(7.0),
    "dynamic_slice": lambda jnp, x: jax.lax.dynamic_slice(x, (0, 1), (1, 2))
    if jnp is jjnp else minijax.lax.dynamic_slice(x, (0, 1), (1, 2)),
}


@pytest.mark.parametrize("name", sorted(_OPS))
def test_ops_match_jax(name):
    f = _OPS[name]
    je = jexport.export(jax.jit(lambda x: f(jjnp, x)))(
        jax.ShapeDtypeStruct(jexport.symbolic_shape("b, 3"), np.float32))
    me = mexport.export(minijax.jit(lambda x: f(mjnp, x)))(
        minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 3"), np.float32))
    assert [a.str_short() for a in me.out_avals] == \
        [a.str_short(short_dtypes=True) for a in je.out_avals]
    for n in (1, 4):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        _same([me.call(x)], [je.call(x)])


def _control_flow(lib, jnp):
    inner = lib.jit(lambda x: jnp.sin(x) + jnp.arange(x.shape[0])[:, None])
    return {
        "nested_jit": lambda x: inner(x) * 2,
        "cond": lambda x: lib.lax.cond(jnp.sum(x) > 0, lambda x: x + jnp.zeros(x.shape),
                                       lambda x: -x, x),
        "scan": lambda x: lib.lax.scan(lambda c, r: (c + r, c * jnp.ones_like(r)),
                                       jnp.zeros(3), x)[1],
        "scan_reverse": lambda x: lib.lax.scan(lambda c, r: (c * r + 1.0, c), jnp.ones(3), x,
                                               reverse=True)[1],
        "fori": lambda x: lib.lax.fori_loop(0, 3, lambda i, c: c + jnp.ones((x.shape[0], 3)),
                                            x),
        "vmap_inside": lambda x: lib.vmap(lambda r: r * jnp.arange(3.0))(x),
        "grad_inside": lambda x: lib.grad(lambda x: jnp.sum(jnp.sin(x) * x.shape[0]))(x),
    }


@pytest.mark.parametrize("name", sorted(_control_flow(jax, jjnp)))
def test_transforms_and_control_flow_match_jax(name):
    je = jexport.export(jax.jit(_control_flow(jax, jjnp)[name]))(
        jax.ShapeDtypeStruct(jexport.symbolic_shape("b, 3"), np.float32))
    me = mexport.export(minijax.jit(_control_flow(minijax, mjnp)[name]))(
        minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 3"), np.float32))
    m_on_j = jexport.deserialize(me.serialize())
    for n in (1, 4):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        ref = [je.call(x)]
        _same([me.call(x)], ref)
        _same([m_on_j.call(x)], ref)


def test_multi_platform_poly_export():
    me = mexport.export(minijax.jit(lambda x: x * 2), platforms=("cpu", "cuda"))(
        minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 3"), np.float32))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(me.call(x)), x * 2)
    np.testing.assert_array_equal(np.asarray(jexport.deserialize(me.serialize()).call(x)), x * 2)


def test_unsupported_is_a_clear_error():
    spec = minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 3"), np.float32)
    with pytest.raises(TypeError, match="eye N must be an integer, got 2.5"):
        mexport.export(minijax.jit(lambda x: mjnp.eye(2.5) @ x))(spec)
    with pytest.raises(InconclusiveDimensionOperation, match="Cannot divide evenly"):
        mexport.export(minijax.jit(lambda x: x[:, 0].reshape(2, -1)))(spec)


@pytest.mark.parametrize("name", ["cumsum", "cumprod_reverse", "cummax", "cumlogsumexp"])
def test_cumulative_along_symbolic_axis_matches_jax(name):
    def f(lib):
        return {"cumsum": lambda x: lib.lax.cumsum(x, axis=0) + lib.lax.cumsum(2 * x, axis=0),
                "cumprod_reverse": lambda x: lib.lax.cumprod(x, axis=0, reverse=True),
                "cummax": lambda x: lib.lax.cummax(x, axis=0),
                "cumlogsumexp": lambda x: lib.lax.cumlogsumexp(x, axis=0)}[name]
    me = mexport.export(minijax.jit(f(minijax)))(
        minijax.ShapeDtypeStruct(mexport.symbolic_shape("b, 3"), np.float32))
    assert "stablehlo.dynamic_reduce_window" in me.mlir_module()
    je = jexport.export(jax.jit(f(jax)))(
        jax.ShapeDtypeStruct(jexport.symbolic_shape("b, 3"), np.float32))
    m_on_j = jexport.deserialize(me.serialize())
    for n in (1, 5):
        x = np.random.default_rng(n).standard_normal((n, 3)).astype(np.float32)
        ref = [je.call(x)]
        _same([me.call(x)], ref)
        _same([m_on_j.call(x)], ref)


def test_call_inside_another_polymorphic_export():
    def f(jnp):
        return lambda x: (jnp.sin(x) * x.shape[0], jnp.arange(x.shape[0]))

    outs = {}
    for lib, jnp, ex in ((minijax, mjnp, mexport), (jax, jjnp, jexport)):
        e = ex.export(lib.jit(f(jnp)))(lib.ShapeDtypeStruct(ex.symbolic_shape("b, 3"),
                                                            np.float32))
        outer = ex.export(lib.jit(lambda y, e=e, jnp=jnp: e.call(jnp.concatenate([y, y]))))(
            lib.ShapeDtypeStruct(ex.symbolic_shape("c, 3"), np.float32))
        assert [str(a.shape) for a in outer.out_avals] == ["(2*c, 3)", "(2*c,)"]
        outs[lib.__name__] = outer
    m_on_j = jexport.deserialize(outs["minijax"].serialize())
    for n in (1, 3):
        x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
        ref = outs["jax"].call(x)
        _same(outs["minijax"].call(x), ref)
        _same(m_on_j.call(x), ref)
