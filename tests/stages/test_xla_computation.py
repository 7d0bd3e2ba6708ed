"""xla_computation: the reference document's examples, each parameter, the graphs and
``python -m minijax dot``.

HLO is compared structurally: each instruction of the entry computation as
``opcode(operand opcodes)`` with its type and attributes (replica groups...),
since instruction numbering differs from the reference (and between versions).
"""

import collections
import re
import types
import warnings

import numpy as np
import pytest
from jaxlib import xla_client

import minijax
import minijax.numpy as jnp
from minijax import lax
from minijax.stages import dot_graph

_INSTR = re.compile(r"^(ROOT )?([\w.\-]+) = (.+?) ([a-z][\w\-]*)\((.*?)\)(.*)$")


def _computations(hlo: str) -> dict[str, list[str]]:
    """name (numbering stripped; the entry as 'ENTRY') -> instruction lines."""
    comps, current = {}, None
    for line in hlo.splitlines():
        s = line.strip()
        if s.endswith("{") and not s.startswith("HloModule"):
            name = s.split()[1] if s.startswith("ENTRY") else s.split()[0]
            current = "ENTRY" if s.startswith("ENTRY") else re.sub(r"\.\d+$", "", name)
            comps[current] = []
        elif s == "}":
            current = None
        elif current is not None and s:
            comps[current].append(s)
    return comps


def _ops(hlo: str, comp: str = "ENTRY") -> list[tuple]:
    """Each instruction as (is_root, type, opcode, operand opcodes, attributes)."""
    lines = _computations(hlo)[comp]
    kinds, out = {}, []
    for s in lines:
        m = _INSTR.match(s)
        assert m, s
        root, name, ty, opcode, operands, attrs = m.groups()
        kinds[name] = opcode
        ops = tuple(kinds.get(o.strip(), o.strip()) for o in operands.split(",") if o.strip())
        attrs = re.sub(r"to_apply=[\w.\-]+", "to_apply", attrs)
        out.append((bool(root), re.sub(r"\{[\d,]*\}", "", ty), opcode, ops, attrs.lstrip(", ")))
    return out


def _header(hlo: str) -> str:
    return hlo.splitlines()[0]


# ---- the reference document's examples ------------------------------------------------------

def test_reference_sin_cos():
    def f(x):
        return jnp.sin(jnp.cos(x))

    c = minijax.xla_computation(f)(3.)
    hlo = c.as_hlo_text()
    assert _header(hlo).startswith("HloModule xla_computation_f,")
    # The reference's unused `pred[] constant(false)` is an artifact of old jax's tracing.
    assert _ops(hlo) == [
        (False, "f32[]", "parameter", ("0",), ""),
        (False, "f32[]", "cosine", ("parameter",), ""),
        (False, "f32[]", "sine", ("cosine",), ""),
        (True, "(f32[])", "tuple", ("sine",), ""),
    ]


def test_reference_shape_dtype_object_gives_same_computation():
    def f(x):
        return jnp.sin(jnp.cos(x))

    scalar = types.SimpleNamespace(shape=(), dtype=np.dtype(np.float32))
    assert minijax.xla_computation(f)(scalar).as_hlo_text() == \
        minijax.xla_computation(f)(3.).as_hlo_text()


def test_reference_psum_axis_env():
    def f(x):
        return x - lax.psum(x, 'i')

    c = minijax.xla_computation(f, axis_env=[('i', 4)])(2)
    hlo = c.as_hlo_text()
    assert _header(hlo).startswith("HloModule xla_computation_f,")
    ops = _ops(hlo)
    assert ops[:3] == [
        (False, "s32[]", "parameter", ("0",), ""),
        (False, "s32[]", "all-reduce", ("parameter",),
         "replica_groups={{0,1,2,3}}, to_apply"),
        (False, "s32[]", "subtract", ("parameter", "all-reduce"), ""),
    ]
    assert ops[3] == (True, "(s32[])", "tuple", ("subtract",), "")
    # the reduction computation adds two s32 scalars
    reducer = [k for k in _computations(hlo) if k != "ENTRY"]
    assert len(reducer) == 1
    assert _ops(hlo, reducer[0]) == [
        (False, "s32[]", "parameter", ("0",), ""),
        (False, "s32[]", "parameter", ("1",), ""),
        (True, "s32[]", "add", ("parameter", "parameter"), ""),
    ]


