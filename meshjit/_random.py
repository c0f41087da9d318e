"""meshjit.random's functions (the public module re-exports them): JAX's random functions with
JAX's numbers (threefry2x32, partitionable).

Keys are typed (``key(0)``, dtype ``key<fry>``) or raw ``uint32[2]`` arrays (``PRNGKey(0)``), as
in JAX; functions return keys the way they were given. Each function checks its arguments here
and runs as one jitted program (inlined when called inside jit), whose random bits come from
counters, so under a sharded ``out_shardings`` each device computes only its own block.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from meshjit.compiler.frontend import random as _random
from meshjit.compiler.frontend import sharding_ops
from meshjit.compiler.frontend.numpy_api.arguments import dtype_argument
from meshjit.compiler.frontend.operands import dtype_of, is_array_like, shape_of, x64
from meshjit.compiler.frontend.promotion import default_float, default_int
from meshjit.ir.dtypes import to_numpy
from meshjit.runtime.mesh import AxisType

from ._prng_keys import IMPL_NAME, KEY_DTYPE
from ._prng_keys import PRNGKeyArray as PRNGKeyArray
from ._prng_keys import as_keys, check_key_data, key_argument
from .constraint_api import with_sharding_constraint
from .jit_api import Jitted

_IMPLS = (IMPL_NAME, None)


# --- keys ----------------------------------------------------------------------------------------


def _check_impl(impl, function: str) -> None:
    if impl is KEY_DTYPE or impl in _IMPLS or (isinstance(impl, str) and impl == "key<fry>"):
        return
    if isinstance(impl, str):
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                         f'"{IMPL_NAME}"? (meshjit implements threefry2x32 only; {function})')
    raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation.")


def _seed_array(seed, function: str):
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"{function} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed) if not hasattr(seed, "shape") else len(seed.shape):
        raise TypeError(
            f"{function} accepts a scalar seed, but was given an array of shape "
            f"{tuple(np.shape(seed) if not hasattr(seed, 'shape') else seed.shape)} != (). "
            f"Use jax.vmap for batching"
        )
    if isinstance(seed, bool) or (is_array_like(seed) and dtype_of(seed).name in ("f32", "f64", "bool")):
        raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if isinstance(seed, int):
        # JAX reads a Python seed as int64, narrowed (wrapping) to int32 without x64
        if not -(2**63) <= seed < 2**63:
            raise OverflowError(f"Python int {seed} too large to convert to int64")
        return np.asarray(seed, np.int64) if x64() else np.asarray(seed, np.int64).astype(np.int32)
    if not is_array_like(seed):
        raise TypeError(f"{function} seed must be an integer scalar, got {type(seed).__name__}: {seed!r}")
    return seed


_seed = Jitted(_random.seed)


def key(seed, *, impl=None, dtype=None):
    """A typed PRNG key (a 0-d key array, dtype ``key<fry>``) from an integer seed."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    _check_impl(impl if dtype is None else dtype, "key")
    return PRNGKeyArray(_seed(_seed_array(seed, "key")))


def PRNGKey(seed, *, impl=None):  # noqa: N802 - JAX's name
    """A raw PRNG key: the ``uint32[2]`` key data of ``key(seed)``."""
    _check_impl(impl, "PRNGKey")
    return _seed(_seed_array(seed, "PRNGKey"))


