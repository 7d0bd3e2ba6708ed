"""Traceback filtering: errors in user code show the user's frames, not minijax's."""

import builtins
import os
import sys
import traceback
import warnings

import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.config import _FLAGS, config
from minijax.core.traceback_util import is_internal

PKG = os.path.dirname(minijax.__file__)


def _loss(x):
    y = x + jnp.ones(5)  # the mistake: (2, 4) + (5,)
    return y.sum()


MISTAKE_LINE = _loss.__code__.co_firstlineno + 1


def _frames(tb):
    return [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(tb)]


def _minijax_frames(tb):
    return [f for f in _frames(tb) if f[0].startswith(PKG)]


@pytest.fixture
def mode():
    """Set minijax_traceback_filtering for one test."""
    prev = config.minijax_traceback_filtering
    yield lambda m: config.update("minijax_traceback_filtering", m)
    config.update("minijax_traceback_filtering", prev)


def _jit_grad_error():
    with pytest.raises(ValueError, match="Incompatible shapes") as info:
        minijax.jit(minijax.grad(_loss))(jnp.ones((2, 4)))
    return info.value


def test_jit_grad_mistake_shows_only_user_frames():
    e = _jit_grad_error()
    frames = _frames(e.__traceback__)
    assert not _minijax_frames(e.__traceback__), frames
    assert frames[-1][1:] == (MISTAKE_LINE, "_loss")  # the raising point is the user's line
    assert frames[0][2] == "_jit_grad_error"
    assert any("removed its internal frames" in n for n in e.__notes__)
    # the message names the operation and the line
    assert f"(in add, at {__file__}:{MISTAKE_LINE} (_loss))" in str(e)
    # the full traceback stays reachable for bug reports
    full = minijax.errors.unfiltered_traceback(e)
    assert _minijax_frames(full) and _frames(full)[-1][0].startswith(PKG)


def test_filtering_off_restores_minijax_frames(mode):
    mode("off")
    e = _jit_grad_error()
    names = {os.path.basename(f[0]) for f in _minijax_frames(e.__traceback__)}
    assert {"jit.py", "ad.py", "trace.py"} <= names
    assert not getattr(e, "__notes__", None)
    assert f"{__file__}:{MISTAKE_LINE}" in str(e)  # still named when not filtering


def test_jax_spelling_of_the_flag(mode):
    mode("quiet_remove_frames")
    config.update("jax_traceback_filtering", "off")
    assert config.minijax_traceback_filtering == "off"
    assert config.jax_traceback_filtering == "off"
    assert _minijax_frames(_jit_grad_error().__traceback__)
    with pytest.raises(ValueError, match="takes one of"):
        config.update("jax_traceback_filtering", "of")


def test_environment_variables(monkeypatch):
    read = _FLAGS["minijax_traceback_filtering"][1]
    monkeypatch.delenv("MINIJAX_TRACEBACK_FILTERING", raising=False)
    monkeypatch.delenv("JAX_TRACEBACK_FILTERING", raising=False)
    assert read("minijax_traceback_filtering") == "auto"
    monkeypatch.setenv("JAX_TRACEBACK_FILTERING", "off")
    assert read("minijax_traceback_filtering") == "off"
    monkeypatch.setenv("MINIJAX_TRACEBACK_FILTERING", "remove_frames")  # minijax's wins
    assert read("minijax_traceback_filtering") == "remove_frames"
    monkeypatch.setenv("MINIJAX_TRACEBACK_FILTERING", "bogus")
    with pytest.raises(ValueError, match="MINIJAX_TRACEBACK_FILTERING='bogus'"):
        read("minijax_traceback_filtering")


def test_remove_frames_chains_the_unfiltered_traceback(mode):
    mode("remove_frames")
    e = _jit_grad_error()
    assert not _minijax_frames(e.__traceback__)
    cause = e.__cause__
    assert isinstance(cause, minijax.errors.UnfilteredStackTrace)
    assert "Incompatible shapes" in str(cause) and _minijax_frames(cause.__traceback__)
    # the chained traceback goes on up the stack, through the caller of the entry point
    assert "_jit_grad_error" in [f[2] for f in _frames(cause.__traceback__)]


def test_tracebackhide_marks_frames_for_pytest_and_ipython(mode):
    mode("tracebackhide")
    e = _jit_grad_error()
    hidden = [f.f_locals.get("__tracebackhide__", False)
              for f, _ in traceback.walk_tb(e.__traceback__)]
    internal = [is_internal(f.f_code.co_filename) for f, _ in traceback.walk_tb(e.__traceback__)]
    assert any(internal) and hidden == internal


def test_auto_hides_frames_under_ipython(mode, monkeypatch):
    mode("auto")
    monkeypatch.setattr(builtins, "get_ipython", lambda: None, raising=False)
    e = _jit_grad_error()
    assert _minijax_frames(e.__traceback__)  # IPython hides them itself
    assert not getattr(e, "__notes__", None)


def test_eager_mistakes_at_top_level():
    x, y = jnp.ones((2, 4)), jnp.ones(5)
    with pytest.raises(ValueError) as info:
        x + y  # an operator: no minijax frame at all
    assert not _minijax_frames(info.value.__traceback__)
    with pytest.raises(ValueError) as info:
        jnp.add(x, y)  # a numpy function
    assert not _minijax_frames(info.value.__traceback__)


