"""Every public name of jax exists in minijax, and the small API functions behave as
jax's (compared side by side)."""


import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp

# Names jax has that minijax does not, each with who owns it (or why it is absent).
# Empty today: every jax name exists (some raise NotImplementedError, see below).
NOT_YET: dict[str, str] = {}

# Names that exist but raise NotImplementedError when called (no counterpart in minijax);
# the modules' missing names raise AttributeError (what libraries probing for them catch).
UNSUPPORTED: list[str] = []  # smap works since issue 26
UNSUPPORTED_MODULES = ["lib"]


def test_every_public_jax_name_exists():
    missing = sorted({n for n in dir(jax) if not n.startswith("_")} - set(dir(minijax))
                     - set(NOT_YET))
    assert missing == []


@pytest.mark.parametrize("module", ["tree", "tree_util", "dtypes", "custom_batching",
                                    "custom_derivatives", "typing", "dlpack", "profiler",
                                    "checkpoint_policies", "flatten_util", "ad_checkpoint",
                                    "errors", "debug", "random", "nn", "image", "ops",
                                    "sharding", "ref", "ffi"])
def test_submodule_names(module):
    import importlib
    jax_mod = getattr(jax, module, None) or importlib.import_module(f"jax.{module}")
    want = {n for n in dir(jax_mod) if not n.startswith("_")}
    got = set(dir(getattr(minijax, module)))
    # remat_opt_p: a jax-internal primitive (remat with a custom jvp), no counterpart here.
    assert sorted(want - got - {"remat_opt_p"}) == []


def test_unsupported_names_raise_clearly():
    for name in UNSUPPORTED:
        with pytest.raises(NotImplementedError, match="not implemented"):
            getattr(minijax, name)()
    for name in UNSUPPORTED_MODULES:
        with pytest.raises(AttributeError, match=f"minijax.{name}.*'foo'.*not implemented"):
            getattr(minijax, name).foo  # noqa: B018
        assert not hasattr(getattr(minijax, name), "foo")


def test_version_and_environment_info():
    assert minijax.__version_info__ == tuple(int(p) for p in minijax.__version__.split("."))
    assert minijax.version.__version__ == minijax.__version__
    info = minijax.print_environment_info(return_string=True)
    assert "jaxlib:" in info and "numpy:" in info and "device info: cpu-" in info


def test_host_and_device_names_like_jax():
    for m in (minijax, jax):
        assert m.host_count() == m.process_count() == 1
        assert m.host_id() == m.process_index() == 0
        assert m.host_ids() == m.process_indices() == [0]
        assert isinstance(m.devices()[0], m.Device)
        assert m.float0 == np.dtype([("float0", np.void, 0)])
    assert minijax.NamedSharding is minijax.sharding.NamedSharding


def test_config_jax_option_names_and_states():
    cfg = minijax.config
    assert cfg.jax_enable_x64 is False and cfg.jax_numpy_rank_promotion == "allow"
    with minijax.enable_x64():
        assert cfg.jax_enable_x64 and cfg.minijax_enable_x64 and minijax.enable_x64.value
        assert mjnp.arange(3).dtype == np.int64
    assert not cfg.jax_enable_x64 and mjnp.arange(3).dtype == np.int32
    with minijax.numpy_rank_promotion("raise"), minijax.default_matmul_precision("highest"):
        assert cfg.jax_numpy_rank_promotion == "raise"
        assert cfg.jax_default_matmul_precision == "highest"
    assert cfg.jax_numpy_rank_promotion == "allow" and cfg.jax_default_matmul_precision is None
    with pytest.raises(TypeError, match="requires an argument"):
        minijax.numpy_rank_promotion()
    with pytest.raises(ValueError):
        cfg.update("jax_numpy_rank_promotion", "sometimes")
    with pytest.raises(AttributeError):
        cfg.update("jax_no_such_option", 1)
    with minijax.transfer_guard("disallow"):
        assert minijax.transfer_guard_device_to_host.value == "disallow"
    with minijax.checking_leaks():
        assert cfg.jax_check_tracer_leaks
    cfg.update("jax_log_compiles", True)
    assert minijax.log_compiles.value
    cfg.update("jax_log_compiles", False)