def test_reference_replica_groups_two_axes():
    def g(x):
        rowsum = lax.psum(x, 'i')
        colsum = lax.psum(x, 'j')
        allsum = lax.psum(x, ('i', 'j'))
        return rowsum, colsum, allsum

    axis_env = [('i', 4), ('j', 2)]
    c = minijax.xla_computation(g, axis_env=axis_env)(5.)
    hlo = c.as_hlo_text()
    assert _header(hlo).startswith("HloModule xla_computation_g,")
    assert _ops(hlo) == [
        (False, "f32[]", "parameter", ("0",), ""),
        (False, "f32[]", "all-reduce", ("parameter",),
         "replica_groups={{0,2,4,6},{1,3,5,7}}, to_apply"),
        (False, "f32[]", "all-reduce", ("parameter",),
         "replica_groups={{0,1},{2,3},{4,5},{6,7}}, to_apply"),
        (False, "f32[]", "all-reduce", ("parameter",),
         "replica_groups={{0,1,2,3,4,5,6,7}}, to_apply"),
        (True, "(f32[], f32[], f32[])", "tuple", ("all-reduce",) * 3, ""),
    ]
    assert len(_computations(hlo)) == 4  # one add computation per all-reduce


def test_matches_jax_jit_hlo_modulo_names():
    """Without collectives the entry computation is what jax's jit lowers to."""
    import jax
    import jax.numpy as jjnp

    def body(np_):
        return lambda x, y: (np_.tanh(x @ y) + 1.0, np_.exp(y).sum())

    x, y = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    ours = _ops(minijax.xla_computation(body(jnp))(x, y).as_hlo_text())
    theirs = _ops(jax.jit(body(jjnp)).lower(x, y).as_text("hlo"))
    assert ours == theirs


# ---- collectives ------------------------------------------------------------------------------

ENV = [('i', 2), ('j', 2)]


@pytest.mark.parametrize("fn, opcode, attrs", [
    (lambda x: lax.pmax(x, 'i'), "all-reduce", "replica_groups={{0,2},{1,3}}"),
    (lambda x: lax.pmin(x, ('i', 'j')), "all-reduce", "replica_groups={{0,1,2,3}}"),
    (lambda x: lax.psum(x, 'j'), "all-reduce", "replica_groups={{0,1},{2,3}}"),
    (lambda x: lax.all_gather(x, 'i'), "all-gather",
     "replica_groups={{0,2},{1,3}}, dimensions={0}"),
    (lambda x: lax.all_gather(x, ('i', 'j'), axis=1, tiled=True), "all-gather",
     "replica_groups={{0,1,2,3}}, dimensions={1}"),
    (lambda x: lax.ppermute(x, 'i', [(0, 1), (1, 0)]), "collective-permute",
     "source_target_pairs={{0,2},{2,0},{1,3},{3,1}}"),
    (lambda x: lax.ppermute(x, 'j', [(0, 1)]), "collective-permute",
     "source_target_pairs={{0,1},{2,3}}"),
])
def test_collectives_lower_to_cross_replica_ops(fn, opcode, attrs):
    hlo = minijax.xla_computation(fn, axis_env=ENV)(np.zeros((3, 2), np.float32)).as_hlo_text()
    found = [op for op in _ops(hlo) if op[2] == opcode]
    assert len(found) == 1, hlo
    assert found[0][4].replace(", to_apply", "") == attrs


