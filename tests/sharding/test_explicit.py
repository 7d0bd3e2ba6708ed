"""Sharding in types (explicit mesh axes), checked against jax 0.10.2 on 8 CPU devices:
``typeof(x).sharding``, the propagation rules, jax's errors, ``out_sharding=``,
``reshard`` and result shardings, and jax's SPMD pattern (an MLP training step under
jit on a 2x4 explicit mesh).

The cases run in one subprocess with 8 devices for minijax and jax, as in
``test_sharding.py``: each ``@case`` returns ``(minijax's, jax's)`` descriptions.
"""


import numpy as np
import pytest

from tests.sharding._eight_devices import get, run_cases, worker

CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _libs():
    import jax
    import jax.numpy as jjnp
    import minijax
    import minijax.numpy as mjnp
    return (minijax, mjnp), (jax, jjnp)


def _desc(lib, x):
    """What a result is: its type's shape and spec, its sharding's spec, its values."""
    t = lib.typeof(x)
    return dict(shape=tuple(t.shape), type_spec=_spec(t.sharding.spec, len(t.shape)),
                spec=_spec(x.sharding.spec, len(t.shape)), value=np.asarray(x))


def _spec(spec, ndim):
    parts = [p if not isinstance(p, list) else tuple(p) for p in tuple(spec)]
    return tuple(parts + [None] * (ndim - len(parts)))


def _both(fn):
    """``fn(lib, jnp, mesh, P, put)`` for minijax and jax, each on a 2x4 explicit mesh
    set with ``set_mesh``; an exception comes back as ``(type name, message)``."""
    out = []
    for lib, jnp in _libs():
        mesh = lib.make_mesh((2, 4), ("x", "y"))
        P = lib.sharding.PartitionSpec
        put = (lambda lib_, m: lambda a, *spec: lib_.device_put(
            np.asarray(a, np.float32), lib_.sharding.NamedSharding(m, P(*spec))))(lib, mesh)
        with lib.set_mesh(mesh):
            try:
                out.append(fn(lib, jnp, mesh, P, put))
            except Exception as e:  # noqa: BLE001 - compared with jax's
                out.append((type(e).__name__, str(e)))
    return out


def _x(*shape):
    return (np.arange(int(np.prod(shape))).reshape(shape) * 0.25 - 3).astype(np.float32)


# ---- cases -------------------------------------------------------------------------------

@case
def mesh_api():
    out = []
    for lib, _ in _libs():
        m = lib.make_mesh((2, 4), ("x", "y"))
        AT = lib.sharding.AxisType
        auto = lib.sharding.Mesh(m.devices, ("x", "y"))
        mixed = lib.sharding.Mesh(m.devices, ("x", "y"), axis_types=(AT.Explicit, AT.Auto))
        before = lib.sharding.get_abstract_mesh()
        with lib.set_mesh(m):
            inside = lib.sharding.get_abstract_mesh()
            got_mesh = lib.sharding.get_mesh() == m
        out.append(dict(types=[repr(t) for t in m.axis_types],
                        auto=[repr(t) for t in auto.axis_types],
                        mixed=[repr(t) for t in mixed.axis_types],
                        before=(before.empty, tuple(before.axis_names)),
                        inside=(tuple(inside.axis_names), tuple(inside.axis_sizes),
                                [repr(t) for t in inside.axis_types],
                                inside.are_all_axes_explicit),
                        got_mesh=got_mesh,
                        after=lib.sharding.get_abstract_mesh().empty,
                        abstract=m.abstract_mesh == inside))
    return out


@case
def typeof_placed():
    def f(lib, jnp, mesh, P, put):
        x = put(_x(8, 4), "x", "y")
        t = lib.typeof(x)
        seen = []
        lib.jit(lambda v: seen.append(_spec(lib.typeof(v).sharding.spec, 2)) or v)(x)
        rep = put(_x(8, 4))
        return dict(spec=_spec(t.sharding.spec, 2), abstract=t.sharding.mesh == mesh.abstract_mesh,
                    str=str(t).replace("float32", "f32"), jit=seen[0],
                    replicated=_spec(lib.typeof(rep).sharding.spec, 2),
                    rep_mesh_empty=lib.typeof(rep).sharding.mesh.empty,
                    unplaced=_spec(lib.typeof(jnp.ones((2, 3))).sharding.spec, 2))
    return _both(f)


def _ops(lib, jnp, mesh, P, put):
    x = put(_x(8, 4), "x", "y")
    a = put(_x(8, 4) + 1, "x", None)
    v = put(_x(4), "y")
    return x, a, v


