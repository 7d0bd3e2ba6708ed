"""Every public name of jax.numpy exists in minijax.numpy (and of jax.numpy.fft/linalg)."""

import jax.numpy as jjnp

import minijax.numpy as jnp

# Names of jax.numpy that minijax.numpy does not have yet. Keep it short, and shrinking:
# a name that appears here but exists in minijax.numpy fails the test too.
MISSING: set[str] = set()


def _public(module) -> set[str]:
    return {n for n in dir(module) if not n.startswith("_")}


def test_every_jax_numpy_name_exists():
    missing = sorted(_public(jjnp) - _public(jnp) - MISSING)
    assert not missing, f"jax.numpy names missing from minijax.numpy: {missing}"


def test_missing_list_is_not_stale():
    stale = sorted(MISSING & _public(jnp))
    assert not stale, f"remove these from MISSING, they exist now: {stale}"
