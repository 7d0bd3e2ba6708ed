"""Which rules every primitive has, as one table: ``python -m minijax.lax.rules``.

One row per registered primitive (``core.trace.registered_primitives``, after importing
every minijax module so that each family has registered its primitives), one column per
rule: abstract eval, lowering (``+mosaic`` where a platform-specific lowering exists too),
jvp, transpose and batching, then the module that defines it. The rule sweep
(``tests/lax/test_rule_sweep.py``) checks the same attributes: which rules a primitive
must have, and that each one agrees with jax.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

from minijax.core.trace import Primitive, registered_primitives

COLUMNS = (("abstract eval", "abstract_eval"), ("lowering", "lowering"), ("jvp", "jvp"),
           ("transpose", "transpose"), ("batching", "batch"))


def import_all() -> None:
    """Import every module of the ``minijax`` package, so every primitive is registered
    (modules register theirs when imported). This is a command-line tool's doing, by path:
    nothing in lax depends on the layers above."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for info in pkgutil.walk_packages([package], "minijax."):
        if info.name.endswith("__main__") or info.name == "minijax.demo":
            continue
        importlib.import_module(info.name)


def _holders() -> dict[int, list[str]]:
    """id(primitive) -> the minijax modules (not packages) that hold it as a global."""
    out: dict[int, list[str]] = {}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("minijax.") or hasattr(mod, "__path__"):
            continue
        for value in list(vars(mod).values()):
            if isinstance(value, Primitive):
                out.setdefault(id(value), []).append(name)
    return out


def _module(p: Primitive, holders: dict[int, list[str]]) -> str:
    """The module that defines ``p``: one holding it whose functions are its rules, else
    the first holding it, else where its abstract eval is."""
    held = holders.get(id(p), [])
    for fn in (p.abstract_eval, p.lowering, p.jvp, p.batch, p.transpose, p.impl):
        mod = getattr(fn, "__module__", None)
        if mod in held:
            return mod
    return held[0] if held else getattr(p.abstract_eval, "__module__", "?")


def rows() -> list[tuple[str, ...]]:
    """(name, one cell per rule in COLUMNS, module) for every registered primitive,
    sorted by name; a cell is ``yes`` or ``-``."""
    out = []
    holders = _holders()
    for p in sorted(registered_primitives(), key=lambda p: p.name):
        cells = []
        for _, attr in COLUMNS:
            cell = "yes" if getattr(p, attr, None) is not None else "-"
            if attr == "lowering" and p.platform_lowerings:
                cell += " +" + ",".join(sorted(p.platform_lowerings))
            cells.append(cell)
        out.append((p.name, *cells, _module(p, holders)))
    return out


def table() -> str:
    """The rows as an aligned text table with a header and a count of each rule."""
    header = ("primitive", *(c for c, _ in COLUMNS), "module")
    body = rows()
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    counts = [sum(r[i + 1] != "-" for r in body) for i in range(len(COLUMNS))]
    total = ("total", *(f"{n}/{len(body)}" for n in counts), "")
    return "\n".join([line(header), line(tuple("-" * w for w in widths)),
                      *map(line, body), line(total)])


def main(argv: list[str] | None = None) -> int:
    import_all()
    sys.stdout.write(table() + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
