"""meshjit.numpy: the jax.numpy subset real numeric code uses (``import meshjit.numpy as jnp``).

Elementwise math with numpy broadcasting and JAX dtype promotion (weakly typed Python scalars),
reductions, shape functions, products, creation and indexing; every function runs eagerly on
concrete arrays and traces under ``meshjit.jit``.
"""

import numpy as _numpy

from meshjit.compiler.frontend.numpy_api.arguments import AxisError as AxisError
from meshjit.compiler.frontend.numpy_api.creation import arange as arange
from meshjit.compiler.frontend.numpy_api.creation import array as array
from meshjit.compiler.frontend.numpy_api.creation import asarray as asarray
from meshjit.compiler.frontend.numpy_api.creation import copy as copy
from meshjit.compiler.frontend.numpy_api.creation import empty as empty
from meshjit.compiler.frontend.numpy_api.creation import empty_like as empty_like
from meshjit.compiler.frontend.numpy_api.creation import eye as eye
from meshjit.compiler.frontend.numpy_api.creation import full as full
from meshjit.compiler.frontend.numpy_api.creation import full_like as full_like
from meshjit.compiler.frontend.numpy_api.creation import identity as identity
from meshjit.compiler.frontend.numpy_api.creation import linspace as linspace
from meshjit.compiler.frontend.numpy_api.creation import ones as ones
from meshjit.compiler.frontend.numpy_api.creation import ones_like as ones_like
from meshjit.compiler.frontend.numpy_api.creation import tri as tri
from meshjit.compiler.frontend.numpy_api.creation import tril as tril
from meshjit.compiler.frontend.numpy_api.creation import triu as triu
from meshjit.compiler.frontend.numpy_api.creation import zeros as zeros
from meshjit.compiler.frontend.numpy_api.creation import zeros_like as zeros_like
from meshjit.compiler.frontend.numpy_api.convolution import convolve as convolve
from meshjit.compiler.frontend.numpy_api.convolution import correlate as correlate
from meshjit.compiler.frontend.numpy_api.einsum import einsum as einsum
from meshjit.compiler.frontend.numpy_api.elementwise import abs as abs
from meshjit.compiler.frontend.numpy_api.elementwise import absolute as absolute
from meshjit.compiler.frontend.numpy_api.elementwise import add as add
from meshjit.compiler.frontend.numpy_api.elementwise import arctan2 as arctan2
from meshjit.compiler.frontend.numpy_api.elementwise import bitwise_and as bitwise_and
from meshjit.compiler.frontend.numpy_api.elementwise import bitwise_not as bitwise_not
from meshjit.compiler.frontend.numpy_api.elementwise import bitwise_or as bitwise_or
from meshjit.compiler.frontend.numpy_api.elementwise import bitwise_xor as bitwise_xor
from meshjit.compiler.frontend.numpy_api.elementwise import clip as clip
from meshjit.compiler.frontend.numpy_api.elementwise import divide as divide
from meshjit.compiler.frontend.numpy_api.elementwise import equal as equal
from meshjit.compiler.frontend.numpy_api.elementwise import floor_divide as floor_divide
from meshjit.compiler.frontend.numpy_api.elementwise import fmod as fmod
from meshjit.compiler.frontend.numpy_api.elementwise import greater as greater
from meshjit.compiler.frontend.numpy_api.elementwise import greater_equal as greater_equal
from meshjit.compiler.frontend.numpy_api.elementwise import invert as invert
from meshjit.compiler.frontend.numpy_api.elementwise import left_shift as left_shift
from meshjit.compiler.frontend.numpy_api.elementwise import less as less
from meshjit.compiler.frontend.numpy_api.elementwise import less_equal as less_equal
from meshjit.compiler.frontend.numpy_api.elementwise import logical_and as logical_and
from meshjit.compiler.frontend.numpy_api.elementwise import logical_not as logical_not
from meshjit.compiler.frontend.numpy_api.elementwise import logical_or as logical_or
from meshjit.compiler.frontend.numpy_api.elementwise import logical_xor as logical_xor
from meshjit.compiler.frontend.numpy_api.elementwise import maximum as maximum
from meshjit.compiler.frontend.numpy_api.elementwise import minimum as minimum
from meshjit.compiler.frontend.numpy_api.elementwise import mod as mod
from meshjit.compiler.frontend.numpy_api.elementwise import multiply as multiply
from meshjit.compiler.frontend.numpy_api.elementwise import negative as negative
from meshjit.compiler.frontend.numpy_api.elementwise import not_equal as not_equal
from meshjit.compiler.frontend.numpy_api.elementwise import positive as positive
from meshjit.compiler.frontend.numpy_api.elementwise import power as power
from meshjit.compiler.frontend.numpy_api.elementwise import reciprocal as reciprocal
from meshjit.compiler.frontend.numpy_api.elementwise import remainder as remainder
from meshjit.compiler.frontend.numpy_api.elementwise import right_shift as right_shift
from meshjit.compiler.frontend.numpy_api.elementwise import sign as sign
from meshjit.compiler.frontend.numpy_api.elementwise import square as square
from meshjit.compiler.frontend.numpy_api.elementwise import subtract as subtract
from meshjit.compiler.frontend.numpy_api.elementwise import true_divide as true_divide
from meshjit.compiler.frontend.numpy_api.elementwise import where as where
from meshjit.compiler.frontend.numpy_api.elementwise_math import arccos as arccos
from meshjit.compiler.frontend.numpy_api.elementwise_math import arcsin as arcsin
from meshjit.compiler.frontend.numpy_api.elementwise_math import arctan as arctan
from meshjit.compiler.frontend.numpy_api.elementwise_math import around as around
from meshjit.compiler.frontend.numpy_api.elementwise_math import cbrt as cbrt
from meshjit.compiler.frontend.numpy_api.elementwise_math import ceil as ceil
from meshjit.compiler.frontend.numpy_api.elementwise_math import cos as cos
from meshjit.compiler.frontend.numpy_api.elementwise_math import cosh as cosh
from meshjit.compiler.frontend.numpy_api.elementwise_math import exp as exp
from meshjit.compiler.frontend.numpy_api.elementwise_math import exp2 as exp2
from meshjit.compiler.frontend.numpy_api.elementwise_math import expm1 as expm1
from meshjit.compiler.frontend.numpy_api.elementwise_math import fix as fix
from meshjit.compiler.frontend.numpy_api.elementwise_math import floor as floor
from meshjit.compiler.frontend.numpy_api.elementwise_math import isfinite as isfinite
from meshjit.compiler.frontend.numpy_api.elementwise_math import isinf as isinf
from meshjit.compiler.frontend.numpy_api.elementwise_math import isnan as isnan
from meshjit.compiler.frontend.numpy_api.elementwise_math import log as log
from meshjit.compiler.frontend.numpy_api.elementwise_math import log1p as log1p
from meshjit.compiler.frontend.numpy_api.elementwise_math import log2 as log2
from meshjit.compiler.frontend.numpy_api.elementwise_math import log10 as log10
from meshjit.compiler.frontend.numpy_api.elementwise_math import logaddexp as logaddexp
from meshjit.compiler.frontend.numpy_api.elementwise_math import rint as rint
from meshjit.compiler.frontend.numpy_api.elementwise_math import round as round
from meshjit.compiler.frontend.numpy_api.elementwise_math import sin as sin
from meshjit.compiler.frontend.numpy_api.elementwise_math import sinh as sinh
from meshjit.compiler.frontend.numpy_api.elementwise_math import sqrt as sqrt
from meshjit.compiler.frontend.numpy_api.elementwise_math import tan as tan
from meshjit.compiler.frontend.numpy_api.elementwise_math import tanh as tanh
from meshjit.compiler.frontend.numpy_api.elementwise_math import trunc as trunc
from meshjit.compiler.frontend.numpy_api.indexing import (
    NonConcreteBooleanIndexError as NonConcreteBooleanIndexError,
)
from meshjit.compiler.frontend.numpy_api.linalg import dot as dot
from meshjit.compiler.frontend.numpy_api.linalg import inner as inner
from meshjit.compiler.frontend.numpy_api.linalg import matmul as matmul
from meshjit.compiler.frontend.numpy_api.linalg import outer as outer
from meshjit.compiler.frontend.numpy_api.linalg import tensordot as tensordot
from meshjit.compiler.frontend.numpy_api.linalg import vdot as vdot
from meshjit.compiler.frontend.numpy_api.reductions import all as all
from meshjit.compiler.frontend.numpy_api.reductions import allclose as allclose
from meshjit.compiler.frontend.numpy_api.reductions import amax as amax
from meshjit.compiler.frontend.numpy_api.reductions import amin as amin
from meshjit.compiler.frontend.numpy_api.reductions import any as any
from meshjit.compiler.frontend.numpy_api.reductions import argmax as argmax
from meshjit.compiler.frontend.numpy_api.reductions import argmin as argmin
from meshjit.compiler.frontend.numpy_api.reductions import argsort as argsort
from meshjit.compiler.frontend.numpy_api.reductions import array_equal as array_equal
from meshjit.compiler.frontend.numpy_api.reductions import cumprod as cumprod
from meshjit.compiler.frontend.numpy_api.reductions import cumsum as cumsum
from meshjit.compiler.frontend.numpy_api.reductions import isclose as isclose
from meshjit.compiler.frontend.numpy_api.reductions import max as max
from meshjit.compiler.frontend.numpy_api.reductions import mean as mean
from meshjit.compiler.frontend.numpy_api.reductions import min as min
from meshjit.compiler.frontend.numpy_api.reductions import prod as prod
from meshjit.compiler.frontend.numpy_api.reductions import sort as sort
from meshjit.compiler.frontend.numpy_api.reductions import std as std
from meshjit.compiler.frontend.numpy_api.reductions import sum as sum
from meshjit.compiler.frontend.numpy_api.reductions import var as var
from meshjit.compiler.frontend.numpy_api.scalar_types import bool_ as bool_
from meshjit.compiler.frontend.numpy_api.search import searchsorted as searchsorted
from meshjit.compiler.frontend.numpy_api.scalar_types import float32 as float32
from meshjit.compiler.frontend.numpy_api.scalar_types import float64 as float64
from meshjit.compiler.frontend.numpy_api.scalar_types import int32 as int32
from meshjit.compiler.frontend.numpy_api.scalar_types import int64 as int64
from meshjit.compiler.frontend.numpy_api.shape_ops import broadcast_arrays as broadcast_arrays
from meshjit.compiler.frontend.numpy_api.shape_ops import broadcast_to as broadcast_to
from meshjit.compiler.frontend.numpy_api.shape_ops import concatenate as concatenate
from meshjit.compiler.frontend.numpy_api.shape_ops import expand_dims as expand_dims
from meshjit.compiler.frontend.numpy_api.shape_ops import flip as flip
from meshjit.compiler.frontend.numpy_api.shape_ops import matrix_transpose as matrix_transpose
from meshjit.compiler.frontend.numpy_api.shape_ops import moveaxis as moveaxis
from meshjit.compiler.frontend.numpy_api.shape_ops import ndim as ndim
from meshjit.compiler.frontend.numpy_api.shape_ops import ravel as ravel
from meshjit.compiler.frontend.numpy_api.shape_ops import repeat as repeat
from meshjit.compiler.frontend.numpy_api.shape_ops import reshape as reshape
from meshjit.compiler.frontend.numpy_api.shape_ops import shape as shape
from meshjit.compiler.frontend.numpy_api.shape_ops import size as size
from meshjit.compiler.frontend.numpy_api.shape_ops import split as split
from meshjit.compiler.frontend.numpy_api.shape_ops import squeeze as squeeze
from meshjit.compiler.frontend.numpy_api.shape_ops import stack as stack
from meshjit.compiler.frontend.numpy_api.shape_ops import swapaxes as swapaxes
from meshjit.compiler.frontend.numpy_api.shape_ops import tile as tile
from meshjit.compiler.frontend.numpy_api.shape_ops import transpose as transpose
from meshjit.compiler.frontend.numpy_api.shifts import diff as diff
from meshjit.compiler.frontend.numpy_api.shifts import pad as pad
from meshjit.compiler.frontend.numpy_api.shifts import roll as roll
from meshjit.compiler.frontend.numpy_api.take import take as take
from meshjit.compiler.frontend.numpy_api.take import put_along_axis as put_along_axis
from meshjit.compiler.frontend.numpy_api.take import take_along_axis as take_along_axis
from meshjit.runtime.array import Array as ndarray  # noqa: F401 - jnp.ndarray is meshjit.Array

dtype = _numpy.dtype
pi = _numpy.pi
e = _numpy.e
inf = _numpy.inf
nan = _numpy.nan
newaxis = None