def test_make_user_context_is_in_the_jit_cache_key():
    ctx = minijax.make_user_context(1)
    f = minijax.jit(lambda x: x * ctx.value)
    assert float(f(2.0)) == 2.0
    with ctx(5):
        assert ctx.value == 5 and float(f(2.0)) == 10.0
    assert float(f(2.0)) == 2.0


def test_typeof_like_jax():
    for x, y in ((1.0, 1.0), (np.ones((2, 3), np.int32),) * 2, (mjnp.ones(3), jjnp.ones(3))):
        a, b = minijax.typeof(x), jax.typeof(y)
        assert (a.shape, a.dtype, a.weak_type) == (b.shape, b.dtype, b.weak_type)


def test_disable_jit_runs_python_like_jax():
    for m in (minijax, jax):
        seen = []
        f = m.jit(lambda x: seen.append(type(x).__name__) or x * 2)
        f(1.0)
        with m.disable_jit():
            assert float(f(3.0)) == 6.0
        f(1.0)
        assert len(seen) == 2 and "Tracer" not in seen[1]  # traced once, then run directly


def test_ensure_compile_time_eval_like_jax():
    for m, np_ in ((minijax, mjnp), (jax, jjnp)):
        @m.jit
        def f(x):
            with m.ensure_compile_time_eval():
                n = np_.sum(np_.arange(4))
                assert not isinstance(n, m.core.Tracer if m is jax else minijax.Tracer)
                k = int(n) if n > 3 else 0  # Python control flow on a concrete value
            return x * k

        assert float(f(2.0)) == 12.0


def test_clear_caches_and_live_arrays():
    f = minijax.jit(lambda x: x + 1)
    f(1.0)
    assert f._cache_size() == 1
    minijax.clear_caches()
    assert f._cache_size() == 0 and float(f(1.0)) == 2.0
    a = mjnp.ones(7)
    live = minijax.live_arrays()
    assert any(x is a for x in live) and all(isinstance(x, minijax.Array) for x in live)
    a.delete()
    assert not any(x is a for x in minijax.live_arrays())
    b = {"u": mjnp.ones(2)}
    assert minijax.copy_to_host_async(b) is b


def test_named_scope_and_named_call_in_locations_like_jax():
    def f(m, np_):
        def g(x):
            with m.named_scope("outer"):
                with m.named_scope("inner"):
                    y = np_.sin(x)
                z = m.named_call(np_.cos, name="nc")(y)
            return z * 2
        return m.jit(g).lower(1.0).as_text(debug_info=True)

    got, want = f(minijax, mjnp), f(jax, jjnp)
    for name in ("jit(g)/outer/inner/sin", "jit(g)/outer/nc/cos"):
        assert name in want and name in got
    with pytest.raises(TypeError, match="must be a string"):
        minijax.named_scope(1)


def test_jacobian_linear_transpose_fwd_and_bwd_like_jax():
    x = np.arange(3, dtype=np.float32)
    for m, np_ in ((minijax, mjnp), (jax, jjnp)):
        J = m.jacobian(lambda v: np_.sin(v) * v[0])(x)
        np.testing.assert_allclose(np.asarray(J), np.asarray(jax.jacrev(
            lambda v: jjnp.sin(v) * v[0])(x)), rtol=1e-6)
        f_t = m.linear_transpose(lambda a, b: (a * 2.0 + b.sum(), np_.flip(a)), x,
                                 np.float32(1.0))
        ct = (np.ones(3, np.float32), np.arange(3, dtype=np.float32))
        ga, gb = f_t(ct)
        np.testing.assert_allclose(np.asarray(ga), [4.0, 3.0, 2.0])
        assert float(gb) == 3.0
        np.testing.assert_allclose(np.asarray(m.jit(f_t)(ct)[0]), [4.0, 3.0, 2.0])
        with pytest.raises(TypeError, match="cotangent tree"):
            f_t(np.ones(3, np.float32))
        with pytest.raises(TypeError, match="linear_transpose only supports"):
            m.linear_transpose(lambda a: a.astype(np.int32), x)
        fwd, bwd = m.fwd_and_bwd(lambda a, b: a * b, argnums=0)
        y, res = fwd(2.0, 3.0)
        assert float(y) == 6.0 and float(bwd(res, 1.0)) == 3.0
        fwd, bwd = m.fwd_and_bwd(lambda a, b: (a * b, 5), argnums=(0, 1), has_aux=True)
        y, res, aux = fwd(2.0, 3.0)
        assert aux == 5 and [float(g) for g in bwd(res, 1.0)] == [3.0, 2.0]
    with pytest.raises(NotImplementedError, match="not linear"):
        minijax.linear_transpose(lambda a: a * a, x)(x)


