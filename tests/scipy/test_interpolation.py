"""minijax.scipy.ndimage.map_coordinates, interpolate.RegularGridInterpolator,
integrate.trapezoid and cluster.vq.vq against jax.scipy: values, dtypes, every mode and
order, the errors, and grad/vmap/jit."""

import jax
import jax.scipy as jsp
import numpy as np
import pytest

import minijax
import minijax.scipy as msp
from tests.numpy._util import assert_same, check_against_jax

IMG = np.arange(20.0, dtype=np.float32).reshape(4, 5) ** 1.5
COORDS = [np.array([-1.2, -0.5, 0.0, 0.4, 1.5, 2.5, 3.0, 3.7, 5.2], np.float32),
          np.array([0.2, -2.6, 4.5, 1.0, 2.49, 2.5, 4.0, 6.1, -0.5], np.float32)]
MODES = ["constant", "nearest", "wrap", "mirror", "reflect"]


def test_map_coordinates_modes_and_orders():
    # every mode and order in one jitted program per library
    def f(sp, img, c0, c1):
        return {(m, o): sp.ndimage.map_coordinates(img, [c0, c1], o, mode=m, cval=-1.5)
                for m in MODES for o in (0, 1)}
    got = minijax.jit(lambda *a: f(msp, *a))(IMG, *COORDS)
    want = jax.jit(lambda *a: f(jsp, *a))(IMG, *COORDS)
    for k in want:
        assert_same(got[k], want[k], rtol=1e-5, atol=1e-5)


def test_map_coordinates_far_out_exact():
    # indices many periods outside a 3-D image (and the flattened sampling) give jax's
    # values bit for bit, in every mode
    rng = np.random.RandomState(7)
    img = rng.randn(3, 4, 5).astype(np.float32)
    coords = [(rng.rand(40) * 80 - 40).astype(np.float32) for _ in range(3)]

    def f(sp, img, *c):
        return [sp.ndimage.map_coordinates(img, list(c), o, mode=m) for m in MODES
                for o in (0, 1)]
    for g, w in zip(minijax.jit(lambda *a: f(msp, *a))(img, *coords),
                    jax.jit(lambda *a: f(jsp, *a))(img, *coords)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("case", range(6))
def test_map_coordinates_cases(case):
    img_i = np.arange(12, dtype=np.int32).reshape(3, 4)
    c = [np.array([0.5, 1.5, 2.2]), np.array([0.5, 2.5, -0.7])]
    f = [lambda sp: sp.ndimage.map_coordinates(img_i, c, 1, mode="nearest"),  # rounded ints
         lambda sp: sp.ndimage.map_coordinates(np.arange(6.0), [np.array([[0.5, 7.0]])], 1),
         lambda sp: sp.ndimage.map_coordinates(IMG, COORDS[:1], 1),  # wrong length
         lambda sp: sp.ndimage.map_coordinates(IMG, COORDS, 3),  # order 3
         lambda sp: sp.ndimage.map_coordinates(IMG, COORDS, 1, mode="grid-wrap"),
         lambda sp: sp.ndimage.map_coordinates(np.float32(2.0), [], 0)][case]
    check_against_jax(lambda: f(msp), lambda: f(jsp))


def test_map_coordinates_grad_vmap():
    def loss(sp, img, c0):
        return sp.ndimage.map_coordinates(img, [c0, COORDS[1]], 1, mode="mirror").sum()
    assert_same(minijax.grad(lambda *a: loss(msp, *a), argnums=(0, 1))(IMG, COORDS[0]),
                jax.grad(lambda *a: loss(jsp, *a), argnums=(0, 1))(IMG, COORDS[0]),
                rtol=1e-5, atol=1e-5)
    batch = np.stack([COORDS[0], COORDS[0] + 0.3])
    assert_same(minijax.vmap(lambda c: loss(msp, IMG, c))(batch),
                jax.vmap(lambda c: loss(jsp, IMG, c))(batch), rtol=1e-5)


GRID = (np.array([0.0, 0.5, 2.0, 3.0], np.float32), np.array([-1.0, 1.0, 4.0], np.float32))
VALS = np.arange(12.0, dtype=np.float32).reshape(4, 3) ** 2
XI = np.array([[0.25, 0.0], [2.9, 3.9], [-0.5, 0.0], [1.0, 4.5], [2.0, 1.0], [0.6, -1.0]],
              np.float32)


@pytest.mark.parametrize("case", range(9))
def test_regular_grid_interpolator(case):
    vals3 = np.arange(24.0, dtype=np.float32).reshape(4, 3, 2)
    f = [lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS)(XI),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS, "nearest")(XI),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS, fill_value=None)(
             XI, method="nearest"),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, vals3, fill_value=-1.0)(
             (XI[:, 0], XI[:, 1])),  # trailing value dimensions; coordinate tuple
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID[:1], VALS[:, 0])(XI[:, 0]),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS, "cubic"),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS, bounds_error=True),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS)(XI[:, :1]),
         lambda sp: sp.interpolate.RegularGridInterpolator(GRID, VALS, fill_value=1j)][case]
    check_against_jax(lambda: f(msp), lambda: f(jsp), rtol=1e-5, atol=1e-5)


