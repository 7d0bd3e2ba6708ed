"""StableHLO portable artifacts (versioned MLIR bytecode), as ``jax.export`` writes them:
jaxlib's ``serialize_portable_artifact`` / ``deserialize_portable_artifact``."""

from __future__ import annotations

from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from minijax.lowering import mlir
from minijax.runtime import bytecode_check

__all__ = ["deserialize", "import_functions", "serialize", "target_version"]

_target: list[str] = []


def target_version() -> str:
    """The StableHLO version jax targets: the newest at least 4 weeks old (so a consumer
    updated monthly reads it)."""
    if not _target:
        _target.append(stablehlo.get_version_from_compatibility_requirement(
            stablehlo.StablehloCompatibilityRequirement.WEEK_4))
    return _target[0]


def serialize(module_text: str) -> bytes:
    """The portable artifact of ``module_text`` (shardy ops kept unversioned, as jax's
    CPU backend asks with ``serialize_with_sdy``)."""
    try:
        return _jax.mlir.serialize_portable_artifact(str(module_text), target_version(), True)
    except Exception as e:
        raise RuntimeError(f"minijax could not serialize its module (please report): {e}") \
            from e


def deserialize(blob: bytes) -> ir.Module:
    """The module of a portable artifact; ValueError if ``blob`` is not one."""
    if not isinstance(blob, (bytes, bytearray)) or not bytes(blob[:4]) == b"ML\xefR":
        raise ValueError("the serialized module is not a StableHLO portable artifact "
                         "(MLIR bytecode)")
    blob = bytes(blob)
    bytecode_check.check(blob)  # MLIR's reader trusts some of its tables
    with mlir.context():
        try:
            module = _jax.mlir.deserialize_portable_artifact(blob)
        except Exception as e:
            raise ValueError(f"the serialized module could not be read: {e}") from None
        if module is None or not module.operation.verify():
            raise ValueError("the serialized module does not verify")
    return module


def _undecodable(e: Exception) -> ValueError:
    # jaxlib's bindings raise RuntimeError when a string they hand back (a symbol name,
    # the module's text) is not valid UTF-8: bytes a damaged artifact can hold.
    return ValueError(f"the serialized module holds text that is not valid UTF-8 ({e})")


def to_text(module: ir.Module) -> str:
    with mlir.context():
        try:
            return module.operation.get_asm(enable_debug_info=True,
                                            large_elements_limit=None)
        except (RuntimeError, UnicodeError) as e:
            raise _undecodable(e) from None


def _sym_name(op) -> str:
    try:
        return ir.StringAttr(op.attributes["sym_name"]).value
    except (RuntimeError, UnicodeError) as e:
        raise _undecodable(e) from None


def import_functions(blob: bytes, prefix: str) -> tuple[str, list[str], list[str]]:
    """The top-level ops of the artifact's module, each symbol renamed ``prefix + name``
    and made private, as text to splice into another module; with the input and result
    types of its ``main``."""
    module = deserialize(blob)
    with mlir.context():
        ops = list(module.body.operations)
        names = []
        for op in ops:
            if "sym_name" in op.attributes:
                names.append(_sym_name(op))
        if "main" not in names:
            raise ValueError("the serialized module has no main function")
        for name in names:
            ir.SymbolTable.replace_all_symbol_uses(name, prefix + name, module.operation)
        main = None
        for op in ops:
            if "sym_name" not in op.attributes:
                continue
            name = _sym_name(op)
            op.attributes["sym_name"] = ir.StringAttr.get(prefix + name)
            if op.operation.name == "func.func":
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")
                if name == "main":
                    main = op
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        try:
            ins = [str(t) for t in ftype.inputs]
            outs = [str(t) for t in ftype.results]
            text = "\n".join(op.get_asm(enable_debug_info=False, large_elements_limit=None)
                             for op in ops)
        except (RuntimeError, UnicodeError) as e:
            raise _undecodable(e) from None
    return text, ins, outs
