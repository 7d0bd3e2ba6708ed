"""Sharded programs lowered for Shardy (the ``sdy`` dialect), minijax's default as
jax's, checked against jax 0.10.2 on 8 CPU devices: the ``sdy`` lines of the lowered
module, the partitioned HLO XLA compiles from it and the values; with
``jax_use_shardy_partitioner`` off, the GSPMD (``mhlo.sharding``) text as before.

The cases run in one subprocess (8 devices for minijax and jax), as in
``test_sharding.py``; its stderr shows whether XLA warned that GSPMD is deprecated
(it does on the GSPMD path only, which the worker marks).
"""

import re
import sys

import numpy as np
import pytest

from tests.sharding._eight_devices import get as _get
from tests.sharding._eight_devices import run_cases, worker

CASES = {}
GSPMD_MARK = "=== the GSPMD cases start here ==="
GSPMD_WARNING = "GSPMD sharding propagation is going to be deprecated"


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def _x(*shape):
    return (np.arange(int(np.prod(shape))).reshape(shape) * 0.25 - 3).astype(np.float32)


def _libs():
    """(minijax-side, jax-side) tuples: (library, lax, numpy, sharding module, 2x4 mesh)."""
    import jax
    import jax.numpy as jnp
    import minijax
    import minijax.numpy as mnp
    mm = minijax.sharding.Mesh(np.array(minijax.devices()).reshape(2, 4), ("x", "y"))
    jm = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    return ((minijax, minijax.lax, mnp, minijax.sharding, mm),
            (jax, jax.lax, jnp, jax.sharding, jm))


def _sdy_lines(text):
    """The lines of a module that hold ``sdy``, with SSA value numbers dropped (the
    two number differently where one folds a constant the other broadcasts)."""
    out = []
    for line in text.splitlines():
        if "sdy" in line or line.strip().startswith("func.func public @main"):
            out.append(re.sub(r"%\d+(#\d+)?|%cst(_\d+)?", "%v", line.strip()))
    return out


def _hlo(text):
    """Partitioned HLO without metadata, source tables, and with instruction and
    parameter names numbered in order of appearance (their names come from source
    locations, which differ)."""
    lines, skipping = [], False
    for line in text.splitlines():
        if line.startswith(("FileNames", "FunctionNames", "FileLocations", "StackFrames")):
            skipping = True
            continue
        if skipping and (not line.strip() or re.match(r"\d+ ", line)):
            continue
        skipping = False
        line = re.sub(r", metadata=\{[^}]*\}", "", line)
        lines.append(re.sub(r"^HloModule \S+", "HloModule m", line))
    t = "\n".join(lines).strip()
    names: dict = {}
    t = re.sub(r"%[\w.\-]+", lambda m: names.setdefault(m.group(0), f"%v{len(names)}"), t)
    return re.sub(r"([(,] )?\b[\w.\-]+: ", r"\1p: ", t)


def _both(build, *args):
    """``build`` for minijax and for jax: the lowered text's sdy lines, the partitioned
    HLO, the value and the output's spec, each (minijax's, jax's)."""
    out = []
    for lib in _libs():
        f = build(*lib)
        lowered = f.lower(*args)
        ys = f(*args)
        ys = list(ys) if isinstance(ys, (tuple, list)) else [ys]
        specs = [getattr(y.sharding, "spec", None) for y in ys]
        out.append(dict(text=lowered.as_text(), sdy=_sdy_lines(lowered.as_text()),
                        hlo=_hlo(lowered.compile().as_text()),
                        value=[np.asarray(y) for y in ys],
                        spec=[None if p is None else tuple(p) for p in specs]))
    return out


# ---- cases (run in the 8-device subprocess) ------------------------------------------------

@case
def jit_in_out_shardings():
    def build(L, lax, np_, S, m):
        return L.jit(lambda a: np_.sin(a) * 2,
                     in_shardings=S.NamedSharding(m, S.PartitionSpec("x")),
                     out_shardings=S.NamedSharding(m, S.PartitionSpec(None, "y")))

    def build2(L, lax, np_, S, m):  # replicated, a scalar, two dims over one axis each
        return L.jit(lambda a, b: (a * b, b + 1),
                     in_shardings=(S.NamedSharding(m, S.PartitionSpec("y", "x")),
                                   S.NamedSharding(m, S.PartitionSpec())))
    return [_both(build, _x(8, 4)), _both(build2, _x(8, 4), np.float32(2))]


@case
def sharding_constraint():
    def build(spec):
        def b(L, lax, np_, S, m):
            return L.jit(lambda a: lax.with_sharding_constraint(
                a * 2, S.NamedSharding(m, S.PartitionSpec(*spec(S)))) + 1,
                in_shardings=S.NamedSharding(m, S.PartitionSpec("x")))
        return b
    return [_both(build(lambda S: (("x", "y"),)), _x(8, 4)),
            _both(build(lambda S: (S.PartitionSpec.UNCONSTRAINED, "y")), _x(8, 4))]


