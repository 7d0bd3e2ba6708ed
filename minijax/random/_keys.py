"""PRNG keys: raw ``uint32[2]`` keys, typed key arrays, and the Threefry key operations.

A key is two uint32 words. ``PRNGKey(seed)`` returns that raw array (so old code
that treats keys as arrays keeps working); ``key(seed)`` returns a *typed* key
array, a ``PRNGKeyArray`` whose dtype is ``key<fry>`` and whose shape leaves out
the trailing 2 (``key_data`` gives the words back). Every sampler takes either
kind; ``split`` and ``fold_in`` return the kind they were given.

A ``PRNGKeyArray`` is a pytree leaf (``minijax.tree_util``), as in jax; the
transformations flatten with ``minijax._pytree``, where it is a node over its uint32
words, so it passes through ``jit``, ``vmap``, ``grad``, ``lax.scan`` and friends as
that array and comes back out as a key.

The operations follow jax's default ``jax_threefry_partitionable=True`` streams:

- ``random_bits`` and ``split`` hash the 64-bit row-major index of each output
  element, as the counter pair ``(high word, low word)``; bits of width 32 are
  the xor of the two output words, 8/16 bits truncate that, 64 bits join them.
- ``fold_in(key, d)`` hashes the counter pair ``(0, d)``.
- ``seed`` puts the high and low 32 bits of the integer seed in the two words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from minijax import lax
from minijax.core import aval, dtypes
from minijax.core.trace import Tracer, get_aval
from minijax.lax.prng import iota_2x32_shape, threefry2x32, threefry_2x32
from minijax.runtime.array import Array
from minijax.runtime.basearray import Array as ArrayType
from minijax.stages.jit import jit
from minijax.runtime.pytree import transform_registry

_U32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
               64: np.dtype(np.uint64)}


# ---- implementations and key dtypes -----------------------------------------------------------

class PRNGImpl:
    """A PRNG implementation: its name, short tag and the shape of one key's data."""

    __slots__ = ("name", "tag", "key_shape")

    def __init__(self, name: str, tag: str, key_shape: tuple[int, ...]):
        self.name = name
        self.tag = tag
        self.key_shape = key_shape

    def __repr__(self) -> str:
        return f"PRNGImpl({self.name!r})"


THREEFRY = PRNGImpl("threefry2x32", "fry", (2,))
# Implementations jax has that minijax does not (yet).
_OTHER_JAX_IMPLS = ("rbg", "unsafe_rbg", "philox2x32", "philox4x32", "threefry4x32")


class KeyTy(dtypes.ExtendedDType):
    """The dtype of typed key arrays, ``key<fry>`` for Threefry keys."""

    __slots__ = ("_impl",)
    type = dtypes.prng_key  # its scalar type, as jax's (issubdtype reads it)

    def __init__(self, impl: PRNGImpl):
        self._impl = impl

    @property
    def name(self) -> str:
        return f"key<{self._impl.tag}>"

    @property
    def itemsize(self) -> int:
        return math.prod(self._impl.key_shape) * 4

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def _physical_struct(self, struct: aval.ShapeDtypeStruct) -> PRNGKeyArray:
        """What the transformations trace for a ``ShapeDtypeStruct`` of this dtype: a key
        array over a struct of its uint32 words."""
        return PRNGKeyArray(self._impl, aval.ShapeDtypeStruct(
            (*struct.shape, *self._impl.key_shape), _U32))

    @property
    def element_shape(self) -> tuple[int, ...]:
        return self._impl.key_shape

    def to_physical(self, x):
        return x._base

    def from_physical(self, data):
        return PRNGKeyArray(self._impl, data)

    def __eq__(self, other) -> bool:
        return type(other) is KeyTy and self._impl is other._impl

    def __hash__(self) -> int:
        return hash((KeyTy, self._impl.name))