def test_reducer_computations():
    hlo = minijax.xla_computation(lambda x: (lax.pmax(x, 'i'), lax.pmin(x, 'i')),
                                  axis_env=ENV)(1.0).as_hlo_text()
    roots = sorted(ops[-1][2] for k, ops in ((k, _ops(hlo, k)) for k in _computations(hlo))
                   if k != "ENTRY")
    assert roots == ["maximum", "minimum"]


def test_pmean_divides_by_axis_size():
    hlo = minijax.xla_computation(lambda x: lax.pmean(x, ('i', 'j')), axis_env=ENV)(1.0)
    ops = _ops(hlo.as_hlo_text())
    assert [o[2] for o in ops] == ["parameter", "all-reduce", "constant", "divide", "tuple"]
    assert ops[2][3] == ("4",)


def test_axis_index_uses_replica_id():
    ops = _ops(minijax.xla_computation(lambda x: x + lax.axis_index('j'),
                                       axis_env=ENV)(1).as_hlo_text())
    kinds = [o[2] for o in ops]
    assert "replica-id" in kinds and kinds.index("replica-id") < kinds.index("remainder")
    # index along 'j' (the minor axis of [('i', 2), ('j', 2)]): replica_id / 1 % 2
    consts = [o[3][0] for o in ops if o[2] == "constant"]
    assert sorted(consts) == ["1", "2"]


@pytest.mark.parametrize("env", [None, [('i', 4)], [('i', 4), ('j', 2)]])
def test_unbound_axis_name_raises_name_error(env):
    with pytest.raises(NameError, match="'k'") as e:
        minijax.xla_computation(lambda x: lax.psum(x, 'k'), axis_env=env)(1.0)
    for name, _ in env or []:
        assert f"'{name}'" in str(e.value)


def test_axis_env_validation():
    with pytest.raises(ValueError, match="positive"):
        minijax.xla_computation(lambda x: x, axis_env=[('i', 0)])
    with pytest.raises(ValueError, match="distinct"):
        minijax.xla_computation(lambda x: x, axis_env=[('i', 2), ('i', 3)])


def test_axis_env_sets_replica_count():
    c = minijax.xla_computation(lambda x: lax.psum(x, 'i'), axis_env=[('i', 4), ('j', 2)])(1.)
    assert "mhlo.num_replicas = 8" in c.as_stablehlo_text()
    assert c.as_hlo_module().to_string()  # converts


# ---- parameters -------------------------------------------------------------------------------

def test_static_argnums():
    def f(x, n, scale):
        return x * n + scale

    mk = minijax.xla_computation(f, static_argnums=(1, -1))
    ops3 = _ops(mk(np.ones(2, np.float32), 3, 7.0).as_hlo_text())
    ops5 = _ops(mk(np.ones(2, np.float32), 5, 7.0).as_hlo_text())
    assert sum(o[2] == "parameter" for o in ops3) == 1
    consts = lambda ops: sorted(o[3][0] for o in ops if o[2] == "constant")  # noqa: E731
    assert consts(ops3) == ["3", "7"] and consts(ops5) == ["5", "7"]
    with pytest.raises(ValueError, match="static_argnums"):
        minijax.xla_computation(f, static_argnums=5)(1.0, 2, 3.0)
    with pytest.raises(ValueError, match="hashable"):
        minijax.xla_computation(f, static_argnums=1)(1.0, [2], 3.0)


def test_example_arguments_kinds():
    import jax

    Pair = collections.namedtuple("Pair", "a b")

    def f(p, d):
        return p.a * 2 + p.b, d["w"].sum()

    args = (Pair(np.ones((2, 3), np.float32), types.SimpleNamespace(shape=(2, 3),
                                                                    dtype=np.float32)),
            {"w": jax.ShapeDtypeStruct((4,), jnp.int32)})
    c, shapes = minijax.xla_computation(f, return_shape=True)(*args)
    params = [o for o in _ops(c.as_hlo_text()) if o[2] == "parameter"]
    assert [p[1] for p in params] == ["f32[2,3]", "f32[2,3]", "s32[4]"]
    assert shapes[0].shape == (2, 3) and shapes[0].dtype == np.float32
    assert shapes[1].shape == () and shapes[1].dtype == np.int32


