"""Each primitive's rules sit in one block of its file (issue 25): between a primitive's
definition (``name_p = ...``) and its last module-level registration (a decorator
``@name_p.def_...``, ``defjvp(name_p, ...)``, ``def_elementwise_batch(name_p)``, ...),
no other primitive is defined. Files not yet rearranged are listed, and the list may only
shrink: a file that passes must leave it."""

from __future__ import annotations

import ast
import pathlib

import pytest

LAX = pathlib.Path(__file__).resolve().parents[2] / "minijax" / "lax"

NOT_YET: set[str] = set()


def interleaved(source: str) -> list[tuple[str, int, int]]:
    """``(primitive, defined at, last registered at)`` for each primitive of a module
    whose block another primitive's definition interrupts."""
    tree = ast.parse(source)
    defs = {n.targets[0].id: n.lineno for n in tree.body
            if isinstance(n, ast.Assign) and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name) and n.targets[0].id.endswith("_p")
            and isinstance(n.value, ast.Call)}
    last = dict(defs)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            parts = node.decorator_list  # a function body only uses the primitive
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name) and node.targets[0].id in defs:
            continue
        else:
            parts = [node]
        for part in parts:
            for n in ast.walk(part):
                if isinstance(n, ast.Name) and n.id in last:
                    last[n.id] = max(last[n.id], node.lineno)
    return [(p, line, last[p]) for p, line in defs.items()
            if any(line < other < last[p] for q, other in defs.items() if q != p)]


def _files():
    return sorted(str(f.relative_to(LAX)) for f in LAX.rglob("*.py"))


@pytest.mark.parametrize("name", _files())
def test_rules_of_each_primitive_are_adjacent(name):
    bad = interleaved((LAX / name).read_text())
    if name in NOT_YET:
        assert bad, f"{name} now keeps each primitive's rules together: drop it from NOT_YET"
    else:
        assert not bad, f"{name}: rules not beside their primitive's definition: {bad}"


def test_the_check_finds_interleaving():
    src = ("a_p = P('a')\nb_p = P('b')\n@a_p.def_lowering\ndef f(): pass\n"
           "def_batch(b_p)\n")
    assert [p for p, *_ in interleaved(src)] == ["a_p"]
    assert interleaved("a_p = P('a')\ndefjvp(a_p, f)\nb_p = P('b')\ndefjvp(b_p, g)\n") == []