def resolve_impl(spec) -> PRNGImpl:
    """The implementation named by ``spec`` (None: the default, threefry2x32)."""
    if spec is None or spec is THREEFRY:
        return THREEFRY
    if isinstance(spec, KeyTy):
        return spec._impl
    if isinstance(spec, str):
        if spec == THREEFRY.name:
            return THREEFRY
        if spec in _OTHER_JAX_IMPLS:
            raise NotImplementedError(f"PRNG implementation {spec!r} is not available in "
                                      f"minijax; only 'threefry2x32' is")
        raise ValueError(f'unrecognized PRNG implementation "{spec}". Did you mean one of: '
                         f'"threefry2x32"?')
    raise TypeError(f"unrecognized type {type(spec)} for specifying PRNG implementation.")


# ---- typed key arrays -------------------------------------------------------------------------

class PRNGKeyArray:
    """An array of PRNG keys: shape ``base.shape[:-1]``, dtype ``key<fry>``.

    Keys support indexing, iteration and reshaping, not arithmetic. Use
    ``minijax.random.key_data`` for the underlying uint32 words.
    """

    __slots__ = ("_impl", "_base")
    __array_priority__ = 100

    def __init__(self, impl: PRNGImpl, base):
        self._impl = impl
        self._base = base

    # -- array-like attributes
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._base.shape[:-len(self._impl.key_shape)])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> KeyTy:
        return KeyTy(self._impl)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def _typeof(self) -> aval.ShapedArray:
        """``minijax.typeof(keys)``: ``ShapedArray(key<fry>[*shape])``, as in jax."""
        return aval.ShapedArray(self.shape, self.dtype)

    @property
    def sharding(self):
        return getattr(self._base, "sharding", None)

    @property
    def nbytes(self) -> int:
        return self.itemsize * self.size

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (PRNGKeyArray(self._impl, self._base[i]) for i in range(self.shape[0]))

    def __getitem__(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        # A trailing full slice keeps the key words out of the indexing (also after `...`).
        return PRNGKeyArray(self._impl, self._base[(*idx, slice(None))])

    def reshape(self, *shape, order: str = "C"):
        if order != "C":
            raise NotImplementedError("key arrays reshape in C order only")
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        if -1 in shape:
            known = math.prod(d for d in shape if d != -1)
            shape = tuple(self.size // known if d == -1 else d for d in shape)
        return PRNGKeyArray(self._impl, self._base.reshape(*shape, *self._impl.key_shape))

    def ravel(self, order: str = "C"):
        return self.reshape(self.size, order=order)

    flatten = ravel

    def squeeze(self, axis=None):
        if axis is None:
            axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(lax.shape.canonicalize_axis(a, self.ndim) for a in axes)
        return PRNGKeyArray(self._impl, lax.squeeze(self._base, axes))

    def transpose(self, *axes):
        if not axes or axes == (None,):
            axes = tuple(reversed(range(self.ndim)))
        elif len(axes) == 1 and not isinstance(axes[0], int):
            axes = tuple(axes[0])
        axes = tuple(lax.shape.canonicalize_axis(a, self.ndim) for a in axes)
        return PRNGKeyArray(self._impl, lax.transpose(self._base, (*axes, self.ndim)))

    @property
    def T(self):
        return self.transpose()

    def swapaxes(self, axis1: int, axis2: int):
        perm = list(range(self.ndim))
        a, b = (lax.shape.canonicalize_axis(x, self.ndim) for x in (axis1, axis2))
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(perm)

    def copy(self):
        return PRNGKeyArray(self._impl, self._base.copy() if hasattr(self._base, "copy")
                            else self._base)

    def block_until_ready(self):
        if hasattr(self._base, "block_until_ready"):
            self._base.block_until_ready()
        return self

    # -- comparisons: ``==`` and ``!=`` compare whole keys (jnp.equal), the ordered ones
    # refuse (as jax's key arrays)
    def _compare(name):  # noqa: N805
        def method(self, other):
            if not isinstance(other, PRNGKeyArray) and not _is_arraylike(other):
                if type(other) in (dict, list, set, tuple):
                    raise TypeError(f"unsupported operand type(s) for ==: "
                                    f"{type(self).__name__!r} and {type(other).__name__!r}")
                return NotImplemented
            import minijax.numpy as jnp
            return getattr(jnp, name)(self, other)
        method.__name__ = f"__{name}__"
        return method

    __eq__ = _compare("equal")
    __ne__ = _compare("not_equal")
    __lt__ = _compare("less")
    __le__ = _compare("less_equal")
    __gt__ = _compare("greater")
    __ge__ = _compare("greater_equal")
    del _compare

    # -- what keys refuse
    def __array__(self, dtype=None, copy=None):
        raise TypeError("minijax array with PRNGKey dtype cannot be converted to a NumPy array."
                        " Use minijax.random.key_data(arr) if you wish to extract the underlying"
                        " integer array.")

    def __bool__(self):
        raise TypeError("key array cannot be converted to boolean.")

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._base}"


# A leaf of ``minijax.tree_util`` pytrees (as in jax), and a node over its words in the
# registry the transformations flatten with (``minijax._pytree``).
def _unflatten_key(impl: PRNGImpl, children):
    (base,) = children
    if getattr(base, "dtype", None) == dtypes.float0:
        # A key's tangent/cotangent (grad with allow_int=True): float0 of the key's shape,
        # as in jax, not a key over float0 words.
        return np.zeros(tuple(base.shape)[:-len(impl.key_shape)], dtypes.float0)
    return PRNGKeyArray(impl, base)


transform_registry.register_node(PRNGKeyArray, lambda k: ((k._base,), k._impl), _unflatten_key)


def is_typed_key(x) -> bool:
    return isinstance(x, PRNGKeyArray)


# ---- checking keys ----------------------------------------------------------------------------

def _is_arraylike(x) -> bool:
    return isinstance(x, (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex))


def check_key_data(impl: PRNGImpl, data) -> None:
    """Raise TypeError unless ``data`` can hold keys of ``impl`` (uint32[..., 2])."""
    if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
        raise TypeError(f"minijax encountered invalid PRNG key data: expected key_data to have "
                        f"ndim, shape, and dtype attributes. Got {data}")
    if data.ndim < 1:
        raise TypeError(f"minijax encountered invalid PRNG key data: expected key_data.ndim >= "
                        f"1; got ndim={data.ndim}")
    n = len(impl.key_shape)
    if tuple(data.shape[-n:]) != impl.key_shape:
        raise TypeError(f"minijax encountered invalid PRNG key data: expected key_data.shape to "
                        f"end with {impl.key_shape}; got shape={tuple(data.shape)} for "
                        f"impl={impl.name}")
    if data.dtype != _U32:
        raise TypeError(f"minijax encountered invalid PRNG key data: expected key_data.dtype = "
                        f"uint32; got dtype={data.dtype}")


def check_prng_key(name: str, key, *, allow_batched: bool = False):
    """``(data, typed)``: the uint32[..., 2] words of ``key`` and whether it was typed.

    Raw keys are checked like jax does (TypeError for the wrong type, shape or dtype);
    unless ``allow_batched``, a key array of more than one key is a ValueError.
    """
    if isinstance(key, PRNGKeyArray):
        data, typed, shape = key._base, True, key.shape
    elif _is_arraylike(key):
        check_key_data(THREEFRY, key)
        data, typed, shape = key, False, tuple(key.shape)
    else:
        raise TypeError(f"unexpected PRNG key type {type(key)}")
    if not allow_batched and get_aval(data).ndim > 1:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shape} != (). Use minijax.vmap for batching.")
    return data, typed


