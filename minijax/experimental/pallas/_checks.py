"""What a TPU compile of a ``pallas_call`` would reject, checked at trace time.

The grid is static, so every check runs on concrete grid points with NumPy:

- tiling: the last two block dimensions must be divisible by the dtype's tile
  (8x128 for 32-bit types, 16x128 for 16-bit, 32x128 for 8-bit) or equal the
  array's dimensions (rank-1 blocks: the whole array, a multiple of 1024
  elements, or a power of two of at least 128 x packing), as Mosaic requires;
- VMEM: the double-buffered input and output blocks plus the VMEM scratch
  buffers (each padded to the tiled layout) must fit in ``vmem_limit_bytes``,
  by default XLA:TPU's scoped VMEM limit of 16 MiB
  (``--xla_tpu_scoped_vmem_limit_kib=16384`` on TPU v4/v5e, the flag that
  ``CompilerParams.vmem_limit_bytes``'s documentation refers to; TPU v6e
  doubles it, so 16 MiB is the portable figure);
- bounds: every block index an ``index_map`` returns must be inside the array
  (unless ``CompilerParams(disable_bounds_checks=True)``);
- races: two grid points that differ along a ``parallel`` dimension may run on
  different cores at once, so they must not write the same output block.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from minijax.core import dtypes
from minijax.experimental.pallas._core import (LANES, BlockMapping, MemorySpace, sublane_tile,
                                               vmem_bytes)

DEFAULT_VMEM_LIMIT_BYTES = 16 * 1024 * 1024


def grid_points(grid: tuple) -> np.ndarray:
    """All grid points in execution order (row-major: the last dimension fastest), (N, rank)."""
    if not grid:
        return np.zeros((1, 0), np.int64)
    mesh = np.meshgrid(*[np.arange(g) for g in grid], indexing="ij")
    return np.stack([m.ravel() for m in mesh], axis=1)


def _fmt(point) -> str:
    t = tuple(int(x) for x in point)
    return str(t) if len(t) != 1 else f"({t[0]},)"


def evaluate_index_map(index_map: Callable | None, bm: BlockMapping,
                       points: np.ndarray) -> np.ndarray:
    """The block indices ``index_map`` returns at each grid point, (N, block rank).

    The user's function is called once with NumPy vectors of program ids (all grid points
    at once); if it does not work on NumPy values, its traced jaxpr is evaluated with
    ``jit(vmap(...))``.
    """
    rank = len(bm.block_shape)
    n = points.shape[0]
    if index_map is None:
        return np.zeros((n, rank), np.int64)
    cols = [points[:, d].astype(np.int32) for d in range(points.shape[1])]
    try:
        out = index_map(*cols)
        out = out if isinstance(out, (tuple, list)) else (out,)
        res = np.stack([np.broadcast_to(np.asarray(o).astype(np.int64), (n,)) for o in out],
                       axis=1) if out else np.zeros((n, 0), np.int64)
    except Exception:
        res = _evaluate_traced(bm, cols, n)
    return res.reshape(n, rank)


def _evaluate_traced(bm: BlockMapping, cols: list, n: int) -> np.ndarray:
    import minijax
    from minijax.core.trace import eval_jaxpr
    closed = bm.index_map_jaxpr

    def f(*ids):
        return eval_jaxpr(closed.jaxpr, closed.consts, *ids)
    if not cols:
        outs = minijax.jit(f)()
        return np.asarray([[int(np.asarray(o)) for o in outs]], np.int64)
    outs = minijax.jit(minijax.vmap(f))(*cols)
    return np.stack([np.broadcast_to(np.asarray(o).astype(np.int64), (n,)) for o in outs],
                    axis=1) if outs else np.zeros((n, 0), np.int64)


# ---- the checks ----------------------------------------------------------------------------

def check_dimension_semantics(name: str, grid: tuple, semantics) -> None:
    if semantics is not None and len(semantics) != len(grid):
        raise ValueError(
            f"pallas_call {name}: CompilerParams.dimension_semantics="
            f"{tuple(str(s) for s in semantics)} has {len(semantics)} entries but the grid "
            f"{grid} has rank {len(grid)}; give one 'parallel' or 'arbitrary' entry per grid "
            "dimension")


def check_tiling(name: str, bm: BlockMapping) -> None:
    """Mosaic's block shape rules (see the module docstring)."""
    if bm.memory_space is MemorySpace.SMEM:
        return
    bs, shape, dt = bm.block_sizes, bm.array_aval.shape, bm.array_aval.dtype
    where = (f"pallas_call {name}: {bm.origin} has block shape {bm.block_shape} for an array "
             f"of type {bm.array_aval.str_short()}")
    if len(bs) == 0:
        raise ValueError(f"{where}, a rank-0 block; TPU blocks in VMEM must have rank >= 1: "
                         "reshape the operand to shape (1,), or place it in SMEM with "
                         "BlockSpec(memory_space=pltpu.SMEM)")
    if len(bs) == 1:
        bits = 32 if dtypes.is_bool(dt) else np.dtype(dt).itemsize * 8
        min_tile = LANES * max(1, 32 // bits)
        b, a = bs[0], shape[0]
        if not (b == a or b % 1024 == 0 or (b >= min_tile and b & (b - 1) == 0)):
            raise ValueError(
                f"{where}, but on TPU a rank-1 block must equal the array's size ({a}), be a "
                f"multiple of 1024 (8 x 128), or be a power of two >= {min_tile} (128 x "
                f"{max(1, 32 // bits)} for {dt.name}); change block_shape[0]={b}")
        return
    tile = (sublane_tile(dt), LANES)
    bad = []
    for k, t in zip((-2, -1), tile):
        b, a = bs[k], shape[k]
        if b != a and b % t:
            bad.append(f"block_shape[{len(bs) + k}]={b} (use a multiple of {t}, or {a})")
    if bad:
        raise ValueError(
            f"{where}, but on TPU the last two block dimensions must be divisible by the "
            f"{dt.name} tile {tile} or equal the array's dimensions {tuple(shape[-2:])}: "
            f"change {' and '.join(bad)}")


def check_vmem(name: str, in_blocks: Sequence[BlockMapping], out_blocks: Sequence[BlockMapping],
               scratch_avals: Sequence, limit: int | None) -> None:
    """Double-buffered blocks plus scratch must fit in the scoped VMEM limit."""
    items, total = [], 0
    for bm in (*in_blocks, *out_blocks):
        if bm.memory_space is MemorySpace.SMEM:
            continue
        b = vmem_bytes(bm.ref_shape, bm.array_aval.dtype)
        total += 2 * b
        items.append(f"{bm.origin} block {bm.ref_shape} {bm.array_aval.dtype.name}: "
                     f"2 x {b} bytes (double-buffered)")
    for i, a in enumerate(scratch_avals):
        if a.memory_space is MemorySpace.SMEM:
            continue
        b = vmem_bytes(a.shape, a.dtype)
        total += b
        items.append(f"scratch_shapes[{i}] {a.shape} {a.dtype.name}: {b} bytes")
    default = limit is None
    limit = DEFAULT_VMEM_LIMIT_BYTES if default else limit
    if total > limit:
        what = ("the default scoped VMEM limit of XLA:TPU; raise it with "
                "pltpu.CompilerParams(vmem_limit_bytes=...)" if default
                else "CompilerParams.vmem_limit_bytes")
        raise ValueError(
            f"pallas_call {name}: the kernel needs {total} bytes ({total / 2**20:.2f} MiB) of "
            f"VMEM but the limit is {limit} bytes ({limit / 2**20:.2f} MiB, {what}). "
            f"Breakdown (blocks padded to the TPU tile): " + "; ".join(items)
            + ". Use smaller blocks or fewer/smaller scratch buffers.")


def check_bounds(name: str, bm: BlockMapping, indices: np.ndarray, points: np.ndarray) -> None:
    nb = np.asarray(bm.num_blocks, np.int64)
    bad = (indices < 0) | (indices >= nb)
    if not bad.any():
        return
    k = int(np.argmax(bad.any(axis=1)))
    valid = ", ".join(f"0..{int(n) - 1}" for n in nb)
    raise ValueError(
        f"pallas_call {name}: the {bm.origin} index_map returns block index "
        f"{_fmt(indices[k])} at grid point {_fmt(points[k])}, out of bounds for the array of "
        f"type {bm.array_aval.str_short()} cut into blocks of shape {bm.block_shape} "
        f"({tuple(int(n) for n in nb)} blocks; valid indices {valid}). Fix the index_map or "
        "the grid, or opt out of the check with "
        "pltpu.CompilerParams(disable_bounds_checks=True).")


def check_races(name: str, bm: BlockMapping, indices: np.ndarray, points: np.ndarray,
                semantics) -> None:
    """No output block may be written from two grid points that differ on a parallel axis."""
    if semantics is None:
        return
    par = [d for d, s in enumerate(semantics) if str(s) == "parallel"]
    if not par or points.shape[0] < 2:
        return
    grid_par = [int(points[:, d].max()) + 1 for d in par]
    key = np.ravel_multi_index(tuple(points[:, d] for d in par), grid_par)
    _, block_id = np.unique(indices, axis=0, return_inverse=True)
    block_id = block_id.reshape(-1)
    nblk = int(block_id.max()) + 1
    lo = np.full(nblk, np.iinfo(np.int64).max)
    hi = np.full(nblk, -1)
    np.minimum.at(lo, block_id, key)
    np.maximum.at(hi, block_id, key)
    clash = np.nonzero(lo != hi)[0]
    if not len(clash):
        return
    b = clash[0]
    p = int(np.nonzero((block_id == b) & (key == lo[b]))[0][0])
    q = int(np.nonzero((block_id == b) & (key == hi[b]))[0][0])
    dims = [d for d in par if points[p, d] != points[q, d]]
    raise ValueError(
        f"pallas_call {name}: {bm.origin} block {_fmt(indices[p])} is written at grid points "
        f"{_fmt(points[p])} and {_fmt(points[q])}, which differ along grid dimension"
        f"{'s' if len(dims) > 1 else ''} {', '.join(map(str, dims))} marked 'parallel' in "
        "dimension_semantics: on a TPU those grid points may run at the same time on "
        "different cores (a race). Mark the dimension 'arbitrary', or make the index_map "
        "give each of them its own block.")


def check_all(name: str, grid: tuple, in_blocks: Sequence[BlockMapping],
              out_blocks: Sequence[BlockMapping], index_maps: Sequence[Callable | None],
              scratch_avals: Sequence, params) -> None:
    """Every check, in the order a TPU compile meets them."""
    semantics = params.dimension_semantics if params is not None else None
    check_dimension_semantics(name, grid, semantics)
    for bm in (*in_blocks, *out_blocks):
        check_tiling(name, bm)
    check_vmem(name, in_blocks, out_blocks, scratch_avals,
               params.vmem_limit_bytes if params is not None else None)
    if math.prod(grid) == 0:
        return
    points = grid_points(grid)
    check_bounds_on = not (params is not None and params.disable_bounds_checks)
    nin = len(in_blocks)
    for k, (bm, im) in enumerate(zip((*in_blocks, *out_blocks), index_maps)):
        indices = evaluate_index_map(im, bm, points)
        if check_bounds_on:
            check_bounds(name, bm, indices, points)
        if k >= nin:
            check_races(name, bm, indices, points, semantics)
