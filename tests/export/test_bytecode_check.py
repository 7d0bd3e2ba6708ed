"""The structural check of MLIR bytecode (``minijax/runtime/bytecode_check.py``) that
runs before jaxlib's reader: every artifact jax or minijax writes passes it, damaged
tables are refused with ValueError, and the damaged artifact that corrupted the heap of
MLIR's reader (found by fuzzing) is now refused without touching it."""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.export as jexport
import numpy as np
import pytest

import minijax
import minijax.numpy as mnp
from minijax import export as mexport
from minijax import lax as mlax
from minijax.runtime import bytecode_check, portable

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DAMAGED = os.path.join(os.path.dirname(__file__), "data", "heap_overrun_artifact.bin")


def _programs(np_, lax):
    return [lambda x: np_.sin(x) * 2,
            lambda x: {"a": x @ x.T, "b": lax.scan(lambda c, z: (c + z, c), x[0], x)},
            lambda x: lax.cond(x.sum() > 0, np_.cos, np_.tanh, x).astype(np_.bfloat16),
            lambda x: lax.fori_loop(0, 5, lambda i, c: c * 2 + i, x)]


@pytest.mark.parametrize("i", range(4))
def test_artifacts_of_both_libraries_pass(i):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    m = mexport.export(minijax.jit(_programs(mnp, mlax)[i]))(x)
    j = jexport.export(jax.jit(_programs(jax.numpy, jax.lax)[i]))(x)
    for blob in (m.serialize(vjp_order=1), j.serialize(vjp_order=1)):
        exp = mexport.deserialize(bytes(blob))
        bytecode_check.check(exp.mlir_module_serialized)
        for vjp in (exp.vjp(),) if exp.has_vjp() else ():
            bytecode_check.check(vjp.mlir_module_serialized)
        np.testing.assert_array_equal(*[np.asarray(a) for a in
                                        (jax.tree.leaves(exp.call(x))[0],
                                         jax.tree.leaves(j.call(x))[0])])


def _sections(mod: bytes) -> dict:
    r = bytecode_check._Reader(mod, 0, len(mod), "test")
    r.take(4)
    r.varint()
    r.skip_to_nul()
    out = {}
    while not r.empty():
        head = r.byte()
        n = r.varint()
        if head & 0x80:
            bytecode_check._align(r, r.varint())
        out[head & 0x7F] = (r.pos, r.pos + n)
        r.pos += n
    return out


def _module():
    x = np.ones((2, 3), np.float32)
    return bytes(mexport.export(minijax.jit(lambda x: mnp.sin(x) * 2))(x)
                 .mlir_module_serialized)


def test_attribute_group_overrunning_its_table_is_refused():
    mod = _module()
    start, _ = _sections(mod)[3]  # the attribute/type offset table
    r = bytecode_check._Reader(mod, start, len(mod), "test")
    n_attrs = r.varint()
    r.varint()
    r.varint()  # the first group's dialect
    assert mod[r.pos] & 1  # its entry count: one byte
    bad = bytearray(mod)
    bad[r.pos] = ((n_attrs + 50) << 1) | 1
    with pytest.raises(ValueError, match="overruns the table"):
        portable.deserialize(bytes(bad))


def test_impossible_string_count_is_refused():
    mod = _module()
    start, _ = _sections(mod)[0]  # the string table
    bad = bytearray(mod)
    bad[start] = 0  # a count of eight more bytes...
    bad[start + 1:start + 1] = (1 << 48).to_bytes(8, "little")  # ...2**48 strings
    with pytest.raises(ValueError, match="damaged"):
        portable.deserialize(bytes(bad))


def test_damaged_framing_is_refused():
    mod = _module()
    for cut in range(5, len(mod) - 1, 7):
        with pytest.raises(ValueError):
            portable.deserialize(mod[:cut])


def test_artifact_that_corrupted_the_heap_is_refused_in_a_subprocess():
    code = (
        "import numpy as np\n"
        "from minijax import export\n"
        f"exp = export.deserialize(open({DAMAGED!r}, 'rb').read())\n"
        "x = np.ones((2, 3), np.float32)\n"
        "try:\n"
        "    exp.call(np.arange(6, dtype=np.float32).reshape(2, 3), x)\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                       text=True, errors="replace", timeout=120,
                       env={**os.environ, "PYTHONPATH": REPO})
    assert r.returncode == 0, f"rc={r.returncode}\n{r.stderr[-3000:]}"
    assert "refused: the serialized module is damaged" in r.stdout