def key_data(keys):
    """The ``uint32`` data underneath a key array (a raw key is returned as is)."""
    data, _ = key_argument("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys over ``uint32`` key data whose trailing dim is 2."""
    if dtype is not None and impl is not None:
        raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.wrap_key_data")
    _check_impl(impl if dtype is None else dtype, "wrap_key_data")
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data expects uint32 key data, got a typed key array")
    data = key_bits_array if hasattr(key_bits_array, "shape") else np.asarray(key_bits_array)
    check_key_data(data)
    return PRNGKeyArray(data)


def key_impl(keys) -> str:
    """The name of the keys' PRNG implementation."""
    key_argument("key_impl", keys, allow_batched=True)
    return IMPL_NAME


def _shape(shape, function: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {shape!r}.")
    try:
        dims = tuple(operator.index(size) for size in shape)
    except TypeError:
        raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got {shape!r}.") from None
    if any(size < 0 for size in dims):
        raise TypeError(f"{function}: shape {dims} has a negative dimension")
    return dims


_split = Jitted(_random.split, static_argnums=(1,))


def split(key, num=2):
    """``num`` new keys (an int, or a shape) from one key."""
    data, typed = key_argument("split", key)
    return as_keys(_split(data, _shape(num, "split")), typed)


_fold_in = Jitted(_random.fold_in)


def fold_in(key, data):
    """A new key from ``key`` and an integer ``data`` (taken as uint32)."""
    key_data_, typed = key_argument("fold_in", key)
    if np.ndim(data) if not hasattr(data, "shape") else len(data.shape):
        raise TypeError(f"fold_in accepts a scalar, but was given an array of shape "
                        f"{np.shape(data)} != (). Use jax.vmap for batching.")
    if isinstance(data, int):
        if not 0 <= data < 2**32:
            raise OverflowError(f"Python integer {data} out of bounds for uint32")
        data = np.uint32(data)
    return as_keys(_fold_in(key_data_, data), typed)


# --- samplers ------------------------------------------------------------------------------------


def _float_dtype(dtype, function: str, kind: str = "float") -> str:
    name = default_float(x64()) if dtype is None else dtype_argument(dtype, function)
    if name not in ("f32", "f64", "f16", "bf16"):
        raise ValueError(f"dtype argument to `{function}` must be a {kind} dtype, got "
                         f"{np.dtype(dtype) if dtype is not None else name}")
    return name


def _constrained(result, out_sharding, function: str):
    """``result`` laid out as ``out_sharding``: a sharding type over Explicit axes, as JAX's
    samplers give it; over a mesh of Auto axes only (a meshjit extension: JAX refuses it) a
    sharding constraint."""
    if out_sharding is None:
        return result
    mesh = getattr(out_sharding, "mesh", None)
    if mesh is not None and AxisType.Explicit not in tuple(mesh.axis_types):
        return with_sharding_constraint(result, out_sharding)
    return sharding_ops.apply_out_sharding(result, out_sharding, function)


def _sampler(function, static_argnums):
    """``function`` jitted, with its last argument the result's sharding (None: unconstrained)."""
    def run(*args):
        *args, out_sharding = args
        return _constrained(function(*args), out_sharding, function.__name__.lstrip("_"))

    run.__name__ = run.__qualname__ = function.__name__
    return Jitted(run, static_argnums=static_argnums)


_bits = _sampler(_random.random_bits, (1, 2, 3))


def bits(key, shape=(), dtype=None, *, out_sharding=None):
    """Uniform random bits as unsigned ints (uint8, uint16, uint32 by default, or uint64 with x64)."""
    data, _ = key_argument("bits", key)
    name = ("u64" if x64() else "u32") if dtype is None else dtype_argument(dtype, "bits")
    if name not in ("u8", "u16", "u32", "u64"):
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {np.dtype(dtype)}")
    return _bits(data, int(name[1:]), _shape(shape, "bits"), out_sharding)


_uniform = _sampler(_random.uniform, (1, 2, 5))


def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0, *, out_sharding=None):
    """Floats in ``[minval, maxval)``."""
    data, _ = key_argument("uniform", key)
    name = _float_dtype(dtype, "uniform")
    return _uniform(data, _shape(shape, "uniform"), name, minval, maxval, out_sharding)


_normal = _sampler(_random.normal, (1, 2, 3))


def normal(key, shape=(), dtype=None, *, out_sharding=None):
    """Standard normal floats."""
    data, _ = key_argument("normal", key)
    name = _float_dtype(dtype, "normal", "float or complex")
    return _normal(data, _shape(shape, "normal"), name, out_sharding)


_truncated_normal = _sampler(_random.truncated_normal, (3, 4, 5))


def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
    """Standard normal floats in the open interval ``(lower, upper)``."""
    data, _ = key_argument("truncated_normal", key)
    name = _float_dtype(dtype, "truncated_normal")
    lower_shape, upper_shape = (tuple(np.shape(bound) if not hasattr(bound, "shape") else bound.shape)
                                for bound in (lower, upper))
    if shape is None:
        try:
            shape = np.broadcast_shapes(lower_shape, upper_shape)
        except ValueError:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={[lower_shape, upper_shape]}") from None
    shape = _shape(shape, "truncated_normal")
    _check_broadcast("truncated_normal", shape, lower_shape, upper_shape)
    return _truncated_normal(data, lower, upper, tuple(shape), name, out_sharding)


def _check_broadcast(function: str, shape, *parameter_shapes) -> None:
    try:
        merged = np.broadcast_shapes(tuple(shape), *parameter_shapes)
    except ValueError:
        shapes = [tuple(shape), *(tuple(item) for item in parameter_shapes)]
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None
    if merged != tuple(shape):
        raise ValueError(
            f"{function} parameter shapes must be broadcast-compatible with shape argument, and the "
            f"result of broadcasting the shapes must equal the shape argument, but got result "
            f"{merged} for shape argument {tuple(shape)}."
        )


_bernoulli = _sampler(_random.bernoulli, (2, 3, 4))


def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
    """Bools that are True with probability ``p``."""
    if mode not in ("high", "low"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    data, _ = key_argument("bernoulli", key)
    if not is_array_like(p):
        p = np.asarray(p)
    if dtype_of(p).name not in ("f32", "f64"):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got "
                        f"{to_numpy(dtype_of(p).name)}.")
    p_shape = tuple(shape_of(p))
    shape = p_shape if shape is None else _shape(shape, "bernoulli")
    _check_broadcast("bernoulli", shape, p_shape)
    return _bernoulli(data, p, tuple(shape), mode, out_sharding)


_randint = _sampler(_random.randint, (1, 4, 5))


def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
    """Integers in ``[minval, maxval)`` (a modulus of two random words, slightly biased when
    the span is not a power of two, as in JAX)."""
    data, _ = key_argument("randint", key)
    name = default_int(x64()) if dtype is None else dtype_argument(dtype, "randint")
    if name not in ("i32", "i64", "u32", "u64"):
        raise TypeError(f"randint only accepts integer dtypes, got {np.dtype(dtype)}")
    shape = _shape(shape, "randint")
    _check_broadcast("randint", shape, np.shape(minval) if not hasattr(minval, "shape") else minval.shape,
                     np.shape(maxval) if not hasattr(maxval, "shape") else maxval.shape)
    return _randint(data, shape, minval, maxval, name, out_sharding)


def _gumbel_mode(mode) -> str:
    mode = "low" if mode is None else mode
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode} (meshjit has 'low' and 'high')")
    return mode