def wrap_if(typed: bool, data):
    """``data`` as a typed key array if ``typed`` (the caller's kind of key), else as is."""
    return PRNGKeyArray(THREEFRY, data) if typed else data


# ---- the Threefry key operations (on the words of one key) ------------------------------------

def _words(key):
    """The two words of a uint32[2] key as rank-0 arrays."""
    return (lax.reshape(lax.slice(key, (0,), (1,)), ()),
            lax.reshape(lax.slice(key, (1,), (2,)), ()))


def _seed_words(seed):
    """uint32[2] key of an integer scalar: the seed's high and low 32 bits (a seed of 32 bits
    or fewer has a zero high word; negative seeds are sign-extended to their width)."""
    dt = get_aval(seed).dtype
    if dt.itemsize == 8:
        hi = lax.convert_element_type(lax.shift_right_logical(seed, np.asarray(32, dt)), _U32)
        lo = lax.convert_element_type(lax.bitwise_and(seed, np.asarray(0xFFFFFFFF, dt)), _U32)
    else:
        hi = np.zeros((), _U32)
        lo = lax.convert_element_type(seed, _U32)
    return lax.concatenate([lax.broadcast_in_dim(hi, (1,), ()),
                            lax.broadcast_in_dim(lo, (1,), ())], 0)


