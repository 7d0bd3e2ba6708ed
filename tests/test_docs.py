"""The docs' code: every ```python block of docs/*.md runs (the blocks of one page in
order, in one namespace), in a subprocess so that what a page registers (the worked
example's primitive) stays out of this process; and the pages the nav names exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(REPO, "docs")

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

_RUNNER = r"""
import re, sys, traceback
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
failed = []
for path in sys.argv[1:]:
    text = open(path).read()
    namespace = {"__name__": "__docs__"}
    for i, block in enumerate(_BLOCK.findall(text)):
        try:
            exec(compile(block, f"{path}[block {i}]", "exec"), namespace)
        except Exception:
            failed.append(f"{path} block {i}:\n{traceback.format_exc()}")
            break
    print("ran", path)
print("\n".join(failed))
sys.exit(1 if failed else 0)
"""


def _pages() -> list[str]:
    out = []
    for root, _, files in os.walk(DOCS):
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
    return sorted(out)


def test_every_python_block_of_the_docs_runs():
    pages = [p for p in _pages() if _BLOCK.search(open(p).read())]
    names = {os.path.basename(p) for p in pages}
    assert {"quickstart.md", "sharp_bits.md", "architecture.md"} <= names
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _RUNNER, *pages], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert r.stdout.count("ran ") == len(pages)


def test_quickstart_covers_the_issue_topics():
    text = open(os.path.join(DOCS, "quickstart.md")).read()
    for topic in ("minijax.jit", "minijax.grad", "minijax.vmap", ".as_text(", ".trace(",
                  ".compile()", "set_xla_metadata", "xla_computation", "interpret=True"):
        assert topic in text, topic


def test_nav_names_existing_pages():
    nav = re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)$",
                     open(os.path.join(REPO, "mkdocs.yml")).read(), re.M)
    assert nav and all(os.path.exists(os.path.join(DOCS, p)) for p in nav)
    assert {os.path.relpath(p, DOCS) for p in _pages()} == set(nav)
