"""create_token and after_all: XLA tokens, which minijax does not model.

jax threads ordered effects (infeed, outfeed, send/recv) through values of a token
type. minijax orders its effects inside the lowering and has no token type for
traced values or jit results, so these names exist and raise NotImplementedError;
their primitives are registered under jax's names for completeness.
"""

from __future__ import annotations

from minijax.core.trace import Primitive

_WHY = ("minijax has no token type: ordered effects are sequenced in the lowering "
        "(jax's tokens sequence infeed/outfeed and send/recv, which minijax lacks)")


def _no_tokens(*args, **params):
    raise NotImplementedError(f"XLA tokens are not supported: {_WHY}")


# Abstract evaluation is where a token would be made.
create_token_p = Primitive("create_token")
create_token_p.def_abstract_eval(_no_tokens)


def create_token(_=None):
    """An XLA token (not supported in minijax: raises NotImplementedError)."""
    raise NotImplementedError(f"lax.create_token: {_WHY}")


after_all_p = Primitive("after_all")
after_all_p.def_abstract_eval(_no_tokens)


def after_all(*operands):
    """Merge XLA tokens (not supported in minijax: raises NotImplementedError)."""
    raise NotImplementedError(f"lax.after_all: {_WHY}")