OPS = {
    "sin": lambda lib, jnp, x, a, v, P: jnp.sin(x),
    "add_scalar": lambda lib, jnp, x, a, v, P: x * 2 + 1,
    "add_partial": lambda lib, jnp, x, a, v, P: x + a,
    "broadcast_row": lambda lib, jnp, x, a, v, P: x + v,
    "sum0": lambda lib, jnp, x, a, v, P: x.sum(0),
    "sum1": lambda lib, jnp, x, a, v, P: jnp.sum(x, axis=1),
    "max0": lambda lib, jnp, x, a, v, P: jnp.max(x, axis=0),
    "mean_all": lambda lib, jnp, x, a, v, P: jnp.mean(x),
    "transpose": lambda lib, jnp, x, a, v, P: x.T,
    "reshape_merge": lambda lib, jnp, x, a, v, P: x.reshape(32),
    "reshape_split": lambda lib, jnp, x, a, v, P: x.reshape(2, 4, 4),
    "expand": lambda lib, jnp, x, a, v, P: x[None],
    "broadcast_to": lambda lib, jnp, x, a, v, P: jnp.broadcast_to(x[:, None, :], (8, 3, 4)),
    "reshard": lambda lib, jnp, x, a, v, P: lib.sharding.reshard(x, P(None, "x")),
    "matmul_free": lambda lib, jnp, x, a, v, P: a @ lib.sharding.reshard(x.T, P(None, "y")),
    "zeros": lambda lib, jnp, x, a, v, P: jnp.zeros((8, 4), out_sharding=P("x")),
    "full": lambda lib, jnp, x, a, v, P: jnp.full((8, 4), 2.0, out_sharding=P(None, "y")),
    "arange": lambda lib, jnp, x, a, v, P: jnp.arange(16.0, out_sharding=P(("x", "y"))),
}

ERRORS = {
    "add_conflict": lambda lib, jnp, x, a, v, P: x + lib.sharding.reshard(x, P("y", "x")),
    "reshape_ambiguous": lambda lib, jnp, x, a, v, P: x.reshape(4, 8),
    "matmul_contract": lambda lib, jnp, x, a, v, P: x @ lib.sharding.reshard(x.T, P("y")),
}


def _run_ops(table, jitted):
    out = {}
    for name in table:
        def f(lib, jnp, mesh, P, put, name=name):
            x, a, v = _ops(lib, jnp, mesh, P, put)
            fn = lambda x, a, v: table[name](lib, jnp, x, a, v, P)
            return _desc(lib, lib.jit(fn)(x, a, v) if jitted else fn(x, a, v))
        out[name] = _both(f)
    return out


@case
def ops_eager():
    return _run_ops(OPS, False)


@case
def ops_jit():
    return _run_ops(OPS, True)


@case
def errors_jit():
    return _run_ops(ERRORS, True)


@case
def errors_eager():
    return _run_ops(ERRORS, False)


@case
def out_sharding_contractions():
    def f(lib, jnp, mesh, P, put):
        c = put(_x(8, 4), None, "y")
        d = put(_x(4, 16), "y", None)
        b = put(_x(2, 8, 4), "x", None, "y")
        e = put(_x(2, 4, 16), "x", "y", None)
        return dict(
            matmul=_desc(lib, jnp.matmul(c, d, out_sharding=P("x", None))),
            dot_jit=_desc(lib, lib.jit(lambda c, d: jnp.dot(c, d, out_sharding=P("x", "y")))(c, d)),
            einsum=_desc(lib, lib.jit(lambda c, d: jnp.einsum("ij,jk->ki", c, d,
                                                              out_sharding=P("x", None)))(c, d)),
            dot_general=_desc(lib, lib.jit(lambda c, d: lib.lax.dot_general(
                c, d, (((1,), (0,)), ((), ())), out_sharding=P(None, "x")))(c, d)),
            batched=_desc(lib, lib.jit(lambda b, e: jnp.einsum(
                "bij,bjk->bik", b, e, out_sharding=P("x", None, "y")))(b, e)),
            batched_free=_desc(lib, lib.jit(lambda b: jnp.einsum(
                "bij,bkj->bik", lib.sharding.reshard(b, P("x", "y")), b,
                out_sharding=P("x", "y")))(b)),
        )
    return _both(f)


