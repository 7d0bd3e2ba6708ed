"""minijax.scipy.spatial.transform: ``Rotation`` and ``Slerp``, mirroring
``jax.scipy.spatial.transform``.

A rotation is stored as a unit quaternion in scalar-last order ``(x, y, z, w)``; a
``Rotation`` holds one (``quat`` of shape ``(4,)``) or a stack of them (``(N, 4)``).
Both classes are named tuples, hence pytrees: they pass through ``jit`` and ``vmap``.
Every conversion works on the last axis, so leading axes batch.
"""

from __future__ import annotations

import re
import typing

import numpy as np

from minijax import lax, numpy as jnp

__all__ = ["Rotation", "Slerp"]

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _axes_of(seq: str, max_len: int = 3) -> tuple[list[int], bool]:
    """The axis indices of an Euler sequence and whether it is intrinsic (upper case)."""
    intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
    extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
    if not (intrinsic or extrinsic):
        raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                         f"['X', 'Y', 'Z'], got {seq}")
    if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
        raise ValueError(f"Expected consecutive axes to be different, got {seq}")
    return [_AXIS_INDEX[c] for c in seq.lower()], intrinsic


def _norm(v):
    return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(q):
    return q / _norm(q)[..., None]


def _compose(p, q):
    """The quaternion product ``p q`` (the rotation ``q`` followed by ``p``)."""
    px, py, pz, pw = (p[..., i] for i in range(4))
    qx, qy, qz, qw = (q[..., i] for i in range(4))
    return jnp.stack([pw * qx + qw * px + (py * qz - pz * qy),
                      pw * qy + qw * py + (pz * qx - px * qz),
                      pw * qz + qw * pz + (px * qy - py * qx),
                      pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _as_matrix(q):
    x, y, z, w = (q[..., i] for i in range(4))
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
    """The quaternion of a rotation matrix, built from its largest diagonal term or the
    trace (whichever is largest), for accuracy."""
    diag = [m[..., i, i] for i in range(3)]
    trace = diag[0] + diag[1] + diag[2]
    candidates = []
    for i in range(3):
        j, k = (i + 1) % 3, (i + 2) % 3
        q = [None] * 4
        q[i] = 1 - trace + 2 * m[..., i, i]
        q[j] = m[..., j, i] + m[..., i, j]
        q[k] = m[..., k, i] + m[..., i, k]
        q[3] = m[..., k, j] - m[..., j, k]
        candidates.append(jnp.stack(q, axis=-1))
    candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                 m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
    choice = jnp.argmax(jnp.stack(diag + [trace], axis=-1), axis=-1)
    q = jnp.take_along_axis(jnp.stack(candidates, axis=-2), choice[..., None, None],
                            axis=-2)[..., 0, :]
    return _normalize(q)


def _as_rotvec(q, degrees):
    q = jnp.where(q[..., 3:] < 0, -q, q)
    angle = 2.0 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
    a2 = angle * angle
    small = 2 + a2 / 12 + 7 * a2 * a2 / 2880  # series of angle / sin(angle / 2)
    scale = jnp.where(angle <= 1e-3, small, angle / jnp.sin(angle / 2))
    scale = jnp.where(degrees, jnp.rad2deg(scale), scale)
    return scale[..., None] * q[..., :3]


def _from_rotvec(rotvec, degrees):
    rotvec = jnp.where(degrees, jnp.deg2rad(rotvec), rotvec)
    angle = _norm(rotvec)
    a2 = angle * angle
    small = 0.5 - a2 / 48 + a2 * a2 / 3840  # series of sin(angle / 2) / angle
    scale = jnp.where(angle <= 1e-3, small, jnp.sin(angle / 2) / angle)
    return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_mrp(q):
    sign = jnp.where(q[..., 3] < 0, -1.0, 1.0)
    return (sign / (1.0 + sign * q[..., 3]))[..., None] * q[..., :3]


def _from_mrp(mrp):
    n2p1 = jnp.sum(mrp * mrp, axis=-1)[..., None] + 1
    return jnp.concatenate([2 * mrp[..., :3], 2 - n2p1], axis=-1) / n2p1


def _elementary(axis: int, angle):
    """The quaternion of a rotation by ``angle`` about coordinate axis ``axis``."""
    parts = [jnp.zeros_like(angle)] * 3 + [jnp.cos(angle / 2.0)]
    parts[axis] = jnp.sin(angle / 2.0)
    return jnp.stack(parts, axis=-1)


def _euler_to_quat(angles, axes: list[int], intrinsic: bool, degrees):
    if angles.shape[-1] != len(axes):
        raise ValueError(f"Expected angles of {len(axes)} values on the last axis for a "
                         f"sequence of {len(axes)} axes, got shape {angles.shape}")
    angles = jnp.where(degrees, jnp.deg2rad(angles), angles)
    # The elementary quaternions are made behind a barrier: otherwise XLA fuses their
    # sines and cosines into every element of whatever consumes the composed
    # quaternion (as_matrix's nine entries would each recompute all six), since it
    # duplicates elementwise producers freely.
    elementary = lax.optimization_barrier(
        jnp.stack([_elementary(axis, angles[..., n]) for n, axis in enumerate(axes)], -2))
    result = elementary[..., 0, :]
    for n in range(1, len(axes)):
        q = elementary[..., n, :]
        result = _compose(result, q) if intrinsic else _compose(q, result)
    return result


def _quat_to_euler(q, axes: list[int], extrinsic: bool, degrees):
    """Euler angles of ``q`` about ``axes`` (scipy's method, from its paper by Bernardes
    and Viollet), wrapped to ``[-pi, pi)``."""
    i, j, k = axes if extrinsic else axes[::-1]
    symmetric = i == k
    if symmetric:
        k = 3 - i - j
    sign = (i - j) * (j - k) * (k - i) // 2
    w, qi, qj, qk = q[..., 3], q[..., i], q[..., j], q[..., k]
    if symmetric:
        a, b, c, d = w, qi, qj, qk * sign
    else:
        a, b, c, d = w - qj, qi + qk * sign, qj + w, qk * sign - qi
    middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
    eps = 1e-7
    case = jnp.where(jnp.abs(middle) <= eps, 1, jnp.where(jnp.abs(middle - np.pi) <= eps, 2, 0))
    half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
    zero = jnp.zeros_like(middle)
    outer = jnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
    # the first and third angles (by position in the result)
    first = jnp.where(case == 0, half_sum - half_diff, outer if extrinsic else zero)
    third = jnp.where(case == 0, half_sum + half_diff, zero if extrinsic else outer)
    if not extrinsic:
        first, third = third, first
    if not symmetric:
        middle = middle - np.pi / 2
        if extrinsic:
            third = third * sign
        else:
            first = first * sign
    angles = jnp.stack([first, middle, third], axis=-1)
    angles = (angles + np.pi) % (2 * np.pi) - np.pi
    return jnp.where(degrees, jnp.rad2deg(angles), angles)


def _canonical(q):
    """``q`` or ``-q`` (the same rotation), whichever has ``w > 0`` (ties broken by the
    first non-zero of x, y, z being positive)."""
    neg, zero = q < 0, q == 0
    flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0])
            | (zero[..., 3] & zero[..., 0] & neg[..., 1])
            | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
    return jnp.where(flip[..., None], -q, q)