@case
def shard_map_full():
    def build(L, lax, np_, S, m):  # psum over one axis, manual over both
        P = S.PartitionSpec
        return L.jit(L.shard_map(lambda b: lax.psum(b, "x"), mesh=m, in_specs=P("x", "y"),
                                 out_specs=P(None, "y")),
                     in_shardings=S.NamedSharding(m, P("x", "y")))

    def build2(L, lax, np_, S, m):  # two operands, two results, a replicated scalar
        P = S.PartitionSpec
        return L.jit(L.shard_map(lambda b, c: (lax.psum(b * c, "x"), c),
                                 mesh=m, in_specs=(P("x"), P()), out_specs=(P(), P())),
                     in_shardings=(S.NamedSharding(m, P("x")), S.NamedSharding(m, P())))
    return [_both(build, _x(8, 4)), _both(build2, _x(8, 4), np.float32(3))]


@case
def shard_map_partial():
    def build(manual, spec, out, body):
        def b(L, lax, np_, S, m):
            P = S.PartitionSpec
            return L.jit(L.shard_map(body(lax), mesh=m, in_specs=P(*spec), out_specs=P(*out),
                                     axis_names={manual}),
                         in_shardings=S.NamedSharding(m, P(*spec)))
        return b
    return [
        _both(build("x", ("x",), (), lambda lax: lambda b: lax.psum(b, "x") * 2), _x(8, 4)),
        _both(build("y", (None, "y"), (), lambda lax: lambda b: lax.psum(b, "y")), _x(8, 4)),
        _both(build("x", ("x",), ("x",), lambda lax: lambda b: b * lax.axis_index("x")),
              _x(8, 4)),
    ]


@case
def values_match_jax():
    """Values only: a shard_map manual over an axis of size 1, the grad of a partially
    manual one, a sharding constraint inside scan (its output sharding too)."""
    out = {}
    rows = []
    for L, lax, _, S, m in _libs():
        P, NS = S.PartitionSpec, S.NamedSharding
        m1 = S.Mesh(np.array(L.devices()).reshape(1, 8), ("a", "b"))
        one = L.jit(L.shard_map(lambda b: lax.psum(b, "a") * 2, mesh=m1, in_specs=P("a"),
                                out_specs=P("a"), axis_names={"a"}))(_x(8, 4))
        sm = L.shard_map(lambda w: lax.psum((w ** 2).sum(), "x"), mesh=m, in_specs=P("x"),
                         out_specs=P(), axis_names={"x"})
        grad = L.jit(L.grad(lambda w: sm(w).sum()))(_x(8, 4))

        def step(c, _):
            c = lax.with_sharding_constraint(c * 1.5, NS(m, P("y")))
            return c, c.sum()
        c, ys = L.jit(lambda a: lax.scan(step, a, None, length=3),
                      in_shardings=NS(m, P("x")))(_x(8, 4))
        rows.append(dict(one=np.asarray(one), grad=np.asarray(grad), c=np.asarray(c),
                         ys=np.asarray(ys), spec=tuple(c.sharding.spec)))
    out["mine"], out["theirs"] = rows
    return out


@case
def gspmd_when_flag_is_off():
    """With the flag off: mhlo.sharding (as before, and as jax's GSPMD lowering), no sdy;
    compiled with use_shardy_partitioner off (XLA warns that GSPMD is deprecated)."""
    import jax
    import minijax
    sys.stderr.write(GSPMD_MARK + "\n")
    sys.stderr.flush()
    minijax.config.update("jax_use_shardy_partitioner", False)
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        def build(L, lax, np_, S, m):
            P = S.PartitionSpec
            return L.jit(lambda a: L.shard_map(lambda b: lax.psum(b, "x"), mesh=m,
                                               in_specs=P("x"), out_specs=P())(a * 2),
                         in_shardings=S.NamedSharding(m, P("x")),
                         out_shardings=S.NamedSharding(m, P(None, "y")))
        mine, theirs = _both(build, _x(8, 4))
        put = minijax.device_put(minijax.device_put(_x(8, 4), minijax.sharding.NamedSharding(
            _libs()[0][4], minijax.sharding.PartitionSpec("x"))),
            minijax.sharding.NamedSharding(_libs()[0][4], minijax.sharding.PartitionSpec("y")))
    finally:
        minijax.config.update("jax_use_shardy_partitioner", True)
        jax.config.update("jax_use_shardy_partitioner", True)
    sig = [line.strip() for line in mine["text"].splitlines() if "@main" in line]
    jsig = [line.strip() for line in theirs["text"].splitlines() if "@main" in line]
    return dict(mine=mine, theirs=theirs, sig=sig, jsig=jsig,
                put=(tuple(put.sharding.spec), np.array_equal(np.asarray(put), _x(8, 4))))


