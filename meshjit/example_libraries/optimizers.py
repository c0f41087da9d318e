"""``jax.example_libraries.optimizers``: optimizers as ``(init, update, get_params)`` triples.

Each optimizer is written for one array and lifted to pytrees of parameters by the ``optimizer``
decorator; its state is an ``OptimizerState`` pytree (the flattened per-leaf states plus the tree
definitions), so it passes through ``jit``, ``grad`` and ``vmap``. The update arithmetic is
evaluated in the same order as JAX's, so a training loop reproduces JAX's float32 numbers."""

from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

from .. import numpy as jnp
from .. import tree_util

__all__ = [
    "JoinPoint", "Optimizer", "OptimizerState", "adagrad", "adam", "adamax", "clip_grads",
    "constant", "exponential_decay", "inverse_time_decay", "l2_norm", "make_schedule", "momentum",
    "nesterov", "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay",
    "rmsprop", "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state",
]

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Schedule = Callable[[int], Any]


class Optimizer(NamedTuple):
    """The pytree-level triple an optimizer constructor returns."""
    init_fn: Callable
    update_fn: Callable
    params_fn: Callable


def _flatten_states(states):
    """The per-leaf states flattened: (list of leaf lists, list of their tree definitions)."""
    pairs = [tree_util.tree_flatten(s) for s in states]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _unflatten_states(subtree_defs, states_flat):
    return [tree_util.tree_unflatten(d, s) for d, s in zip(subtree_defs, states_flat, strict=True)]


def optimizer(opt_maker):
    """Decorator: lift an optimizer written for single arrays to pytrees of parameters."""
    @functools.wraps(opt_maker)
    def tree_opt_maker(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(params):
            leaves, treedef = tree_util.tree_flatten(params)
            states_flat, subtree_defs = _flatten_states([init(x) for x in leaves])
            return OptimizerState(states_flat, treedef, subtree_defs)

        @functools.wraps(update)
        def tree_update(i, grad_tree, opt_state):
            states_flat, treedef, subtree_defs = opt_state
            grads, grad_def = tree_util.tree_flatten(grad_tree)
            if grad_def != treedef:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that did not match the "
                    f"parameter tree structure with which it was initialized: parameter tree "
                    f"{treedef} and grad tree {grad_def}.")
            states = _unflatten_states(subtree_defs, states_flat)
            new_flat, new_defs = _flatten_states(
                [update(i, g, s) for g, s in zip(grads, states, strict=True)])
            for before, after in zip(subtree_defs, new_defs, strict=True):
                if before != after:
                    raise TypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {before} and output {after}.")
            return OptimizerState(new_flat, treedef, subtree_defs)

        @functools.wraps(get_params)
        def tree_get_params(opt_state):
            states_flat, treedef, subtree_defs = opt_state
            states = _unflatten_states(subtree_defs, states_flat)
            return tree_util.tree_unflatten(treedef, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)
    return tree_opt_maker


def _first(state):
    return state[0]


@optimizer
def sgd(step_size):
    """Stochastic gradient descent: ``x - step_size(i) * g``."""
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


@optimizer
def momentum(step_size: Schedule, mass: float):
    """SGD with (heavy-ball) momentum coefficient ``mass``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
    """SGD with Nesterov momentum coefficient ``mass``."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


def _with_two_moments(x0):
    """An optimizer state of the parameters and two zero moment estimates like them."""
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)


