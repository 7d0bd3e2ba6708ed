"""Bad input raises what jax raises (issue 12, item 6).

Each case of ``SAME_AS_JAX`` runs against minijax and against jax: jax must
raise (else it is not a bad-input case), minijax must raise the same exception
type, and minijax's message must name the offending value. ``NOT_AS_JAX`` lists
the inputs where jax gives a wrong answer or an internal error instead of a
clear exception; there minijax raises, and the case says what jax does.
"""

import inspect

import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp

jax = pytest.importorskip("jax")

# jax deprecates jit(device=, backend=); minijax supports them.
pytestmark = pytest.mark.filterwarnings("ignore:backend and device argument:DeprecationWarning")


class _Api:
    def __init__(self, top, jnp, lax):
        self.top, self.jnp, self.lax = top, jnp, lax


MJX = _Api(minijax, mjnp, minijax.lax)
JAX = _Api(jax, jax.numpy, jax.lax)
BIG = 2**40


def _raised(case, api):
    try:
        case(api)
    except Exception as e:  # noqa: BLE001 - the exception is the result under test
        return e
    return None


def _f(x, y):
    return x + y


def _custom_jvp(m, rule):
    @m.top.custom_jvp
    def f(x):
        return m.jnp.sin(x)
    f.defjvp(lambda p, t: rule(m, p[0], t[0]))
    return f


def _custom_vjp(m, bwd):
    @m.top.custom_vjp
    def f(x):
        return m.jnp.sin(x)
    f.defvjp(lambda x: (f(x), x), lambda res, ct: bwd(m, ct))
    return f


def _grad_of(m, f):
    return m.top.grad(lambda x: f(x).sum())(m.jnp.ones(3))


def _jvp_of(m, f):
    x = m.jnp.ones(3)
    return m.top.jvp(f, (x,), (x,))


