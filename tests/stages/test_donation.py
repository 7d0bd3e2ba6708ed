"""Buffer donation: aliases in the lowered module, deletion, errors, warnings, args_info."""

import re
import sys
import warnings

import jax
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp
from minijax.stages.compiler import alias_arg_attrs, donation_aliases


def _aliasing(text: str) -> list[str]:
    return re.findall(r"tf\.aliasing_output = (\d+) : i32", text)


def test_lowering_marks_aliases_like_jax():
    def f(x, y):
        return x * 2, y.sum()

    x, y = np.ones(3, np.float32), np.ones(4, np.float32)
    with pytest.warns(UserWarning, match=r"not usable: float32\[4\]"):
        ours = minijax.jit(f, donate_argnums=(0, 1)).lower(x, y).as_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = jax.jit(f, donate_argnums=(0, 1)).lower(x, y).as_text()
    head = lambda t: re.search(r"func\.func public @main\((.*?)\) ->", t).group(1)  # noqa: E731
    assert _aliasing(ours) == _aliasing(theirs) == ["0"]
    assert "tf.aliasing_output" not in head(ours).split("%arg1")[1]


def test_outputs_matched_in_order_by_shape_and_dtype():
    a3, b3, i3 = (minijax.ShapedArray((3,), np.float32),) * 2 + (
        minijax.ShapedArray((3,), np.int32),)
    aliases, unused = donation_aliases([a3, i3, b3], [i3, a3, a3], [True, True, True])
    assert aliases == [1, 0, 2] and unused == []
    aliases, unused = donation_aliases([a3, a3], [a3], [True, True])
    assert aliases == [0, None] and unused == [1]
    assert alias_arg_attrs([None, None]) is None
    assert alias_arg_attrs([None, 0]) == ["", "tf.aliasing_output = 0 : i32"]


def test_donated_array_is_deleted_and_use_says_where():
    f = minijax.jit(lambda x, y: x + y, donate_argnums=0)
    x, y = jnp.arange(3.0), jnp.ones(3)
    out = f(x, y)  # the call site named in the error
    line = test_donated_array_is_deleted_and_use_says_where.__code__.co_firstlineno + 3
    np.testing.assert_array_equal(np.asarray(out), [1, 2, 3])
    assert x.is_deleted() and not y.is_deleted()
    where = rf"donated to jit\(<lambda>\) at .*test_donation\.py:{line}"
    for use in (lambda: np.asarray(x), lambda: x + 1, lambda: jnp.sin(x), lambda: f(x, y),
                lambda: minijax.jit(lambda a: a * 2)(x), lambda: float(x[0])):
        with pytest.raises(RuntimeError, match=where):
            use()
    assert "deleted" in repr(x) and x.shape == (3,)


def test_fast_path_donation_says_where():
    # The second call takes the C dispatch path, which records the site lazily.
    f = minijax.jit(lambda x, y: x * y, donate_argnums=0)
    y = jnp.ones(3)
    f(jnp.arange(3.0), y)
    xs = [jnp.arange(3.0) for _ in range(3)]
    lines = []
    for x in xs:
        f(x, y)
        lines.append(sys._getframe().f_lineno - 1)
    for x, line in zip(xs, lines):
        assert x.is_deleted()
        with pytest.raises(RuntimeError, match=rf"donated to jit\(<lambda>\) at "
                                               rf".*test_donation\.py:{line} "):
            np.asarray(x)


def test_donate_argnames_by_keyword_and_position():
    f = minijax.jit(lambda x, scale: x * scale, donate_argnames="x")
    x = jnp.ones(4)
    f(x=x, scale=2.0)
    assert x.is_deleted()
    x = jnp.ones(4)
    f(x, 2.0)
    assert x.is_deleted()
    g = minijax.jit(lambda x, y: x * y, donate_argnums=1)
    y = jnp.ones(4)
    g(jnp.ones(4), y=y)  # donated by position 1, passed by name
    assert y.is_deleted()


def test_args_info_shows_donation():
    f = minijax.jit(lambda p, x: (p["w"] * x, x), donate_argnums=0)
    lowered = f.lower({"w": jnp.ones(2)}, jnp.ones(2))
    (p_info, x_info), kw = lowered.args_info
    assert p_info["w"].donated and not x_info.donated and kw == {}
    compiled = lowered.compile()
    assert compiled.args_info[0][0]["w"].donated
    assert jax.jit(lambda p, x: (p["w"] * x, x), donate_argnums=0).lower(
        {"w": np.ones(2, np.float32)}, np.ones(2, np.float32)).args_info[0][0]["w"].donated


def test_unusable_donation_warns_and_keeps_the_array():
    f = minijax.jit(lambda x: x.sum(), donate_argnums=0)
    x = jnp.ones(5)
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float32\[5\]"):
        assert float(f(x)) == 5.0
    assert not x.is_deleted()
    np.testing.assert_array_equal(np.asarray(x), np.ones(5))


def test_compiled_call_donates_and_memory_analysis_counts_alias():
    compiled = minijax.jit(lambda x: x * 2, donate_argnums=0).lower(jnp.ones(3)).compile()
    assert "input_output_alias={ {}: (0, {}, may-alias) }" in compiled.as_text()
    assert compiled.memory_analysis().alias_size_in_bytes == 12
    x = jnp.ones(3)
    np.testing.assert_array_equal(np.asarray(compiled(x)), [2, 2, 2])
    with pytest.raises(RuntimeError, match="donated to jit"):
        np.asarray(x)


def test_numpy_and_scalar_arguments_can_be_donated():
    f = minijax.jit(lambda x: x + 1, donate_argnums=0)
    host = np.ones(3, np.float32)
    np.testing.assert_array_equal(np.asarray(f(host)), [2, 2, 2])
    np.testing.assert_array_equal(host, [1, 1, 1])  # the host copy is untouched


def test_same_array_donated_and_passed_again_errors():
    f = minijax.jit(lambda x, y: x + y, donate_argnums=0)
    x = jnp.ones(3)
    with pytest.raises(Exception, match="donated"):
        f(x, x)


def test_static_and_donated_together_rejected():
    with pytest.raises(ValueError, match="both static and donated"):
        minijax.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=1)


def test_donation_inside_outer_jit_is_ignored():
    inner = minijax.jit(lambda x: x * 2, donate_argnums=0)
    outer = minijax.jit(lambda x: inner(x) + x)
    x = jnp.ones(3)
    np.testing.assert_array_equal(np.asarray(outer(x)), [3, 3, 3])
    assert not x.is_deleted()
