"""The jax mode: run a program written for jax on minijax, unchanged.

Under it ``import jax`` and every ``import jax.X`` resolve to minijax: a finder placed
first on ``sys.meta_path`` answers each ``jax...`` name with minijax's module of the same
path (``jax.numpy`` is ``minijax.numpy``, ``jax.experimental.shard_map`` is
``minijax.experimental.shard_map``: one module object under both names). The real jax
package is never loaded, even when it is installed; a jax module minijax does not have
raises ``ModuleNotFoundError`` (an ``ImportError``) and a missing name of a module raises
``AttributeError``, which is what libraries probing for optional features catch.

``jax`` itself is a thin module in front of ``minijax``: every attribute read goes to
minijax, except ``__version__``/``__version_info__``/``version``, which give the jax
release minijax mirrors (``minijax.version._jax_version``). The ``jax._src`` names that
optax, flax, equinox, chex and jaxtyping import are listed, each with the library that
needs it, in ``minijax/compat/_src_names.py``.

Turn it on with ``python -m minijax run SCRIPT [ARGS]``, ``python -m minijax run -m
MODULE [ARGS]`` (e.g. ``python -m minijax run -m pytest ...``), or in a running process
(a notebook) with ``minijax.compat.install()``. It is off unless asked for, and refuses
to start in a process that has already imported the real jax.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import types
from collections.abc import Sequence

import minijax
from minijax import version as _minijax_version

__all__ = ["install", "installed", "run", "uninstall"]

JAX_VERSION = _minijax_version._jax_version


class _JaxModule(types.ModuleType):
    """``jax``: minijax's names, with jax's version."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        try:
            return getattr(minijax, name)
        except AttributeError:
            raise AttributeError(f"module 'jax' has no attribute {name!r} (jax mode: minijax "
                                 f"has no counterpart)", name=name, obj=self) from None

    def __dir__(self):
        return sorted(set(dir(minijax)) | set(self.__dict__))


def _make_version_module() -> types.ModuleType:
    mod = types.ModuleType("jax.version", "jax's version (the release minijax mirrors).")
    mod._version = mod.__version__ = JAX_VERSION
    mod.__version_info__ = tuple(int(p) for p in JAX_VERSION.split("."))
    mod._minimum_jaxlib_version = JAX_VERSION
    mod._minimum_jaxlib_version_info = mod.__version_info__
    mod.minijax_version = minijax.__version__
    mod._minijax_jax_mode = True
    return mod


def _make_jax_module() -> types.ModuleType:
    mod = _JaxModule("jax", minijax.__doc__)
    version = _make_version_module()
    mod.version = version
    mod.__version__ = version.__version__
    mod.__version_info__ = version.__version_info__
    mod.__path__ = []  # a package: its submodules are answered by the finder
    mod.__file__ = minijax.__file__
    mod._minijax_jax_mode = True
    return mod


class _AliasLoader(importlib.abc.Loader):
    """Loads a jax name as an existing module object (minijax's, or one made here)."""

    def __init__(self, module: types.ModuleType, own: bool):
        self.module = module
        self.own = own  # made for the jax mode: its spec is the jax name's
        self.spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        if not self.own:  # importlib set the jax spec on minijax's module: put its own back
            module.__spec__ = self.spec


def _no_module(fullname: str) -> ModuleNotFoundError:
    return ModuleNotFoundError(f"No module named {fullname!r} (jax mode: minijax has no "
                               f"counterpart of this jax module)", name=fullname)


class JaxFinder(importlib.abc.MetaPathFinder):
    """Answers ``jax`` and ``jax.*`` with minijax's modules (first on ``sys.meta_path``)."""

    def __init__(self):
        self.jax = _make_jax_module()
        self.made: dict[str, types.ModuleType] = {"jax": self.jax,
                                                  "jax.version": self.jax.version}

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "jax" and not fullname.startswith("jax."):
            return None
        module, own = self._resolve(fullname)
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module, own),
                                              is_package=hasattr(module, "__path__"))

    def _resolve(self, fullname: str) -> tuple[types.ModuleType, bool]:
        made = self.made.get(fullname)
        if made is not None:
            return made, True
        if fullname == "jax._src" or fullname.startswith("jax._src."):
            from minijax.compat import _src_names
            if fullname in _src_names.SRC_MODULES:  # minijax's module itself
                return _src_names.make_module(fullname), False
            mod = _src_names.make_module(fullname)
            if mod is None:
                raise _no_module(fullname)
            self.made[fullname] = mod
            return mod, True
        target = "minijax" + fullname[len("jax"):]
        try:
            return importlib.import_module(target), False
        except ModuleNotFoundError as e:
            if e.name is None or not target.startswith(e.name):
                raise  # a module that the target itself imports is missing: a real error
        parent, _, last = target.rpartition(".")
        attr = getattr(sys.modules.get(parent), last, None)
        if isinstance(attr, types.ModuleType):  # a module kept as an attribute only
            return attr, False
        raise _no_module(fullname)


_finder: JaxFinder | None = None


def _is_ours(module) -> bool:
    """A module the jax mode put under a jax name (minijax's, or made by it)."""
    return (getattr(module, "__name__", "") or "").startswith("minijax") or \
        getattr(module, "_minijax_jax_mode", False)


def installed() -> bool:
    """Whether the jax mode is on in this process."""
    return _finder is not None and _finder in sys.meta_path


def install() -> None:
    """Turn the jax mode on in this process: from now on ``import jax`` is minijax.

    Raises ``RuntimeError`` if the real jax is already imported (the process is then
    left as it is). Calling it again is a no-op.
    """
    global _finder
    if installed():
        return
    real = sorted(n for n, m in list(sys.modules.items())
                  if (n == "jax" or n.startswith("jax.")) and not _is_ours(m))
    if real:
        where = getattr(sys.modules.get(real[0]), "__file__", None) or real[0]
        raise RuntimeError(
            f"minijax.compat.install(): the real jax is already imported in this process "
            f"({where}); the jax mode cannot replace it. Turn it on before anything imports "
            f"jax, or run the program with `python -m minijax run`.")
    if _finder is None:
        _finder = JaxFinder()
    sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Turn the jax mode off: ``jax`` names are forgotten (modules that imported them keep
    what they got)."""
    if not installed():
        return
    sys.meta_path.remove(_finder)
    for name in [n for n in sys.modules if n == "jax" or n.startswith("jax.")]:
        del sys.modules[name]


def run(argv: Sequence[str]) -> int:
    """``python -m minijax run SCRIPT [ARGS]`` / ``run -m MODULE [ARGS]``: run a program
    written for jax under the jax mode, as ``python SCRIPT`` / ``python -m MODULE`` would."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m minijax run SCRIPT [ARGS...]\n"
              "       python -m minijax run -m MODULE [ARGS...]\n\n"
              "Runs a program written for jax with `import jax` resolving to minijax.",
              file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    install()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("minijax run: -m needs a module name", file=sys.stderr)
            return 2
        module, args = argv[1], argv[2:]
        sys.argv = [module, *args]  # runpy puts the module's path in argv[0]
        if sys.path[0] != os.getcwd() and sys.path[0] != "":
            sys.path.insert(0, os.getcwd())
        return _exit_code(lambda: runpy.run_module(module, run_name="__main__",
                                                   alter_sys=True))
    script, args = argv[0], argv[1:]
    if not os.path.exists(script):
        print(f"minijax run: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = [script, *args]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    return _exit_code(lambda: runpy.run_path(script, run_name="__main__"))


def _exit_code(fn) -> int:
    try:
        fn()
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0