# (name, case(api), text that minijax's message must contain)
SAME_AS_JAX = [
    # non-integer sizes and shapes: TypeError
    ("zeros float shape", lambda m: m.jnp.zeros((2.5,)), "2.5"),
    ("ones string shape", lambda m: m.jnp.ones("3"), "'3'"),
    ("full numpy float size", lambda m: m.jnp.full((np.float32(2.0),), 1.0), "2.0"),
    ("empty None size", lambda m: m.jnp.empty((2, None)), "None"),
    ("zeros 0-d float array", lambda m: m.jnp.zeros(np.array(2.5)), "2.5"),
    ("zeros_like float shape", lambda m: m.jnp.zeros_like(m.jnp.ones(3), shape=(2.5,)), "2.5"),
    ("full_like string shape", lambda m: m.jnp.full_like(m.jnp.ones(3), 1, shape=("3",)), "'3'"),
    ("eye float N", lambda m: m.jnp.eye(2.5), "2.5"),
    ("eye float M", lambda m: m.jnp.eye(2, 2.5), "2.5"),
    ("eye float k", lambda m: m.jnp.eye(3, k=2.5), "2.5"),
    ("identity string", lambda m: m.jnp.identity("3"), "'3'"),
    ("linspace float num", lambda m: m.jnp.linspace(0.0, 1.0, 2.5), "2.5"),
    ("reshape float size", lambda m: m.jnp.reshape(m.jnp.ones(6), (2.5, 3)), "2.5"),
    ("broadcast_to float size", lambda m: m.jnp.broadcast_to(m.jnp.ones(3), (2.5, 3)), "2.5"),
    ("tile float reps", lambda m: m.jnp.tile(m.jnp.ones(3), 2.5), "2.5"),
    ("repeat float count", lambda m: m.jnp.repeat(m.jnp.ones(3), 2.5), "2.5"),
    ("iota float size", lambda m: m.lax.iota(np.int32, 2.5), "2.5"),
    ("iota string size", lambda m: m.lax.iota(np.int32, "3"), "'3'"),
    ("broadcasted_iota float", lambda m: m.lax.broadcasted_iota(np.int32, (2.5, 2), 0), "2.5"),
    ("broadcast_in_dim float",
     lambda m: m.lax.broadcast_in_dim(m.jnp.ones(3), (2.5, 3), (1,)), "2.5"),
    ("lax.broadcast string", lambda m: m.lax.broadcast(m.jnp.ones(3), ("3",)), "'3'"),
    ("lax.reshape float", lambda m: m.lax.reshape(m.jnp.ones(6), (2.5, 3)), "2.5"),
    ("lax.reshape None", lambda m: m.lax.reshape(m.jnp.ones(6), (None, 3)), "None"),
    ("lax.pad float", lambda m: m.lax.pad(m.jnp.ones(3), 0.0, [(2.5, 0, 0)]), "2.5"),
    ("lax.slice float", lambda m: m.lax.slice(m.jnp.ones(3), (0,), (2.5,)), "2.5"),
    ("dynamic_slice float size",
     lambda m: m.lax.dynamic_slice(m.jnp.ones(3), (0,), (2.5,)), "2.5"),
    ("dynamic_slice string size",
     lambda m: m.lax.dynamic_slice(m.jnp.ones(3), (0,), ("3",)), "'3'"),
    ("integer_pow float exponent", lambda m: m.lax.integer_pow(m.jnp.ones(3), 2.5), "2.5"),
    ("integer_pow string exponent", lambda m: m.lax.integer_pow(m.jnp.ones(3), "3"), "'3'"),
    ("integer_pow None exponent", lambda m: m.lax.integer_pow(m.jnp.ones(3), None), "None"),
    ("top_k float k", lambda m: m.lax.top_k(m.jnp.arange(5.0), 2.5), "2.5"),
    ("eval_shape float ShapeDtypeStruct",
     lambda m: m.top.eval_shape(lambda x: x, m.top.ShapeDtypeStruct((2.5,), np.float32)), "2.5"),
    ("traced size under jit", lambda m: m.top.jit(lambda n: m.jnp.zeros(n))(3), "static"),
    ("argmax float axis", lambda m: m.lax.argmax(m.jnp.ones((2, 3)), 0.5, np.int32), "0.5"),
    ("sort float dimension", lambda m: m.lax.sort(m.jnp.ones((2, 3)), dimension=0.5), "0.5"),
    ("sort float num_keys",
     lambda m: m.lax.sort((m.jnp.ones(3), m.jnp.ones(3)), num_keys=1.5), "1.5"),
    ("dot_general float dimension",
     lambda m: m.lax.dot_general(m.jnp.ones((2, 3)), m.jnp.ones((2, 3)),
                                 (((1.0,), (1,)), ((), ()))), "1.0"),
    ("round float decimals", lambda m: m.jnp.round(m.jnp.ones(3), 0.5), "0.5"),
    ("round integers to tens", lambda m: m.jnp.round(m.jnp.arange(3), -1), "decimals"),
    ("vmap float axis_size",
     lambda m: m.top.vmap(lambda: 1.0, in_axes=(), axis_size=2.5)(), "2.5"),
    ("vmap negative axis_size",
     lambda m: m.top.vmap(lambda: 1.0, in_axes=(), axis_size=-1)(), "-1"),
    # negative sizes: TypeError/ValueError naming the shape, never an MLIR error
    ("zeros negative", lambda m: m.jnp.zeros((-1,)), "(-1,)"),
    ("ones negative int", lambda m: m.jnp.ones(-2), "(-2,)"),
    ("full negative", lambda m: m.jnp.full((2, -3), 1.0), "(2, -3)"),
    ("zeros_like negative", lambda m: m.jnp.zeros_like(m.jnp.ones(3), shape=(-1,)), "(-1,)"),
    ("broadcast_to negative", lambda m: m.jnp.broadcast_to(m.jnp.ones(3), (-1, 3)), "(-1, 3)"),
    ("broadcast_in_dim negative",
     lambda m: m.lax.broadcast_in_dim(m.jnp.ones(3), (-1, 3), (1,)), "(-1, 3)"),
    ("lax.broadcast negative", lambda m: m.lax.broadcast(m.jnp.ones(3), (-2,)), "(-2, 3)"),
    ("lax.reshape negative", lambda m: m.lax.reshape(m.jnp.ones(6), (-1, -6)), "(-1, -6)"),
    ("iota negative", lambda m: m.lax.iota(np.int32, -1), "(-1,)"),
    ("broadcasted_iota negative",
     lambda m: m.lax.broadcasted_iota(np.int32, (-1, 2), 0), "(-1, 2)"),
    ("eye negative", lambda m: m.jnp.eye(-1), "-1"),
    ("linspace negative num", lambda m: m.jnp.linspace(0.0, 1.0, -1), "-1"),
    ("repeat negative", lambda m: m.jnp.repeat(m.jnp.ones(3), -1), "-1"),
    ("dynamic_slice negative size",
     lambda m: m.lax.dynamic_slice(m.jnp.ones(3), (0,), (-1,)), "(-1,)"),
    ("lax.slice negative", lambda m: m.lax.slice(m.jnp.ones(3), (0,), (-1,)), "(-1,)"),
    ("pad negative", lambda m: m.jnp.pad(m.jnp.ones(3), -1), "-1"),
    # Python ints out of the index type's range: OverflowError
    ("index 2**40", lambda m: m.jnp.arange(10)[BIG], str(BIG)),
    ("index -2**40", lambda m: m.jnp.arange(10)[-BIG], str(-BIG)),
    ("index 2**31", lambda m: m.jnp.arange(10)[2**31], str(2**31)),
    ("index -2**31-1", lambda m: m.jnp.arange(10)[-2**31 - 1], str(-2**31 - 1)),
    ("index 2**40 with ellipsis", lambda m: m.jnp.arange(10)[..., BIG], str(BIG)),
    ("index 2**40 under jit", lambda m: m.top.jit(lambda x: x[BIG])(m.jnp.arange(10)), str(BIG)),
    ("at[2**40].get", lambda m: m.jnp.arange(10).at[BIG].get(), str(BIG)),
    ("take 2**40", lambda m: m.jnp.take(m.jnp.arange(10), BIG), str(BIG)),
    ("dynamic_index_in_dim 2**40",
     lambda m: m.lax.dynamic_index_in_dim(m.jnp.arange(10), BIG), str(BIG)),
    # jit's argument options: checked when jit is applied, as in jax
    ("static_argnums out of range", lambda m: m.top.jit(_f, static_argnums=2), "(2,)"),
    ("static_argnums negative out of range", lambda m: m.top.jit(_f, static_argnums=-3), "-3"),
    ("static_argnums float", lambda m: m.top.jit(_f, static_argnums=1.0), "1.0"),
    ("static_argnums float in tuple", lambda m: m.top.jit(_f, static_argnums=(1.5,)), "1.5"),
    ("static_argnums string", lambda m: m.top.jit(_f, static_argnums="1"), "'1'"),
    ("donate_argnums out of range", lambda m: m.top.jit(_f, donate_argnums=(0, 2)), "(0, 2)"),
    ("donate_argnums float", lambda m: m.top.jit(_f, donate_argnums=(0.5,)), "0.5"),
    ("static_argnames unknown", lambda m: m.top.jit(_f, static_argnames="z"), "'z'"),
    ("static_argnames int", lambda m: m.top.jit(_f, static_argnames=1), "1"),
    ("donate_argnames unknown", lambda m: m.top.jit(_f, donate_argnames=("x", "w")), "'w'"),
    ("static and donated", lambda m: m.top.jit(_f, static_argnums=0, donate_argnums=0), "x"),
    ("jit device and backend",
     lambda m: m.top.jit(_f, device=m.top.devices()[0], backend="cpu"), "backend='cpu'"),
    # custom_jvp / custom_vjp rules and vjp cotangents of the wrong type
    ("custom_jvp tangent shape",
     lambda m: _jvp_of(m, _custom_jvp(m, lambda m, x, t: (m.jnp.sin(x), t.sum()))), "f32[]"),
    ("custom_jvp tangent dtype",
     lambda m: _jvp_of(m, _custom_jvp(m, lambda m, x, t: (m.jnp.sin(x), t.astype(np.float16)))),
     "f16[3]"),
    ("custom_jvp tangent of grad",
     lambda m: _grad_of(m, _custom_jvp(m, lambda m, x, t: (m.jnp.sin(x), t.sum()))), "f32[]"),
    ("custom_jvp integer tangent",
     lambda m: _jvp_of(m, _custom_jvp(m, lambda m, x, t: (m.jnp.sin(x), t.astype(np.int32)))),
     "i32[3]"),
    ("custom_jvp rule not a pair",
     lambda m: _jvp_of(m, _custom_jvp(m, lambda m, x, t: (x, t, t))), "pair"),
    ("custom_jvp tangent structure",
     lambda m: _jvp_of(m, _custom_jvp(m, lambda m, x, t: (x, (t,)))), "structure"),
    ("custom_vjp bwd shape",
     lambda m: _grad_of(m, _custom_vjp(m, lambda m, ct: (ct.sum(),))), "f32[]"),
    ("custom_vjp bwd nested", lambda m: _grad_of(m, _custom_vjp(m, lambda m, ct: ((ct,),))),
     "structure"),
    ("custom_vjp bwd not a tuple", lambda m: _grad_of(m, _custom_vjp(m, lambda m, ct: ct)),
     "tuple"),
    ("custom_vjp bwd too long", lambda m: _grad_of(m, _custom_vjp(m, lambda m, ct: (ct, ct))),
     "1"),
    ("vjp cotangent shape",
     lambda m: m.top.vjp(m.jnp.sin, m.jnp.ones(3))[1](m.jnp.ones(4)), "4"),
    ("vjp function called with two cotangents",
     lambda m: m.top.vjp(m.jnp.sin, m.jnp.ones(3))[1](m.jnp.ones(3), m.jnp.ones(3)), "2"),
    # pmap over nothing
    ("pmap zero-size axis", lambda m: m.top.pmap(lambda x: x * 2)(m.jnp.ones((0, 3))), "size 0"),
]


