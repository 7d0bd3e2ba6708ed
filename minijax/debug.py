"""Debugging helpers: ``visualize_array_sharding``.

>>> minijax.debug.visualize_array_sharding(x)    # x: f32[8, 4] sharded P("x", "y") on 4x2
+-------+-------+
| CPU 0 | CPU 1 |
+-------+-------+
| CPU 2 | CPU 3 |
...
"""

from __future__ import annotations

from typing import Any

from minijax.runtime.array import Array

__all__ = ["visualize_array_sharding", "visualize_sharding"]


def visualize_sharding(shape: tuple, sharding: Any, *, use_color: bool = False,
                       print_output: bool = True) -> str:
    """A text table of which devices hold which block of an array of ``shape``
    (1-d or 2-d): one cell per distinct block, naming its devices."""
    del use_color
    shape = tuple(shape)
    if len(shape) > 2:
        raise ValueError(f"visualize_sharding shows 1-d and 2-d arrays only, got shape {shape}")
    shape2 = (1,) + shape if len(shape) == 1 else (shape or (1, 1))
    cells: dict[tuple, list] = {}
    for d, index in sharding.devices_indices_map(shape).items():
        index = tuple(index)
        if len(shape) == 1:
            index = (slice(None),) + index
        elif not shape:
            index = (slice(None), slice(None))
        key = tuple(s.indices(n)[:2] for s, n in zip(index, shape2))
        cells.setdefault(key, []).append(d)
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells})
    platform = next(iter(cells.values()))[0].platform.upper()
    text = {(r, c): f"{platform} {','.join(str(d.id) for d in cells[(r, c)])}"
            for r in rows for c in cols if (r, c) in cells}
    width = max(len(t) for t in text.values()) + 2
    line = "+" + "+".join("-" * width for _ in cols) + "+"
    out = [line]
    for r in rows:
        out.append("|" + "|".join(text.get((r, c), "").center(width) for c in cols) + "|")
        out.append(line)
    result = "\n".join(out)
    if print_output:
        print(result)
    return result


def visualize_array_sharding(arr: Array, **kwargs) -> str:
    """Print (and return) the table of ``visualize_sharding`` for ``arr``'s layout."""
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects a minijax Array, got {arr!r}")
    return visualize_sharding(arr.shape, arr.sharding, **kwargs)