def test_custom_gradient_and_closure_convert_like_jax():
    res = []
    for m in (minijax, jax):
        @m.custom_gradient
        def f(x, y):
            return x * y, lambda g: (g * y * 10.0, g * x)

        @m.custom_gradient
        def h(x):
            return m.numpy.sin(x), lambda g: g * 7.0

        def outer(a):
            conv, consts = m.closure_convert(lambda x: x * a + 1.0, 1.0)
            return conv(2.0, *consts)

        ones = np.ones(2, np.float32)
        vals = [*m.grad(f, argnums=(0, 1))(2.0, 3.0), m.jit(m.grad(f))(2.0, 3.0),
                *m.vmap(m.grad(f))(ones, ones), m.grad(h)(1.0), h(1.0), outer(3.0),
                m.grad(outer)(3.0)]
        res.append([float(v) for v in vals])
    assert res[0] == pytest.approx(res[1], rel=1e-6)


def test_custom_vmap_and_sequential_vmap_like_jax():
    def run(m, cb, np_):
        calls = []

        @cb.custom_vmap
        def f(x, y):
            return np_.sin(x) + y

        @f.def_vmap
        def rule(axis_size, in_batched, x, y):
            calls.append((axis_size, list(in_batched)))
            return np_.cos(x) + y, any(in_batched)

        @cb.sequential_vmap
        def g(x):
            return x.sum()

        ones = np.ones(3, np.float32)
        outs = [f(1.0, 2.0), m.vmap(f, in_axes=(0, None))(ones, 2.0),
                m.jvp(f, (1.0, 2.0), (1.0, 0.0))[1], m.jit(m.vmap(f))(ones, ones),
                m.vmap(g)(np.arange(6.0, dtype=np.float32).reshape(3, 2)),
                m.grad(lambda x: m.vmap(f)(x, x).sum())(ones)]
        return [np.asarray(o) for o in outs], calls

    (a, ca), (b, cb_) = run(minijax, minijax.custom_batching, mjnp), \
        run(jax, jax.custom_batching, jjnp)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    assert ca == cb_


def test_checkpoint_policies_save_what_jax_saves():
    import collections
    W = np.full((4, 4), 0.1, np.float32)

    def counts(m, policy):
        def f(x):
            h = m.numpy.sin(W @ x)
            h = m.numpy.sin(W @ h)
            return (W @ h).sum()

        c = collections.Counter()

        def walk(jx):
            for e in jx.eqns:
                c[e.primitive.name] += 1
                for v in e.params.values():
                    for sub in v if isinstance(v, (list, tuple)) else [v]:
                        inner = getattr(sub, "jaxpr", sub)
                        if hasattr(inner, "eqns"):
                            walk(inner)

        g = m.grad(m.checkpoint(f, policy=policy))
        walk(m.make_jaxpr(g)(np.ones(4, np.float32)).jaxpr)
        return c["dot_general"], c["sin"], float(g(np.ones(4, np.float32))[0])

    cp = minijax.checkpoint_policies
    assert cp.checkpoint_dots is cp.dots_saveable and cp.everything_saveable(None)
    for name in ("nothing_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"):
        got = counts(minijax, getattr(minijax.checkpoint_policies, name))
        want = counts(jax, getattr(jax.checkpoint_policies, name))
        assert got[:2] == want[:2] and got[2] == pytest.approx(want[2], rel=1e-6)
    both = minijax.checkpoint_policies.save_from_both_policies(
        minijax.checkpoint_policies.nothing_saveable, minijax.checkpoint_policies.dots_saveable)
    assert counts(minijax, both)[:2] == counts(jax, jax.checkpoint_policies.dots_saveable)[:2]