def test_return_shape_pytree():
    def f(x):
        return {"y": x.astype(jnp.int32), "z": [x.sum(), x > 0]}

    c, out = minijax.xla_computation(f, return_shape=True)(np.ones((2, 5), np.float32))
    assert isinstance(c, minijax.stages.xla_computation.XlaComputation)
    assert set(out) == {"y", "z"} and isinstance(out["z"], list)
    assert (out["y"].shape, out["y"].dtype) == ((2, 5), np.int32)
    assert (out["z"][0].shape, out["z"][0].dtype) == ((), np.float32)
    assert (out["z"][1].shape, out["z"][1].dtype) == ((2, 5), np.bool_)
    weak = minijax.xla_computation(lambda x: x * 2, return_shape=True)(1.0)[1]
    assert weak.weak_type and weak.dtype == np.float32


def test_in_parts_and_out_parts():
    def f(x, y):
        return jnp.dot(x, y), lax.psum(x, 'i')

    x = types.SimpleNamespace(shape=(8, 8), dtype=np.float32)
    y = types.SimpleNamespace(shape=(8, 16), dtype=np.float32)
    c = minijax.xla_computation(f, axis_env=[('i', 4)], in_parts=((2, 2), None),
                                out_parts=((4, 1), None))(x, y)
    ops = _ops(c.as_hlo_text())
    params = [o for o in ops if o[2] == "parameter"]
    assert params[0][4] == "sharding={devices=[2,2]0,1,2,3}"
    assert params[1][4] == "sharding={replicated}"
    assert ops[-1][4] == "sharding={{devices=[4,1]0,1,2,3}, {replicated}}"
    assert any(o[2] == "all-reduce" and "replica_groups={{0,1,2,3}}" in o[4] for o in ops)


def test_parts_prefix_broadcast_and_one_spec_for_all():
    def f(d, z):
        return d["a"] + d["b"] + z

    a = np.zeros((4, 2), np.float32)
    c = minijax.xla_computation(f, in_parts=((2, 1), None), out_parts=(1, 2))(
        {"a": a, "b": a}, a)
    ops = _ops(c.as_hlo_text())
    shards = [o[4] for o in ops if o[2] == "parameter"]
    assert shards == ["sharding={devices=[2,1]0,1}"] * 2 + ["sharding={replicated}"]
    assert ops[-1][4] == "sharding={{devices=[1,2]0,1}}"
    # a single spec applies to every argument
    c = minijax.xla_computation(lambda u, v: u + v, in_parts=(4, 1))(a, a)
    assert [o[4] for o in _ops(c.as_hlo_text()) if o[2] == "parameter"] == \
        ["sharding={devices=[4,1]0,1,2,3}"] * 2


@pytest.mark.parametrize("in_parts, out_parts, match", [
    ((None, None, None), None, "in_parts specification must be a tree prefix"),
    (((2,),), None, "has 1 entries but the value it applies to has rank 2"),
    (None, ((2, 1), None), "out_parts specification must be a tree prefix"),
    (None, (2, 1, 1), "rank 2"),
    (((0, 1),), None, "positive"),
])
def test_parts_mismatch_raises_value_error(in_parts, out_parts, match):
    with pytest.raises(ValueError, match=match):
        minijax.xla_computation(lambda x: x * 2, in_parts=in_parts, out_parts=out_parts)(
            np.zeros((4, 2), np.float32))


@pytest.mark.parametrize("backend", [None, "cpu", "gpu", "tpu"])
def test_backend_needs_no_device(backend):
    c = minijax.xla_computation(lambda x: jnp.sin(x) * 2, backend=backend)(1.0)
    assert [o[2] for o in _ops(c.as_hlo_text())] == \
        ["parameter", "sine", "constant", "multiply", "tuple"]


