"""Reverse-mode autodiff of the control flow ops: partial evaluation and transposition.

Linearizing a JVP'd scan splits it (``partial_eval_rules``) into a *known* scan, which computes
the primal carries and ys and saves the residuals its linear part needs, stacked per step as
extra ys (a residual that is a known const or scanned operand is passed as it is, not saved),
and a *linear* scan over the tangents, which reads those residuals as scanned operands. Its
transpose is a scan in the other direction over the saved residuals: the body is the backward
pass of the linear body, the carries are the carries' cotangents plus running sums of the
consts' cotangents, and the scanned outputs are the scanned operands' cotangents. A cond splits
the same way, every branch returning every branch's residual slots (zeros in the others'); its
transpose is a cond of the branches' backward passes. A while loop has no transpose: reverse
mode raises JAX's ValueError (use scan, or fori_loop with static bounds).
"""

from __future__ import annotations

import numpy as np
from meshjit.ir import Block, DenseAttr, Op, TensorType, Value
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.ops.regions import scan_parts
from meshjit.ir.shape_rules import infer_result_types

from ..frontend.autodiff.evaluate import copy_block
from ..frontend.autodiff.partial_eval import linear_values, split_block
from ..tables import partial_eval_rules, transpose_rules
from ..frontend.autodiff.registries import LinearInput, add_tangents, instantiate, type_of, zeros
from ..frontend.autodiff.transpose import backward_pass
from ..frontend.control_flow_tracing import with_consts_first
from ..frontend.trace import bind
from ..frontend.trace_functions import trace_region
from .regions_autodiff import bind_cond, loop_fixpoint

WHILE_REVERSE_MODE = ("Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
                      "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
                      "start/stop.")


def _op(name: str, operands, results, attrs, regions) -> Op:
    """An op built directly (partial evaluation rewrites a block before anything is emitted),
    checked by its shape rule."""
    types = infer_result_types(name, [value.type for value in operands], attrs, regions)
    if [value.type for value in results] != list(types):
        raise AssertionError(f"autodiff internal error: {name} results {results} do not match {types}")
    return Op(name, tuple(operands), tuple(results), attrs, tuple(regions))


def _select(values, flags, wanted: bool = True) -> list:
    return [value for value, flag in zip(values, flags) if flag == wanted]


def _spread(flags, supplied, wanted: bool) -> list:
    """One entry per flag: the next of ``supplied`` where the flag is ``wanted``, else None."""
    supplied = iter(supplied)
    return [next(supplied) if flag == wanted else None for flag in flags]


# --- scan --------------------------------------------------------------------------------------


@partial_eval_rules.register("scan")
def _scan_partial_eval(op: Op, linear: list[bool]):
    body = op.regions[0]
    num_consts, num_carry = op.attrs["num_consts"], op.attrs["num_carry"]
    const_lin, carry_lin, x_lin = (list(part) for part in scan_parts(linear, num_consts, num_carry))
    carry_lin, flagged = loop_fixpoint(body, const_lin, carry_lin, x_lin, linear_values)
    ys_lin = [value.id in flagged for value in body.returns[num_carry:]]
    arg_lin = const_lin + carry_lin + x_lin
    carry_returns, y_returns = body.returns[:num_carry], body.returns[num_carry:]
    split = split_block(body, arg_lin, _select(carry_returns, carry_lin) + _select(y_returns, ys_lin))
    position = {arg.id: index for index, arg in enumerate(body.args)}
    const_res, x_res, stacked = [], [], []
    for value in split.residuals:
        index = position.get(value.id)
        if index is not None and index < num_consts:
            const_res.append(index)
        elif index is not None and index >= num_consts + num_carry:
            x_res.append(index)
        else:
            stacked.append(value)
    length = op.attrs["length"]
    saved = [Value.fresh(value.type.with_shape((length,) + value.type.shape)) for value in stacked]
    known_block = Block(tuple(_select(body.args, arg_lin, False)), tuple(split.known_ops),
                        tuple(_select(carry_returns, carry_lin, False)) + tuple(_select(y_returns, ys_lin, False))
                        + tuple(stacked))
    const_ops, init_ops, xs_ops = scan_parts(op.operands, num_consts, num_carry)
    known_attrs = op.attrs.updated(num_consts=const_lin.count(False), num_carry=carry_lin.count(False))
    known_results = (_select(op.results[:num_carry], carry_lin, False) + _select(op.results[num_carry:], ys_lin, False)
                     + saved)
    known_op = None
    if known_results:
        known_op = _op("scan", _select(op.operands, arg_lin, False), known_results, known_attrs, [known_block])
    linear_results = _select(op.results[:num_carry], carry_lin) + _select(op.results[num_carry:], ys_lin)
    if not linear_results:
        return known_op, None
    x_args = [body.args[index] for index in x_res]
    linear_block = Block(tuple([body.args[index] for index in const_res] + _select(body.args[:num_consts], const_lin)
                               + _select(body.args[num_consts:num_consts + num_carry], carry_lin) + stacked + x_args
                               + _select(body.args[num_consts + num_carry:], x_lin)),
                         tuple(split.linear_ops),
                         tuple(_select(carry_returns, carry_lin) + _select(y_returns, ys_lin)))
    operands = ([op.operands[index] for index in const_res] + _select(const_ops, const_lin)
                + _select(init_ops, carry_lin) + saved + [op.operands[index] for index in x_res]
                + _select(xs_ops, x_lin))
    attrs = op.attrs.updated(num_consts=len(const_res) + const_lin.count(True), num_carry=carry_lin.count(True))
    linear_op = _op("scan", operands, linear_results, attrs, [copy_block(linear_block, keep_markers=True)])
    return known_op, linear_op


