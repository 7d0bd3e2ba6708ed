"""Explaining why ``jit`` traced again (``minijax_explain_cache_misses``).

A jit trace-cache key is ``(in_tree, config_key, statics, *avals)``. A retrace
of one jit object is explained by comparing the new key with the last one: tree
structure, config flags (by name), static arguments, and per argument leaf its
shape, dtype and weak type. The first trace of a new jit object of a function
that another jit object already traced is explained by what differs between the
two: the jit settings (compiler options, static and donated arguments) or the key.
"""

from __future__ import annotations

from typing import Any

from minijax.config import config


def explain_difference(old: tuple, new: tuple, params,
                       arg_names: list[str] | None = None) -> list[str]:
    """Reasons, in words, why cache key ``new`` differs from ``old``.

    ``arg_names``: names of the new key's argument leaves (``x``, ``params['w']``).
    """
    reasons = []
    o_tree, o_cfg, o_st, *o_avals = old
    n_tree, n_cfg, n_st, *n_avals = new
    if o_tree != n_tree:
        reasons.append(f"the tree structure of the arguments changed from {o_tree} to {n_tree}")
    if o_cfg != n_cfg:
        names = list(config.trace_key_names()) + ["the axis environment (pmap/xla_computation)"]
        changed = [f"{n} changed from {a!r} to {b!r}"
                   for n, a, b in zip(names, o_cfg, n_cfg) if a != b]
        reasons.append("config flags that affect tracing changed: " + ", ".join(
            changed or [f"{o_cfg} -> {n_cfg}"]))
    if o_st != n_st:
        od, nd = dict(o_st), dict(n_st)
        for k in sorted(set(od) | set(nd), key=str):
            if od.get(k, "<absent>") != nd.get(k, "<absent>"):
                name = _static_name(k, params)
                reasons.append(f"static argument {name} changed from {od.get(k, '<absent>')!r} "
                               f"to {nd.get(k, '<absent>')!r}")
    if o_tree == n_tree and len(o_avals) == len(n_avals):
        for i, (a, b) in enumerate(zip(o_avals, n_avals)):
            if a != b:
                what = []
                if a.shape != b.shape:
                    what.append(f"shape {a.shape} -> {b.shape}")
                if a.dtype != b.dtype:
                    what.append(f"dtype {a.dtype.name} -> {b.dtype.name}")
                if a.weak_type != b.weak_type:
                    what.append(f"weak_type {a.weak_type} -> {b.weak_type}")
                who = (f"argument {arg_names[i]}" if arg_names and i < len(arg_names)
                       else f"argument leaf {i}")
                reasons.append(f"{who} changed: {', '.join(what)} "
                               f"({a.str_short()} -> {b.str_short()})")
    return reasons or ["no difference found in the cache key (the function may be a new object)"]


def explain_new_jit(others: list[tuple[dict, tuple]], settings: dict[str, Any], key: tuple,
                    params, arg_names: list[str] | None = None) -> list[str]:
    """Why a new jit object traces a function other jit objects already traced.

    ``others``: ``(settings, key)`` of earlier traces by other jit objects of the
    same function, oldest first. Empty list when the function is new.
    """
    if not others:
        return []
    same_key = [s for s, k in others if k == key]
    if any(s == settings for s in same_key):
        return ["another jit of the same function with the same settings was traced for "
                "these arguments (each jit object has its own cache: create it once and "
                "reuse it)"]
    if same_key:
        return ["another jit of the same function was traced for these arguments with "
                "different settings: " + "; ".join(_settings_difference(same_key[-1], settings))]
    old_settings, old_key = others[-1]
    reasons = _settings_difference(old_settings, settings)
    reasons += explain_difference(old_key, key, params, arg_names)
    return ["another jit of the same function was traced before; compared with it: "
            + "; ".join(reasons)]


def _settings_difference(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for name in new:
        a, b = old.get(name), new[name]
        if a == b:
            continue
        if name == "compiler_options":
            keys = sorted(set(a) | set(b))
            parts = [f"{k}: {a.get(k, '<unset>')!r} -> {b.get(k, '<unset>')!r}"
                     for k in keys if a.get(k, "<unset>") != b.get(k, "<unset>")]
            out.append("compiler_options changed (" + ", ".join(parts) + ")")
        else:
            out.append(f"{name} changed from {a!r} to {b!r}")
    return out


def _static_name(k, params) -> str:
    if isinstance(k, int):
        if k < len(params):
            return f"{params[k].name!r} (position {k})"
        return f"at position {k}"
    return repr(k)