_gumbel = _sampler(_random.gumbel, (1, 2, 3, 4))


def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
    """Gumbel-distributed floats."""
    data, _ = key_argument("gumbel", key)
    name = _float_dtype(dtype, "gumbel")
    return _gumbel(data, _shape(shape, "gumbel"), name, _gumbel_mode(mode), out_sharding)


_exponential = _sampler(_random.exponential, (1, 2, 3))


def exponential(key, shape=(), dtype=None, *, out_sharding=None):
    """Exponentially distributed floats (rate 1)."""
    data, _ = key_argument("exponential", key)
    name = _float_dtype(dtype, "exponential")
    return _exponential(data, _shape(shape, "exponential"), name, out_sharding)


_categorical = _sampler(_random.categorical, (2, 3, 4, 5, 6))


def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None, *, out_sharding=None):
    """Category indices drawn with probabilities ``softmax(logits, axis)``."""
    data, _ = key_argument("categorical", key)
    logits_shape = tuple(shape_of(logits)) if is_array_like(logits) else np.shape(logits)
    if not logits_shape:
        raise ValueError("categorical: logits must have at least one dim")
    axis = operator.index(axis)
    if not -len(logits_shape) <= axis < len(logits_shape):
        raise ValueError(f"categorical: axis {axis} is out of bounds for logits of shape {logits_shape}")
    batch_shape = logits_shape[: axis % len(logits_shape)] + logits_shape[axis % len(logits_shape) + 1:]
    shape = batch_shape if shape is None else _shape(shape, "categorical")
    if shape[len(shape) - len(batch_shape):] != batch_shape or len(shape) < len(batch_shape):
        _check_broadcast("categorical", shape, batch_shape)
    logits = logits if is_array_like(logits) else np.asarray(logits, np.float32)
    return _categorical(data, logits, axis, tuple(shape), bool(replace), _gumbel_mode(mode), out_sharding)


