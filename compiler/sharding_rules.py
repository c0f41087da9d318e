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
    "neg", "abs", "sign", "exp", "exp2", "log", "log1p", "expm1", "tanh", "logistic", "sin", "cos",
    "tan", "sqrt", "rsqrt", "cbrt", "floor", "ceil", "round", "erf", "is_finite", "not",
    "add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "and", "or", "xor",
    "shift_left", "shift_right_arithmetic", "shift_right_logical",
    "compare", "select", "clamp", "convert", "integer_pow", "sharding_constraint",
)


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


class _ReshapeFactors:
    """Common factors of a reshape's two shapes, major to minor (Shardy's compound factors).

    Walk both shapes, taking the gcd of what is left of the current dim on each side as a
    pass-through factor: ``8x4 -> 2x16`` is ``(i j) k -> i (j k)``. Where what is left is
    co-prime (``6x5 -> 5x6``), the shortest run of dims on both sides with equal products gets
    one need-replication factor per dim remainder, and the walk resumes after it, so aligned
    major dims still pass (``Bx6x5 -> Bx5x6`` keeps ``B``). Dims left without factors (size 1)
    get a factor of their own.
    """

    def __init__(self, source, target):
        self.sizes: list[int] = []
        self.kinds: list[str] = []
        self.sides = ([list(source), [[] for _ in source]], [list(target), [[] for _ in target]])
        if 0 in source or 0 in target:
            # NOTE: an empty array holds nothing to keep in place: every dim needs replication
            for side, shape in enumerate((source, target)):
                for dim, size in enumerate(shape):
                    self._add(size, "replication", None if side else dim, dim if side else None)
        else:
            self._walk()
        for side, (shape, dims) in enumerate(self.sides):
            for dim, factors in enumerate(dims):
                if not factors:
                    self._add(shape[dim], "pass", dim if side == 0 else None, dim if side else None)

    def _add(self, size: int, kind: str, source_dim: int | None, target_dim: int | None) -> None:
        """A new factor of ``size``, appended (as the minor-most so far) to the given dims."""
        for (_, dims), dim in zip(self.sides, (source_dim, target_dim)):
            if dim is not None:
                dims[dim].append(len(self.sizes))
        self.sizes.append(size)
        self.kinds.append(kind)

    def _walk(self) -> None:
        (source_left, _), (target_left, _) = self.sides
        i = j = 0
        while True:
            while i < len(source_left) and source_left[i] == 1:
                i += 1
            while j < len(target_left) and target_left[j] == 1:
                j += 1
            if i == len(source_left) or j == len(target_left):
                return
            common = math.gcd(source_left[i], target_left[j])
            if common == 1:
                i, j = self._unaligned_run(i, j)
                continue
            self._add(common, "pass", i, j)
            source_left[i] //= common
            target_left[j] //= common

    def _unaligned_run(self, i: int, j: int) -> tuple[int, int]:
        """Give dims from ``i`` / ``j`` replication factors until both runs hold equal products;
        returns the dims after the run."""
        (source_left, _), (target_left, _) = self.sides
        source_product = target_product = 1
        while i < len(source_left) or j < len(target_left):
            take_source = j == len(target_left) or (
                i < len(source_left) and source_product <= target_product)
            if take_source:
                source_product *= source_left[i]
                self._add(source_left[i], "replication", i, None)
                source_left[i], i = 1, i + 1
            else:
                target_product *= target_left[j]
                self._add(target_left[j], "replication", None, j)
                target_left[j], j = 1, j + 1
            if source_product == target_product:
                return i, j
        return i, j

    def rule(self) -> FactorRule:
        (_, source_dims), (_, target_dims) = self.sides
        return FactorRule(tuple(self.sizes), tuple(self.kinds),
                          (tuple(tuple(dim) for dim in source_dims),),
                          (tuple(tuple(dim) for dim in target_dims),))


@sharding_rules.register("reshape", "squeeze", "expand_dims")
def _reshape(op: Op) -> FactorRule:
    return _ReshapeFactors(op.operands[0].type.shape, op.result.type.shape).rule()


def _windowed(op: Op, changed_dims) -> FactorRule:
    """Slice/pad/rev: each dim keeps one factor from operand to result. A dim the op changes is
    a permutation factor (sharding it moves data across shard boundaries), sized like the
    operand dim (as in Shardy); extra operands (pad's value) are scalars."""
    names = letters(op.result.type.rank)
    operand_shape = op.operands[0].type.shape
    kinds = {names[dim]: "permutation" for dim in changed_dims}
    sizes = {names[dim]: operand_shape[dim] for dim in changed_dims}
    extra = ", []" * (len(op.operands) - 1)
    return _rule(op, f"{joined(names)}{extra} -> {joined(names)}", kinds, sizes)


