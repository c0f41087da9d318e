"""The sharding rule of every global op, as factor mappings (see factor_rules.py).

Per-device-only ops (collectives, axis_index, partition_id) have no rule: they never appear in
a program that propagation sees.
"""

from __future__ import annotations

import math

from meshjit.ir import Op
from meshjit.ir.registry import Registry

from .factor_rules import FactorRule, joined, letters, rule_from_spec

sharding_rules = Registry("sharding rule")

PER_DEVICE_OPS = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                            "collective_permute", "axis_index", "partition_id"})


def _shapes(values):
    return [value.type.shape for value in values]


def _rule(op: Op, spec: str, kinds=None, sizes=None) -> FactorRule:
    return rule_from_spec(spec, _shapes(op.operands), _shapes(op.results), kinds, sizes)


ELEMENTWISE = (
    "neg abs sign exp exp2 log log1p expm1 tanh logistic sin cos tan sqrt rsqrt cbrt floor ceil "
    "round erf is_finite not add sub mul div rem pow max min atan2 and or xor shift_left "
    "shift_right_arithmetic shift_right_logical compare select clamp convert integer_pow "
    "sharding_constraint"
).split()


@sharding_rules.register(*ELEMENTWISE)
def _elementwise(op: Op) -> FactorRule:
    # every operand of full rank shares the result's factors; 0-d operands (select's pred,
    # clamp's bounds) have none
    dims = joined(letters(op.result.type.rank))
    operands = [dims if operand.type.rank else "[]" for operand in op.operands]
    return _rule(op, f"{', '.join(operands)} -> {dims}")


@sharding_rules.register("iota", "constant")
def _creation(op: Op) -> FactorRule:
    # the partitioner materialises each shard at its offset, so any dim may be sharded
    return _rule(op, f" -> {joined(letters(op.result.type.rank))}")


@sharding_rules.register("transpose")
def _transpose(op: Op) -> FactorRule:
    names = letters(op.result.type.rank)
    permutation = op.attrs["permutation"]
    operand = [None] * len(names)
    for result_dim, operand_dim in enumerate(permutation):
        operand[operand_dim] = names[result_dim]
    return _rule(op, f"{joined(operand)} -> {joined(names)}")


@sharding_rules.register("broadcast_in_dim")
def _broadcast(op: Op) -> FactorRule:
    result = letters(op.result.type.rank)
    operand_shape = op.operands[0].type.shape
    operand, extra = [], 0
    for operand_dim, result_dim in enumerate(op.attrs["broadcast_dimensions"]):
        if operand_shape[operand_dim] == op.result.type.shape[result_dim]:
            operand.append(result[result_dim])
        else:
            # a size-1 dim stretched to n: its own factor, which never takes axes
            operand.append(f"s{extra}")
            extra += 1
    kinds = {f"s{index}": "replication" for index in range(extra)}
    return _rule(op, f"{joined(operand)} -> {joined(result)}", kinds)


def _reshape_factors(source, target):
    """Split two shapes of equal size into common factors, major to minor.

    Returns the factor sizes and each side's dims as factor lists, or None when some dims
    cannot be aligned (co-prime sizes straddle each other, e.g. 6x5 -> 5x6).
    """
    sizes: list[int] = []
    source_dims: list[list[int]] = [[] for _ in source]
    target_dims: list[list[int]] = [[] for _ in target]
    source_left, target_left = list(source), list(target)
    i = j = 0
    while True:
        while i < len(source) and source_left[i] == 1:
            i += 1
        while j < len(target) and target_left[j] == 1:
            j += 1
        if i == len(source) or j == len(target):
            return sizes, source_dims, target_dims
        common = math.gcd(source_left[i], target_left[j])
        if common == 1:
            return None
        sizes.append(common)
        source_dims[i].append(len(sizes) - 1)
        target_dims[j].append(len(sizes) - 1)
        source_left[i] //= common
        target_left[j] //= common