@pytest.mark.parametrize("case,named", [c[1:] for c in SAME_AS_JAX],
                         ids=[c[0] for c in SAME_AS_JAX])
def test_same_exception_as_jax(case, named):
    want = _raised(case, JAX)
    assert want is not None, "jax accepts this input: not a bad-input case"
    got = _raised(case, MJX)
    assert got is not None, f"minijax accepted it; jax raised {want!r}"
    assert isinstance(got, type(want)), f"minijax raised {got!r}; jax raised {want!r}"
    assert named in str(got), f"the message does not name {named!r}: {got}"


# (name, case, the exception minijax raises, text its message names, what jax does)
NOT_AS_JAX = [
    ("tile negative", lambda m: m.jnp.tile(m.jnp.ones(3), -1), ValueError, "-1",
     "jax: an MLIRError from an invalid tensor type"),
    ("at[2**40].set", lambda m: m.jnp.arange(10).at[BIG].set(1), OverflowError, str(BIG),
     "jax wraps the index to 0 and writes element 0"),
    ("dynamic_slice start 2**40",
     lambda m: m.lax.dynamic_slice(m.jnp.arange(10), (BIG,), (1,)), OverflowError, str(BIG),
     "jax wraps the start to 0"),
    ("jit string device", lambda m: m.top.jit(_f, device="cpu"), TypeError, "'cpu'",
     "jax: AttributeError when the function is called"),
    ("jit unknown backend", lambda m: m.top.jit(_f, backend="nope"), RuntimeError,
     "Unknown backend nope",
     "jax: the same RuntimeError, but only when the function is called"),
    ("split float sections", lambda m: m.jnp.split(m.jnp.ones(4), 2.5), TypeError, "2.5",
     "jax truncates 2.5 to 2 sections"),
    ("cumsum float axis", lambda m: m.lax.cumsum(m.jnp.ones((2, 3)), axis=0.5), TypeError,
     "0.5", "jax reads axis 0.5 as 0"),
    ("scan float length", lambda m: m.lax.scan(lambda c, _: (c, c), 0.0, None, length=2.5),
     TypeError, "2.5", "jax runs 2 steps"),
    ("make_array_from_callback list shape",
     lambda m: m.top.make_array_from_callback(
         [4], m.top.sharding.SingleDeviceSharding(m.top.devices()[0]),
         lambda i: np.ones(4, np.float32)), TypeError, "[4]",
     "jax: TypeError (unhashable type: 'list') from a cache of shard shapes, in some "
     "processes only (not once minijax is imported)"),
    ("eval_shape negative ShapeDtypeStruct",
     lambda m: m.top.eval_shape(lambda x: x + 1, m.top.ShapeDtypeStruct((-3,), np.float32)),
     TypeError, "(-3,)", "jax returns a ShapeDtypeStruct of shape (-3,)"),
    ("trace negative ShapeDtypeStruct",
     lambda m: m.top.jit(lambda x: x).trace(m.top.ShapeDtypeStruct((2, -1), np.float32)),
     TypeError, "(2, -1)", "jax traces it; lowering then fails with an MLIRError"),
    ("scan negative length", lambda m: m.lax.scan(lambda c, _: (c, c), 0.0, None, length=-1),
     ValueError, "-1", "jax: an MLIRError from an invalid tensor type"),
]