def _worker(path):
    worker(CASES, path)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    # compiled here, not loaded from the cache: XLA's warnings show
    return run_cases("test_shardy", tmp_path_factory.mktemp("shardy"),
                     MINIJAX_COMPILATION_CACHE_DIR="", MINIJAX_USE_SHARDY_PARTITIONER=None)


def get(results, name):
    return _get(results[0], name)



def _same(mine, theirs, sdy=True):
    if sdy:
        assert mine["sdy"] == theirs["sdy"]
    assert mine["hlo"] == theirs["hlo"]
    _values(mine, theirs)
    assert mine["spec"] == theirs["spec"]


def _values(mine, theirs):
    assert len(mine["value"]) == len(theirs["value"])
    for a, b in zip(mine["value"], theirs["value"]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


pytestmark = pytest.mark.slow


def test_jit_in_out_shardings_match_jax(results):
    (mine, theirs), (mine2, theirs2) = get(results, "jit_in_out_shardings")
    _same(mine, theirs)
    assert mine["sdy"][0].startswith('sdy.mesh @mesh = <["x"=2, "y"=4]>')
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>' in mine["sdy"][1]
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>' in mine["sdy"][1]
    assert "mhlo.sharding" not in mine["text"]
    _same(mine2, theirs2)
    assert "#sdy.sharding<@mesh, []>" in mine2["sdy"][1]  # the replicated scalar


def test_sharding_constraint_matches_jax(results):
    for mine, theirs in get(results, "sharding_constraint"):
        _same(mine, theirs)
    rows = get(results, "sharding_constraint")
    assert any('sdy.sharding_constraint %v <@mesh, [{"x", "y"}, {}]>' in line
               for line in rows[0][0]["sdy"])
    assert any('<@mesh, [{?}, {"y"}]>' in line for line in rows[1][0]["sdy"])


def test_shard_map_full_manual_matches_jax(results):
    (mine, theirs), (mine2, theirs2) = get(results, "shard_map_full")
    _same(mine, theirs)
    assert any('sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {"y"}]>] '
               'out_shardings=[<@mesh, [{}, {"y"}]>] manual_axes={"x", "y"}' in line
               for line in mine["sdy"])
    assert "all-reduce" in mine["hlo"]  # the psum, across partitions
    # (jax also declares an empty mesh for the scalar: compare the manual computation)
    assert mine2["hlo"] == theirs2["hlo"]
    _values(mine2, theirs2)
    manual = [line for line in mine2["sdy"] if "manual_computation" in line]
    assert manual and manual == [line for line in theirs2["sdy"] if "manual_computation" in line]


def test_shard_map_over_part_of_the_mesh_matches_jax(results):
    rows = get(results, "shard_map_partial")
    for mine, theirs in rows:
        # jax also adds open (no-op) sharding constraints inside the body: compare the
        # manual computation and the function's signature
        keep = ("manual_computation", "sdy.mesh", "func.func")
        assert ([line for line in mine["sdy"] if line.startswith(keep) or "= sdy.manual" in line]
                == [line for line in theirs["sdy"]
                    if line.startswith(keep) or "= sdy.manual" in line])
        _same(mine, theirs, sdy=False)
    first = rows[0][0]["sdy"]
    assert any('in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{?}, {?}]>] '
               'manual_axes={"x"}' in line for line in first)


def test_values_match_jax(results):
    r = get(results, "values_match_jax")
    mine, theirs = r["mine"], r["theirs"]
    for k in ("one", "grad", "c", "ys"):
        np.testing.assert_allclose(mine[k], theirs[k], rtol=1e-5)
    assert mine["spec"] == theirs["spec"] == ("y",)


def test_flag_off_keeps_gspmd(results):
    r = get(results, "gspmd_when_flag_is_off")
    mine, theirs = r["mine"], r["theirs"]
    assert "sdy" not in mine["text"] and "@SPMDFullToShardShape" in mine["text"]
    assert r["sig"] == r["jsig"]  # the same mhlo.sharding attributes as jax's GSPMD text
    assert 'mhlo.sharding = "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"' in r["sig"][0]
    assert mine["hlo"] == theirs["hlo"]
    _values(mine, theirs)
    assert r["put"] == (("y",), True)


def test_no_gspmd_deprecation_warning_by_default(results):
    stderr = results[1]
    assert GSPMD_MARK in stderr
    default, gspmd = stderr.split(GSPMD_MARK, 1)
    assert GSPMD_WARNING not in default
    assert GSPMD_WARNING in gspmd  # the check sees the warning where there is one