@sharding_rules.register("reshape", "squeeze", "expand_dims")
def _reshape(op: Op) -> FactorRule:
    source, target = op.operands[0].type.shape, op.result.type.shape
    factors = _reshape_factors(source, target)
    if factors is None:
        # unaligned reshape: every dim is its own factor that takes no propagated axes
        operand = [f"s{dim}" for dim in range(len(source))]
        result = [f"t{dim}" for dim in range(len(target))]
        return _rule(op, f"{joined(operand)} -> {joined(result)}",
                     {name: "replication" for name in operand + result})
    sizes, source_dims, target_dims = factors
    return FactorRule(tuple(sizes), ("pass",) * len(sizes), (tuple(tuple(d) for d in source_dims),),
                      (tuple(tuple(d) for d in target_dims),))


def _windowed(op: Op, changed_dims) -> FactorRule:
    """Slice/pad/rev: unchanged dims pass; changed dims are permutation factors of their own."""
    rank = op.result.type.rank
    names = letters(rank)
    operand = [f"o{dim}" if dim in changed_dims else names[dim] for dim in range(rank)]
    result = [f"r{dim}" if dim in changed_dims and op.operands[0].type.shape[dim] != op.result.type.shape[dim]
              else operand[dim] for dim in range(rank)]
    kinds = {name: "permutation" for name in operand + result if name[0] in "or"}
    extra = ", []" * (len(op.operands) - 1)
    return _rule(op, f"{joined(operand)}{extra} -> {joined(result)}", kinds)


@sharding_rules.register("slice")
def _slice(op: Op) -> FactorRule:
    shape = op.operands[0].type.shape
    changed = {dim for dim, (start, limit, stride) in enumerate(
        zip(op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs["strides"]))
        if (start, limit, stride) != (0, shape[dim], 1)}
    return _windowed(op, changed)


@sharding_rules.register("pad")
def _pad(op: Op) -> FactorRule:
    changed = {dim for dim, config in enumerate(op.attrs["padding_config"]) if tuple(config) != (0, 0, 0)}
    return _windowed(op, changed)


@sharding_rules.register("rev")
def _rev(op: Op) -> FactorRule:
    return _windowed(op, set(op.attrs["dimensions"]))


@sharding_rules.register("dynamic_slice", "dynamic_update_slice")
def _dynamic_slice(op: Op) -> FactorRule:
    # dims the op cuts need the whole dim on every device; full-size dims pass through
    base, result = op.operands[0].type.shape, op.result.type.shape
    window = op.operands[1].type.shape if op.name == "dynamic_update_slice" else result
    names = letters(len(base))
    operand = [names[dim] if window[dim] == base[dim] else f"o{dim}" for dim in range(len(base))]
    kinds = {name: "replication" for name in operand if name[0] == "o"}
    if op.name == "dynamic_slice":
        outputs = [names[dim] if window[dim] == base[dim] else f"w{dim}" for dim in range(len(base))]
        kinds.update({name: "replication" for name in outputs if name[0] == "w"})
        indices = ", []" * (len(op.operands) - 1)
        return _rule(op, f"{joined(operand)}{indices} -> {joined(outputs)}", kinds)
    update = [names[dim] if window[dim] == base[dim] else f"u{dim}" for dim in range(len(base))]
    kinds.update({name: "replication" for name in update if name[0] == "u"})
    indices = ", []" * (len(op.operands) - 2)
    return _rule(op, f"{joined(operand)}, {joined(update)}{indices} -> {joined(operand)}", kinds)


@sharding_rules.register("concatenate")
def _concatenate(op: Op) -> FactorRule:
    # the concatenated dim differs in size per tensor: each gets its own unshardable factor
    dimension = op.attrs["dimension"]
    names = letters(op.result.type.rank)

    def tensor(tag: str) -> str:
        return joined([f"{tag}" if dim == dimension else names[dim] for dim in range(len(names))])

    tags = [f"c{index}" for index in range(len(op.operands) + 1)]
    kinds = {tag: "replication" for tag in tags}
    operands = ", ".join(tensor(tag) for tag in tags[:-1])
    return _rule(op, f"{operands} -> {tensor(tags[-1])}", kinds)