def test_errors_raised_by_user_code_are_untouched():
    def f(x):
        raise KeyError("mine")

    with pytest.raises(KeyError) as info:
        minijax.jit(f)(1.0)
    assert info.value.args == ("mine",)
    assert _frames(info.value.__traceback__)[-1][2] == "f"


def test_nested_transformations_and_control_flow():
    def body(i, c):
        return c @ jnp.ones((3, 3))  # the mistake: c is f32[2]

    line = body.__code__.co_firstlineno + 1

    def f(x):
        return lax.fori_loop(0, 2, body, x).sum()

    with pytest.raises(TypeError) as info:
        minijax.jit(minijax.vmap(minijax.grad(f)))(jnp.ones((4, 2)))
    e = info.value
    assert not _minijax_frames(e.__traceback__)
    assert _frames(e.__traceback__)[-1][1:] == (line, "body")
    assert f"at {__file__}:{line} (body)" in str(e)


def test_control_flow_errors_name_the_functions():
    def true_fun(x):
        return x

    def false_fun(x):
        return x[:1]

    with pytest.raises(TypeError) as info:
        minijax.jit(lambda x: lax.cond(x[0] > 0, true_fun, false_fun, x))(jnp.ones(3))
    msg = str(info.value)
    assert f"true_fun is true_fun at {__file__}:{true_fun.__code__.co_firstlineno}" in msg
    assert f"false_fun is false_fun at {__file__}:{false_fun.__code__.co_firstlineno}" in msg


def test_lowering_error_names_the_equation_line():
    # jvp of a custom_vjp function records a custom_lin equation, which cannot be lowered
    f = minijax.custom_vjp(lambda x: x * 2)
    f.defvjp(lambda x: (x * 2, x), lambda r, g: (g * 2,))

    def g(x):
        return minijax.jvp(f, (x,), (x,))[1]  # the equation's line

    line = g.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match="forward-mode") as info:
        minijax.jit(g).lower(1.0)
    assert f"(in custom_lin, at {__file__}:{line} (g))" in str(info.value)
    assert not _minijax_frames(info.value.__traceback__)


def test_transpose_error_names_the_equation_line():
    f = minijax.custom_vjp(lambda x: x * 2)
    f.defvjp(lambda x: (x * 2, x), lambda r, g: g * 2)  # bwd must return a tuple

    def loss(x):
        return f(x) * 3.0  # the equation's line

    line = loss.__code__.co_firstlineno + 1
    with pytest.raises(TypeError, match="must return a tuple") as info:
        minijax.grad(loss)(1.0)
    assert f"{__file__}:{line} (loss)" in str(info.value)


def test_unused_donation_warning_points_at_the_user_line():
    f = minijax.jit(lambda x: x.sum(), donate_argnums=0)
    with pytest.warns(UserWarning, match="donated buffers were not usable") as rec:
        line = sys._getframe().f_lineno + 1
        f(jnp.ones(4))  # the warning's line
    assert (rec[0].filename, rec[0].lineno) == (__file__, line)


def test_x64_truncation_warning_points_at_the_user_line():
    if config.minijax_enable_x64:
        pytest.skip("64-bit mode is on")

    def f(x):
        return x.astype(np.float64)  # the warning's line

    line = f.__code__.co_firstlineno + 1
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert minijax.jit(f)(jnp.ones(2, jnp.int32)).dtype == np.float32
        eager_line = sys._getframe().f_lineno + 1
        jnp.zeros(3, dtype=np.int64)  # eager, at top level
    assert [(w.filename, w.lineno) for w in rec] == [(__file__, line), (__file__, eager_line)]
    assert "float64 requested in astype is not available" in str(rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jnp.zeros(3, dtype=float)  # Python's float means the default float: no warning


def test_xla_compile_error_names_the_equation():
    def f(x):
        return jnp.sin(x) * 2.0  # the equation's line

    line = f.__code__.co_firstlineno + 1
    lowered = minijax.jit(f).lower(jnp.ones(3))
    # Break the module behind minijax's back (the multiply and the result get another
    # type): the verifier's error has the multiply's location.
    lines = lowered._text.splitlines()
    for i, ln in enumerate(lines):
        if '"stablehlo.multiply"' in ln or "func.return" in ln or "func.func" in ln:
            lines[i] = ln.replace(") -> tensor<3xf32>", ") -> tensor<4xf32>").replace(
                "(tensor<3xf32>) -> ()", "(tensor<4xf32>) -> ()").replace(
                "-> (tensor<3xf32>", "-> (tensor<4xf32>")
    lowered._text = "\n".join(lines)
    with pytest.raises(Exception, match="stablehlo.multiply") as info:
        lowered.compile()
    notes = getattr(info.value, "__notes__", [])  # jaxlib's error has its own __str__
    assert f"(in mul, at {__file__}:{line} (f))" in "\n".join([str(info.value), *notes])


def test_deleted_argument_on_the_dispatch_fast_path_shows_only_user_frames(mode):
    f = minijax.jit(lambda x: x * 2)
    x = jnp.ones(3)
    f(x)
    f(x)  # cached: the next call takes the C fast path
    x.delete()
    with pytest.raises(RuntimeError, match="has been deleted") as info:
        f(x)
    assert not _minijax_frames(info.value.__traceback__), _frames(info.value.__traceback__)
    mode("off")
    with pytest.raises(RuntimeError, match="has been deleted") as info:
        f(x)
    assert _minijax_frames(info.value.__traceback__)