def test_dtypes_module_like_jax():
    import ml_dtypes
    for m, r in ((minijax, minijax.random), (jax, jax.random)):
        d, k = m.dtypes, r.key(0)
        assert d.canonicalize_dtype(np.float64) == np.float32
        assert d.result_type(1.0, np.float16, return_weak_type_flag=True) == (np.float16, False)
        assert d.result_type(1.0, return_weak_type_flag=True) == (np.float32, True)
        assert d.scalar_type_of(np.int8(1)) is int and d.scalar_type_of(1.5) is float
        assert d.itemsize_bits(ml_dtypes.int4) == 4 and d.itemsize_bits(np.bool_) == 8
        assert d.issubdtype(k.dtype, d.prng_key) and d.issubdtype(k.dtype, d.extended)
        assert not d.issubdtype(np.float32, d.extended)
        assert d.issubdtype(d.bfloat16, np.floating) and d.issubdtype(d.prng_key, d.extended)
        assert not d.issubdtype(k.dtype, np.floating)
        assert d.canonicalize_dtype(k.dtype, allow_extended_dtype=True) == k.dtype
        assert issubclass(d.TypePromotionError, ValueError)
        assert d.finfo(np.float32).eps == np.finfo(np.float32).eps
        assert d.iinfo(np.int8).max == 127


def test_numpy_rank_promotion_option_like_jax():
    import warnings
    for m, np_ in ((minijax, mjnp), (jax, jjnp)):
        a, b = np_.ones(3), np_.ones((2, 3))
        with m.numpy_rank_promotion("raise"):
            with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
                a + b
            assert (a + 1.0).shape == (3,) and (a * np_.ones(())).shape == (3,)
        with m.numpy_rank_promotion("warn"), warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert (a + b).shape == (2, 3)
            assert "rank promotion for add on shapes (3,) (2, 3)" in str(w[-1].message)
        assert (a + b).shape == (2, 3)


def test_log_compiles_logs_each_compilation(caplog):
    import logging
    f = minijax.jit(lambda x: x * 3 + 1)
    with minijax.log_compiles(True), caplog.at_level(logging.WARNING, logger="minijax"):
        f(np.float32(1.0))
        f(np.float32(2.0))  # cached: no second compilation
    assert sum("Finished XLA compilation" in r.message for r in caplog.records) == 1


