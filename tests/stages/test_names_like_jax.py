"""Names a jax program can print: module names of lowered and compiled code, and the
``__name__``/``__qualname__``/``__doc__``/``__module__``/``__wrapped__`` of the callables
the transformations return, compared with jax 0.10.2 on the same functions."""

import functools

import jax
import numpy as np
import pytest

import minijax


def loss(x, y=1.0):
    """Loss doc."""
    return (x * y).sum()


def _plain(x):
    return x * 2.0


class _Callable:
    """A callable object without a ``__name__``."""

    def __call__(self, x):
        return x * 2.0


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0].split(",", 1)[0].split(" attributes", 1)[0]


FUNS = {
    "lambda": lambda x: x * 2.0,
    "named": _plain,
    "partial": functools.partial(_plain),
    "callable object": _Callable(),
    "grad": lambda m: m.grad(loss),
    "vmap": lambda m: m.vmap(_plain),
    "checkpoint": lambda m: m.checkpoint(_plain),
    "jacfwd": lambda m: m.jacfwd(loss),
}


def _fun(m, kind):
    f = FUNS[kind]
    return f(m) if kind in ("grad", "vmap", "checkpoint", "jacfwd") else f


@pytest.mark.parametrize("kind", list(FUNS))
def test_module_names_match_jax(kind):
    x = np.arange(3, dtype=np.float32)
    names = []
    for m in (minijax, jax):
        lowered = m.jit(_fun(m, kind)).lower(x)
        names.append((_first_line(lowered.as_text()), _first_line(lowered.as_text("hlo")),
                      _first_line(lowered.compile().as_text())))
    assert names[0] == names[1]


def test_module_name_examples():
    x = np.float32(1.0)
    assert minijax.jit(lambda x: x).lower(x).as_text().startswith("module @jit__lambda ")
    assert minijax.jit(minijax.grad(loss)).lower(x).as_text().startswith("module @jit_loss ")


def _attrs(g):
    return (getattr(g, "__name__", None), getattr(g, "__qualname__", None),
            getattr(g, "__module__", None), getattr(g, "__doc__", None))


TRANSFORMS = ["grad", "value_and_grad", "vmap", "jacfwd", "jacrev", "jacobian", "hessian",
              "checkpoint", "remat", "jit", "pmap", "custom_jvp", "custom_vjp"]


@pytest.mark.parametrize("name", TRANSFORMS)
@pytest.mark.parametrize("fun", [loss, _Callable(), functools.partial(loss, y=2.0)],
                         ids=["function", "callable", "partial"])
def test_transformed_callables_are_named_like_jax(name, fun):
    ours, theirs = getattr(minijax, name)(fun), getattr(jax, name)(fun)
    assert _attrs(ours) == _attrs(theirs)
    assert (getattr(ours, "__wrapped__", None) is fun) == \
        (getattr(theirs, "__wrapped__", None) is fun)


def test_docstrings_follow_argnums_like_jax():
    for name, argnums in [("grad", (0, 1)), ("value_and_grad", [1]), ("jacrev", 1),
                          ("jacfwd", [0, 1])]:
        ours = getattr(minijax, name)(loss, argnums=argnums)
        theirs = getattr(jax, name)(loss, argnums=argnums)
        assert ours.__doc__ == theirs.__doc__, name


def test_vmap_doc_with_braces_like_jax():
    def f(x):
        """Uses {braces} in its doc."""
        return x
    assert _attrs(minijax.vmap(f)) == _attrs(jax.vmap(f))


def test_transformed_names_reach_jaxprs_like_jax():
    x = np.float32(3.0)
    ours = minijax.make_jaxpr(minijax.jit(minijax.grad(loss)))(x)
    theirs = jax.make_jaxpr(jax.jit(jax.grad(loss)))(x)
    assert ours.eqns[0].params["name"] == theirs.eqns[0].params["name"] == "loss"
    ours = minijax.make_jaxpr(minijax.jit(minijax.vmap(_plain)))(np.ones(2, np.float32))
    assert ours.eqns[0].params["name"] == "_plain"


def test_signature_follows_the_wrapped_function():
    import inspect
    for t in ("grad", "value_and_grad", "vmap", "jacrev", "checkpoint"):
        assert list(inspect.signature(getattr(minijax, t)(loss)).parameters) == ["x", "y"], t


