"""``jax.ad``: jax's markers for gradients through mutable references. minijax has no
references (``minijax.ref``), so the markers exist for code that names them."""

__all__ = ["DidntWant", "DontWant", "GradRef", "GradValue"]


class DontWant:
    """Marks an input whose gradient is not wanted."""


class DidntWant:
    """What stands for the gradient of an input marked ``DontWant``."""


class GradRef:
    """A gradient delivered into a reference (not supported: minijax has no refs)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("minijax.ad.GradRef: minijax has no mutable references")


class GradValue:
    """A gradient delivered as a value."""