@sharding_rules.register("slice")
def _slice(op: Op) -> FactorRule:
    shape = op.operands[0].type.shape
    changed = {dim for dim, (start, limit, stride) in enumerate(
        zip(op.attrs["start_indices"], op.attrs["limit_indices"], op.attrs["strides"]))
        if (start, limit, stride) != (0, shape[dim], 1)}
    return _windowed(op, changed)


@sharding_rules.register("pad")
def _pad(op: Op) -> FactorRule:
    changed = {dim for dim, config in enumerate(op.attrs["padding_config"])
               if tuple(config) != (0, 0, 0)}
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
        outputs = [names[dim] if window[dim] == base[dim] else f"w{dim}"
                   for dim in range(len(base))]
        kinds.update({name: "replication" for name in outputs if name[0] == "w"})
        indices = ", []" * (len(op.operands) - 1)
        return _rule(op, f"{joined(operand)}{indices} -> {joined(outputs)}", kinds)
    update = [names[dim] if window[dim] == base[dim] else f"u{dim}" for dim in range(len(base))]
    kinds.update({name: "replication" for name in update if name[0] == "u"})
    indices = ", []" * (len(op.operands) - 2)
    return _rule(op, f"{joined(operand)}, {joined(update)}{indices} -> {joined(operand)}", kinds)


@sharding_rules.register("concatenate")
def _concatenate(op: Op) -> FactorRule:
    # the concatenated dim is one permutation factor of the result's size (as in Shardy)
    names = letters(op.result.type.rank)
    dimension = names[op.attrs["dimension"]]
    tensor = joined(names)
    operands = ", ".join([tensor] * len(op.operands))
    return _rule(op, f"{operands} -> {tensor}", {dimension: "permutation"},
                 {dimension: op.result.type.shape[op.attrs["dimension"]]})


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


@sharding_rules.register("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and",
                         "reduce_or")
def _reduce(op: Op) -> FactorRule:
    return _reduced(op, set(op.attrs["axes"]), "reduction")


@sharding_rules.register("argmax", "argmin")
def _arg_reduce(op: Op) -> FactorRule:
    return _reduced(op, {op.attrs["axis"]}, "replication")


@sharding_rules.register("cumsum", "cumprod", "cummax", "cummin")
def _scan(op: Op) -> FactorRule:
    names = letters(op.result.type.rank)
    return _rule(op, f"{joined(names)} -> {joined(names)}",
                 {names[op.attrs["axis"]]: "replication"})


@sharding_rules.register("sort")
def _sort(op: Op) -> FactorRule:
    # every operand and result shares the factors; the sorted dim needs the whole dim
    names = letters(op.operands[0].type.rank)
    tensor = joined(names)
    operands = ", ".join([tensor] * len(op.operands))
    results = ", ".join([tensor] * len(op.results))
    return _rule(op, f"{operands} -> {results}", {names[op.attrs["dimension"]]: "replication"})


@sharding_rules.register("gather")
def _gather(op: Op) -> FactorRule:
    axis = op.attrs["axis"]
    operand_rank, index_rank = op.operands[0].type.rank, op.operands[1].type.rank
    operand = [f"o{dim}" for dim in range(operand_rank)]
    indices = [f"x{dim}" for dim in range(index_rank)]
    result = operand[:axis] + indices + operand[axis + 1:]
    return _rule(op, f"{joined(operand)}, {joined(indices)} -> {joined(result)}",
                 {operand[axis]: "replication"})


@sharding_rules.register("manual_computation")
def _manual_computation(op: Op) -> FactorRule:
    # NOTE: the boundary shardings are fixed by in/out_shardings; nothing flows across it
    operand_specs = [joined([f"a{index}_{dim}" for dim in range(value.type.rank)])
                     for index, value in enumerate(op.operands)]
    result_specs = [joined([f"r{index}_{dim}" for dim in range(value.type.rank)])
                    for index, value in enumerate(op.results)]
    names = [name for spec in operand_specs + result_specs for name in spec.split() if name != "[]"]
    return _rule(op, f"{', '.join(operand_specs)} -> {', '.join(result_specs)}",
                 {name: "replication" for name in names})
