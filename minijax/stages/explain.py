"""Explaining why ``jit`` traced again (``minijax_explain_cache_misses``)."""

from __future__ import annotations


def explain_difference(old: tuple, new: tuple, params) -> list[str]:
    """Reasons, in words, why cache key ``new`` differs from ``old``.

    Keys are ``(in_tree, config_key, statics, *avals)``.
    """
    reasons = []
    o_tree, o_cfg, o_st, *o_avals = old
    n_tree, n_cfg, n_st, *n_avals = new
    if o_tree != n_tree:
        reasons.append(f"the tree structure of the arguments changed from {o_tree} to {n_tree}")
    if o_cfg != n_cfg:
        reasons.append(f"config flags that affect tracing changed ({o_cfg} -> {n_cfg})")
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
                reasons.append(f"argument leaf {i} changed: {', '.join(what)} "
                               f"({a.str_short()} -> {b.str_short()})")
    return reasons or ["no difference found in the cache key (the function may be a new object)"]


def _static_name(k, params) -> str:
    if isinstance(k, int):
        if k < len(params):
            return f"{params[k].name!r} (position {k})"
        return f"at position {k}"
    return repr(k)
