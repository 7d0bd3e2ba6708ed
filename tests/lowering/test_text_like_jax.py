"""Lowered StableHLO text compared with jax 0.10.2 on the same programs: the names of the
private functions of nested ``jit`` (quoted when not identifiers, duplicates renamed
``_0``, ``_1``... from one counter per module) and no unused constants."""

import re

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as mjnp


def _named(jit, name, k):
    def h(x):
        return x * k
    h.__name__ = h.__qualname__ = name
    return jit(h)


def _chain(m, names):
    """A jit calling nested jits of functions named ``names`` in turn (with ``m``
    the jax-like module)."""
    fs = [_named(m.jit, n, float(i + 2)) for i, n in enumerate(names)]

    def f(x):
        for g in fs:
            x = g(x)
        return x
    return f


def _twice(m):
    inner = m.jit(lambda x: x - 1.0)

    def f(x):
        return inner(inner(x))
    return f


def _two_inners(m):
    @m.jit
    def inner(x):
        return x * 2.0

    def make():
        def inner(x):
            return x + 1.0
        return m.jit(inner)
    inner2 = make()
    lam = m.jit(lambda x: x - 1.0)

    def f(x):
        return inner(inner2(inner(lam(x))))
    return f


PROGRAMS = {
    "two different functions named inner, a lambda": _two_inners,
    "the same nested jit twice": _twice,
    "dots and brackets": lambda m: _chain(m, ["a.b[c]", "<lambda>", "x y", 'q"u\\v', "1x"]),
    "one counter for all names": lambda m: _chain(m, ["a", "b", "a", "b", "a", "main", "a_0"]),
}


def _symbol_lines(text: str) -> list[str]:
    lines = [re.sub(r" loc\(.*$", "", ln) for ln in text.splitlines()]
    return [ln for ln in lines if "func.func" in ln or "call @" in ln]


@pytest.mark.parametrize("case", PROGRAMS)
def test_nested_jit_function_names_match_jax(case):
    x = np.float32(1.5)
    ours = minijax.jit(PROGRAMS[case](minijax)).lower(x)
    theirs = jax.jit(PROGRAMS[case](jax)).lower(x)
    assert _symbol_lines(ours.as_text()) == _symbol_lines(theirs.as_text())
    if case != "one counter for all names":
        assert ours.as_text() == theirs.as_text()
    # the quoted and renamed symbols parse, compile and run
    np.testing.assert_allclose(ours.compile()(x), theirs.compile()(x))


def _constants(text: str) -> list[tuple[str, str]]:
    return re.findall(r"(%\w+) = stablehlo\.constant (dense<[^>]*>) : (tensor<[^>]*>)", text)


def _unused_values(text: str) -> list[str]:
    body = [re.sub(r" loc\(.*$", "", ln) for ln in text.splitlines()]
    return [name for name, _, _ in _constants(text)
            if sum(len(re.findall(re.escape(name) + r"\b", ln)) for ln in body) < 2]


@pytest.mark.parametrize("make", [
    lambda np_: lambda x: x + np_.ones((8, 64)),
    lambda np_: lambda x: np_.full((3, 5), 2.5) * x - np_.zeros((3, 5)),
])
def test_broadcast_literal_leaves_no_unused_scalar_constant(make):
    # A literal broadcast to full shape is emitted as one splat constant (jax emits a
    # scalar constant and its broadcast); the scalar constant it replaces is not left
    # behind unused.
    x = np.float32(3.0)
    ours = minijax.jit(make(mjnp)).lower(x)
    text = ours.as_text()
    assert _unused_values(text) == []
    theirs = jax.jit(make(jjnp)).lower(x).as_text()
    assert _unused_values(theirs) == []
    # the same constant values as jax's, none of ours a scalar
    assert sorted({v for _, v, _ in _constants(text)}) == \
        sorted({v for _, v, _ in _constants(theirs)})
    assert all(t != "tensor<f32>" for _, _, t in _constants(text))
    np.testing.assert_allclose(ours.compile()(x), jax.jit(make(jjnp))(x))


def test_constant_shared_by_two_uses_is_kept():
    # A scalar constant used by a broadcast and by another op must stay.
    c = np.float32(2.0)

    def f(m):
        def g(x):
            return m.lax.broadcast_in_dim(c, (4,), ()) + x * c
        return g
    x = np.arange(4, dtype=np.float32)
    ours = minijax.jit(f(minijax)).lower(x)
    assert _unused_values(ours.as_text()) == []
    np.testing.assert_allclose(ours.compile()(x), jax.jit(f(jax))(x))


def _strip_locs(text: str) -> str:
    return "\n".join(re.sub(r" loc\(.*$", "", ln) for ln in text.splitlines()
                     if not ln.startswith("#loc"))


@pytest.mark.parametrize("make, arg", [
    (lambda np_: lambda x: x + 1.0, np.float32(1.0)),  # a weak-type-only convert
    (lambda np_: lambda x: np_.sin(x) * 2, np.float32(1.0)),
    (lambda np_: lambda x: x.astype(np_.float32), np.float32(1.0)),
    (lambda np_: lambda x: x.astype(bool), np.arange(3) > 1),
])
def test_convert_element_type_text_matches_jax(make, arg):
    # jax emits stablehlo.convert even between equal element types
    ours = minijax.jit(make(mjnp)).lower(arg)
    theirs = jax.jit(make(jjnp)).lower(arg)
    assert _strip_locs(ours.as_text()) == _strip_locs(theirs.as_text())
    np.testing.assert_array_equal(ours.compile()(arg), theirs.compile()(arg))


def test_convert_to_bool_compares_then_converts_like_jax():
    x = np.array([0.0, 1.5, -2.0], np.float32)
    ours = _strip_locs(minijax.jit(lambda v: v.astype(bool)).lower(x).as_text())
    theirs = _strip_locs(jax.jit(lambda v: v.astype(bool)).lower(x).as_text())
    def kinds(text):
        return re.findall(r"= (stablehlo\.compare NE|stablehlo\.convert)[ ,]", text)
    assert kinds(ours) == kinds(theirs) == ["stablehlo.compare NE", "stablehlo.convert"]
    np.testing.assert_array_equal(minijax.jit(lambda v: v.astype(bool))(x), x != 0)