class Rotation(typing.NamedTuple):
    """A rotation (or a stack of rotations) in 3 dimensions, as in
    ``scipy.spatial.transform.Rotation``; build one with the ``from_*`` class methods.

    >>> r = Rotation.from_euler("z", 90, degrees=True)
    >>> r.apply(jnp.array([1.0, 0.0, 0.0]))   # [0, 1, 0]
    """

    quat: typing.Any

    @classmethod
    def concatenate(cls, rotations: typing.Sequence):
        """The rotations of ``rotations``, stacked into one ``Rotation``."""
        return cls(jnp.concatenate([r.quat for r in rotations]))

    @classmethod
    def from_euler(cls, seq: str, angles, degrees: bool = False):
        """Rotations from Euler angles about the axes in ``seq`` (up to 3 of "xyz" for
        extrinsic rotations, "XYZ" for intrinsic), the angles on the last axis."""
        if not 1 <= len(seq) <= 3:
            raise ValueError("Expected axis specification to be a non-empty string of upto "
                             f"3 characters, got {seq}")
        axes, intrinsic = _axes_of(seq)
        return cls(_euler_to_quat(jnp.atleast_1d(angles), axes, intrinsic, degrees))

    @classmethod
    def from_matrix(cls, matrix):
        """Rotations from ``(..., 3, 3)`` rotation matrices."""
        return cls(_from_matrix(jnp.asarray(matrix)))

    @classmethod
    def from_mrp(cls, mrp):
        """Rotations from modified Rodrigues parameters (``(..., 3)``)."""
        return cls(_from_mrp(jnp.asarray(mrp)))

    @classmethod
    def from_quat(cls, quat):
        """Rotations from scalar-last quaternions (``(..., 4)``, normalized here)."""
        return cls(_normalize(jnp.asarray(quat)))

    @classmethod
    def from_rotvec(cls, rotvec, degrees: bool = False):
        """Rotations from rotation vectors (axis times angle, ``(..., 3)``)."""
        return cls(_from_rotvec(jnp.asarray(rotvec), degrees))

    @classmethod
    def identity(cls, num: int | None = None, dtype=float):
        """The identity rotation (a single one: ``num`` must be None, as in jax)."""
        assert num is None
        return cls(jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype))

    @classmethod
    def random(cls, random_key, num: int | None = None):
        """Not implemented (as in jax)."""
        raise NotImplementedError()

    def __getitem__(self, indexer):
        if self.single:
            raise TypeError("Single rotation is not subscriptable.")
        return Rotation(self.quat[indexer])

    def __len__(self):
        if self.single:
            raise TypeError("Single rotation has no len().")
        return self.quat.shape[0]

    def __mul__(self, other) -> Rotation:
        """The composition: ``other`` first, then ``self``."""
        return Rotation.from_quat(_compose(self.quat, other.quat))

    def apply(self, vectors, inverse: bool = False):
        """Rotate ``(..., 3)`` vectors (by the inverse rotation if ``inverse``)."""
        m = self.as_matrix()
        m = jnp.where(inverse, jnp.swapaxes(m, -1, -2), m)
        return jnp.matmul(m, jnp.asarray(vectors)[..., None])[..., 0]

    def as_euler(self, seq: str, degrees: bool = False):
        """Euler angles about the 3 axes of ``seq`` (see ``from_euler``)."""
        if len(seq) != 3:
            raise ValueError(f"Expected 3 axes, got {seq}.")
        axes, intrinsic = _axes_of(seq)
        return _quat_to_euler(self.quat, axes, not intrinsic, degrees)

    def as_matrix(self):
        """``(..., 3, 3)`` rotation matrices."""
        return _as_matrix(self.quat)

    def as_mrp(self):
        """Modified Rodrigues parameters, ``(..., 3)``."""
        return _as_mrp(self.quat)

    def as_rotvec(self, degrees: bool = False):
        """Rotation vectors (axis times angle), ``(..., 3)``."""
        return _as_rotvec(self.quat, degrees)

    def as_quat(self, canonical: bool = False, scalar_first: bool = False):
        """Quaternions, scalar last unless ``scalar_first``; with ``canonical``, the
        one of ``q``/``-q`` with non-negative ``w``."""
        quat = _canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, shift=1, axis=-1) if scalar_first else quat

    def inv(self):
        """The inverse rotation(s)."""
        return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

    def magnitude(self):
        """The rotation angle(s), in radians, in ``[0, pi]``."""
        return 2.0 * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

    def mean(self, weights=None):
        """The (weighted) mean rotation of a stack: the principal eigenvector of the
        weighted sum of the quaternions' outer products."""
        q = self.quat
        w = (jnp.ones(q.shape[0], dtype=q.dtype) if weights is None
             else jnp.asarray(weights, dtype=q.dtype))
        if w.ndim != 1:
            raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
        if w.shape[0] != len(self):
            raise ValueError("Expected `weights` to have number of values equal to number of "
                             f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
        _, vecs = jnp.linalg.eigh(jnp.dot(w[None, :] * q.T, q))
        return Rotation(vecs[:, -1])

    @property
    def single(self) -> bool:
        """Whether this is one rotation rather than a stack."""
        return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between rotations at increasing ``times``; make one
    with ``Slerp.init(times, rotations)`` and call it at the times wanted."""

    times: typing.Any
    timedelta: typing.Any
    rotations: Rotation
    rotvecs: typing.Any

    @classmethod
    def init(cls, times, rotations: Rotation):
        """The interpolator of the stack ``rotations`` (at least 2) at 1-D ``times``."""
        if not isinstance(rotations, Rotation):
            raise TypeError("`rotations` must be a `Rotation` instance.")
        if rotations.single or len(rotations) == 1:
            raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
        times = jnp.asarray(times, dtype=rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                             f"{times.ndim} dimensions.")
        if times.shape[0] != len(rotations):
            raise ValueError("Expected number of rotations to be equal to number of "
                             f"timestamps given, got {len(rotations)} rotations and "
                             f"{times.shape[0]} timestamps.")
        quat = rotations.as_quat()
        starts = Rotation(quat[:-1])
        steps = (starts.inv() * Rotation(quat[1:])).as_rotvec()
        return cls(times=times, timedelta=jnp.diff(times), rotations=starts, rotvecs=steps)

    def __call__(self, times):
        """The interpolated rotation(s) at ``times`` (a scalar or 1-D)."""
        t = jnp.asarray(times, dtype=self.times.dtype)
        if t.ndim > 1:
            raise ValueError("`times` must be at most 1-dimensional.")
        single = t.ndim == 0
        t = jnp.atleast_1d(t)
        ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
        alpha = (t - self.times[ind]) / self.timedelta[ind]
        result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
        return result[0] if single else result
