"""Pallas core types: refs, memory spaces, block specs and the grid mapping.

A kernel sees its operands as *refs*: mutable buffers holding one block of an
array. While the kernel is traced, a ref is a tracer whose aval is an
``AbstractRef`` (the block's shape and dtype, plus a memory space); reading and
writing it binds the ``get``/``swap`` primitives (``_primitives.py``). The kernel
function receives ``Ref`` objects wrapping those tracers, which give NumPy-style
indexing (``x_ref[...]``, ``x_ref[:, pl.ds(j, 128)] = v``).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from minijax.core import dtypes
from minijax.core.aval import ShapedArray
from minijax.core.jaxpr import ClosedJaxpr
from minijax.core.ref import AbstractRef as _AbstractRef, is_ref_aval as _is_ref_aval


class MemorySpace(enum.Enum):
    """Where a buffer lives on a TPU core. ``VMEM(shape, dtype)`` makes a scratch buffer."""

    ANY = "any"
    VMEM = "vmem"
    SMEM = "smem"
    HBM = "hbm"

    def __call__(self, shape, dtype) -> MemoryRef:
        return MemoryRef(tuple(int(d) for d in shape), np.dtype(dtype), self)

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class MemoryRef:
    """A scratch buffer request: ``pltpu.VMEM((8, 128), jnp.float32)``."""

    shape: tuple
    dtype: np.dtype
    memory_space: MemorySpace = MemorySpace.VMEM

    def get_aval(self) -> AbstractRef:
        return AbstractRef(ShapedArray(self.shape, self.dtype), self.memory_space)


# The type of a ref lives in the core (top-level refs share it): re-exported here.
AbstractRef = _AbstractRef
is_ref_aval = _is_ref_aval


# ---- indexing ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Slice:
    """``pl.ds(start, size, stride)``: ``size`` elements from ``start`` (which may be traced)."""

    start: Any
    size: int
    stride: int = 1

    def __post_init__(self):
        if not isinstance(self.size, (int, np.integer)) or isinstance(self.size, bool) \
                or self.size < 0:
            raise TypeError(f"pl.ds: size must be a static non-negative int, got {self.size!r}")
        if not isinstance(self.stride, (int, np.integer)) or self.stride < 1:
            raise TypeError(f"pl.ds: stride must be a static positive int, got {self.stride!r}")


def ds(start, size: int | None = None, stride: int | None = None) -> Slice:
    """A dynamic slice of a ref: ``size`` elements from ``start`` (``ds(n)`` is ``ds(0, n)``)."""
    if size is None:
        if not isinstance(start, (int, np.integer)):
            raise TypeError("pl.ds(start) with a traced start needs a static size: "
                            "pl.ds(start, size)")
        start, size = 0, start
    return Slice(start, int(size), 1 if stride is None else int(stride))


dslice = ds


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for ints: the number of blocks of size ``b`` covering ``a``."""
    return -(-a // b)


# ---- block specs ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """How an operand is cut into blocks: ``BlockSpec(block_shape, index_map)``.

    ``block_shape``: the block's size per array dimension; ``None`` entries are
    squeezed (size 1, absent from the kernel's ref). ``index_map(*program_ids)``
    returns the *block* index per array dimension (element index for squeezed
    dimensions). ``None`` block_shape: the whole array; ``None`` index_map: zeros.
    """

    block_shape: tuple | None = None
    index_map: Callable | None = None
    memory_space: Any = None

    def __post_init__(self):
        bs = self.block_shape
        if callable(bs):
            raise TypeError("BlockSpec(block_shape, index_map): block_shape must be a tuple of "
                            "ints/None, got a callable; the argument order is "
                            "(block_shape, index_map)")
        if bs is not None:
            try:
                bs = tuple(None if d is None else int(d) for d in bs)
            except TypeError:
                raise TypeError(f"BlockSpec: block_shape must be a tuple of ints or None, "
                                f"got {self.block_shape!r}") from None
            if any(d is not None and d <= 0 for d in bs):
                raise ValueError(f"BlockSpec: block_shape entries must be positive, got {bs}")
            object.__setattr__(self, "block_shape", bs)
        if self.index_map is not None and not callable(self.index_map):
            raise TypeError(f"BlockSpec: index_map must be callable, got {self.index_map!r}")


@dataclasses.dataclass(frozen=True, eq=False)
class BlockMapping:
    """One operand's blocking, resolved against its array type.

    ``index_map`` is traced to a jaxpr over int32 program ids (one per grid
    dimension) returning one int32 block index per array dimension.
    """

    origin: str                    # "in_specs[0]", "out_specs[1]", ...
    block_shape: tuple             # ints, None for squeezed dimensions
    array_aval: ShapedArray
    index_map_jaxpr: ClosedJaxpr
    memory_space: MemorySpace | None = None

    @property
    def block_sizes(self) -> tuple:
        """The block shape with squeezed dimensions as 1 (the window cut from the array)."""
        return tuple(1 if d is None else d for d in self.block_shape)

    @property
    def ref_shape(self) -> tuple:
        """The shape the kernel sees (squeezed dimensions dropped)."""
        return tuple(d for d in self.block_shape if d is not None)

    @property
    def ref_aval(self) -> AbstractRef:
        return AbstractRef(ShapedArray(self.ref_shape, self.array_aval.dtype), self.memory_space)

    @property
    def num_blocks(self) -> tuple:
        """Valid block indices per dimension: ``ceil(dim / block)`` (``dim`` when squeezed)."""
        return tuple(a if b is None else -(-a // b)
                     for a, b in zip(self.array_aval.shape, self.block_shape))

    @property
    def padded_shape(self) -> tuple:
        """The array padded so every valid block lies inside it."""
        return tuple(n * s for n, s in zip(self.num_blocks, self.block_sizes))

    @property
    def is_whole_array(self) -> bool:
        return self.block_sizes == self.array_aval.shape

    def __repr__(self) -> str:
        return (f"BlockMapping({self.origin}, block_shape={self.block_shape}, "
                f"array={self.array_aval.str_short()})")


@dataclasses.dataclass(frozen=True, eq=False)
class GridMapping:
    """The grid and every operand's blocking, as the ``pallas_call`` primitive carries them.

    ``num_vmapped`` leading grid dimensions were added by ``vmap``; the kernel's
    ``program_id(axis)`` refers to grid dimension ``num_vmapped + axis``.
    """

    grid: tuple
    in_blocks: tuple
    out_blocks: tuple
    scratch_avals: tuple           # AbstractRef per scratch buffer
    num_vmapped: int = 0

    def __repr__(self) -> str:
        blocks = ", ".join(f"{b.origin}:{b.block_shape}" for b in (*self.in_blocks,
                                                                     *self.out_blocks))
        scratch = ", ".join(a.str_short() for a in self.scratch_avals)
        extra = f", scratch=({scratch})" if scratch else ""
        vm = f", num_vmapped={self.num_vmapped}" if self.num_vmapped else ""
        return f"GridMapping(grid={self.grid}, blocks=({blocks}){extra}{vm})"


# ---- TPU memory layout -----------------------------------------------------------------------

LANES = 128


def sublane_tile(dtype: np.dtype) -> int:
    """Rows of a TPU (sublane x 128 lane) tile for ``dtype``: 8 for 32-bit, 16 for 16-bit,
    32 for 8-bit (narrower types pack several rows per 32-bit sublane)."""
    bits = 32 if dtypes.is_bool(dtype) else np.dtype(dtype).itemsize * 8
    return 8 * max(1, 32 // bits)


def vmem_bytes(shape: tuple, dtype: np.dtype) -> int:
    """Bytes a buffer takes in VMEM: its last dimension padded to 128 lanes and the one before
    to the dtype's sublane tile (TPU vector memory is tiled)."""
    shape = tuple(shape)
    itemsize = 4 if dtypes.is_bool(dtype) else np.dtype(dtype).itemsize
    if not shape:
        return itemsize
    padded = list(shape)
    padded[-1] = -(-padded[-1] // LANES) * LANES
    if len(padded) >= 2:
        t = sublane_tile(dtype)
        padded[-2] = -(-padded[-2] // t) * t
    return math.prod(padded) * itemsize
