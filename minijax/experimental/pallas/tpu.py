"""TPU-specific Pallas API: compiler parameters, grid semantics, memory spaces.

``import minijax.experimental.pallas.tpu as pltpu``::

    params = pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary"),
                                  vmem_limit_bytes=32 * 2**20)
    scratch = [pltpu.VMEM((128, 128), jnp.float32)]

``CompilerParams`` has the fields, defaults and order of
``jax.experimental.pallas.tpu.CompilerParams``; it validates its values when
built (and by ``replace``), naming the field and the value.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from minijax.experimental.pallas._core import MemoryRef, MemorySpace
from minijax.experimental.pallas._mosaic import TpuLowered, lower_for_tpu, lowering_platform

__all__ = ["ANY", "ARBITRARY", "CompilerParams", "CoreType", "GridDimensionSemantics", "HBM",
           "MemoryRef", "MemorySpace", "PARALLEL", "SMEM", "TpuLowered", "VMEM",
           "lower_for_tpu", "lowering_platform"]


class GridDimensionSemantics(enum.Enum):
    """How a grid dimension may be executed: in any order (``PARALLEL``, which lets a TPU
    split it across cores) or sequentially in order (``ARBITRARY``)."""

    PARALLEL = "parallel"
    ARBITRARY = "arbitrary"

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"pltpu.{self.name}"


DimensionSemantics = GridDimensionSemantics
PARALLEL = GridDimensionSemantics.PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY


class CoreType(enum.Enum):
    """The TPU core a kernel runs on: the TensorCore or one of the SparseCore kinds."""

    TC = "tc"
    SC_SCALAR_SUBCORE = "sc_scalar_subcore"
    SC_VECTOR_SUBCORE = "sc_vector_subcore"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


TC = CoreType.TC
ANY = MemorySpace.ANY
VMEM = MemorySpace.VMEM
SMEM = MemorySpace.SMEM
HBM = MemorySpace.HBM


class FrozenDict(Mapping):
    """An immutable, hashable mapping (``CompilerParams.flags``)."""

    __slots__ = ("_items", "_dict")

    def __init__(self, mapping: Mapping):
        self._dict = dict(mapping)
        self._items = tuple(sorted(self._dict.items(), key=lambda kv: str(kv[0])))

    def __getitem__(self, key):
        return self._dict[key]

    def __iter__(self) -> Iterator:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other) -> bool:
        return isinstance(other, Mapping) and dict(self._dict) == dict(other)

    def __repr__(self) -> str:
        return f"FrozenDict({self._dict!r})"


def _semantics(value) -> tuple | None:
    if value is None:
        return None
    if isinstance(value, (str, GridDimensionSemantics)) or not hasattr(value, "__iter__"):
        raise TypeError(f"CompilerParams.dimension_semantics must be a sequence with one "
                        f"'parallel' or 'arbitrary' entry per grid dimension, got {value!r}")
    out = []
    for i, s in enumerate(value):
        if isinstance(s, GridDimensionSemantics):
            out.append(s)
        elif isinstance(s, str) and s in ("parallel", "arbitrary"):
            out.append(GridDimensionSemantics(s))
        else:
            raise ValueError(f"CompilerParams.dimension_semantics[{i}] must be 'parallel' or "
                             f"'arbitrary' (pltpu.PARALLEL / pltpu.ARBITRARY), got {s!r}")
    return tuple(out)


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """Mosaic TPU compiler parameters (fields, defaults and order as jax's).

    ``dimension_semantics``: one ``"parallel"``/``"arbitrary"`` per grid dimension
    (``pallas_call`` checks the count). ``vmem_limit_bytes``: the scoped VMEM limit for
    the kernel (default: XLA:TPU's 16 MiB). ``disable_bounds_checks``: skip the check
    that ``index_map`` block indices are inside the arrays. ``kernel_type``: the core
    (``CoreType.TC`` or a SparseCore kind). The other fields are passed to the TPU
    compiler in the custom call's backend config.
    """

    BACKEND: ClassVar[str] = "mosaic_tpu"

    dimension_semantics: tuple[GridDimensionSemantics, ...] | None = None
    allow_input_fusion: tuple[bool, ...] | None = None
    vmem_limit_bytes: int | None = None
    collective_id: int | None = None
    has_side_effects: bool | Any = False
    flags: dict[str, Any] | None = None
    internal_scratch_in_bytes: int | None = None
    serialization_format: int = 1
    kernel_type: CoreType = CoreType.TC
    disable_bounds_checks: bool = False
    disable_semaphore_checks: bool = False
    skip_device_barrier: bool = False
    allow_collective_id_without_custom_barrier: bool = False
    shape_invariant_numerics: bool = True
    use_tc_tiling_on_sc: bool | None = None
    needs_layout_passes: bool | None = None
    fuse_transposed_lhs_in_matmul: bool = False

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "dimension_semantics", _semantics(self.dimension_semantics))
        if self.allow_input_fusion is not None:
            set_(self, "allow_input_fusion", tuple(bool(b) for b in self.allow_input_fusion))
        v = self.vmem_limit_bytes
        if v is not None:
            if not _is_int(v):
                raise TypeError(f"CompilerParams.vmem_limit_bytes must be a positive int (a "
                                f"number of bytes) or None, got {v!r} of type "
                                f"{type(v).__name__}")
            if v <= 0:
                raise ValueError(f"CompilerParams.vmem_limit_bytes must be a positive int (a "
                                 f"number of bytes) or None, got {v!r}")
            set_(self, "vmem_limit_bytes", int(v))
        k = self.kernel_type
        if not isinstance(k, CoreType):
            try:
                k = CoreType(k) if isinstance(k, str) else None
            except ValueError:
                k = None
            if k is None:
                raise ValueError(f"CompilerParams.kernel_type must be one of "
                                 f"{', '.join('pltpu.CoreType.' + c.name for c in CoreType)}, "
                                 f"got {self.kernel_type!r}")
            set_(self, "kernel_type", k)
        if self.flags is not None:
            set_(self, "flags", FrozenDict(self.flags))
        for field in ("collective_id", "internal_scratch_in_bytes"):
            x = getattr(self, field)
            if x is not None and not _is_int(x):
                raise TypeError(f"CompilerParams.{field} must be an int or None, got {x!r}")
        if not _is_int(self.serialization_format):
            raise TypeError(f"CompilerParams.serialization_format must be an int, got "
                            f"{self.serialization_format!r}")

    def replace(self, **changes) -> CompilerParams:
        """A copy with ``changes`` applied (validated like the constructor)."""
        return dataclasses.replace(self, **changes)


TPUCompilerParams = CompilerParams
