"""meshjit.jacfwd, jacrev and hessian, as JAX builds them: the JVP (or VJP) of the function
mapped by vmap over the standard basis of its inputs (or outputs). Jacobians are pytrees of
output structure whose leaves are pytrees of input structure, each of shape
``output.shape + input.shape``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import optree

from meshjit.compiler.frontend.operands import dtype_of, is_array_like, shape_of
from meshjit.ir.dtypes import to_numpy

from . import numpy as jnp
from .ad_api import _argnums, _check_callable, jvp, vjp
from .tree_util import _flatten as flatten_tree
from .vmap_api import vmap


def _flatten(tree):
    return flatten_tree(tree)


def _differentiated(args, numbers, single):
    """The differentiated arguments (one, or a tuple) and a function rebuilding the call."""
    if any(number >= len(args) or number < -len(args) for number in numbers):
        raise TypeError(f"differentiating with respect to argnums={numbers} requires at least "
                        f"{max(n + 1 if n >= 0 else -n for n in numbers)} positional arguments, "
                        f"got {len(args)}")
    chosen = tuple(args[number] for number in numbers)

    def with_values(values):
        rebuilt = list(args)
        for number, value in zip(numbers, values):
            rebuilt[number] = value
        return rebuilt

    return (chosen[0] if single else chosen), with_values


_REAL, _COMPLEX = ("f32", "f64", "f16", "bf16"), ("c64", "c128")


def _check_real(leaves, function: str, message: str, allowed=_REAL) -> None:
    for leaf in leaves:
        if not is_array_like(leaf):
            raise TypeError(f"{function} differentiates arrays, got {type(leaf).__name__}: {leaf!r}")
        if dtype_of(leaf).name not in allowed:
            raise TypeError(message.format(to_numpy(dtype_of(leaf).name).name))


def _check_holomorphic(leaves, function: str, what: str) -> None:
    """holomorphic=True: complex inputs and outputs only, as JAX checks them."""
    _check_real(leaves, function, f"{function} with holomorphic=True requires {what} with complex dtype, "
                "but got {}.", _COMPLEX)


def _basis(leaves) -> list:
    """The standard basis over the leaves laid end to end: per leaf ``(total,) + leaf.shape``."""
    sizes = [math.prod(shape_of(leaf)) for leaf in leaves]
    total, offset, pieces = sum(sizes), 0, []
    for leaf, size in zip(leaves, sizes):
        identity = np.eye(total, dtype=to_numpy(dtype_of(leaf).name))[:, offset:offset + size]
        pieces.append(identity.reshape((total,) + tuple(shape_of(leaf))))
        offset += size
    return pieces


def _blocks_forward(stacked, in_leaves) -> list:
    """A tangent stacked over the input basis, ``(total,) + output.shape``, split per input leaf
    into ``output.shape + input.shape``."""
    offset, blocks = 0, []
    trailing = jnp.moveaxis(stacked, 0, -1)
    output_shape = tuple(shape_of(trailing))[:-1]
    for leaf in in_leaves:
        size = math.prod(shape_of(leaf))
        blocks.append(jnp.reshape(trailing[..., offset:offset + size], output_shape + tuple(shape_of(leaf))))
        offset += size
    return blocks


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Jacobian of ``fun`` by forward mode: one JVP per input basis vector, vmapped."""
    _check_callable(fun, "jacfwd")
    numbers, single = _argnums(argnums, "jacfwd")

    @functools.wraps(fun)
    def jacobian(*args, **kwargs):
        chosen, with_values = _differentiated(args, numbers, single)
        in_leaves, in_tree = _flatten(chosen)
        if holomorphic:
            _check_holomorphic(in_leaves, "jacfwd", "inputs")
        else:
            _check_real(in_leaves, "jacfwd", "jacfwd requires real-valued inputs (input dtype that is a "
                        "sub-dtype of np.floating), but got {}. For holomorphic differentiation, pass "
                        "holomorphic=True. For differentiation of non-holomorphic functions involving "
                        "complex inputs or integer inputs, use jax.jvp directly.")
        boxes: dict = {}

        def partial_fun(*values):
            return fun(*with_values(values), **kwargs)

        primals = (chosen,) if single else chosen

        def push_forward(*basis_leaves):
            tangents = optree.tree_unflatten(in_tree, list(basis_leaves))
            tangents = (tangents,) if single else tangents
            if has_aux:
                output, tangent, aux = jvp(partial_fun, primals, tangents, has_aux=True)
            else:
                (output, tangent), aux = jvp(partial_fun, primals, tangents), None
            out_leaves, boxes["out_tree"] = _flatten(output)
            if holomorphic:
                _check_holomorphic(out_leaves, "jacfwd", "outputs")
            return _flatten(tangent)[0], out_leaves, aux

        tangents, outputs, aux = vmap(push_forward, out_axes=(0, None, None))(*_basis(in_leaves))
        jac_leaves = [optree.tree_unflatten(in_tree, _blocks_forward(stacked, in_leaves)) for stacked in tangents]
        result = optree.tree_unflatten(boxes["out_tree"], jac_leaves)
        return (result, aux) if has_aux else result

    return jacobian


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False) -> Callable:
    """The Jacobian of ``fun`` by reverse mode: one VJP per output basis vector, vmapped."""
    _check_callable(fun, "jacrev")
    numbers, single = _argnums(argnums, "jacrev")

    @functools.wraps(fun)
    def jacobian(*args, **kwargs):
        chosen, with_values = _differentiated(args, numbers, single)
        in_leaves, in_tree = _flatten(chosen)
        if holomorphic:
            _check_holomorphic(in_leaves, "jacrev", "inputs")
        elif not allow_int:
            _check_real(in_leaves, "jacrev", "jacrev requires real- or complex-valued inputs (input "
                        "dtype that is a sub-dtype of np.inexact), but got {}. If you want to use "
                        "Boolean- or integer-valued inputs, use vjp or set allow_int to True.", _REAL + _COMPLEX)

        def partial_fun(*values):
            return fun(*with_values(values), **kwargs)

        primals = (chosen,) if single else chosen
        if has_aux:
            output, pullback, aux = vjp(partial_fun, *primals, has_aux=True)
        else:
            output, pullback = vjp(partial_fun, *primals)
        out_leaves, out_tree = _flatten(output)
        if holomorphic:
            _check_holomorphic(out_leaves, "jacrev", "outputs")
        else:
            _check_real(out_leaves, "jacrev", "jacrev requires real-valued outputs (output dtype that is a "
                        "sub-dtype of np.floating), but got {}. For holomorphic differentiation, pass "
                        "holomorphic=True. For differentiation of non-holomorphic functions involving "
                        "complex outputs, use jax.vjp directly.")

        def pull_back(*basis_leaves):
            cotangents = pullback(optree.tree_unflatten(out_tree, list(basis_leaves)))
            return _flatten(cotangents[0] if single else cotangents)[0]

        stacked = vmap(pull_back)(*_basis(out_leaves))
        per_input = [_blocks_reverse(block, out_leaves) for block in stacked]
        jac_leaves = [optree.tree_unflatten(in_tree, [blocks[index] for blocks in per_input])
                      for index in range(len(out_leaves))]
        result = optree.tree_unflatten(out_tree, jac_leaves)
        return (result, aux) if has_aux else result

    return jacobian


def _blocks_reverse(stacked, out_leaves) -> list:
    """A block stacked over the output basis, ``(total,) + input.shape``, split per output leaf
    into ``output.shape + input.shape``."""
    offset, blocks = 0, []
    input_shape = tuple(shape_of(stacked))[1:]
    for leaf in out_leaves:
        size = math.prod(shape_of(leaf))
        blocks.append(jnp.reshape(stacked[offset:offset + size], tuple(shape_of(leaf)) + input_shape))
        offset += size
    return blocks


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False) -> Callable:
    """The Hessian of scalar ``fun``: ``jacfwd(jacrev(fun))``."""
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


jacobian = jacrev  # NOTE: JAX names reverse mode its default Jacobian
