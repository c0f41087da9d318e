"""Rematerialisation (``jax.checkpoint`` / ``jax.remat``): the ``checkpoint`` marker op and its
rules.

While autodiff records, a checkpointed call is one marker op whose region is the function; its
JVP is a marker over the body's JVP. Partial evaluation splits it by its *policy*: the known
part saves only the values the policy allows (the function's inputs, and the results of ops it
names saveable, e.g. dots), and the linear part recomputes the rest from them. The linear part
stays a marker, so its transpose runs where reverse mode reaches it: the recomputation happens
inside the backward pass right before it is needed (inside a transposed scan's body for a
checkpointed scan body), through an ``optimization_barrier`` so that CSE cannot merge it with
the forward computation (``prevent_cse``). Outside differentiation the marker is its body.

A policy is called as ``policy(op_name, *operand_types, **attrs)`` for each op whose result
might be saved and returns whether it may be (JAX calls policies with primitives; meshjit's ops
are named as jax.lax's primitives).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from meshjit.ir import Block, Op, Value

from ..operands import as_operand, dtype_of
from ..trace import bind, stage
from ..trace_functions import trace_region
from .evaluate import copy_block
from .jvp import jvp_block
from .partial_eval import linear_values, split_block
from ...tables import dependence_rules, jvp_rules, partial_eval_rules, transpose_rules
from .registries import LinearInput, instantiate, is_float, type_of
from .tracing import differentiating
from .transpose import backward_pass

# --- policies ------------------------------------------------------------------------------------


def nothing_saveable(op_name: str, *operand_types, **attrs) -> bool:
    """Save only the checkpointed function's inputs; recompute everything else."""
    return False


def everything_saveable(op_name: str, *operand_types, **attrs) -> bool:
    """Save everything (no rematerialisation)."""
    return True


def dots_saveable(op_name: str, *operand_types, **attrs) -> bool:
    """Save the results of matmuls (dot_general); recompute the cheap elementwise ops."""
    return op_name == "dot_general"


def dots_with_no_batch_dims_saveable(op_name: str, *operand_types, **attrs) -> bool:
    """Save the results of matmuls without batch dims."""
    return op_name == "dot_general" and not attrs.get("batch_dims", ((), ()))[0]


checkpoint_dots = dots_saveable
checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable


# --- the marker ----------------------------------------------------------------------------------


def checkpoint_call(fun: Callable, operands: Sequence, policy: Callable | None, prevent_cse: bool,
                    name: str) -> list:
    """``fun(*operands)`` (flat in, flat out), rematerialised under differentiation."""
    weak = [dtype_of(operand).weak for operand in operands]
    operands = [as_operand(operand) for operand in operands]
    if not differentiating():
        return list(fun(*operands))
    region = trace_region(fun, [type_of(operand) for operand in operands], weak, name=name)
    attrs = {"policy": policy or nothing_saveable, "prevent_cse": bool(prevent_cse)}
    out_weak = [bool(getattr(output, "weak_type", False)) for output in region.outputs]
    return stage("checkpoint", operands + region.captured, [value.type for value in region.block.returns], attrs,
                 regions=(region.block,), weak_types=out_weak)


@jvp_rules.register("checkpoint")
def _checkpoint_jvp(op: Op, primals, tangents):
    body = op.regions[0]
    if not differentiating():
        return jvp_block(body, primals, tangents)
    moving = [tangent is not None for tangent in tangents]
    float_outputs = [is_float(value.type.dtype) for value in body.returns]
    count = len(primals)

    def jvp_function(*arguments):
        supplied = iter(arguments[count:])
        outputs, output_tangents = jvp_block(body, arguments[:count],
                                             [next(supplied) if flag else None for flag in moving])
        return outputs + [instantiate(tangent, value.type)
                          for tangent, value, flag in zip(output_tangents, body.returns, float_outputs) if flag]

    types = [type_of(primal) for primal in primals] + [type_of(tangent) for tangent in tangents if tangent is not None]
    region = trace_region(jvp_function, types, [False] * len(types), name="checkpoint_jvp")
    operands = list(primals) + [tangent for tangent in tangents if tangent is not None] + region.captured
    results = stage("checkpoint", operands, [value.type for value in region.block.returns], op.attrs,
                    regions=(region.block,))
    outputs, supplied = results[:len(body.returns)], iter(results[len(body.returns):])
    return outputs, [next(supplied) if flag else None for flag in float_outputs]