# NOTE: x (argument 1) is an array here, traced; the integer case is _permutation_of_range.
_permutation = _sampler(_random.permutation, (2, 3, 4))


def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
    """A shuffled ``arange(x)`` for an int ``x``, else ``x`` shuffled along ``axis``."""
    data, _ = key_argument("permutation", key)
    if not is_array_like(x):
        x = np.asarray(x)
    rank = len(shape_of(x))
    if not rank:
        if dtype_of(x).name not in ("i32", "i64", "u32", "u64"):
            raise TypeError("x must be an integer or at least 1-dimensional")
        count = _concrete_int(x, "argument x of jax.random.permutation()")
        return _permutation_of_range(data, count, out_sharding)
    axis = operator.index(axis)
    if not -rank <= axis < rank:
        raise ValueError(f"permutation: axis {axis} is out of bounds for an array of rank {rank}")
    return _permutation(data, x, axis % rank, bool(independent), out_sharding)


def _concrete_int(value, what: str) -> int:
    try:
        return operator.index(value) if isinstance(value, (int, np.integer)) else int(np.asarray(value))
    except TypeError:
        raise TypeError(f"Abstract tracer value encountered where concrete value is expected: {what}") from None


def _shuffled_range(key, count):
    return _random.permutation(key, count, 0, False)


_permutation_of_range = _sampler(_shuffled_range, (1, 2))


def _choice_from_range(key, count, shape, replace, p, mode):
    return _random.choice(key, count, shape, replace, p, 0, mode)


_choice_range = Jitted(_choice_from_range, static_argnums=(1, 2, 3, 5))
_choice_array = Jitted(_random.choice, static_argnums=(2, 3, 5, 6))


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    """Samples from ``a`` (or ``arange(a)`` for an int) along ``axis``, with or without
    replacement, uniform or with probabilities ``p``."""
    data, _ = key_argument("choice", key)
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
    shape = _shape(shape, "choice")
    array_shape = tuple(shape_of(a)) if is_array_like(a) else np.shape(a)
    if array_shape:
        axis = operator.index(axis) % len(array_shape)
        count = array_shape[axis]
        population = a if is_array_like(a) else np.asarray(a)
    else:
        count = _concrete_int(a, "The error occurred in jax.random.choice()")
        population = count
    draws = math.prod(shape)
    if draws and count <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and draws > count:
        raise ValueError(f"Cannot take a larger sample (size {draws}) than population (size {count}) "
                         f"when 'replace=False'")
    if p is not None and tuple(np.shape(p) if not hasattr(p, "shape") else p.shape) != (count,):
        raise ValueError(
            f"p must be None or a 1D vector with the same size as a.shape[axis]. p has shape "
            f"{tuple(np.shape(p))} and a.shape[axis] is {count}.")
    mode = _gumbel_mode(mode)
    if array_shape:
        return _choice_array(data, population, shape, bool(replace), p, axis, mode)
    return _choice_range(data, population, shape, bool(replace), p, mode)