def test_regular_grid_interpolator_transforms():
    def f(sp, vals, xi):
        return sp.interpolate.RegularGridInterpolator(GRID, vals)(xi).sum()
    assert_same(minijax.jit(minijax.grad(lambda *a: f(msp, *a), argnums=(0, 1)))(VALS, XI),
                jax.grad(lambda *a: f(jsp, *a), argnums=(0, 1))(VALS, XI), rtol=1e-5)
    interp = msp.interpolate.RegularGridInterpolator(GRID, VALS)
    # a pytree: through jit as an argument
    assert_same(minijax.jit(lambda r, x: r(x))(interp, XI),
                jsp.interpolate.RegularGridInterpolator(GRID, VALS)(XI), rtol=1e-5)
    batch = np.stack([XI, XI * 0.5])
    assert_same(minijax.jit(minijax.vmap(interp))(batch),
                jax.jit(jax.vmap(jsp.interpolate.RegularGridInterpolator(GRID, VALS)))(batch),
                rtol=1e-5)


@pytest.mark.parametrize("case", range(4))
def test_trapezoid(case):
    y = np.arange(12.0, dtype=np.float32).reshape(3, 4) ** 2
    f = [lambda sp: sp.integrate.trapezoid(y),
         lambda sp: sp.integrate.trapezoid(y, dx=0.5, axis=0),
         lambda sp: sp.integrate.trapezoid(y, x=np.array([0.0, 1.0, 3.0, 4.5])),
         lambda sp: jax.grad(sp.integrate.trapezoid)(y[0]) if sp is jsp else
         minijax.grad(sp.integrate.trapezoid)(y[0])][case]
    check_against_jax(lambda: f(msp), lambda: f(jsp))


@pytest.mark.parametrize("case", range(5))
def test_vq(case):
    obs = np.array([[1.0, 1.0], [4.0, 5.0], [2.4, 2.6], [-1.0, 0.0]], np.float32)
    book = np.array([[0.0, 0.0], [5.0, 5.0], [2.5, 2.5]], np.float32)
    f = [lambda sp: sp.cluster.vq.vq(obs, book),
         lambda sp: sp.cluster.vq.vq(obs[:, 0], book[:, 0]),
         lambda sp: sp.cluster.vq.vq(np.arange(4), np.array([0, 3])),
         lambda sp: sp.cluster.vq.vq(obs, book[:, 0]),
         lambda sp: sp.cluster.vq.vq(obs[None], book[None])][case]
    check_against_jax(lambda: f(msp), lambda: f(jsp))


def test_names_match_jax():
    import jax.scipy.cluster.vq  # noqa: F401
    import jax.scipy.integrate  # noqa: F401
    import jax.scipy.interpolate  # noqa: F401
    import jax.scipy.ndimage  # noqa: F401
    for mod in ["ndimage", "interpolate", "integrate", "cluster", "cluster.vq"]:
        jm, mm = jsp, msp
        for part in mod.split("."):
            jm, mm = getattr(jm, part), getattr(mm, part)
        want = {n for n in dir(jm) if not n.startswith("_")}
        assert want <= set(dir(mm)), (mod, want - set(dir(mm)))