def test_default_device_places_new_computations():
    import subprocess
    import sys
    code = (
        "import numpy as np, minijax, minijax.numpy as jnp\n"
        "d0, d1 = minijax.devices()\n"
        "f = minijax.jit(lambda x: x * 2 + 1)\n"
        "assert f(1.0).devices() == {d0}\n"
        "with minijax.default_device(d1):\n"
        "    outs = [jnp.ones(3), f(1.0), f(np.float32(2)), minijax.device_put(np.ones(2)),\n"
        "            jnp.arange(3) + 1, minijax.grad(jnp.sin)(1.0)]\n"
        "    assert all(o.devices() == {d1} for o in outs), [o.devices() for o in outs]\n"
        "    assert float(f(1.0)) == 3.0\n"
        "assert f(1.0).devices() == {d0} and jnp.ones(3).devices() == {d0}\n"
        "print('ok')\n")
    import os
    env = dict(os.environ, MINIJAX_NUM_CPU_DEVICES="2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


@pytest.mark.parametrize("case", ["i32+f32", "f16+f32", "i32+py_float", "f32+py_int",
                                  "f16+py_float", "bool+py_int", "i8+i32", "c64+f32",
                                  "result_type"])
def test_numpy_dtype_promotion_strict_like_jax(case):
    def run(m, np_):
        a = {"i32": np_.ones(3, np.int32), "f32": np_.ones(3, np.float32),
             "f16": np_.ones(3, np.float16), "bool": np_.ones(3, bool),
             "i8": np_.ones(3, np.int8), "c64": np_.ones(3, np.complex64),
             "py_float": 1.0, "py_int": 1}
        with m.numpy_dtype_promotion("strict"):
            try:
                if case == "result_type":
                    return str(np_.result_type(np.int32, np.float32))
                x, y = case.split("+")
                return str((a[x] + a[y]).dtype)
            except m.dtypes.TypePromotionError as e:
                return "TypePromotionError" + str(e)[str(e).index(")"):]

    assert run(minijax, mjnp) == run(jax, jjnp)


def test_every_jax_submodule_exists():
    import pkgutil
    subs = {m.name for m in pkgutil.iter_modules(jax.__path__) if not m.name.startswith("_")}
    assert sorted(s for s in subs if not hasattr(minijax, s)) == []


def test_ravel_pytree_like_jax():
    import importlib
    tree = {"a": np.arange(4, dtype=np.float32).reshape(2, 2), "b": (np.int32(3), 2.0)}
    got = []
    for m in (minijax, jax):
        fu = importlib.import_module(m.__name__ + ".flatten_util")
        flat, unravel = fu.ravel_pytree(tree)
        back = unravel(flat)
        g = m.grad(lambda v: (unravel(v)["a"] ** 2).sum())(flat)
        got.append((np.asarray(flat).tolist(), str(flat.dtype),
                    [(np.asarray(x).tolist(), str(x.dtype)) for x in m.tree.leaves(back)],
                    np.asarray(g).tolist(), fu.ravel_pytree([])[0].shape))
        with pytest.raises(ValueError):
            unravel(np.ones(3, np.float32))
    assert got[0] == got[1]


def test_checkpoint_name_with_the_names_policies_like_jax():
    import collections
    import importlib
    W = np.full((4, 4), 0.1, np.float32)
    x = np.ones(4, np.float32)

    def counts(m, policy_of):
        name = importlib.import_module(m.__name__ + ".ad_checkpoint").checkpoint_name

        def f(v):
            h = name(m.numpy.sin(W @ v), "h1")
            return (W @ name(m.numpy.sin(W @ h), "h2")).sum()

        g = m.grad(m.checkpoint(f, policy=policy_of(m.checkpoint_policies)))
        eqns = collections.Counter()

        def walk(jx):
            for e in jx.eqns:
                eqns[e.primitive.name] += 1
                for v in e.params.values():
                    inner = getattr(v, "jaxpr", v)
                    if hasattr(inner, "eqns"):
                        walk(inner)

        walk(m.make_jaxpr(g)(x).jaxpr)
        return eqns["dot_general"], eqns["sin"], np.asarray(g(x)).round(6).tolist()

    for policy_of in (lambda cp: cp.save_only_these_names("h1"),
                      lambda cp: cp.save_any_names_but_these("h1"),
                      lambda cp: cp.save_anything_except_these_names("h2")):
        assert counts(minijax, policy_of) == counts(jax, policy_of)


def test_new_error_classes_and_experimental_io_callback_like_jax():
    for name in ["JAXTypeError", "JAXIndexError", "KeyReuseError", "JaxprTypeError",
                 "JaxRuntimeError", "InconclusiveDimensionOperation"]:
        mine, ref = getattr(minijax.errors, name), getattr(jax.errors, name)
        for base in (TypeError, IndexError, RuntimeError):
            assert issubclass(mine, base) == issubclass(ref, base), name
    assert "io_callback" in dir(minijax.experimental)
    assert minijax.errors.JaxRuntimeError is jax.errors.JaxRuntimeError  # jaxlib's class


def test_sharding_module_extras_like_jax():
    dev = minijax.devices()[0]
    got = minijax.sharding.make_single_device_sharding(dev)
    want = jax.sharding.make_single_device_sharding(jax.devices()[0])
    assert got.device_set == {dev} and repr(got) == repr(want)
    assert repr(minijax.sharding.get_mesh()) == repr(jax.sharding.get_mesh())  # none set
    assert minijax.sharding.get_abstract_mesh().empty and minijax.sharding.get_mesh().empty
    with pytest.raises(NotImplementedError, match="sharding in types"):
        minijax.sharding.auto_axes()
