"""Graphviz views of computations: a jaxpr as a dot graph, and rendering to SVG/PNG.

``jaxpr_to_dot`` draws one node per input, constant, equation and output, with an
edge per value flowing between them (labelled with its type). ``render`` runs
Graphviz's ``dot`` program, when it is installed. ``main`` is the
``python -m minijax dot`` command::

    python -m minijax dot mymod:f 'f32[3]' --graph jaxpr -o f.svg
    python -m minijax dot graph.dot --format png -o graph.png
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence

import numpy as np

from minijax.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, _is_jaxpr_param, pp_literal

__all__ = ["GraphvizNotFoundError", "jaxpr_to_dot", "main", "render"]

FORMATS = ("svg", "png", "dot")


class GraphvizNotFoundError(RuntimeError):
    """Graphviz's ``dot`` program is not installed (needed to render SVG or PNG)."""


def _quote(text: str) -> str:
    """A dot double-quoted string (``\\n`` in ``text`` becomes a line break)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _param_text(value, limit: int = 40) -> str:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        return f"{{jaxpr: {len(value.eqns)} eqns}}"
    if _is_jaxpr_param(value):
        return f"({len(value)} jaxprs)"
    if isinstance(value, np.dtype):
        text = value.name
    else:
        text = str(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def jaxpr_to_dot(closed: ClosedJaxpr | Jaxpr, *, name: str = "jaxpr",
                 arg_names: Sequence[str] | None = None,
                 result_names: Sequence[str] | None = None) -> str:
    """Graphviz dot text of a jaxpr: inputs, constants, equations and outputs as nodes.

    Parameters
    ----------
    closed : the jaxpr (its constants are drawn as ``const`` nodes).
    name : the graph's name (shown as its label).
    arg_names, result_names : labels of the input and output nodes.
    """
    jaxpr = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    lines = [f"digraph {_quote(name)} {{",
             f"  label={_quote(name)}; labelloc=t; rankdir=TB;",
             '  node [fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']
    producer: dict[int, str] = {}  # id(var) -> node name

    for i, v in enumerate(jaxpr.constvars):
        node = f"const{i}"
        producer[id(v)] = node
        lines.append(f"  {node} [label={_quote('const' + chr(10) + v.aval.str_short())}, "
                     'shape=box, style="filled,dashed", fillcolor="#fef3c7"];')
    for i, v in enumerate(jaxpr.invars):
        node = f"in{i}"
        producer[id(v)] = node
        label = arg_names[i] if arg_names and i < len(arg_names) else f"arg{i}"
        lines.append(f"  {node} [label={_quote(label + chr(10) + v.aval.str_short())}, "
                     'shape=invhouse, style=filled, fillcolor="#dbeafe"];')

    def edge(atom, dst: str, lit_node: str) -> None:
        if isinstance(atom, Literal):
            lines.append(f"  {lit_node} [label={_quote(pp_literal(atom))}, shape=plaintext];")
            lines.append(f"  {lit_node} -> {dst};")
        else:
            lines.append(f"  {producer[id(atom)]} -> {dst} "
                         f"[label={_quote(atom.aval.str_short())}];")

    for k, eqn in enumerate(jaxpr.eqns):
        node = f"eqn{k}"
        params = " ".join(f"{p}={_param_text(v)}" for p, v in eqn.params.items())
        label = eqn.primitive.name + (f"\n[{params}]" if params else "")
        lines.append(f"  {node} [label={_quote(label)}, shape=box, "
                     'style="rounded,filled", fillcolor="#f3f4f6"];')
        for j, atom in enumerate(eqn.invars):
            edge(atom, node, f"lit{k}_{j}")
        for v in eqn.outvars:
            producer[id(v)] = node

    for i, atom in enumerate(jaxpr.outvars):
        node = f"out{i}"
        label = result_names[i] if result_names and i < len(result_names) else f"out{i}"
        lines.append(f"  {node} [label={_quote(label + chr(10) + atom.aval.str_short())}, "
                     'shape=house, style=filled, fillcolor="#dcfce7"];')
        edge(atom, node, f"litout{i}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphviz_available() -> bool:
    """Whether Graphviz's ``dot`` program is on ``PATH``."""
    return shutil.which("dot") is not None


