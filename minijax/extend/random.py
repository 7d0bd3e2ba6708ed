"""``jax.extend.random``: PRNG implementations (none beyond minijax.random's keys here;
jax's names missing raise AttributeError)."""

__all__: list[str] = []
