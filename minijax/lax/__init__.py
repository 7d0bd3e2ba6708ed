"""minijax.lax: the primitive operations, mirroring ``jax.lax``."""

from minijax.lax.binary import (add, atan2, bitwise_and, bitwise_or, bitwise_xor, div, eq, ge,
                                gt, le, lt, max, min, mul, ne, nextafter, pow, rem, shift_left,
                                shift_right_arithmetic, shift_right_logical, sub)
from minijax.lax.convert import convert_element_type
from minijax.lax.select import clamp, select, select_n
from minijax.lax.shape import broadcast_in_dim, reshape
from minijax.lax.unary import (abs, bitwise_not, cbrt, ceil, cos, erf, exp, exp2, expm1, floor,
                               imag, integer_pow, is_finite, log, log1p, logistic, neg, real,
                               round, rsqrt, sign, sin, sqrt, tan, tanh)
