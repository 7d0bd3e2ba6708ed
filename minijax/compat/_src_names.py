"""The ``jax._src`` names the jax mode provides: exactly those the libraries import, each
mapped to minijax's counterpart with the same behaviour, with the library that needs it.

A ``jax._src`` module not listed here raises ModuleNotFoundError, and a name not listed
raises AttributeError (what those libraries catch where the name is optional).
"""

from __future__ import annotations

import importlib
import types

# jax._src module -> {name: ("minijax.module:attribute", library that imports it)}
SRC_NAMES: dict[str, dict[str, tuple[str, str]]] = {
    "jax._src.traceback_util": {
        "register_exclusion": ("minijax.core.traceback_util:register_exclusion",
                               "flax, equinox, jaxtyping"),
        "api_boundary": ("minijax.core.traceback_util:api_boundary", "flax"),
        "_exclude_paths": ("minijax.core.traceback_util:_exclude_paths", "flax"),
        "include_frame": ("minijax.core.traceback_util:include_frame", "equinox"),
    },
    "jax._src.dtypes": {
        "TypePromotionError": ("minijax.dtypes:TypePromotionError", "equinox"),
        "extended": ("minijax.dtypes:extended", "flax (linen fp8_ops)"),
        "ExtendedDType": ("minijax.dtypes:ExtendedDType", "flax (linen fp8_ops)"),
        "DType": ("numpy:dtype", "flax (linen fp8_ops, an annotation)"),
        "finfo": ("minijax.dtypes:finfo", "flax (linen fp8_ops)"),
        "supports_inf": ("minijax.dtypes:supports_inf", "flax (linen fp8_ops)"),
    },
    "jax._src.dispatch": {
        "wait_for_tokens": ("minijax._callback:effects_barrier", "equinox"),
    },
    "jax._src.tree_util": {
        "_registry": ("minijax.compat._registry_view:registry", "flax"),
    },
    "jax._src.core": {
        "ShapedArray": ("minijax.core:ShapedArray", "flax (linen fp8_ops)"),
        "Tracer": ("minijax.core:Tracer", "flax (linen fp8_ops)"),
    },
    "jax._src.state.types": {
        "AbstractRef": ("minijax.core.ref:AbstractRef", "flax (nnx variablelib)"),
    },
    # chex and flax.nnx import checkify's internals under this name
    "jax._src.checkify": {
        name: (f"minijax.experimental.checkify:{name}", "flax (nnx transforms)")
        for name in ("checkify", "check", "Error", "JaxException", "user_checks",
                     "all_checks", "float_checks", "index_checks", "nan_checks",
                     "div_checks", "automatic_checks", "Out", "ErrorCategory")
    },
    "jax._src.xla_bridge": {
        "_backends": ("minijax.runtime.backend:_backends", "chex"),
    },
}
SRC_PACKAGES = {"jax._src", "jax._src.state", "jax._src.interpreters"}

# jax._src modules that are one minijax module itself (not a copy of some of its names),
# so that a library replacing one of its functions changes what minijax calls
SRC_MODULES: dict[str, tuple[str, str]] = {
    # chex's restrict_backends wraps backend_compile_and_load
    "jax._src.compiler": ("minijax.runtime.compiler", "chex"),
}


def _resolve(where: str):
    mod, _, attr = where.partition(":")
    return getattr(importlib.import_module(mod), attr)


def _submodule_getter(package: str):
    """A package's ``__getattr__``: its listed submodules, which jax imports with jax
    itself (chex reads ``jax._src.xla_bridge`` without importing it)."""
    def __getattr__(name: str):
        sub = f"{package}.{name}"
        if not name.startswith("__") and (sub in SRC_NAMES or sub in SRC_MODULES
                                          or sub in SRC_PACKAGES):
            try:
                return importlib.import_module(sub)
            except ImportError:
                pass
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return __getattr__


def make_module(fullname: str) -> types.ModuleType | None:
    """The module ``fullname`` (a ``jax._src`` name) with its listed names; None if it is
    not listed."""
    alias = SRC_MODULES.get(fullname)
    if alias is not None:
        return importlib.import_module(alias[0])
    names = SRC_NAMES.get(fullname)
    if names is None and fullname not in SRC_PACKAGES:
        return None
    mod = types.ModuleType(fullname, f"jax mode: the names of {fullname} that libraries "
                                     f"import, on minijax (minijax/compat/_src_names.py)")
    mod._minijax_jax_mode = True
    if fullname in SRC_PACKAGES:
        mod.__path__ = []
        mod.__getattr__ = _submodule_getter(fullname)
    found = 0
    for name, (where, _lib) in (names or {}).items():
        try:
            setattr(mod, name, _resolve(where))
            found += 1
        except (ImportError, AttributeError):
            pass  # not provided: the name stays missing (AttributeError)
    if names and not found:  # its minijax counterpart is absent: so is the module
        return None
    return mod