def test_unknown_backend():
    with pytest.raises(ValueError, match="unknown backend 'foo'"):
        minijax.xla_computation(lambda x: x, backend="foo")


def _params(hlo: str) -> list[tuple]:
    return [o for o in _ops(hlo) if o[2] == "parameter"]


def test_tuple_args():
    def f(x, y):
        return x + y

    x = np.ones(3, np.float32)
    plain = minijax.xla_computation(f)(x, x).as_hlo_text()
    tupled = minijax.xla_computation(f, tuple_args=True)(x, x).as_hlo_text()
    assert [p[1] for p in _params(plain)] == ["f32[3]", "f32[3]"]
    assert [p[1] for p in _params(tupled)] == ["(f32[3], f32[3])"]
    assert [o[2] for o in _ops(tupled)][1:3] == ["get-tuple-element"] * 2


@pytest.mark.parametrize("n, tuple_args, expect_tuple", [
    (101, None, True), (100, None, False), (101, False, False), (3, True, True)])
def test_tuple_args_automatic_above_100(n, tuple_args, expect_tuple):
    def f(*xs):
        return sum(xs)

    hlo = minijax.xla_computation(f, tuple_args=tuple_args)(*([1.0] * n)).as_hlo_text()
    params = _params(hlo)
    assert len(params) == (1 if expect_tuple else n)
    assert params[0][1].startswith("(") == expect_tuple