@jit
def _seed(seed):
    return _seed_words(seed)


def _split_impl(key, shape: tuple[int, ...]):
    k1, k2 = _words(key)
    hi, lo = iota_2x32_shape(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    nd = len(shape)
    return lax.concatenate([lax.expand_dims(b1, (nd,)), lax.expand_dims(b2, (nd,))], nd)


_split = jit(_split_impl, static_argnums=1)


@jit
def _fold_in(key, data):
    return threefry_2x32(key, _seed_words(data))


def random_bits_impl(key, bit_width: int, shape: tuple[int, ...]):
    """``bit_width``-bit unsigned random bits of ``shape`` from one uint32[2] key."""
    if math.prod(shape) > 2 ** 64:
        raise NotImplementedError("random bits array of size exceeding 2 ** 64")
    k1, k2 = _words(key)
    hi, lo = iota_2x32_shape(shape)
    b1, b2 = threefry2x32(k1, k2, hi, lo)
    dt = UINT_DTYPES[bit_width]
    if bit_width == 64:
        wide1, wide2 = lax.convert_element_type(b1, dt), lax.convert_element_type(b2, dt)
        return lax.bitwise_or(lax.shift_left(wide1, np.asarray(32, dt)), wide2)
    bits = lax.bitwise_xor(b1, b2)
    return bits if bit_width == 32 else lax.convert_element_type(bits, dt)


_random_bits = jit(random_bits_impl, static_argnums=(1, 2))


def random_bits(key, bit_width: int, shape: tuple[int, ...]):
    """Random bits from the words of one key (jitted, like every key operation)."""
    return _random_bits(key, bit_width, shape)


def split_data(key, shape: tuple[int, ...]):
    """uint32[*shape, 2]: new keys from the words of one key."""
    return _split(key, shape)


# ---- the public key functions -----------------------------------------------------------------

def canonicalize_shape(shape, what: str = "shape") -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    out = aval.canonicalize_shape(shape, what)
    if any(d < 0 for d in out):
        raise ValueError(f"{what} must not have negative dimensions, got {out}")
    return out


def _seed_array(seed, ctor: str):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not isinstance(seed, (Array, Tracer)) else seed.ndim:
        raise TypeError(f"{ctor} accepts a scalar seed, but was given an array of shape "
                        f"{np.shape(seed) if not hasattr(seed, 'shape') else seed.shape} != (). "
                        f"Use minijax.vmap for batching")
    if isinstance(seed, (Array, Tracer)):
        arr = seed
    else:
        if isinstance(seed, int):
            seed = np.int64(seed)  # (OverflowError beyond 64 bits, as in jax)
        arr = np.asarray(seed)
        if np.issubdtype(arr.dtype, np.integer):
            arr = arr.astype(dtypes.canonicalize(arr.dtype))  # wraps to 32 bits without x64
    dt = get_aval(arr).dtype
    if not dtypes.is_int(dt):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    return arr


def key(seed, *, impl=None, dtype=None):
    """A typed PRNG key (dtype ``key<fry>``, shape ``()``) from an integer seed.

    >>> k = minijax.random.key(0)
    >>> minijax.random.key_data(k)
    Array([0, 0], dtype=uint32)
    """
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "minijax.random.key")
        impl = dtype
    impl_obj = resolve_impl(impl)
    return PRNGKeyArray(impl_obj, _seed(_seed_array(seed, "key")))