@sharding_rules.register("dot_general")
def _dot_general(op: Op) -> FactorRule:
    lhs_rank, rhs_rank = op.operands[0].type.rank, op.operands[1].type.rank
    (lhs_contracting, rhs_contracting) = op.attrs["contracting_dims"]
    (lhs_batch, rhs_batch) = op.attrs["batch_dims"]
    lhs = [None] * lhs_rank
    rhs = [None] * rhs_rank
    result = []
    for index, (left, right) in enumerate(zip(lhs_batch, rhs_batch)):
        lhs[left] = rhs[right] = f"b{index}"
        result.append(f"b{index}")
    for index, (left, right) in enumerate(zip(lhs_contracting, rhs_contracting)):
        lhs[left] = rhs[right] = f"k{index}"
    for dim in range(lhs_rank):
        if lhs[dim] is None:
            lhs[dim] = f"i{dim}"
            result.append(lhs[dim])
    for dim in range(rhs_rank):
        if rhs[dim] is None:
            rhs[dim] = f"j{dim}"
            result.append(rhs[dim])
    kinds = {f"k{index}": "reduction" for index in range(len(lhs_contracting))}
    return _rule(op, f"{joined(lhs)}, {joined(rhs)} -> {joined(result)}", kinds)


def _reduced(op: Op, axes, kind: str) -> FactorRule:
    rank = op.operands[0].type.rank
    names = letters(rank)
    kept = [names[dim] for dim in range(rank) if dim not in axes]
    return _rule(op, f"{joined(names)} -> {joined(kept)}", {names[dim]: kind for dim in axes})


@sharding_rules.register("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or")
def _reduce(op: Op) -> FactorRule:
    return _reduced(op, set(op.attrs["axes"]), "reduction")


@sharding_rules.register("argmax", "argmin")
def _arg_reduce(op: Op) -> FactorRule:
    return _reduced(op, {op.attrs["axis"]}, "replication")


@sharding_rules.register("cumsum", "cumprod", "cummax", "cummin")
def _scan(op: Op) -> FactorRule:
    names = letters(op.result.type.rank)
    return _rule(op, f"{joined(names)} -> {joined(names)}", {names[op.attrs['axis']]: "replication"})


@sharding_rules.register("sort")
def _sort(op: Op) -> FactorRule:
    names = letters(op.result.type.rank) if op.results else []
    tensor = joined(names)
    kinds = {names[op.attrs["dimension"]]: "replication"} if names else {}
    return _rule(op, f"{', '.join([tensor] * len(op.operands))} -> {', '.join([tensor] * len(op.results))}", kinds)


@sharding_rules.register("gather")
def _gather(op: Op) -> FactorRule:
    axis = op.attrs["axis"]
    operand_rank, index_rank = op.operands[0].type.rank, op.operands[1].type.rank
    operand = [f"o{dim}" for dim in range(operand_rank)]
    indices = [f"x{dim}" for dim in range(index_rank)]
    result = operand[:axis] + indices + operand[axis + 1:]
    return _rule(op, f"{joined(operand)}, {joined(indices)} -> {joined(result)}", {operand[axis]: "replication"})


@sharding_rules.register("manual_computation")
def _manual_computation(op: Op) -> FactorRule:
    # NOTE: the boundary shardings are fixed by in/out_shardings; nothing flows across it
    operand_specs = [joined([f"a{index}_{dim}" for dim in range(value.type.rank)]) for index, value in enumerate(op.operands)]
    result_specs = [joined([f"r{index}_{dim}" for dim in range(value.type.rank)]) for index, value in enumerate(op.results)]
    names = [name for spec in operand_specs + result_specs for name in spec.split() if name != "[]"]
    return _rule(op, f"{', '.join(operand_specs)} -> {', '.join(result_specs)}", {name: "replication" for name in names})