@pytest.mark.parametrize("case,exc,named", [c[1:4] for c in NOT_AS_JAX],
                         ids=[c[0] for c in NOT_AS_JAX])
def test_raises_where_jax_does_not_say_so(case, exc, named):
    got = _raised(case, MJX)
    assert isinstance(got, exc), got
    assert named in str(got), got


# ---- valid inputs near the bad ones still work, as in jax --------------------------------

@pytest.mark.parametrize("case", [
    lambda m: m.jnp.zeros((np.int64(2), True)),                       # NumPy ints and bools
    lambda m: m.jnp.zeros(np.array([2, 3])),                          # an integer array
    lambda m: m.jnp.zeros(m.jnp.asarray(2)),                          # a concrete 0-d array
    lambda m: m.jnp.reshape(m.jnp.ones(6), (-1, 3)),                  # reshape's -1
    lambda m: m.lax.integer_pow(m.jnp.ones(3), np.int32(-2)),
    lambda m: m.jnp.arange(10)[2**31 - 1],                             # the largest int32
    lambda m: m.jnp.arange(10)[-2**31],
    lambda m: m.jnp.arange(10)[np.array([BIG])],                      # an array index clamps
    lambda m: m.top.jit(_f, static_argnums=(1, 1, -1))(1.0, 2.0),     # duplicates are fine
    lambda m: m.top.jit(_f, static_argnums=np.int64(1))(1.0, 2.0),
    lambda m: m.top.jit(lambda *a: a[0], static_argnums=5)(1.0),      # *args takes any
    lambda m: m.top.jit(lambda x, **kw: x, static_argnames="z")(1.0, z=2),
    lambda m: m.top.jit(_f, backend="cpu")(1.0, 2.0),
    lambda m: m.top.jit(_f, device=m.top.devices()[0])(1.0, 2.0),
    lambda m: _grad_of(m, _custom_vjp(m, lambda m, ct: [ct])),        # a list is a tuple
    lambda m: _grad_of(m, _custom_vjp(m, lambda m, ct: (ct.astype(np.float16),))),
    lambda m: _jvp_of(m, _custom_jvp(m, lambda m, x, t: (m.jnp.sin(x), t * 2.0))),
], ids=["numpy sizes", "array shape", "0-d array size", "reshape -1", "numpy exponent",
        "index 2**31-1", "index -2**31", "array index 2**40", "duplicate argnums",
        "numpy argnum", "varargs argnum", "kwargs argname", "backend cpu", "device 0",
        "bwd list", "bwd other float dtype", "weak tangent"])