@case
def mlp_training_step():
    """jax's SPMD pattern: batch split over 'x', hidden units over 'y'; a jitted SGD
    step's losses and the parameters' and outputs' shardings."""
    def f(lib, jnp, mesh, P, put):
        rng = np.random.RandomState(0)
        params = [(put(rng.randn(16, 32) * 0.3, None, "y"), put(np.zeros(32), "y")),
                  (put(rng.randn(32, 4) * 0.3, "y", None), put(np.zeros(4)))]
        xs = put(rng.randn(8, 16), "x", None)
        ys = put(np.eye(4)[rng.randint(0, 4, 8)], "x", None)

        def loss(params, x, y):
            (w1, b1), (w2, b2) = params
            h = jnp.tanh(x @ w1 + b1)
            logits = jnp.einsum("bh,ho->bo", h, w2, out_sharding=P("x", None)) + b2
            logp = logits - jnp.log(jnp.sum(jnp.exp(logits), axis=1, keepdims=True))
            return -jnp.mean(jnp.sum(logp * y, axis=1))

        @lib.jit
        def step(params, x, y):
            value, grads = lib.value_and_grad(loss)(params, x, y)
            new = lib.tree_util.tree_map(lambda p, g: p - 0.5 * g, params, grads)
            return new, value

        losses = []
        for _ in range(3):
            params, value = step(params, xs, ys)
            losses.append(float(value))
        leaves = lib.tree_util.tree_leaves(params)
        return dict(losses=losses,
                    param_specs=[_spec(p.sharding.spec, p.ndim) for p in leaves],
                    param_types=[_spec(lib.typeof(p).sharding.spec, p.ndim) for p in leaves],
                    loss_spec=_spec(value.sharding.spec, 0),
                    values=[np.asarray(p) for p in leaves])
    return _both(f)


@case
def smap_and_inferred_specs():
    """``smap`` and ``shard_map`` with in_specs inferred from the arguments' types (the
    default), over all the mesh's explicit axes; results' types are the out_specs."""
    def f(lib, jnp, mesh, P, put):
        x = put(_x(8, 4), "x", "y")
        xm = put(_x(8, 4), "x")
        full = lib.jit(lib.shard_map(lambda b: lib.lax.psum(b.sum(0, keepdims=True), "x"),
                                     out_specs=P(None, "y")))(x)
        given = lib.shard_map(lambda b: b * 3, in_specs=P("x", "y"), out_specs=P("x", "y"))(x)
        sm = lib.jit(lib.smap(lambda b: b * 2 + lib.lax.axis_index("x"), in_axes=0,
                              out_axes=0, axis_name="x"))(xm)
        sm_infer = lib.smap(lambda b: b - 1, out_axes=0, axis_name="x")(xm)
        sm_none = lib.smap(lambda b, c: b * c, in_axes=(0, None), out_axes=0,
                           axis_name="x")(xm, put(np.ones(4)))
        return dict(full=_desc(lib, full), given=_desc(lib, given), smap=_desc(lib, sm),
                    smap_infer=_desc(lib, sm_infer), smap_none=_desc(lib, sm_none))
    return _both(f)


@case
def smap_and_inferred_spec_errors():
    def mismatch(lib, jnp, mesh, P, put):
        return lib.shard_map(lambda b: b, in_specs=P("y"), out_specs=P("y"))(
            put(_x(8, 4), "x", "y"))

    def bad_in_axes(lib, jnp, mesh, P, put):
        return lib.smap(lambda b: b, in_axes=[0], out_axes=0, axis_name="x")

    def bad_axis_name(lib, jnp, mesh, P, put):
        return lib.smap(lambda b: b, in_axes=0, out_axes=0, axis_name=("x",))

    def bad_out_axes(lib, jnp, mesh, P, put):
        return lib.smap(lambda b: b, in_axes=0, out_axes="x", axis_name="x")
    return {k: _both(fn) for k, fn in dict(mismatch=mismatch, bad_in_axes=bad_in_axes,
                                           bad_axis_name=bad_axis_name,
                                           bad_out_axes=bad_out_axes).items()}


@case
def infer_needs_explicit_axes():
    """in_specs/in_axes left to Infer over Auto axes is jax's TypeError."""
    out = []
    for lib, _ in _libs():
        AT = lib.sharding.AxisType
        m = lib.make_mesh((2, 4), ("x", "y"), axis_types=(AT.Auto, AT.Auto))
        with lib.set_mesh(m):
            errs = []
            for make in (lambda: lib.shard_map(lambda b: b, out_specs=lib.P("x")),
                         lambda: lib.smap(lambda b: b, out_axes=0, axis_name="x")):
                try:
                    make()(np.ones((8, 4), np.float32))
                    errs.append(None)
                except TypeError as e:
                    errs.append(str(e))
        out.append(errs)
    return out