@transpose_rules.register("scan")
def _scan_transpose(op: Op, cotangents, operands):
    body = op.regions[0]
    num_consts, num_carry = op.attrs["num_consts"], op.attrs["num_carry"]
    consts, init, xs = scan_parts(operands, num_consts, num_carry)
    const_lin = [isinstance(value, LinearInput) for value in consts]
    x_lin = [isinstance(value, LinearInput) for value in xs]
    # NOTE: every carry of a linear scan is linear; one whose initial value is known (the zeros
    # of a symbolic tangent) takes no cotangent.
    flags = const_lin + [True] * num_carry + x_lin
    carry_types = [value.type for value in op.results[:num_carry]]
    acc_types = [value.type for value in _select(body.args[:num_consts], const_lin)]
    present = [index for index, cotangent in enumerate(cotangents[num_carry:]) if cotangent is not None]
    res_consts, res_xs = _select(consts, const_lin, False), _select(xs, x_lin, False)
    slice_types = [type_of(value).with_shape(type_of(value).shape[1:]) for value in res_xs]
    ct_y_types = [op.results[num_carry + index].type.with_shape(op.results[num_carry + index].type.shape[1:])
                  for index in present]

    def transposed_body(*arguments):
        sizes = [len(res_consts), num_carry, len(acc_types), len(res_xs), len(present)]
        parts, start = [], 0
        for size in sizes:
            parts.append(list(arguments[start:start + size]))
            start += size
        known_consts, ct_carry, accumulated, known_xs, ct_ys = parts
        inputs = _spread(const_lin, known_consts, False) + [None] * num_carry + _spread(x_lin, known_xs, False)
        body_cotangents = list(ct_carry) + [None] * (len(body.returns) - num_carry)
        for index, cotangent in zip(present, ct_ys):
            body_cotangents[num_carry + index] = cotangent
        results = backward_pass(body, flags, inputs, body_cotangents)
        const_results, carry_results, x_results = scan_parts(results, num_consts, num_carry)
        new_carry = [instantiate(value, value_type) for value, value_type in zip(carry_results, carry_types)]
        sums = [add_tangents(total, value) for total, value in zip(accumulated, _select(const_results, const_lin))]
        x_types = [arg.type for arg in _select(body.args[num_consts + num_carry:], x_lin)]
        return new_carry + sums + [instantiate(value, value_type)
                                   for value, value_type in zip(_select(x_results, x_lin), x_types)]

    types = [type_of(value) for value in res_consts] + carry_types + acc_types + slice_types + ct_y_types
    region = trace_region(transposed_body, types, [False] * len(types), name="scan_transpose")
    initial = [instantiate(cotangent, value_type) for cotangent, value_type in zip(cotangents[:num_carry], carry_types)]
    scanned = res_xs + [cotangents[num_carry + index] for index in present]
    attrs = op.attrs.updated(num_consts=len(region.captured) + len(res_consts),
                             num_carry=num_carry + len(acc_types), reverse=not op.attrs["reverse"])
    results = bind("scan", region.captured + res_consts + initial + [zeros(value_type) for value_type in acc_types]
                   + scanned, attrs, regions=(with_consts_first(region.block, len(types)),))
    ct_init, ct_consts, ct_xs = results[:num_carry], results[num_carry:num_carry + len(acc_types)], \
        results[num_carry + len(acc_types):]
    return (_spread(const_lin, ct_consts, True)
            + [value if isinstance(start, LinearInput) else None for value, start in zip(ct_init, init)]
            + _spread(x_lin, ct_xs, True))




# --- cond --------------------------------------------------------------------------------------


def _zeros_ops(value_type: TensorType) -> tuple[list[Op], Value]:
    """Ops computing zeros of ``value_type`` (a residual slot another branch fills)."""
    scalar = Value.fresh(TensorType((), value_type.dtype))
    constant = Op("constant", (), (scalar,), {"value": DenseAttr.from_array(np.zeros((), to_numpy(value_type.dtype)))})
    result = Value.fresh(value_type)
    attrs = {"shape": value_type.shape, "broadcast_dimensions": ()}
    return [constant, Op("broadcast_in_dim", (scalar,), (result,), attrs)], result