def test_valid_neighbours_still_work(case):
    want = jax.tree_util.tree_map(np.asarray, case(JAX))
    got = minijax.tree_util.tree_map(np.asarray, case(MJX))
    for w, g in zip(jax.tree_util.tree_leaves(want), minijax.tree_util.tree_leaves(got)):
        assert w.shape == g.shape and w.dtype == g.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_out_of_bounds_python_index_in_x64_is_dropped_or_clamped(x64):
    x = mjnp.arange(10)
    assert int(x[BIG]) == 9 and int(x[-BIG]) == 0       # clamped, as every static index
    np.testing.assert_array_equal(x.at[BIG].set(100), np.arange(10))   # dropped
    np.testing.assert_array_equal(x.at[-BIG].add(100), np.arange(10))
    with pytest.raises(OverflowError, match=str(2**70)):
        x[2**70]


def test_jit_argnums_errors_come_when_jit_is_applied():
    # jax raises at jit(...), before any call; so does minijax.
    for kw in (dict(static_argnums=2), dict(donate_argnums=-3), dict(static_argnames="q")):
        with pytest.raises(ValueError):
            jax.jit(_f, **kw)
        with pytest.raises(ValueError, match="Jitted function _f"):
            minijax.jit(_f, **kw)
    # a function without a signature is not checked (as in jax)
    with pytest.raises(ValueError):
        inspect.signature(max)
    jax.jit(max, static_argnums=5)
    minijax.jit(max, static_argnums=5)


