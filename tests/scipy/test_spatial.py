"""minijax.scipy.spatial.transform (Rotation, Slerp) against jax.scipy.spatial.transform:
every constructor and conversion on a batch of rotations (including the gimbal-lock and
180-degree cases), composition, apply, mean, Slerp, the errors, and jit/vmap/grad."""

import jax
import jax.scipy.spatial.transform as jtr
import numpy as np
import pytest

import minijax
import minijax.scipy.spatial.transform as mtr
from tests.numpy._util import assert_same, assert_same_by_key, check_against_jax

_q = np.random.RandomState(0).randn(6, 4).astype(np.float32)
QUATS = np.concatenate([_q, np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0.6, 0, -0.8]],
                                     np.float32)])
EULER = np.array([[0.3, -1.2, 2.0], [0.1, np.pi / 2, -0.4], [1.0, 0.0, 0.5],
                  [-2.5, np.pi, 0.7]], np.float32)
VECS = np.array([[1.0, 0.0, 0.0], [0.3, -2.0, 1.5], [0.0, 0.0, 1.0]], np.float32)
SEQS = ["xyz", "ZYX", "zxz", "XZX", "xy", "Z"]


def _conversions(tr, quats, euler, vecs):
    out = {}
    r = tr.Rotation.from_quat(quats)
    out["quat"] = r.as_quat()
    out["canonical"] = r.as_quat(canonical=True, scalar_first=True)
    out["matrix"] = r.as_matrix()
    out["rotvec"] = r.as_rotvec()
    out["rotvec_deg"] = r.as_rotvec(degrees=True)
    out["mrp"] = r.as_mrp()
    out["magnitude"] = r.magnitude()
    out["inv"] = r.inv().as_quat()
    out["from_matrix"] = tr.Rotation.from_matrix(r.as_matrix()).as_quat(canonical=True)
    out["from_rotvec"] = tr.Rotation.from_rotvec(r.as_rotvec()).as_quat(canonical=True)
    out["from_rotvec_deg"] = tr.Rotation.from_rotvec(vecs * 40, degrees=True).as_quat()
    out["from_mrp"] = tr.Rotation.from_mrp(r.as_mrp()).as_quat(canonical=True)
    out["compose"] = (r * r[::-1]).as_quat()
    out["apply"] = r[:3].apply(vecs)
    out["apply_inverse"] = r[:3].apply(vecs, inverse=True)
    out["apply_broadcast"] = r[1].apply(vecs)
    out["mean"] = r.mean().as_quat(canonical=True)
    out["mean_weights"] = r.mean(np.linspace(0.1, 1.0, len(quats))).as_quat(canonical=True)
    out["concatenate"] = tr.Rotation.concatenate([r[:2], r[4:]]).as_quat()
    out["identity"] = tr.Rotation.identity().as_matrix()
    out["from_euler_deg"] = tr.Rotation.from_euler("yz", euler[0, :2] * 50, degrees=True).quat
    for seq in SEQS:
        e = tr.Rotation.from_euler(seq, euler[:, :len(seq)])
        out[f"from_euler_{seq}"] = e.as_quat()
        if len(seq) == 3:
            out[f"as_euler_{seq}"] = r.as_euler(seq)
            out[f"roundtrip_{seq}"] = e.as_euler(seq, degrees=True)
    times = np.array([0.0, 1.0, 2.5, 3.0], np.float32)
    slerp = tr.Slerp.init(times, r[:4])
    out["slerp"] = slerp(np.array([0.0, 0.4, 1.0, 2.0, 3.0], np.float32)).as_quat()
    out["slerp_scalar"] = slerp(1.7).as_quat()
    return out


def test_against_jax():
    got = minijax.jit(lambda *a: _conversions(mtr, *a))(QUATS, EULER, VECS)
    want = jax.jit(lambda *a: _conversions(jtr, *a))(QUATS, EULER, VECS)
    assert_same_by_key(got, want, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize("case", range(13))
def test_errors_and_single(case):
    r = {mtr: mtr.Rotation.from_quat(QUATS), jtr: jtr.Rotation.from_quat(QUATS)}
    f = [lambda tr: tr.Rotation.from_euler("xyzx", EULER),
         lambda tr: tr.Rotation.from_euler("xYz", EULER),
         lambda tr: tr.Rotation.from_euler("xxz", EULER),
         lambda tr: r[tr].as_euler("xy"),
         lambda tr: r[tr][0][0],
         lambda tr: len(r[tr][0]),
         lambda tr: len(r[tr]),
         lambda tr: r[tr].mean(np.ones((2, 2))),
         lambda tr: r[tr].mean(np.ones(3)),
         lambda tr: tr.Slerp.init(np.arange(3.0), r[tr][:2]),
         lambda tr: tr.Slerp.init(np.arange(1.0), r[tr][:1]),
         lambda tr: tr.Slerp.init(np.arange(2.0), QUATS[:2]),
         lambda tr: r[tr].single][case]
    check_against_jax(lambda: f(mtr), lambda: f(jtr))


def test_transforms():
    def f(tr, v):
        return tr.Rotation.from_rotvec(v).apply(VECS[::-1]).sum()
    assert_same(minijax.jit(minijax.grad(lambda v: f(mtr, v)))(VECS),
                jax.jit(jax.grad(lambda v: f(jtr, v)))(VECS), rtol=1e-4, atol=1e-5)
    # a pytree through jit and vmap
    rm = mtr.Rotation.from_quat(QUATS)
    got = minijax.jit(minijax.vmap(lambda r: r.as_matrix()))(rm)
    assert_same(got, jax.vmap(lambda r: r.as_matrix())(jtr.Rotation.from_quat(QUATS)),
                rtol=1e-5, atol=1e-6)


def test_names_match_jax():
    import jax.scipy.spatial
    import minijax.scipy.spatial
    assert {n for n in dir(jax.scipy.spatial) if not n.startswith("_")} <= set(
        dir(minijax.scipy.spatial))
    for cls in ["Rotation", "Slerp"]:
        want = {n for n in dir(getattr(jtr, cls)) if not n.startswith("_")}
        assert want <= set(dir(getattr(mtr, cls))), want - set(dir(getattr(mtr, cls)))


def test_euler_to_matrix_computes_each_sine_once():
    # from_euler's sines and cosines must not be fused into (and recomputed by) each of
    # as_matrix's nine entries; the result stays bit-for-bit jax's.
    angles = np.random.RandomState(1).randn(64, 3).astype(np.float32)
    f = minijax.jit(lambda a: mtr.Rotation.from_euler("xyz", a).as_matrix())
    blocks = f.lower(angles).compile().as_text().split("\n\n")
    matrix = [b for b in blocks if "ROOT" in b and "f32[64,3,3]" in b.split("ROOT")[1]
              .split("\n")[0]]
    assert matrix and not any("sine(" in b for b in matrix), matrix
    want = jax.jit(lambda a: jtr.Rotation.from_euler("xyz", a).as_matrix())(angles)
    np.testing.assert_array_equal(np.asarray(f(angles)), np.asarray(want))