@partial_eval_rules.register("cond")
def _cond_partial_eval(op: Op, linear: list[bool]):
    if linear[0]:
        raise AssertionError("autodiff internal error: a cond index depends on a tangent")
    operand_lin = list(linear[1:])
    out_lin = [any(branch.returns[index].id in linear_values(branch, operand_lin) for branch in op.regions)
               for index in range(len(op.results))]
    splits = [split_block(branch, operand_lin, _select(branch.returns, out_lin)) for branch in op.regions]
    slots = [value for split in splits for value in split.residuals]
    known_regions, linear_regions = [], []
    for number, (branch, split) in enumerate(zip(op.regions, splits)):
        own = {value.id for value in split.residuals}
        ops, returns = list(split.known_ops), []
        for value in slots:
            if value.id in own:
                returns.append(value)
            else:
                zero_ops, zero = _zeros_ops(value.type)
                ops += zero_ops
                returns.append(zero)
        known_regions.append(Block(tuple(_select(branch.args, operand_lin, False)), tuple(ops),
                                   tuple(_select(branch.returns, out_lin, False)) + tuple(returns)))
        args = tuple(value if value.id in own else Value.fresh(value.type) for value in slots)
        linear_block = Block(args + tuple(_select(branch.args, operand_lin)), tuple(split.linear_ops),
                             tuple(_select(branch.returns, out_lin)))
        linear_regions.append(copy_block(linear_block, keep_markers=True))
    saved = [Value.fresh(value.type) for value in slots]
    index, operands = op.operands[0], op.operands[1:]
    known_results = _select(op.results, out_lin, False) + saved
    known_op = None
    if known_results:
        known_op = _op("cond", [index] + _select(operands, operand_lin, False), known_results, {},
                       [copy_block(region, keep_markers=True) for region in known_regions])
    linear_results = _select(op.results, out_lin)
    if not linear_results:
        return known_op, None
    linear_op = _op("cond", [index] + saved + _select(operands, operand_lin), linear_results, {}, linear_regions)
    return known_op, linear_op


@transpose_rules.register("cond")
def _cond_transpose(op: Op, cotangents, operands):
    index, rest = operands[0], list(operands[1:])
    flags = [isinstance(value, LinearInput) for value in rest]
    known = _select(rest, flags, False)
    present = [position for position, cotangent in enumerate(cotangents) if cotangent is not None]
    linear_types = [arg.type for arg in _select(op.regions[0].args, flags)]

    def branch_fun(branch):
        def run(*arguments):
            inputs = _spread(flags, arguments[:len(known)], False)
            body_cotangents = [None] * len(branch.returns)
            for position, cotangent in zip(present, arguments[len(known):]):
                body_cotangents[position] = cotangent
            results = backward_pass(branch, flags, inputs, body_cotangents)
            return [instantiate(value, value_type)
                    for value, value_type in zip(_select(results, flags), linear_types)]
        return run

    results = bind_cond(index, known + [cotangents[position] for position in present],
                        [branch_fun(branch) for branch in op.regions])
    return [None] + _spread(flags, results, True)


# --- while -------------------------------------------------------------------------------------


@partial_eval_rules.register("while")
def _while_partial_eval(op: Op, linear: list[bool]):
    """The known part is the primal loop alone; the linear part is the whole loop again (it
    can run forward, as linearize does, but has no transpose)."""
    cond, body = op.regions
    num_consts = op.attrs["num_consts"]
    carry_lin, _ = loop_fixpoint(body, list(linear[:num_consts]), list(linear[num_consts:]), [], linear_values)
    arg_lin = list(linear[:num_consts]) + carry_lin
    regions = []
    for region, returns in ((cond, cond.returns), (body, _select(body.returns, carry_lin, False))):
        split = split_block(region, arg_lin, [])
        regions.append(Block(tuple(_select(region.args, arg_lin, False)), tuple(split.known_ops), tuple(returns)))
    known_results = _select(op.results, carry_lin, False)
    known_attrs = op.attrs.updated(num_consts=arg_lin[:num_consts].count(False))
    known_op = _op("while", _select(op.operands, arg_lin, False), known_results, known_attrs, regions)
    if not any(carry_lin):
        return known_op, None
    fresh = [Value.fresh(value.type) if not flag else value for value, flag in zip(op.results, carry_lin)]
    linear_op = Op("while", op.operands, tuple(fresh), op.attrs,
                   tuple(copy_block(region, keep_markers=True) for region in op.regions), location=op.location)
    return known_op, linear_op


@transpose_rules.register("while")
def _while_transpose(op: Op, cotangents, operands):
    raise ValueError(WHILE_REVERSE_MODE)