def test_linearize_returns_a_partial_like_jax():
    def f(x):
        return (np.float32(2.0) * x * x).sum()
    x = np.linspace(0.5, 1.5, 3, dtype=np.float32)
    results = []
    for m in (minijax, jax):
        y, f_jvp = m.linearize(f, x)
        assert type(f_jvp).__name__ == "Partial" and not hasattr(f_jvp, "__name__")
        through_jit = m.jit(lambda g, t: g(t))(f_jvp, x)  # a pytree argument
        errors = []
        for bad in (np.ones(3, np.int32), np.ones(4, np.float32)):
            with pytest.raises(ValueError) as e:
                f_jvp(bad)
            errors.append(str(e.value))
        with pytest.raises(TypeError):
            f_jvp(x, x)
        results.append((float(y), float(f_jvp(x)), float(through_jit), errors))
    assert results[0] == results[1]


def _custom_rules(m, jnp_):
    c = np.arange(3, dtype=np.float32)

    @functools.partial(m.custom_jvp, nondiff_argnums=(1,))
    def f(x, n):
        return jnp_.sin(x) * n * c

    def f_jvp(n, p, t):
        return f(p[0], n), t[0] * 2.0
    f.defjvp(f_jvp)

    @m.custom_jvp
    def h(x, y):
        return x * y
    h.defjvps(lambda t, ans, x, y: t * y, lambda t, ans, x, y: t * x)

    @m.custom_jvp
    def z(x):
        return x * 2.0
    z.defjvp(lambda p, t: (z(p[0]), t[0]), symbolic_zeros=True)

    def fwd(x):
        return g(x), x

    def bwd(r, ct):
        return (ct * r,)

    @m.custom_vjp
    def g(x):
        return jnp_.sin(x) * c
    g.defvjp(fwd, bwd)
    return [m.make_jaxpr(lambda x: f(x, 3))(1.0), m.make_jaxpr(h)(1.0, 2.0),
            m.make_jaxpr(z)(1.0), m.make_jaxpr(g)(1.0),
            m.make_jaxpr(m.checkpoint(lambda x: jnp_.sin(x), policy=None))(1.0)]


def test_custom_rule_and_checkpoint_params_print_like_jax():
    ours = [str(j) for j in _custom_rules(minijax, minijax.numpy)]
    theirs = [str(j) for j in _custom_rules(jax, jax.numpy)]
    assert ours[:4] == theirs[:4]
    assert "jvp=f_jvp" in ours[0] and "num_consts=1" in ours[0] and "bwd=bwd" in ours[3]
    # checkpoint: the same params in jax's (sorted) order; jax names the primitive remat2
    # and adds differentiated=False
    strip = [ln for ln in theirs[4].splitlines() if "differentiated" not in ln]
    assert ours[4].splitlines() == [ln.replace("remat2", "checkpoint") for ln in strip]


def test_log_compiles_names_the_computation_like_jax(caplog):
    import logging

    def scaled_by_seven(x):
        return x * 7.0
    x = np.arange(5, dtype=np.float32)
    found = []
    for m in (minijax, jax):
        caplog.clear()
        with m.log_compiles(True), caplog.at_level(logging.WARNING):
            m.jit(scaled_by_seven)(x)
        found.append(sorted({r.getMessage().split(" in ")[0] for r in caplog.records
                             if r.getMessage().startswith("Finished XLA compilation")}))
    assert found[0] == found[1] == ["Finished XLA compilation of jit(scaled_by_seven)"]


def test_log_compiles_reports_trace_lower_and_compile_like_jax(caplog):
    import logging

    def times_seven_point_one(x):
        return x * 7.1
    x = np.arange(6, dtype=np.float32)
    found = []
    for m in (minijax, jax):
        caplog.clear()
        with m.log_compiles(True), caplog.at_level(logging.WARNING):
            m.jit(times_seven_point_one)(x)
        found.append([r.getMessage().split(" in ")[0] for r in caplog.records
                      if r.getMessage().startswith("Finished")
                      and "times_seven_point_one" in r.getMessage()])
    assert found[0] == found[1] == [
        "Finished tracing times_seven_point_one for jit",
        "Finished jaxpr to MLIR module conversion jit(times_seven_point_one)",
        "Finished XLA compilation of jit(times_seven_point_one)"]


def test_a_slow_compile_says_so_once(caplog, monkeypatch):
    import logging

    from minijax.stages import compiler
    monkeypatch.setattr(compiler, "SLOW_COMPILE_NOTICE_SECONDS", 0.0)

    def slowly_compiled(x):
        return minijax.numpy.tanh(x) * 3.3
    with caplog.at_level(logging.WARNING, logger="minijax"):
        minijax.jit(slowly_compiled)(np.ones(7, np.float32))
    notes = [r.getMessage() for r in caplog.records if "still compiling" in r.getMessage()]
    assert len(notes) == 1
    assert "jit(slowly_compiled)" in notes[0] and "lines of StableHLO" in notes[0]
