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
from minijax.lax.special import (betainc, digamma, erf_inv, erfc, igamma, igamma_grad_a,
                                 igamma_grad_a_p, igammac, lgamma, polygamma, polygamma_p,
                                 random_gamma_grad, regularized_incomplete_beta_p, zeta, zeta_p)
from minijax.lax.bessel import bessel_i0e, bessel_i0e_p, bessel_i1e, bessel_i1e_p
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
from minijax.lax.approx_top_k import approx_max_k, approx_min_k, approx_top_k_p
from minijax.lax.composite import composite
from minijax.lax.conv_patches import conv_general_dilated_local, conv_general_dilated_patches
from minijax.lax.copy_op import copy_p
from minijax.lax.dim_as_value import dim_as_value, dim_as_value_p  # noqa: F401
from minijax.lax.dce_sink import dce_sink, dce_sink_p
from minijax.lax.device_put_op import device_put_p
from minijax.lax.dot_algorithm import (AccuracyMode, DotAlgorithm, DotAlgorithmPreset,
                                       DotDimensionNumbers, PrecisionLike,
                                       RaggedDotDimensionNumbers, RandomAlgorithm,
                                       RoundingMethod, Tolerance)
from minijax.lax.generic_reduce import reduce, reduce_p  # noqa: A004  (the function, as jax's)
from minijax.lax.linear_solve import custom_linear_solve, linear_solve_p
from minijax.lax.mulhi import mulhi, mulhi_p
from minijax.lax.optimization_barrier import optimization_barrier, optimization_barrier_p
from minijax.lax.parallel_extras import (pbroadcast, pcast, precv, psend, pshuffle, pswapaxes,
                                         ragged_all_to_all, ragged_all_to_all_p)
from minijax.lax.platform_dependent import platform_dependent
from minijax.lax.ragged_dot import ragged_dot, ragged_dot_general
from minijax.lax.reduce_precision import reduce_precision, reduce_precision_p
from minijax.lax.root_solve import custom_root
from minijax.lax.reduce_xor import reduce_xor, reduce_xor_p
from minijax.lax.rng_bit_generator import rng_bit_generator, rng_bit_generator_p
from minijax.lax.rng_uniform import rng_uniform, rng_uniform_p
from minijax.lax.scaled_dot import scaled_dot
from minijax.lax.scatter_sub import scatter_sub, scatter_sub_p
from minijax.lax.split import split, split_p
from minijax.lax.stack import stack, stack_p
from minijax.lax.staging import stage, stage_p
from minijax.lax.tile import tile, tile_p
from minijax.lax.tokens import after_all, after_all_p, create_token, create_token_p
from minijax.lax.total_order import eq_to_p, le_to_p, lt_to_p
from minijax.lax.unstack import unstack, unstack_p
from minijax.lax.utilities import (axis_size, batch_matmul, broadcast_like, broadcast_shapes,
                                   broadcast_to_rank, collapse, dtype, empty, full, full_like,
                                   index_take, reciprocal, scatter_apply, shape_as_value)
from minijax.lax.primitive_names import (abs_p, acos_p, acosh_p, add_p, all_gather_p, all_to_all_p,
                                        and_p, argmax_p, argmin_p, asin_p, asinh_p, atan2_p,
                                        atan_p, atanh_p, axis_index_p, bitcast_convert_type_p,
                                        broadcast_in_dim_p, cbrt_p, ceil_p, clamp_p, clz_p,
                                        complex_p, concatenate_p, cond_p, conj_p,
                                        convert_element_type_p, cos_p, cosh_p, cumlogsumexp_p,
                                        cummax_p, cummin_p, cumprod_p, cumsum_p, digamma_p, div_p,
                                        dot_general_p, dynamic_slice_p, dynamic_update_slice_p,
                                        eq_p, erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p,
                                        fft_p, floor_p, gather_p, ge_p, gt_p, igamma_p, igammac_p,
                                        imag_p, integer_pow_p, iota_p, is_finite_p, le_p, lgamma_p,
                                        log1p_p, log_p, logistic_p, lt_p, max_p, min_p, mul_p,
                                        ne_p, neg_p, nextafter_p, not_p, or_p, pad_p, pmax_p,
                                        pmin_p, population_count_p, pow_p, ppermute_p, psum_p,
                                        real_p, reduce_and_p, reduce_max_p, reduce_min_p,
                                        reduce_or_p, reduce_prod_p, reduce_sum_p, rem_p, reshape_p,
                                        rev_p, round_p, rsqrt_p, scan_p, scatter_add_p,
                                        scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p,
                                        select_and_scatter_p, select_n_p, sharding_constraint_p,
                                        shift_left_p, shift_right_arithmetic_p,
                                        shift_right_logical_p, sign_p, sin_p, sinh_p, slice_p,
                                        sort_p, sqrt_p, square_p, squeeze_p, stop_gradient_p,
                                        sub_p, tan_p, tanh_p, top_k_p, transpose_p, while_p, xor_p)
