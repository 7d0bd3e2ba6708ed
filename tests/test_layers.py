"""minijax's layers import downward only.

Every ``import`` in ``minijax/`` (at module level and inside functions) is parsed and
checked against the layer table below; an import of a module in a higher layer fails.
Modules of the same layer may import each other.

    0  core, tree_util, config,      IR, tracing, Primitive, dtypes, errors, pytrees;
       version, _pytree              (version: a leaf; _pytree: the transforms' pytrees)
    1  transforms, lowering          interpreters (ad, partial eval, batching) on flat data;
                                       jaxpr -> StableHLO
    2  lax                           primitives and their rules (register downward)
    3  runtime, stages               devices, buffers, executables; jit, compile, caches
    4  api, numpy, random, nn, ...   the public API: grad/vmap/jac*/pmap with pytrees and
                                     argnums, numpy, and everything built on them
    5  experimental, example_libraries, the package's own __init__
"""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

import minijax

ROOT = pathlib.Path(minijax.__file__).parent

# The first dotted component below ``minijax`` -> its layer. Anything not listed is public
# API (layer 4), so new public modules need no entry.
LAYERS = {
    "core": 0, "tree_util": 0, "_pytree": 0, "config": 0, "version": 0,
    "transforms": 1, "lowering": 1,
    "lax": 2,
    "runtime": 3, "stages": 3,
    "experimental": 5, "example_libraries": 5, "compat": 5, "__main__": 5, "demo": 5, "launch": 5,
}
# Modules placed by name rather than by package, and why.
MODULE_LAYERS = {
    # jaxlib's C++ pytree registry: private jaxlib API, so it lives in runtime/, but it
    # imports nothing from minijax and tree_util (layer 0) is built on it.
    "minijax.runtime.pytree": 0,
    # the package itself re-exports everything
    "minijax": 5,
}


def layer_of(module: str) -> int:
    if module in MODULE_LAYERS:
        return MODULE_LAYERS[module]
    parts = module.split(".")
    return LAYERS.get(parts[1], 4)


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: pathlib.Path):
    """(imported module, line) for every import in the file, resolved to absolute names;
    ``from minijax import numpy`` counts as importing ``minijax.numpy``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target in ("minijax", "minijax.lax"):
                for alias in node.names:  # from minijax import numpy / from minijax.lax import x
                    yield f"{target}.{alias.name}", node.lineno
            else:
                yield target, node.lineno


def _upward_imports():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        module = _module_name(path)
        for target, line in _imports(path):
            if target != "minijax" and not target.startswith("minijax."):
                continue
            if target == "minijax" or layer_of(target) > layer_of(module):
                if layer_of(module) < 5:
                    found.append(f"{path.relative_to(ROOT.parent)}:{line}: {module} "
                                 f"(layer {layer_of(module)}) imports {target} "
                                 f"(layer {layer_of(target)})")
    return found


def test_no_upward_imports():
    bad = _upward_imports()
    assert not bad, "imports that go up a layer:\n" + "\n".join(bad)


def test_the_checker_sees_upward_imports(tmp_path, monkeypatch):
    """The parser resolves relative, aliased and in-function imports."""
    pkg = tmp_path / "minijax"
    (pkg / "transforms").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "transforms" / "__init__.py").write_text("")
    (pkg / "transforms" / "bad.py").write_text(
        "def f():\n    from minijax import numpy as jnp\n    from ..lax import shape\n"
        "    import minijax.stages.jit\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", pkg)
    targets = [t for t, _ in _imports(pkg / "transforms" / "bad.py")]
    assert targets == ["minijax.numpy", "minijax.lax.shape", "minijax.stages.jit"]
    assert len(_upward_imports()) == 3


@pytest.mark.parametrize("module,layer", [
    ("minijax.core.trace", 0), ("minijax.transforms.ad", 1), ("minijax.lax.shape", 2),
    ("minijax.stages.jit", 3), ("minijax.api.ad", 4), ("minijax.numpy", 4),
    ("minijax.experimental.pallas", 5), ("minijax.runtime.pytree", 0)])
def test_layer_table(module, layer):
    assert layer_of(module) == layer


def test_no_module_over_1000_lines_and_no_import_barriers():
    """One primitive, one place: modules stay readable (at most 1000 lines) and import at the
    top (no mid-file ``noqa: E402`` barriers)."""
    long, barriers = [], []
    for path in sorted(ROOT.rglob("*.py")):
        text = path.read_text()
        if text.count("\n") > 1000:
            long.append(f"{path.relative_to(ROOT.parent)}: {text.count(chr(10))} lines")
        if "noqa: E402" in text:
            barriers.append(str(path.relative_to(ROOT.parent)))
    assert not long, "modules over 1000 lines:\n" + "\n".join(long)
    assert not barriers, "mid-file import barriers in:\n" + "\n".join(barriers)