def test_jit_on_the_default_device_lowers_and_compiles():
    # (jit on another device: tests/stages/test_jit.py, in its multi-device subprocess)
    dev = minijax.devices()[0]
    f = minijax.jit(lambda x: x * 2, device=dev)
    assert f(1.0).device == dev
    assert float(f.lower(1.0).compile()(1.0)) == 2.0


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
def test_round_to_decimals_matches_jax(dtype):
    x = np.array([1.2345, -2.5551, 123.456, 0.0049, 6e4], np.float32)
    for decimals in (0, 1, 2, -1, 9):
        want = jax.numpy.round(jax.numpy.asarray(x, dtype), decimals)
        got = mjnp.round(mjnp.asarray(x, dtype), decimals)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=str(decimals))


def test_shape_error_names_a_traced_size():
    with pytest.raises(TypeError, match="static_argnums"):
        minijax.jit(lambda n: mjnp.ones((n, 2)))(3)
    assert minijax.jit(lambda n: mjnp.ones((n, 2)), static_argnums=0)(3).shape == (3, 2)


def test_a_jax_array_is_refused_with_a_clear_type_error():
    # jax Arrays have an ``aval`` attribute too (jax's own ShapedArray): it used to reach
    # the lowering and come out as "minijax produced invalid MLIR"
    jjnp = pytest.importorskip("jax.numpy")
    x = jjnp.ones(4)
    for call in (lambda: minijax.jit(lambda v: v + 1)(x), lambda: minijax.numpy.sin(x),
                 lambda: minijax.grad(lambda v: v.sum())(x)):
        with pytest.raises(TypeError, match="ArrayImpl.* is not a valid minijax type"):
            call()