def render(dot_text: str, fmt: str = "svg") -> bytes:
    """Render dot text to ``fmt`` ('svg' or 'png') with Graphviz's ``dot`` program.

    Raises ``GraphvizNotFoundError`` when Graphviz is not installed.
    """
    if fmt not in ("svg", "png"):
        raise ValueError(f"cannot render to {fmt!r}; use 'svg' or 'png'")
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(
            f"Graphviz's 'dot' program was not found on PATH, so the graph cannot be "
            f"rendered to {fmt.upper()}. Install Graphviz (e.g. 'apt-get install graphviz' "
            f"or 'brew install graphviz'), or write the Graphviz source with --format dot.")
    proc = subprocess.run([exe, f"-T{fmt}"], input=dot_text.encode(), capture_output=True,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"Graphviz failed: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


# ---- the ``python -m minijax dot`` command ---------------------------------------------

_DTYPES = {"pred": "bool", "bool": "bool", "bf16": "bfloat16", "f16": "float16",
           "f32": "float32", "f64": "float64", "c64": "complex64", "c128": "complex128",
           **{f"i{b}": f"int{b}" for b in (8, 16, 32, 64)},
           **{f"s{b}": f"int{b}" for b in (8, 16, 32, 64)},
           **{f"u{b}": f"uint{b}" for b in (8, 16, 32, 64)}}
_SPEC = re.compile(r"^\s*([A-Za-z0-9_]+)\s*\[\s*([\d\s,]*)\]\s*$")


def parse_arg_spec(spec: str):
    """``'f32[3,4]'`` -> a ``ShapeDtypeStruct`` (dtype names as in HLO or NumPy)."""
    from minijax.core.aval import ShapeDtypeStruct
    m = _SPEC.match(spec)
    if m is None:
        raise ValueError(f"bad argument spec {spec!r}; write e.g. 'f32[3,4]' or 'i32[]'")
    dt_name = _DTYPES.get(m.group(1), m.group(1))
    if dt_name == "bfloat16":
        import ml_dtypes
        dtype = np.dtype(ml_dtypes.bfloat16)
    else:
        try:
            dtype = np.dtype(dt_name)
        except TypeError:
            raise ValueError(f"unknown dtype {m.group(1)!r} in argument spec {spec!r}") from None
    shape = tuple(int(d) for d in m.group(2).replace(" ", "").split(",") if d)
    return ShapeDtypeStruct(shape, dtype)


def _load_function(target: str):
    """``pkg.module:func`` or ``path/to/file.py:func`` -> the function."""
    mod_name, sep, attr = target.rpartition(":")
    if not sep or not mod_name or not attr:
        raise ValueError(f"expected MODULE:FUNCTION or FILE.py:FUNCTION, got {target!r}")
    if mod_name.endswith(".py") or os.sep in mod_name:
        path = os.path.abspath(mod_name)
        if not os.path.exists(path):
            raise ValueError(f"no such file: {mod_name}")
        spec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(path))[0], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(mod_name)
    fun = module
    for part in attr.split("."):
        fun = getattr(fun, part)
    return fun


def _parse_axis_env(text: str | None) -> list[tuple[str, int]] | None:
    if not text:
        return None
    env = []
    for item in text.split(","):
        name, sep, size = item.partition("=")
        if not sep or not size.strip().isdigit():
            raise ValueError(f"bad --axis-env entry {item!r}; write NAME=SIZE,...")
        env.append((name.strip(), int(size)))
    return env


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m minijax dot",
        description="Draw a function's jaxpr or XLA HLO graph (or an existing .dot file) "
                    "as SVG or PNG with Graphviz, or write the Graphviz source.")
    p.add_argument("target", help="MODULE:FUNCTION, FILE.py:FUNCTION, or a .dot/.gv file")
    p.add_argument("args", nargs="*", help="argument types, e.g. 'f32[3,4]' 'i32[]'")
    p.add_argument("--graph", choices=("jaxpr", "hlo"), default="jaxpr",
                   help="which graph to draw (default: jaxpr)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="output format (default: from -o's extension, else svg)")
    p.add_argument("-o", "--output", default=None,
                   help="output file ('-' for stdout; default: <name>_<graph>.<format>)")
    p.add_argument("--axis-env", default=None, help="named axes for collectives: i=4,j=2")
    return p


def main(argv: Sequence[str]) -> int:
    """``python -m minijax dot``; returns the exit status."""
    opts = _parser().parse_args(list(argv))
    fmt = opts.format
    if fmt is None:
        ext = os.path.splitext(opts.output or "")[1].lstrip(".").lower()
        fmt = {"gv": "dot"}.get(ext, ext) if ext in FORMATS + ("gv",) else "svg"
    try:
        if opts.target.endswith((".dot", ".gv")) and not opts.args:
            with open(opts.target) as f:
                text = f.read()
            stem = os.path.splitext(os.path.basename(opts.target))[0]
        else:
            from minijax.stages.xla_computation import xla_computation
            fun = _load_function(opts.target)
            specs = [parse_arg_spec(a) for a in opts.args]
            comp = xla_computation(fun, axis_env=_parse_axis_env(opts.axis_env))(*specs)
            text = comp.as_jaxpr_dot_graph() if opts.graph == "jaxpr" else \
                comp.as_hlo_dot_graph()
            stem = f"{getattr(fun, '__name__', 'fun')}_{opts.graph}"
        data = text.encode() if fmt == "dot" else render(text, fmt)
    except GraphvizNotFoundError as e:
        print(f"minijax dot: {e}", file=sys.stderr)
        return 1
    except (ValueError, OSError, ImportError, AttributeError, TypeError, NameError) as e:
        print(f"minijax dot: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    out = opts.output or f"{stem}.{fmt}"
    if out == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        with open(out, "wb") as f:
            f.write(data)
        print(f"wrote {out}", file=sys.stderr)
    return 0
