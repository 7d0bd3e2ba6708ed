"""``jax.extend``: jax's API for extension authors, on minijax's internals.

``core`` (Primitive, Jaxpr, ...), ``linear_util``, ``source_info_util``, ``backend``,
``random`` and ``mlir``. A primitive a library defines here, with rules registered in
``minijax.interpreters``, runs under jit, grad, vmap, scan and lowering.
"""

from minijax.extend import backend, core, linear_util, mlir, random, source_info_util  # noqa: F401

__all__ = ["backend", "core", "linear_util", "mlir", "random", "source_info_util"]