def PRNGKey(seed, *, impl=None):
    """A raw PRNG key: a uint32[2] array holding the seed's high and low 32 bits.

    >>> minijax.random.PRNGKey(42)
    Array([ 0, 42], dtype=uint32)
    """
    resolve_impl(impl)
    return _seed(_seed_array(seed, "PRNGKey"))


def split(key, num: int | Sequence[int] = 2):
    """Split a key into ``num`` new keys (shape ``(num,)``, or ``num`` itself if a tuple)."""
    data, typed = check_prng_key("split", key)
    shape = canonicalize_shape(num if isinstance(num, Sequence) else (num,), "num")
    return wrap_if(typed, split_data(data, shape))


def fold_in(key, data):
    """A new key from ``key`` and an integer ``data`` (converted to uint32)."""
    words, typed = check_prng_key("fold_in", key)
    if np.ndim(data) if not isinstance(data, (Array, Tracer)) else data.ndim:
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{tuple(np.shape(data))} != (). Use minijax.vmap for batching.")
    if isinstance(data, (Array, Tracer)):
        d = lax.convert_element_type(data, _U32)
    else:
        d = np.asarray(data, dtype=_U32)
    return wrap_if(typed, _fold_in(words, d))


def bits(key, shape: Sequence[int] = (), dtype=None, *, out_sharding=None):
    """Random bits of an unsigned integer dtype (default: uint32, uint64 with x64)."""
    words, _ = check_prng_key("bits", key)
    dt = dtypes.default_uint() if dtype is None else dtypes.check_user_dtype(dtype, "bits")
    if not dtypes.is_unsigned(dt):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return random_bits(words, dt.itemsize * 8, canonicalize_shape(shape))


def clone(key):
    """A copy of ``key`` (keys are values in minijax, so this is the key itself)."""
    return key


def key_data(keys):
    """The uint32 words of a key array (shape ``keys.shape + (2,)``)."""
    data, _ = check_prng_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """A typed key array from uint32 words ``key_bits_array`` (last dimension 2)."""
    if dtype is not None:
        if impl is not None:
            raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                             "minijax.random.wrap_key_data")
        impl = dtype
    impl_obj = resolve_impl(impl)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data expects uint32 key data, got a typed key array")
    if not isinstance(key_bits_array, (Array, Tracer, np.ndarray)):
        key_bits_array = np.asarray(key_bits_array)
    check_key_data(impl_obj, key_bits_array)
    return PRNGKeyArray(impl_obj, key_bits_array)


def key_impl(keys) -> str:
    """The name of the PRNG implementation of ``keys`` (``'threefry2x32'``)."""
    check_prng_key("key_impl", keys, allow_batched=True)
    return keys._impl.name if isinstance(keys, PRNGKeyArray) else THREEFRY.name


def key_dtype(impl=None) -> KeyTy:
    """The dtype of typed keys of ``impl`` (default threefry2x32): ``key<fry>``."""
    return KeyTy(resolve_impl(impl))


# Typed key arrays are minijax Arrays, as jax's are jax.Arrays (libraries check
# ``isinstance(key, jax.Array)`` before ``issubdtype(key.dtype, prng_key)``).
ArrayType.register(PRNGKeyArray)