def _worker(path):
    worker(CASES, path)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out, stderr = run_cases("test_explicit", tmp_path_factory.mktemp("explicit"))
    return out



def _same(ours, theirs, where):
    assert isinstance(ours, dict) and isinstance(theirs, dict), (where, ours, theirs)
    for k in theirs:
        if k == "value":
            np.testing.assert_allclose(ours[k], theirs[k], rtol=1e-5, atol=1e-5, err_msg=where)
        else:
            assert ours[k] == theirs[k], (where, k, ours[k], theirs[k])


pytestmark = pytest.mark.slow


def test_mesh_api_matches_jax(results):
    ours, theirs = get(results, "mesh_api")
    assert ours == theirs
    assert ours["types"] == ["Explicit", "Explicit"] and ours["auto"] == ["Auto", "Auto"]


def test_typeof_of_placed_arrays(results):
    ours, theirs = get(results, "typeof_placed")
    assert ours == theirs, (ours, theirs)
    assert ours["spec"] == ("x", "y") and ours["str"] == "f32[8@x,4@y]"


@pytest.mark.parametrize("mode", ["ops_eager", "ops_jit"])
def test_propagation_matches_jax(results, mode):
    for name, (ours, theirs) in get(results, mode).items():
        _same(ours, theirs, f"{mode}:{name}")


@pytest.mark.parametrize("mode", ["errors_jit", "errors_eager"])
def test_errors_match_jax(results, mode):
    for name, (ours, theirs) in get(results, mode).items():
        assert theirs[0] == "ShardingTypeError", (name, theirs)
        assert ours[0] == theirs[0], (name, ours, theirs)
    msgs = {n: (o[1], t[1]) for n, (o, t) in get(results, mode).items()}
    ours, theirs = msgs["matmul_contract"]
    assert ours.startswith("Contracting dimensions are sharded and it is ambiguous")
    # minijax adds the user's source line on a line of its own
    assert ours.splitlines()[0].split(" Got ")[1] == theirs.split(" Got ")[1]
    ours, theirs = msgs["reshape_ambiguous"]
    assert ours.startswith("This reshape is not supported") and "new sizes: (4, 8)" in ours
    assert "incompatible shardings for broadcasting" in msgs["add_conflict"][0]


def test_out_sharding_contractions(results):
    ours, theirs = get(results, "out_sharding_contractions")
    assert isinstance(ours, dict), ours
    for k in theirs:
        _same(ours[k], theirs[k], k)


def test_mlp_training_step(results):
    ours, theirs = get(results, "mlp_training_step")
    assert isinstance(ours, dict), ours
    np.testing.assert_allclose(ours["losses"], theirs["losses"], rtol=1e-5)
    assert ours["losses"][2] < ours["losses"][0]
    assert ours["param_specs"] == theirs["param_specs"]
    assert ours["param_types"] == theirs["param_types"]
    assert ours["loss_spec"] == theirs["loss_spec"]
    for a, b in zip(ours["values"], theirs["values"]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_smap_and_inferred_in_specs_match_jax(results):
    ours, theirs = get(results, "smap_and_inferred_specs")
    assert isinstance(ours, dict), ours
    for k in theirs:
        if k == "smap" or k == "smap_infer" or k == "smap_none":
            # over part of the mesh ('x' of x, y): minijax's results carry the manual
            # axis in their types; jax's also the body's own explicit 'y' (not tracked
            # inside minijax's partial-manual bodies). The values agree.
            np.testing.assert_allclose(ours[k]["value"], theirs[k]["value"], err_msg=k)
            assert ours[k]["type_spec"][0] == theirs[k]["type_spec"][0] == "x", k
            continue
        _same(ours[k], theirs[k], k)


def test_smap_and_inferred_spec_errors_match_jax(results):
    for name, (ours, theirs) in get(results, "smap_and_inferred_spec_errors").items():
        assert isinstance(ours, tuple) and isinstance(theirs, tuple), (name, ours, theirs)
        assert ours[0] == theirs[0], (name, ours, theirs)
        n = 60 if name == "mismatch" else 40
        assert ours[1].replace("PartitionSpec", "P").replace("f32", "float32")[:n] == \
            theirs[1][:n], (name, ours, theirs)


def test_infer_needs_explicit_axes(results):
    ours, theirs = get(results, "infer_needs_explicit_axes")
    assert all(e is not None for e in ours) and all(e is not None for e in theirs)
    assert ours[1] == theirs[1]  # smap's message
    assert ours[0] == theirs[0]
