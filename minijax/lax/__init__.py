"""minijax.lax: the primitive operations, mirroring ``jax.lax``."""

from minijax.lax.binary import (add, atan2, bitwise_and, bitwise_or, bitwise_xor, div, eq, ge,
                                gt, le, lt, max, min, mul, ne, nextafter, pow, rem, shift_left,
                                shift_right_arithmetic, shift_right_logical, sub)
from minijax.lax.control_flow import cond, fori_loop, map, scan, switch, while_loop
from minijax.lax.bits import bitcast_convert_type, clz, population_count
from minijax.lax.complex import complex, conj  # noqa: A004
from minijax.lax.convert import convert_element_type
from minijax.lax.convolution import (ConvDimensionNumbers,
                                     ConvGeneralDilatedDimensionNumbers, conv,
                                     conv_dimension_numbers, conv_general_dilated,
                                     conv_general_dilated_p, conv_general_permutations,
                                     conv_general_shape_tuple, conv_shape_tuple,
                                     conv_transpose, conv_transpose_shape_tuple,
                                     conv_with_general_padding, padtype_to_pads)
from minijax.lax.cumulative import (associative_scan, cumlogsumexp, cummax, cummin, cumprod,
                                    cumsum)
from minijax.lax.dot import Precision, dot, dot_general
from minijax.lax.fft import FftType, fft
from minijax.lax.misc import stop_gradient
from minijax.lax.sharding import with_sharding_constraint
from minijax.lax.reduce import (argmax, argmin, reduce_and, reduce_max, reduce_min, reduce_or,
                                reduce_prod, reduce_sum)
from minijax.lax.select import clamp, select, select_n
from minijax.lax.shape import (broadcast, broadcast_in_dim, broadcasted_iota, concatenate,
                               expand_dims, iota, pad, reshape, rev, squeeze, transpose)
from minijax.lax.slicing import (GatherDimensionNumbers, GatherScatterMode,
                                 ScatterDimensionNumbers, dynamic_index_in_dim, dynamic_slice,
                                 dynamic_slice_in_dim, dynamic_update_index_in_dim,
                                 dynamic_update_slice, dynamic_update_slice_in_dim, gather,
                                 index_in_dim, scatter, scatter_add, scatter_max, scatter_min,
                                 scatter_mul, slice, slice_in_dim)
from minijax.lax.sort import sort, sort_key_val
from minijax.lax.special import (digamma, erf_inv, erfc, igamma, igamma_grad_a, igammac,
                                 lgamma, polygamma, random_gamma_grad)
from minijax.lax.top_k import top_k
from minijax.lax import prng  # threefry2x32_p, behind minijax.random
from minijax.lax.windowed_reductions import (reduce_window, reduce_window_max_p,
                                            reduce_window_min_p, reduce_window_p,
                                            reduce_window_shape_tuple, reduce_window_sum_p,
                                            select_and_gather_add_p,
                                            select_and_scatter_add_p)
from minijax.lax.unary import (abs, bitwise_not, cbrt, ceil, cos, erf, exp, exp2, expm1, floor,
                               imag, integer_pow, is_finite, log, log1p, logistic, neg, real,
                               round, rsqrt, sign, sin, sqrt, square, tan, tanh)
from minijax.lax.parallel import (all_gather, all_to_all, axis_index, pmax, pmean, pmin,
                                  ppermute, psum, psum_scatter)
from minijax.lax import linalg
from minijax.lax.trigonometric import acos, acosh, asin, asinh, atan, atanh, cosh, sinh