def test_instantiate_const_outputs_deprecated():
    with pytest.warns(DeprecationWarning, match="instantiate_const_outputs"):
        mk = minijax.xla_computation(lambda x: x, instantiate_const_outputs=True)
    assert _ops(mk(1.0).as_hlo_text())[-1][3] == ("parameter",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        minijax.xla_computation(lambda x: x)(1.0)


def test_donate_argnums_aliases_inputs_to_outputs():
    def f(x, y, z):
        return y * 2, x + 1, z.sum()

    x, y, z = (np.zeros((2,), np.float32), np.zeros((3,), np.float32),
               np.zeros((4,), np.int32))
    hlo = minijax.xla_computation(f, donate_argnums=(0, 1))(x, y, z).as_hlo_text()
    assert "input_output_alias={ {0}: (1, {}, may-alias), {1}: (0, {}, may-alias) }" \
        in _header(hlo)
    assert "input_output_alias" not in _header(minijax.xla_computation(f)(x, y, z).as_hlo_text())
    tupled = minijax.xla_computation(f, donate_argnums=0, tuple_args=True)(x, y, z)
    assert "input_output_alias={ {1}: (0, {0}, may-alias) }" in _header(tupled.as_hlo_text())


def test_unusable_donation_warns():
    with pytest.warns(UserWarning, match=r"donated buffers were not usable: i32\[4\]"):
        hlo = minijax.xla_computation(lambda z: z.sum(), donate_argnums=0)(
            np.zeros(4, np.int32)).as_hlo_text()
    assert "input_output_alias" not in _header(hlo)


# ---- the computation object -------------------------------------------------------------------

def test_serialized_proto_round_trips_through_jaxlib():
    c = minijax.xla_computation(lambda x: x - lax.psum(x, 'i'), axis_env=[('i', 4)])(2)
    proto = c.as_serialized_hlo_module_proto()
    assert isinstance(proto, bytes) and proto
    assert xla_client.XlaComputation(proto).as_hlo_text() == c.as_hlo_text()
    assert c.program_shape().result_shape().is_tuple()


def test_hlo_dot_graph():
    dot = minijax.xla_computation(lambda x: jnp.sin(jnp.cos(x)))(3.).as_hlo_dot_graph()
    assert dot.startswith("digraph")
    assert "cosine" in dot and "sine" in dot


def test_jaxpr_dot_graph():
    const = np.arange(3.0, dtype=np.float32)

    def f(x, y):
        return jnp.sin(x) * 2.0 + const, y

    c = minijax.xla_computation(f)(np.ones(3, np.float32), 1)
    dot = c.as_jaxpr_dot_graph()
    assert dot.startswith('digraph "xla_computation_f" {') and dot.rstrip().endswith("}")
    nodes = dict(re.findall(r"^  (\w+) \[label=\"([^\"]*)\"", dot, re.M))
    assert nodes["in0"] == r"x\nf32[3]" and nodes["in1"] == r"y\ni32[]"
    assert nodes["out0"] == r"result[0]\nf32[3]" and nodes["out1"] == r"result[1]\ni32[]"
    prims = [v.split("\\n")[0] for k, v in nodes.items() if k.startswith("eqn")]
    assert prims == [e.primitive.name for e in c.jaxpr.eqns]
    assert "sin" in prims and "mul" in prims
    edges = re.findall(r"^  (\w+) -> (\w+)", dot, re.M)
    assert ("in0", "eqn0") in edges and ("in1", "out1") in edges
    assert any(src.startswith("lit") for src, _ in edges)  # the literal 2.0
    assert len(edges) == sum(len(e.invars) for e in c.jaxpr.eqns) + 2
    if dot_graph.graphviz_available():
        assert b"<svg" in dot_graph.render(dot, "svg")


# ---- python -m minijax dot ---------------------------------------------------------------------

def cli_fun(x, y):
    return jnp.tanh(x) @ y


def test_dot_command_writes_graphviz_source(tmp_path, capsys):
    from minijax.__main__ import main

    out = tmp_path / "g.dot"
    rc = main(["dot", f"{__name__}:cli_fun", "f32[2,3]", "f32[3]", "-o", str(out)])
    assert rc == 0
    text = out.read_text()
    assert text.startswith('digraph "xla_computation_cli_fun"') and "tanh" in text
    rc = main(["dot", f"{__name__}:cli_fun", "f32[2,3]", "f32[3]", "--graph", "hlo",
               "--format", "dot", "-o", "-"])
    assert rc == 0
    assert capsys.readouterr().out.startswith("digraph")


def test_dot_command_without_graphviz(tmp_path, monkeypatch, capsys):
    from minijax.__main__ import main

    monkeypatch.setattr(dot_graph.shutil, "which", lambda name: None)
    out = tmp_path / "g.svg"
    rc = main(["dot", f"{__name__}:cli_fun", "f32[2,3]", "f32[3]", "-o", str(out)])
    assert rc == 1 and not out.exists()
    err = capsys.readouterr().err
    assert "Graphviz" in err and "not found" in err and "--format dot" in err
    with pytest.raises(dot_graph.GraphvizNotFoundError):
        dot_graph.render("digraph { a }", "png")


def test_dot_command_errors(tmp_path, capsys):
    from minijax.__main__ import main

    assert main(["dot", f"{__name__}:cli_fun", "f32[2,x]"]) == 2
    assert "bad argument spec" in capsys.readouterr().err
    assert main(["dot", f"{__name__}:no_such_fun", "f32[]"]) == 2
    assert "no_such_fun" in capsys.readouterr().err


def test_dot_command_renders_dot_file(tmp_path):
    from minijax.__main__ import main

    src = tmp_path / "g.dot"
    src.write_text("digraph { a -> b }\n")
    out = tmp_path / "g.svg"
    rc = main(["dot", str(src), "-o", str(out)])
    if dot_graph.graphviz_available():
        assert rc == 0 and b"<svg" in out.read_bytes()
    else:
        assert rc == 1 and not out.exists()


@pytest.mark.parametrize("spec, shape, dtype", [
    ("f32[3,4]", (3, 4), np.float32), ("i32[]", (), np.int32), ("pred[2]", (2,), np.bool_),
    ("float16[1, 2]", (1, 2), np.float16), ("u8[5]", (5,), np.uint8)])
def test_parse_arg_spec(spec, shape, dtype):
    s = dot_graph.parse_arg_spec(spec)
    assert s.shape == shape and s.dtype == dtype
