"""Sharding rules: every global op has one, and representative instances map their dims to the
factors GSPMD/Shardy would use (checked through ``str(rule)``)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from meshjit.compiler.sharding.factor_rules import KINDS, rule_from_spec
from meshjit.compiler.rules import PER_DEVICE_OPS, sharding_rules
from meshjit.ir import parse_module
from meshjit.ir.registry import MissingRuleError
from meshjit.ir.ops import ALL_OPS, COLLECTIVE_OPS

IR_GOLDENS = sorted((Path(__file__).parent.parent / "golden" / "ir").glob("*.mjir"))


def test_every_global_op_has_a_sharding_rule():
    missing = sorted(set(ALL_OPS) - PER_DEVICE_OPS - set(sharding_rules))
    assert not missing, f"ops without a sharding rule: {missing}"


def test_per_device_ops_have_no_rule_and_are_the_collectives():
    assert PER_DEVICE_OPS == set(COLLECTIVE_OPS)
    assert not PER_DEVICE_OPS & set(sharding_rules)
    assert set(sharding_rules) <= set(ALL_OPS)


def test_missing_rule_names_the_op_and_the_registry():
    with pytest.raises(MissingRuleError, match="'all_gather'.*sharding rule"):
        sharding_rules["all_gather"]


def _op(signature: str, line: str):
    """The op on ``line`` inside ``func @main(signature)``."""
    result_type = line.rsplit(" : ", 1)[1].split(", ")[0]
    text = f"func @main({signature}) -> ({result_type}) {{\n  {line}\n  return %0\n}}\n"
    module = parse_module(text)
    return module.main.body.ops[0]


RULES = [
    ("%a: f32[8,16], %b: f32[8,16]", "%0 = add(%a, %b) : f32[8,16]",
     "i j, i j -> i j  {i=8 j=16}"),
    ("%p: bool[], %a: f32[8,16], %b: f32[8,16]", "%0 = select(%p, %a, %b) : f32[8,16]",
     "[], i j, i j -> i j  {i=8 j=16}"),
    ("%a: f32[8,16], %b: f32[16,32]",
     "%0 = dot_general(%a, %b) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[8,32]",
     "i j, j k -> i k  {i=8 j=16 k=32} [j:reduction]"),
    ("%a: f32[4,8,16], %b: f32[4,16,32]",
     "%0 = dot_general(%a, %b) {batch_dims = [[0], [0]], contracting_dims = [[2], [1]]}"
     " : f32[4,8,32]",
     "i j k, i k l -> i j l  {i=4 j=8 k=16 l=32} [k:reduction]"),
    ("%a: f32[8,16,4]", "%0 = transpose(%a) {permutation = [2, 0, 1]} : f32[4,8,16]",
     "i j k -> k i j  {i=8 j=16 k=4}"),
    ("%a: f32[16]",
     "%0 = broadcast_in_dim(%a) {broadcast_dimensions = [1], shape = [8, 16]} : f32[8,16]",
     "i -> j i  {i=16 j=8}"),
    # a stretched size-1 dim is a factor of its own that never takes axes
    ("%a: f32[1,16]",
     "%0 = broadcast_in_dim(%a) {broadcast_dimensions = [0, 1], shape = [8, 16]} : f32[8,16]",
     "i j -> k j  {i=1 j=16 k=8} [i:replication]"),
    ("%a: f32[]",
     "%0 = broadcast_in_dim(%a) {broadcast_dimensions = [], shape = [8, 16]} : f32[8,16]",
     "[] -> i j  {i=8 j=16}"),
    # split, merge, and both at once: Shardy's ((i j), k) -> (i, (j k))
    ("%a: f32[8,16]", "%0 = reshape(%a) {new_sizes = [2, 4, 16]} : f32[2,4,16]",
     "(i j) k -> i j k  {i=2 j=4 k=16}"),
    ("%a: f32[2,4,16]", "%0 = reshape(%a) {new_sizes = [8, 16]} : f32[8,16]",
     "i j k -> (i j) k  {i=2 j=4 k=16}"),
    ("%a: f32[8,4]", "%0 = reshape(%a) {new_sizes = [2, 16]} : f32[2,16]",
     "(i j) k -> i (j k)  {i=2 j=4 k=4}"),
    # co-prime sizes straddle each other: nothing can pass
    ("%a: f32[6,5]", "%0 = reshape(%a) {new_sizes = [5, 6]} : f32[5,6]",
     "i j -> k l  {i=6 j=5 k=5 l=6} [i:replication, j:replication, k:replication, l:replication]"),
    # ... but an aligned major dim still passes
    ("%a: f32[4,6,5]", "%0 = reshape(%a) {new_sizes = [4, 5, 6]} : f32[4,5,6]",
     "i j k -> i l m  {i=4 j=6 k=5 l=5 m=6} "
     "[j:replication, k:replication, l:replication, m:replication]"),
    ("%a: f32[10,3]", "%0 = reshape(%a) {new_sizes = [6, 5]} : f32[6,5]",
     "(i j) k -> (i l) m  {i=2 j=5 k=3 l=3 m=5} "
     "[j:replication, k:replication, l:replication, m:replication]"),
    ("%a: f32[3,1,6]", "%0 = squeeze(%a) {dimensions = [1]} : f32[3,6]",
     "i j k -> i k  {i=3 j=1 k=6} [j:replication]"),
    ("%a: f32[3,6]", "%0 = expand_dims(%a) {dimensions = [1]} : f32[3,1,6]",
     "i j -> i k j  {i=3 j=6 k=1} [k:replication]"),
    ("%a: f32[8,16]",
     "%0 = slice(%a) {limit_indices = [6, 16], start_indices = [2, 0], strides = [1, 1]}"
     " : f32[4,16]",
     "i j -> i j  {i=8 j=16} [i:permutation]"),
    ("%a: f32[8,16], %z: f32[]",
     "%0 = pad(%a, %z) {padding_config = [[0, 0, 0], [2, 2, 0]]} : f32[8,20]",
     "i j, [] -> i j  {i=8 j=16} [j:permutation]"),
    ("%a: f32[8,16]", "%0 = rev(%a) {dimensions = [0]} : f32[8,16]",
     "i j -> i j  {i=8 j=16} [i:permutation]"),
    ("%a: f32[8,16], %b: f32[8,4]", "%0 = concatenate(%a, %b) {dimension = 1} : f32[8,20]",
     "i j, i j -> i j  {i=8 j=20} [j:permutation]"),
    ("%a: f32[8,16], %i: i32[]", "%0 = dynamic_slice(%a, %i, %i) {slice_sizes = [8, 4]} : f32[8,4]",
     "i j, [], [] -> i k  {i=8 j=16 k=4} [j:replication, k:replication]"),
    ("%a: f32[8,16], %u: f32[8,4], %i: i32[]",
     "%0 = dynamic_update_slice(%a, %u, %i, %i) : f32[8,16]",
     "i j, i k, [], [] -> i j  {i=8 j=16 k=4} [j:replication, k:replication]"),
    ("%a: f32[4,8,2]", "%0 = reduce_sum(%a) {axes = [1, 2]} : f32[4]",
     "i j k -> i  {i=4 j=8 k=2} [j:reduction, k:reduction]"),
    ("%a: f32[8,16]", '%0 = argmax(%a) {axis = 1, index_dtype = "i32"} : i32[8]',
     "i j -> i  {i=8 j=16} [j:replication]"),
    ("%a: f32[8,16]", "%0 = cumsum(%a) {axis = 1, reverse = false} : f32[8,16]",
     "i j -> i j  {i=8 j=16} [j:permutation]"),
    ("%k: f32[4,16], %v: i32[4,16]",
     "%0, %1 = sort(%k, %v) {dimension = 1, is_stable = true, num_keys = 1} : f32[4,16], i32[4,16]",
     "i j, i j -> i j, i j  {i=4 j=16} [j:replication]"),
    ("%t: f32[100,8], %i: i32[5,3,1]",
     '%0 = gather(%t, %i) {collapsed_slice_dims = [0], mode = "clip", offset_dims = [2], operand_batching_dims = [], '
     'slice_sizes = [1, 8], start_index_map = [0], start_indices_batching_dims = []} : f32[5,3,8]',
     "i j, k l m -> k l j  {i=100 j=8 k=5 l=3 m=1} [i:replication, m:replication]"),
    ("%t: f32[100,8], %i: i32[5,1], %u: f32[5,8]",
     '%0 = scatter_add(%t, %i, %u) {inserted_window_dims = [0], mode = "fill", operand_batching_dims = [], '
     'scatter_dims_to_operand_dims = [0], scatter_indices_batching_dims = [], update_window_dims = [1]} : f32[100,8]',
     "i j, k l, k j -> i j  {i=100 j=8 k=5 l=1} [k:reduction, l:replication]"),
    ("", '%0 = iota() {dimension = 1, dtype = "i32", shape = [3, 4]} : i32[3,4]',
     " -> i j  {i=3 j=4}"),
]


RULE_IDS = [f"{case[1].split('(')[0][5:]}-{index}" for index, case in enumerate(RULES)]


@pytest.mark.parametrize("signature, line, expected", RULES, ids=RULE_IDS)
def test_rule_of_representative_instance(signature, line, expected):
    op = _op(signature, line)
    assert str(sharding_rules[op.name](op)) == expected


def _golden_ops():
    for path in IR_GOLDENS:
        module = parse_module(path.read_text())
        for func in module.funcs:
            for op in func.body.ops:
                if op.name not in PER_DEVICE_OPS:
                    yield pytest.param(op, id=f"{path.stem}-{op.name}")


@pytest.mark.parametrize("op", list(_golden_ops()))
def test_rule_matches_the_op_instance(op):
    """Every op in the IR goldens: one factor list per dim of every operand and result, known
    kinds, and pass/reduction/replication factors that multiply out to the dim size
    (permutation factors are sized like one of the tensors, as in Shardy)."""
    rule = sharding_rules[op.name](op)
    values = op.operands + op.results
    assert [len(dims) for dims in rule.tensors] == [value.type.rank for value in values]
    assert set(rule.kinds) <= set(KINDS)
    for value, dims in zip(values, rule.tensors):
        for size, factors in zip(value.type.shape, dims):
            assert factors, f"{op.name}: a dim of {value.type} has no factor"
            if all(rule.kinds[factor] != "permutation" for factor in factors):
                assert math.prod(rule.sizes[factor] for factor in factors) == size


def test_rule_from_spec_reads_compound_dims_and_kinds():
    rule = rule_from_spec("(i j) k -> i (j k)", [(8, 4)], [(2, 16)], sizes={"i": 2, "j": 4})
    assert str(rule) == "(i j) k -> i (j k)  {i=2 j=4 k=4}"
    rule = rule_from_spec("i k, k j -> i j", [(8, 16), (16, 32)], [(8, 32)], {"k": "reduction"})
    assert rule.kinds == ("pass", "reduction", "pass")
    assert rule.tensors == (((0,), (1,)), ((1,), (2,)), ((0,), (2,)))


def test_rule_from_spec_errors_name_the_spec():
    with pytest.raises(ValueError, match="no size for factors"):
        rule_from_spec("(i j) -> k", [(8,)], [(8,)])
    with pytest.raises(ValueError, match="does not match shape"):
        rule_from_spec("i j -> i j", [(8,)], [(8, 2)])
