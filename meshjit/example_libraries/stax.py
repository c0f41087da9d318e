"""``jax.example_libraries.stax``: neural-network layers as ``(init_fun, apply_fun)`` pairs.

``init_fun(rng, input_shape)`` returns ``(output_shape, params)``; ``apply_fun(params, inputs,
**kwargs)`` computes the layer (``rng=`` for Dropout). Combinators (``serial``, ``parallel``,
``shape_dependent``) build networks from layers. Initialisation draws the same keys and
initialisers as JAX's, so a network starts from JAX's parameters, and ``apply_fun`` evaluates
the same operations in the same order."""

from __future__ import annotations

import functools
import math

from .. import lax, random
from .. import numpy as jnp
from ..nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus,
                  standardize)
from ..nn.initializers import glorot_normal, normal, ones, zeros
from ._conv_shapes import (conv_general_shape_tuple, conv_transpose,
                           conv_transpose_shape_tuple, reduce_window_shape_tuple)

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully-connected layer: ``inputs @ W + b``."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape):
    sizes = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
            else next(sizes) for c in rhs_spec]


def _conv_layer(shape_fn, conv_fn, dimension_numbers, out_chan, filter_shape, strides, padding,
                W_init, b_init):
    """The (init_fun, apply_fun) pair shared by the forward and transposed convolutions."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = strides or (1,) * len(filter_shape)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kernel = _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape)
        out_shape = shape_fn(input_shape, kernel, strides, padding, dimension_numbers)
        bias = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        return out_shape, (W_init(k1, kernel), b_init(k2, bias))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return conv_fn(inputs, W, strides, padding, dimension_numbers) + b
    return init_fun, apply_fun


def _forward_conv(inputs, W, strides, padding, dimension_numbers):
    one = (1,) * len(strides)
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers)


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """A convolution layer with the given (lhs, rhs, out) layout strings."""
    return _conv_layer(conv_general_shape_tuple, _forward_conv, dimension_numbers, out_chan,
                       filter_shape, strides, padding, W_init, b_init)


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A transposed-convolution layer with the given (lhs, rhs, out) layout strings."""
    return _conv_layer(conv_transpose_shape_tuple, conv_transpose, dimension_numbers, out_chan,
                       filter_shape, strides, padding, W_init, b_init)


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalise over ``axis`` (batch statistics), then scale by gamma and shift by beta."""
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        return gamma[ed] * z if scale else z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
    return (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _full_window(window_shape, strides, spec):
    """Window and strides with 1s inserted at the batch and channel axes."""
    strides = tuple(strides or (1,) * len(window_shape))
    window_shape = tuple(window_shape)
    axes = (0, len(window_shape) + 1) if spec is None else (spec.index("N"), spec.index("C"))
    for i in sorted(axes):
        window_shape = window_shape[:i] + (1,) + window_shape[i:]
        strides = strides[:i] + (1,) + strides[i:]
    return window_shape, strides


def _pooling_layer(reducer, init_val, rescaler=None):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        """A pooling layer over the spatial axes (NHWC unless ``spec`` says otherwise)."""
        rescale = rescaler(window_shape, strides or (1,) * len(window_shape), padding) \
            if rescaler else None
        window, full_strides = _full_window(window_shape, strides, spec)

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window, full_strides, padding)
            return reduce_window_shape_tuple(input_shape, window, full_strides, pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window, full_strides, padding)
            return rescale(out, inputs, spec) if rescale else out
        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)


def _normalize_by_window_size(dims, strides, padding):
    """Divide a window sum by the number of (unpadded) inputs in each window."""
    def rescale(outputs, inputs, spec):
        axes = (0, inputs.ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))
        spatial = tuple(inputs.shape[i] for i in range(inputs.ndim) if i not in axes)
        one = jnp.ones(spatial, dtype=inputs.dtype)
        sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
        for i in sorted(axes):
            sizes = jnp.expand_dims(sizes, i)
        return outputs / sizes
    return rescale


AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)

Flatten = (lambda rng, input_shape: ((input_shape[0], math.prod(input_shape[1:])), ()),
           lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))
Identity = (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)
FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanOut(num):
    """A layer returning ``num`` copies of its input (a list)."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


def FanInConcat(axis=-1):
    """A layer concatenating its list of inputs along ``axis``."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        first = tuple(input_shape[0])
        return first[:ax] + (size,) + first[ax + 1:], ()
    return init_fun, lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)


def Dropout(rate, mode="train"):
    """In 'train' mode keep each input with probability ``rate`` (scaled by ``1/rate``)."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. That "
                "is, instead of `apply_fun(params, inputs)`, call it like `apply_fun(params, "
                "inputs, rng)` where `rng` is a PRNG key (e.g. from `jax.random.key`).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return (lambda rng, input_shape: (input_shape, ())), apply_fun


def _layer_rngs(kwargs, n):
    rng = kwargs.pop("rng", None)
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
    """The layers applied one after another (params: a list, one entry per layer)."""
    init_funs, apply_funs = zip(*layers, strict=True)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rngs = _layer_rngs(kwargs, len(layers))
        for fun, param, rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The layers applied side by side to a sequence of inputs (one input per layer)."""
    init_funs, apply_funs = zip(*layers, strict=True)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(layers))
        return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rngs = _layer_rngs(kwargs, len(layers))
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built by ``make_layer(input_shape)`` once the input shape is known."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
