"""Forward-mode autodiff of the control flow ops (the regions family's scan, while and cond),
and which of their results depend on which operands.

The JVP of a loop is one loop carrying primal and tangent values together: its body is the JVP
of the original body. Which carries get a tangent is a fixpoint (a carry whose initial tangent
is zero gets one if the body makes it depend on a moving value), as in JAX. The JVP of a cond
is a cond of the branches' JVPs; an output gets a tangent when any branch gives it one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from meshjit.ir import Block, Op, Value
from meshjit.ir.ops.regions import scan_parts

from ..frontend.autodiff.evaluate import emit, evaluate_block
from ..frontend.autodiff.jvp import jvp_block
from ..frontend.autodiff.partial_eval import linear_values
from ..tables import dependence_rules, jvp_rules
from ..frontend.autodiff.registries import instantiate, is_float, non_differentiable_ops, type_of
from ..frontend.control_flow_tracing import with_consts_first
from ..frontend.trace import bind
from ..frontend.trace_functions import trace_region

# --- which results depend on which operands --------------------------------------------------


def loop_fixpoint(body: Block, const_flags: list[bool], carry_flags: list[bool], x_flags: list[bool],
                  flow: Callable[[Block, list[bool]], set[int]]) -> tuple[list[bool], set[int]]:
    """The carries that end up flagged (a carry is flagged if its initial value is, or if the
    body computes it from a flagged value) and the body values ``flow`` flags then."""
    carry = list(carry_flags)
    while True:
        flagged = flow(body, const_flags + carry + x_flags)
        grown = [flag or body.returns[index].id in flagged for index, flag in enumerate(carry)]
        if grown == carry:
            return carry, flagged
        carry = grown


@dependence_rules.register("scan")
def _scan_dependence(op: Op, linear: Sequence[bool]) -> list[bool]:
    body = op.regions[0]
    consts, carry, xs = (list(part) for part in scan_parts(linear, op.attrs["num_consts"], op.attrs["num_carry"]))
    carry, flagged = loop_fixpoint(body, consts, carry, xs, linear_values)
    return carry + [value.id in flagged for value in body.returns[len(carry):]]


@dependence_rules.register("while")
def _while_dependence(op: Op, linear: Sequence[bool]) -> list[bool]:
    num_consts = op.attrs["num_consts"]
    carry, _ = loop_fixpoint(op.regions[1], list(linear[:num_consts]), list(linear[num_consts:]), [],
                             linear_values)
    return carry


@dependence_rules.register("cond")
def _cond_dependence(op: Op, linear: Sequence[bool]) -> list[bool]:
    if linear[0]:
        return [True] * len(op.results)
    flagged = [linear_values(branch, list(linear[1:])) for branch in op.regions]
    return [any(returned.id in ids for ids, branch in zip(flagged, op.regions)
                for returned in [branch.returns[index]])
            for index in range(len(op.results))]


def tangent_values(block: Block, moving: Sequence[bool]) -> set[int]:
    """The ids of ``block``'s float values that may get a nonzero tangent when the arguments
    marked ``moving`` have one."""
    blocked = non_differentiable_ops()
    ids = {argument.id for argument, flag in zip(block.args, moving) if flag and is_float(argument.type.dtype)}
    for op in block.ops:
        flags = [operand.id in ids for operand in op.operands]
        if not any(flags) or op.name in blocked:
            continue
        results = dependence_rules[op.name](op, flags)
        ids.update(result.id for result, flag in zip(op.results, results)
                   if flag and is_float(result.type.dtype))
    return ids


# --- helpers -----------------------------------------------------------------------------------


def insert_arguments(block: Block, position: int, types) -> Block:
    """``block`` with unused arguments of ``types`` inserted at ``position`` (so that regions
    with different captured values can take one shared list of operands)."""
    unused = tuple(Value.fresh(value_type) for value_type in types)
    return Block(block.args[:position] + unused + block.args[position:], block.ops, block.returns)


def _present(values, flags) -> list:
    return [value for value, flag in zip(values, flags) if flag]


def _scatter(flags, supplied, fill=None) -> list:
    """One entry per flag: the next of ``supplied`` where set, ``fill`` elsewhere."""
    supplied = iter(supplied)
    return [next(supplied) if flag else fill for flag in flags]


def _moving(tangents) -> list[bool]:
    return [tangent is not None for tangent in tangents]


def _types(values) -> list:
    return [type_of(value) for value in values]


# --- scan --------------------------------------------------------------------------------------


@jvp_rules.register("scan")
def _scan_jvp(op: Op, primals, tangents):
    body = op.regions[0]
    num_consts, num_carry = op.attrs["num_consts"], op.attrs["num_carry"]
    consts, init, xs = scan_parts(primals, num_consts, num_carry)
    const_t, init_t, xs_t = scan_parts(tangents, num_consts, num_carry)
    const_moving, x_moving = _moving(const_t), _moving(xs_t)
    carry_moving, flagged = loop_fixpoint(body, const_moving, _moving(init_t), x_moving, tangent_values)
    carry_moving = [flag and is_float(value.type.dtype) for flag, value in zip(carry_moving, op.results)]
    ys_moving = [value.id in flagged for value in body.returns[num_carry:]]
    if not any(carry_moving) and not any(ys_moving):
        return emit(op, primals), [None] * len(op.results)
    slices = [argument.type for argument in body.args[num_consts + num_carry:]]
    groups = [(consts, const_moving), (init, carry_moving), (slices, x_moving)]
    explicit = [len(group) + sum(flags) for group, flags in groups]

    def jvp_body(*arguments):
        parts, start = [], 0
        for count in explicit:
            parts.append(arguments[start:start + count])
            start += count
        primal_args, tangent_args = [], []
        for (group, flags), part in zip(groups, parts):
            primal_args += list(part[:len(group)])
            tangent_args += _scatter(flags, part[len(group):])
        outputs, output_t = jvp_block(body, primal_args, tangent_args)
        carry_types = [value.type for value in body.returns[:num_carry]]
        y_types = [value.type for value in body.returns[num_carry:]]
        return (outputs[:num_carry]
                + [instantiate(t, value_type) for t, value_type in _present(zip(output_t, carry_types), carry_moving)]
                + outputs[num_carry:]
                + [instantiate(t, value_type) for t, value_type in
                   _present(zip(output_t[num_carry:], y_types), ys_moving)])

    types = []
    for group, flags in groups:
        group_types = group if group is slices else _types(group)
        types += list(group_types) + _present(group_types, flags)
    region = trace_region(jvp_body, types, [False] * len(types), name="scan_jvp")
    init_tangents = [instantiate(t, type_of(value)) for t, value in _present(zip(init_t, init), carry_moving)]
    operands = (region.captured + list(consts) + _present(const_t, const_moving) + list(init) + init_tangents
                + list(xs) + _present(xs_t, x_moving))
    attrs = dict(op.attrs) | {"num_consts": len(region.captured) + explicit[0], "num_carry": explicit[1]}
    results = bind("scan", operands, attrs, regions=(with_consts_first(region.block, sum(explicit)),))
    carry_out, rest = results[:num_carry], results[num_carry:]
    carry_tangents, rest = rest[:sum(carry_moving)], rest[sum(carry_moving):]
    ys, ys_tangents = rest[:len(ys_moving)], rest[len(ys_moving):]
    return list(carry_out) + list(ys), _scatter(carry_moving, carry_tangents) + _scatter(ys_moving, ys_tangents)


# --- while -------------------------------------------------------------------------------------


def bind_while(consts, carry, cond_fun, body_fun) -> list:
    """A while op over ``consts`` and ``carry`` whose regions are traced from ``cond_fun`` and
    ``body_fun`` (each taking consts then carries); values they capture become consts."""
    types = _types(consts) + _types(carry)
    count = len(types)
    cond = trace_region(cond_fun, types, [False] * count, name="while_cond")
    body = trace_region(body_fun, types, [False] * count, name="while_body")
    cond_captured, body_captured = _types(cond.captured), _types(body.captured)
    cond_block = insert_arguments(with_consts_first(cond.block, count), len(cond_captured), body_captured)
    body_block = insert_arguments(with_consts_first(body.block, count), 0, cond_captured)
    operands = cond.captured + body.captured + list(consts) + list(carry)
    attrs = {"num_consts": len(cond.captured) + len(body.captured) + len(consts)}
    return bind("while", operands, attrs, regions=(cond_block, body_block))


@jvp_rules.register("while")
def _while_jvp(op: Op, primals, tangents):
    cond, body = op.regions
    num_consts = op.attrs["num_consts"]
    consts, init = list(primals[:num_consts]), list(primals[num_consts:])
    const_moving = _moving(tangents[:num_consts])
    carry_moving, _ = loop_fixpoint(body, const_moving, _moving(tangents[num_consts:]), [], tangent_values)
    carry_moving = [flag and is_float(value.type.dtype) for flag, value in zip(carry_moving, op.results)]
    if not any(carry_moving):
        return emit(op, primals), [None] * len(op.results)
    const_count = num_consts + sum(const_moving)

    def split(arguments):
        const_part, carry_part = arguments[:const_count], arguments[const_count:]
        return (list(const_part[:num_consts]) + list(carry_part[:len(init)]),
                _scatter(const_moving, const_part[num_consts:]) + _scatter(carry_moving, carry_part[len(init):]))

    def cond_fun(*arguments):
        return evaluate_block(cond, split(arguments)[0])

    def body_fun(*arguments):
        primal_args, tangent_args = split(arguments)
        outputs, output_t = jvp_block(body, primal_args, tangent_args)
        return outputs + [instantiate(t, value.type) for t, value in _present(zip(output_t, body.returns), carry_moving)]

    init_tangents = [instantiate(t, type_of(value)) for t, value in _present(zip(tangents[num_consts:], init), carry_moving)]
    results = bind_while(consts + _present(tangents[:num_consts], const_moving), init + init_tangents, cond_fun, body_fun)
    return results[:len(init)], _scatter(carry_moving, results[len(init):])


# --- cond --------------------------------------------------------------------------------------


def bind_cond(index, operands, branch_funs) -> list:
    """A cond op over ``operands`` whose branches are traced from ``branch_funs`` (each taking
    the operands); values they capture become extra operands every branch takes."""
    types = _types(operands)
    traced = [trace_region(fun, types, [False] * len(types), name=f"branch{number}")
              for number, fun in enumerate(branch_funs)]
    captured = [_types(region.captured) for region in traced]
    regions = []
    for number, region in enumerate(traced):
        before = [value_type for group in captured[:number] for value_type in group]
        after = [value_type for group in captured[number + 1:] for value_type in group]
        block = insert_arguments(region.block, len(types), before)
        regions.append(insert_arguments(block, len(block.args), after))
    all_captured = [value for region in traced for value in region.captured]
    return bind("cond", [index] + list(operands) + all_captured, {}, regions=tuple(regions))


@jvp_rules.register("cond")
def _cond_jvp(op: Op, primals, tangents):
    index, operands = primals[0], list(primals[1:])
    moving = _moving(tangents[1:])
    flagged = [tangent_values(branch, moving) for branch in op.regions]
    out_moving = [is_float(result.type.dtype) and any(branch.returns[position].id in ids
                                                      for branch, ids in zip(op.regions, flagged))
                  for position, result in enumerate(op.results)]
    if not any(out_moving):
        return emit(op, primals), [None] * len(op.results)

    def branch_fun(branch):
        def run(*arguments):
            primal_args = list(arguments[:len(operands)])
            outputs, output_t = jvp_block(branch, primal_args, _scatter(moving, arguments[len(operands):]))
            return outputs + [instantiate(t, value.type) for t, value in _present(zip(output_t, branch.returns), out_moving)]
        return run

    results = bind_cond(index, operands + _present(tangents[1:], moving), [branch_fun(branch) for branch in op.regions])
    count = len(op.results)
    return results[:count], _scatter(out_moving, results[count:])