# --- partial evaluation: what is saved, what is recomputed ---------------------------------------


def _saveable(policy: Callable, producer: Op | None) -> bool:
    """An input (no producer) is always saved; an op's result when the policy allows it."""
    if producer is None:
        return True
    return bool(policy(producer.name, *(value.type for value in producer.operands), **dict(producer.attrs)))


def _saved_and_recomputed(split, policy: Callable) -> tuple[list[Value], list[Op]]:
    """The residuals the known part saves and the known ops the linear part recomputes (in
    program order) to get the others back from them."""
    producer = {result.id: op for op in split.known_ops for result in op.results}
    saved: dict[int, Value] = {}
    recomputed: dict[int, Op] = {}
    wanted = list(split.residuals)
    while wanted:
        value = wanted.pop()
        op = producer.get(value.id)
        if _saveable(policy, op):
            saved.setdefault(value.id, value)
        elif id(op) not in recomputed:
            recomputed[id(op)] = op
            wanted.extend(op.operands)
    order = [op for op in split.known_ops if id(op) in recomputed]
    return list(saved.values()), order


@dependence_rules.register("checkpoint")
def _checkpoint_dependence(op: Op, linear: list[bool]) -> list[bool]:
    flagged = linear_values(op.regions[0], linear)
    return [value.id in flagged for value in op.regions[0].returns]


@partial_eval_rules.register("checkpoint")
def _checkpoint_partial_eval(op: Op, linear: list[bool]):
    body = op.regions[0]
    flagged = linear_values(body, linear)
    out_linear = [value.id in flagged for value in body.returns]
    split = split_block(body, linear, [value for value, flag in zip(body.returns, out_linear) if flag])
    saved, recomputed = _saved_and_recomputed(split, op.attrs["policy"])
    known_ops = {id(known) for known in split.known_ops}
    recomputed_ids = {id(known) for known in recomputed}
    constants = [inner for inner in split.linear_ops if id(inner) in known_ops and id(inner) not in recomputed_ids]
    linear_ops = [inner for inner in split.linear_ops if id(inner) not in known_ops]
    known_args = tuple(arg for arg, flag in zip(body.args, linear) if not flag)
    known_returns = tuple(value for value, flag in zip(body.returns, out_linear) if not flag)
    # NOTE: a saved input is the op's operand itself; only computed values leave the known part.
    operand_of = {arg.id: operand for arg, operand in zip(body.args, op.operands)}
    computed = [value for value in saved if value.id not in operand_of]
    keep = {value.id: Value.fresh(value.type) for value in computed}
    known_results = [result for result, flag in zip(op.results, out_linear) if not flag] + list(keep.values())
    known_op = Op("checkpoint", tuple(operand for operand, flag in zip(op.operands, linear) if not flag),
                  tuple(known_results), op.attrs,
                  (Block(known_args, tuple(split.known_ops), known_returns + tuple(computed)),), location=op.location)
    saved_operands = tuple(operand_of[value.id] if value.id in operand_of else keep[value.id] for value in saved)
    linear_results = tuple(result for result, flag in zip(op.results, out_linear) if flag)
    if not linear_results:
        return known_op, None
    linear_block = Block(tuple(saved) + tuple(arg for arg, flag in zip(body.args, linear) if flag),
                         tuple(recomputed + constants + linear_ops),
                         tuple(value for value, flag in zip(body.returns, out_linear) if flag))
    linear_op = Op("checkpoint", saved_operands + tuple(operand for operand, flag in zip(op.operands, linear) if flag),
                   linear_results, op.attrs, (copy_block(linear_block, keep_markers=True),), location=op.location)
    return (known_op if known_results else None), linear_op


@transpose_rules.register("checkpoint")
def _checkpoint_transpose(op: Op, cotangents, operands):
    flags = [isinstance(operand, LinearInput) for operand in operands]
    known = [operand for operand, flag in zip(operands, flags) if not flag]
    if known and op.attrs["prevent_cse"]:
        known = bind("optimization_barrier", known)
    supplied = iter(known)
    inputs = [None if flag else next(supplied) for flag in flags]
    results = backward_pass(op.regions[0], flags, inputs, list(cotangents))
    return [result if flag else None for result, flag in zip(results, flags)]
