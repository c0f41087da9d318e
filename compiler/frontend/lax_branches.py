"""lax's branches: ``cond`` and ``switch``, traced into the ``cond`` region op (one region per
branch) with JAX's semantics, pytrees and errors. Every branch is traced, even when the
predicate is a Python bool, and all must return the same pytree of the same types. Also
``optimization_barrier``, which keeps values from being moved or merged across it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .control_flow_tracing import (
    check_branch_outputs,
    flatten,
    is_eager,
    operand_leaf,
    run_eagerly,
    trace_body,
    type_of,
    unflatten,
    weak_of,
)
from .lax_ops import clamp, convert_element_type, ne
from .operands import as_operand, dtype_of, is_array_like, shape_of
from .trace import Tracer, bind, operand_sharding_type

__all__ = ["cond", "optimization_barrier", "switch"]

_NO_OPERAND = object()


def _operands(operands: tuple, operand) -> tuple:
    if operand is _NO_OPERAND:
        return operands
    if operands:
        raise TypeError(f"if 'operand' keyword is passed then no positional operands can be passed, "
                        f"got operand={operand!r} and positional operands {operands!r}")
    return (operand,)


def _shown(value) -> str:
    return repr(value) if isinstance(value, Tracer) else str(np.asarray(value))


def _check_predicate(pred) -> None:
    if not is_array_like(pred):
        raise TypeError(f"Pred must be a scalar, got {pred} of type {type(pred)}")
    if tuple(shape_of(pred)) != ():
        raise TypeError(f"Pred must be a scalar, got {_shown(pred)} of shape {tuple(shape_of(pred))}.")


def _predicate_index(pred):
    """``pred`` as the cond's i32 index: 0 for false, 1 for true."""
    pred = as_operand(pred)
    if dtype_of(pred).name != "bool":
        pred = ne(pred, 0)
    return convert_element_type(pred, np.int32)


def cond(pred, true_fun: Callable, false_fun: Callable, *operands, operand=_NO_OPERAND):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as ``jax.lax.cond``."""
    operands = _operands(operands, operand)
    for name, fun in (("true_fun", true_fun), ("false_fun", false_fun)):
        if not callable(fun):
            raise TypeError(f"lax.cond: {name} argument should be callable.")
    _check_predicate(pred)
    leaves, _ = flatten(operands)
    if is_eager([pred] + leaves):
        return run_eagerly("cond", lambda pred, operands: cond(pred, true_fun, false_fun, *operands),
                           (pred, operands))
    index = _predicate_index(pred)
    return _branch(index, [false_fun, true_fun], operands, ("true_fun", "false_fun"), "cond")


def switch(index, branches: Sequence[Callable], *operands, operand=_NO_OPERAND):
    """``branches[clamp(index, 0, len(branches) - 1)](*operands)``, as ``jax.lax.switch``."""
    operands = _operands(operands, operand)
    branches = list(branches)
    if not branches:
        raise ValueError("Empty branch sequence")
    for number, branch in enumerate(branches):
        if not callable(branch):
            raise TypeError(f"lax.switch: branch {number} should be callable, got {type(branch).__name__}")
    if not is_array_like(index) or tuple(shape_of(index)) != ():
        shape = tuple(shape_of(index)) if is_array_like(index) else "()"
        raise TypeError(f"Branch index must be scalar, got {_shown(index)} of shape {shape}.")
    if not dtype_of(index).name.startswith("i"):
        raise TypeError(f"Index type must be an integer, got {_shown(index)} as {_numpy_name(index)}")
    if len(branches) == 1:
        return branches[0](*operands)
    leaves, _ = flatten(operands)
    if is_eager([index] + leaves):
        return run_eagerly("switch", lambda index, operands: switch(index, branches, *operands), (index, operands))
    index = clamp(0, convert_element_type(as_operand(index), np.int32), len(branches) - 1)
    names = [f"branches[{number}]" for number in range(len(branches))]
    return _branch(index, branches, operands, names, "switch")


def _numpy_name(value) -> str:
    from meshjit.ir.dtypes import to_numpy

    return to_numpy(dtype_of(value).name).name


def _branch(index, branches: Sequence[Callable], operands: tuple, names: Sequence[str], what: str):
    """Bind a cond op over ``branches`` (in index order); ``names`` name them for errors in the
    order JAX's messages list them (cond: true_fun first)."""
    leaves, tree = flatten(operands)
    weak = [weak_of(leaf) for leaf in leaves]
    leaves = [operand_leaf(leaf, "operand") for leaf in leaves]
    types = [type_of(leaf) for leaf in leaves]
    sharding_types = [operand_sharding_type(leaf) for leaf in leaves]
    bodies = [trace_body(lambda *tracers, branch=branch: branch(*unflatten(tree, tracers)), types, weak,
                         name=f"branch{number}", arg_sharding_types=sharding_types)
              for number, branch in enumerate(branches)]
    ordered = bodies[::-1] if what == "cond" else bodies
    check_branch_outputs(names, branches[::-1] if what == "cond" else branches, ordered, what)
    captured_types = [[type_of(value) for value in body.captured] for body in bodies]
    regions = []
    for number, body in enumerate(bodies):
        before = [value_type for types_ in captured_types[:number] for value_type in types_]
        after = [value_type for types_ in captured_types[number + 1:] for value_type in types_]
        regions.append(_captured_last(body.block, len(leaves), before, after))
    captured = [value for body in bodies for value in body.captured]
    results = bind("cond", [index] + leaves + captured, {}, regions=tuple(regions))
    out_weak = [all(flags) for flags in zip(*(body.out_weak for body in bodies))]
    results = [Tracer(result.trace, result.value, flag) for result, flag in zip(results, out_weak)]
    return unflatten(bodies[0].out_tree, results)


def _captured_last(block, explicit: int, before, after):
    """A branch block (explicit arguments, its own captured values) taking every branch's
    captured values: unused arguments for the other branches' around its own."""
    from meshjit.ir import Block, Value

    front = tuple(Value.fresh(value_type) for value_type in before)
    back = tuple(Value.fresh(value_type) for value_type in after)
    args = block.args[:explicit] + front + block.args[explicit:] + back
    return Block(args, block.ops, block.returns)


def optimization_barrier(operand):
    """``operand`` (a pytree) unchanged, through an op no optimisation sees through, as
    ``jax.lax.optimization_barrier``."""
    leaves, tree = flatten(operand)
    if not leaves:
        return operand
    weak = [weak_of(leaf) for leaf in leaves]
    results = bind("optimization_barrier", [operand_leaf(leaf, "operand") for leaf in leaves])
    return unflatten(tree, [Tracer(result.trace, result.value, flag) if isinstance(result, Tracer) else result
                            for result, flag in zip(results, weak)])
