"""vmap API and batching of elementwise code, against jax.vmap."""

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import minijax
import minijax.numpy as jnp

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4)).astype(np.float32)
B = RNG.standard_normal((4,)).astype(np.float32)


def f(np_):
    return lambda a, b: np_.sin(a) * b + np_.maximum(a, 0.5)


@pytest.mark.parametrize("in_axes,args", [
    ((0, None), (A, 2.0)),
    ((1, None), (A, 2.0)),
    ((0, 0), (A, A)),
    ((1, 0), (A, B)),
    ((-1, 0), (A, B)),
    ((None, 0), (B, A)),
    ((0, 1), (A, A.T.copy())),
])
def test_vmap_matches_jax(in_axes, args):
    ours = minijax.vmap(f(jnp), in_axes=in_axes)(*args)
    theirs = jax.vmap(f(jjnp), in_axes=in_axes)(*args)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


@pytest.mark.parametrize("out_axes", [0, 1, -1])
def test_out_axes(out_axes):
    ours = minijax.vmap(f(jnp), in_axes=(0, None), out_axes=out_axes)(A, B)
    theirs = jax.vmap(f(jjnp), in_axes=(0, None), out_axes=out_axes)(A, B)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_pytree_in_axes_and_outputs():
    def g(np_):
        return lambda p, x: {"y": p["w"] * x + p["b"], "z": (x * 2,)}
    params = {"w": A[0], "b": np.float32(1.0)}
    ours = minijax.vmap(g(jnp), in_axes=({"w": None, "b": None}, 0))(params, A)
    theirs = jax.vmap(g(jjnp), in_axes=({"w": None, "b": None}, 0))(params, A)
    for o, t in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)


def test_unbatched_output_is_broadcast_and_out_axes_none():
    out = minijax.vmap(lambda a, b: b * 2, in_axes=(0, None))(A, B)
    assert out.shape == (3, 4)
    out = minijax.vmap(lambda a, b: (a, b * 2), in_axes=(0, None), out_axes=(0, None))(A, B)
    assert out[1].shape == (4,)
    with pytest.raises(ValueError, match="got axis spec None but output was batched"):
        minijax.vmap(lambda a: a, out_axes=None)(A)


@pytest.mark.parametrize("case", [
    (lambda x: (x, {"a": x * 2}), (0, {"a": None})),
    (lambda x: x.T, None),
    (lambda x: [x], [None]),
])
def test_out_axes_none_for_batched_output_message_like_jax(case):
    import jax
    f, oa = case
    with pytest.raises(ValueError) as want:
        jax.vmap(f, out_axes=oa)(np.ones((3, 2), np.float32))
    with pytest.raises(ValueError) as got:
        minijax.vmap(f, out_axes=oa)(np.ones((3, 2), np.float32))
    assert str(got.value) == str(want.value)


def test_axis_size_and_kwargs():
    out = minijax.vmap(lambda: jnp.ones(2), in_axes=(), axis_size=3)()
    assert out.shape == (3, 2)
    out = minijax.vmap(lambda a, *, b: a + b)(A, b=A)
    np.testing.assert_allclose(np.asarray(out), A + A)


def test_nested_vmap():
    ours = minijax.vmap(minijax.vmap(f(jnp), in_axes=(0, None)), in_axes=(None, 0))(A[0], A)
    theirs = jax.vmap(jax.vmap(f(jjnp), in_axes=(0, None)), in_axes=(None, 0))(A[0], A)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-6)


def test_compositions_with_jit_and_grad():
    h = lambda x: jnp.sin(x) * x  # noqa: E731
    jh = lambda x: jjnp.sin(x) * x  # noqa: E731
    x = A[0]
    cases = [
        (minijax.vmap(minijax.grad(h)), jax.vmap(jax.grad(jh))),
        (minijax.jit(minijax.vmap(minijax.grad(h))), jax.jit(jax.vmap(jax.grad(jh)))),
        (minijax.vmap(minijax.jit(h)), jax.vmap(jax.jit(jh))),
        (minijax.grad(lambda v: minijax.vmap(h)(v).sum()),
         jax.grad(lambda v: jax.vmap(jh)(v).sum())),
    ]
    for ours, theirs in cases:
        try:
            o = ours(x)
        except AttributeError:
            pytest.skip("needs reductions")
        np.testing.assert_allclose(np.asarray(o), np.asarray(theirs(x)), rtol=1e-6)


def test_elementwise_vmap_has_no_transposes_or_loops():
    text = minijax.jit(minijax.vmap(f(jnp), in_axes=(1, 0))).lower(A, B).as_text()
    assert "stablehlo.while" not in text
    jaxpr = minijax.make_jaxpr(minijax.vmap(f(jnp), in_axes=(1, 0)))(A, B)
    # the batch dim stays where it is; only the output is moved to axis 0
    assert [e.primitive.name for e in jaxpr.eqns].count("transpose") == 1


def test_inconsistent_sizes_error_lists_arguments():
    with pytest.raises(ValueError) as info:
        minijax.vmap(f(jnp))(A, np.ones((4, 4), np.float32))
    msg = str(info.value)
    assert "inconsistent sizes" in msg
    assert "argument a of type f32[3,4] has size 3" in msg
    assert "argument b of type f32[4,4] has size 4" in msg


def test_in_axes_out_of_range_names_argument():
    with pytest.raises(ValueError, match=r"axis 2.*rank should be at least 3.*argument a"):
        minijax.vmap(f(jnp), in_axes=(2, None))(A, 1.0)


def test_python_control_flow_on_batched_value_errors():
    with pytest.raises(minijax.ConcretizationTypeError, match="vmap"):
        minijax.vmap(lambda x: x if x > 0 else -x)(B)
