"""minijax's version (``minijax.version.__version__``, as ``jax.version``)."""

_version = "0.1.0"
__version__ = _version
__version_info__ = tuple(int(p) for p in _version.split("."))

# The jax release whose API minijax mirrors (and whose jaxlib it runs on): what
# ``jax.__version__`` reads in the jax mode (``minijax.compat``).
_jax_version = "0.10.2"