@optimizer
def adagrad(step_size, momentum=0.9):
    """Adagrad (Duchi et al. 2011) with a momentum average of the scaled gradient."""
    step_size = make_schedule(step_size)

    init = _with_two_moments

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        inv_sqrt = jnp.where(g_sq > 0, 1. / jnp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m
    return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    """RMSProp: the step divided by the root of a decaying mean of squared gradients."""
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1. - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq
    return (lambda x0: (x0, jnp.zeros_like(x0))), update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    """RMSProp whose scaled steps accumulate in a momentum term."""
    step_size = make_schedule(step_size)

    init = _with_two_moments

    def update(i, g, state):
        x, avg_sq, mom = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
        return x - mom, avg_sq, mom
    return init, update, _first


def _bias_power(b, m, i):
    """``b ** (i + 1)`` with ``b`` in the moment's dtype (the bias-correction denominator)."""
    return jnp.asarray(b, m.dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """Adam (Kingma & Ba): bias-corrected first and second moment estimates."""
    step_size = make_schedule(step_size)

    init = _with_two_moments

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        mhat = m / (1 - _bias_power(b1, m, i))
        vhat = v / (1 - _bias_power(b2, m, i))
        return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v
    return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    """AdaMax: Adam with an exponentially weighted infinity norm in place of the second moment."""
    step_size = make_schedule(step_size)

    init = _with_two_moments

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        x = x - (step_size(i) / (1 - _bias_power(b1, m, i))) * m / (u + eps)
        return x, m, u
    return init, update, _first


def _axis_view(ndim, v, axis):
    """The 1-d ``v`` indexed so that it broadcasts along ``axis`` of an ``ndim``-d array."""
    index = [None] * ndim
    index[axis] = slice(None)
    return v[tuple(index)]


@optimizer
def sm3(step_size, momentum=0.9):
    """SM3 (Anil et al. 2019): one accumulator vector per axis instead of one per entry."""
    step_size = make_schedule(step_size)

    def init(x0):
        shape = x0.shape
        x0 = jnp.atleast_1d(x0)
        vs = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, jnp.zeros_like(x0), vs, shape

    def update(i, g, state):
        x, m, vs, shape = state
        views = [_axis_view(g.ndim, v, axis) for axis, v in enumerate(vs)]
        accum = functools.reduce(jnp.minimum, views) + jnp.square(g)
        inv_sqrt = jnp.where(accum > 0, 1. / jnp.sqrt(accum), 0)
        m = (1. - momentum) * (g * inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        others = [tuple(a for a in range(x.ndim) if a != j) for j in range(x.ndim)]
        return x, m, [accum.max(axes) for axes in others], shape

    def get_params(state):
        return state[0].reshape(state[3])
    return init, update, get_params


def constant(step_size) -> Schedule:
    """The schedule that is ``step_size`` at every step."""
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """``step_size * decay_rate ** (i / decay_steps)``."""
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``step_size / (1 + decay_rate * t)`` with ``t = i / decay_steps`` (floored if staircase)."""
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From ``step_size`` to ``final_step_size`` over ``decay_steps`` along ``(1 - t) ** power``."""
    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        mult = (1 - step_num / decay_steps) ** power
        return mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any):
    """``values[k]`` where ``k`` counts the boundaries the step is past."""
    boundaries = jnp.array(boundaries)
    values = jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("boundaries and values must be sequences")
    if not boundaries.shape[0] == values.shape[0] - 1:
        raise ValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule) -> Schedule:
    """A callable schedule as given, a scalar as a constant schedule; TypeError otherwise."""
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError(type(scalar_or_schedule))


def l2_norm(tree):
    """The l2 norm of all the leaves of ``tree`` together."""
    leaves = tree_util.tree_leaves(tree)
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree, max_norm):
    """``grad_tree`` scaled down to l2 norm ``max_norm`` when its norm is at least that."""
    norm = l2_norm(grad_tree)
    return tree_util.tree_map(
        lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


class JoinPoint:
    """A leaf of the outer (parameter) tree holding one inner (per-leaf state) tree."""

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """The ``OptimizerState`` as a parameter-shaped tree of ``JoinPoint`` leaves (serialisable)."""
    states_flat, treedef, subtree_defs = opt_state
    subtrees = _unflatten_states(subtree_defs, states_flat)
    return tree_util.tree_unflatten(treedef, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree):
    """Inverse of ``unpack_optimizer_state``."""
    joins, treedef = tree_util.tree_flatten(marked_pytree)
    assert all(isinstance(j, JoinPoint) for j in joins)
    states_flat, subtree_defs = _flatten_states([j.subtree for j in joins])
    return OptimizerState(states_flat, treedef, subtree_defs)
