"""``minijax.ad_checkpoint``: rematerialization, with jax.ad_checkpoint's names."""

from __future__ import annotations


from minijax.core.aval import ShapedArray
from minijax.core.trace import DebugInfo, Primitive, get_aval, trace_to_jaxpr
from minijax.transforms.ad import linearize_flat
from minijax._pytree import tree_flatten, tree_map
from minijax.api import checkpoint_policies
from minijax.api.custom_derivatives import checkpoint, remat

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "print_saved_residuals", "remat", "saved_residuals"]


class _Decision:
    """What a policy may return: ``Saveable`` (true: keep the value) or ``Recompute``."""

    def __init__(self, name: str, saved: bool):
        self._name, self._saved = name, saved

    def __bool__(self) -> bool:
        return self._saved

    def __repr__(self) -> str:
        return self._name


Saveable = _Decision("Saveable", True)
Recompute = _Decision("Recompute", False)


Offloadable = checkpoint_policies.Offloadable

def checkpoint_name(x, name: str):
    """``x`` (a pytree of arrays), its values named ``name`` for the names-based
    policies of ``checkpoint`` (``checkpoint_policies.save_only_these_names(name)``)."""
    return tree_map(lambda v: name_p.bind(v, name=name), x)


def saved_residuals(f, *args, **kwargs) -> list[tuple[ShapedArray, str]]:
    """What reverse-mode differentiation of ``f`` at ``args`` saves from the forward pass
    for the backward one: ``(aval, where it comes from)`` per residual, as jax's."""
    from minijax._pytree import tree_flatten_with_path, keystr, tree_unflatten

    flat_path, in_tree = tree_flatten_with_path((args, kwargs))
    names = []
    for path, _ in flat_path:
        if getattr(path[0], "idx", None) == 0:  # a positional argument
            names.append(_arg_name(f, path[1].idx, keystr(path[2:])))
        else:  # a keyword argument
            names.append(keystr(path[1:]).strip("[]'\""))
    leaves = [x for _, x in flat_path]

    def flat_f(*xs):
        a, kw = tree_unflatten(in_tree, list(xs))
        out, _ = tree_flatten(f(*a, **kw))
        return out

    found: list[tuple[ShapedArray, str]] = []

    def trace(*xs):
        _, _, residuals = linearize_flat(flat_f, xs)
        return list(residuals), None

    jaxpr, _, _ = trace_to_jaxpr(trace, [get_aval(x) for x in leaves],
                                 DebugInfo("saved_residuals", "f", None))
    producers = {id(v): e for e in jaxpr.eqns for v in e.outvars}
    args_at = {id(v): i for i, v in enumerate(jaxpr.invars)}
    from_args = sorted(((args_at[id(v)], v) for v in jaxpr.outvars if id(v) in args_at),
                       key=lambda t: t[0])
    for i, v in dict.fromkeys(from_args):  # arguments first, in order, as jax's
        found.append((v.aval, f"from the argument {names[i]}"))
    for v in jaxpr.outvars:
        aval = v.aval
        if id(v) in args_at:
            continue
        elif id(v) in producers:
            e = producers[id(v)]
            where = f" from {e.source}" if e.source else ""
            found.append((aval, f"output of {e.primitive.name}{where}"))
        else:
            found.append((aval, "from a constant"))
    return found


def _arg_name(f, i: int, rest: str) -> str:
    import inspect
    try:
        params = list(inspect.signature(f).parameters)
        name = params[i] if i < len(params) else f"args[{i}]"
    except (TypeError, ValueError):
        name = f"args[{i}]"
    return name + rest


def print_saved_residuals(f, *args, **kwargs) -> None:
    """Print what reverse-mode differentiation of ``f`` saves (see ``saved_residuals``),
    one ``f32[3] from the argument x`` / ``f32[3] output of sin from file:line`` a line."""
    for aval, what in saved_residuals(f, *args, **kwargs):
        print(f"{aval.str_short()} {what}")


# ---- the name primitive: the identity, with a name the policies can see --------------------

name_p = Primitive("name")


def _name_jvp(primals, tangents, *, name):
    (x,), (t,) = primals, tangents
    return name_p.bind(x, name=name), t  # the tangent is not named (as jax's)


def _name_batch(trace, vals, dims, *, name):
    return name_p.bind(vals[0], name=name), dims[0]


name_p.def_abstract_eval(lambda aval, *, name: aval)
name_p.def_impl(lambda x, *, name: x)
name_p.def_lowering(lambda ctx, x, *, name: x)
name_p.def_jvp(_name_jvp)
name_p.def_batch(_name_batch)
