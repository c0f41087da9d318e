"""The control flow ops in the IR: scan, while and cond print and parse (labels, region argument
shardings), the verifier checks region signatures against carries and branches, and the
reference interpreter runs them, globally and per device."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.ir import VerifyError, interpret, parse_module, print_module, renumber, to_digraph, verify

MESH = 'mesh @mesh = <["x"=2, "y"=4]>\n\n'

SCAN = MESH + """func @main(%w: f32[4,4], %h: f32[2,4], %xs: f32[5,2,4]) -> (f32[2,4], f32[5,2,4]) {
  %0, %1 = scan(%w, %h, %xs) {length = 5, num_carry = 1, num_consts = 1, reverse = REVERSE, unroll = 1} ({
  ^body(%a: f32[4,4] {sharding = <@mesh, [{}, {}]>}, %b: f32[2,4], %c: f32[2,4]):
    %2 = dot_general(%b, %a) {batch_dims = [[], []], contracting_dims = [[1], [0]]} : f32[2,4]
    %3 = add(%2, %c) : f32[2,4]
    %4 = tanh(%3) : f32[2,4]
    return %4, %3
  }) : f32[2,4], f32[5,2,4]
  return %0, %1
}
"""

LOOPS = MESH + """func @main(%n: i32[], %x: f32[3], %k: i32[]) -> (i32[], f32[3], f32[3]) {
  %0 = constant() {value = dense<0> : i32[]} : i32[]
  %1, %2 = while(%n, %0, %x) {num_consts = 1} ({
  ^cond(%limit: i32[], %i: i32[], %v: f32[3]):
    %3 = compare(%i, %limit) {direction = "lt"} : bool[]
    return %3
  }, {
  ^body(%limit2: i32[], %i2: i32[], %v2: f32[3]):
    %4 = constant() {value = dense<1> : i32[]} : i32[]
    %5 = add(%i2, %4) : i32[]
    %6 = add(%v2, %v2) : f32[3]
    return %5, %6
  }) : i32[], f32[3]
  %7 = cond(%k, %x) ({
  ^branch0(%p: f32[3]):
    %8 = neg(%p) : f32[3]
    return %8
  }, {
  ^branch1(%q: f32[3]):
    %9 = exp(%q) : f32[3]
    return %9
  }, {
  ^branch2(%r: f32[3]):
    return %r
  }) : f32[3]
  return %1, %2, %7
}
"""


def _random(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("text", [SCAN.replace("REVERSE", "false"), LOOPS])
def test_control_flow_text_round_trips(text):
    module = parse_module(text)
    verify(module)
    assert print_module(module) == text
    assert renumber(parse_module(print_module(module))) == renumber(module)


def test_regions_are_labelled_and_region_arguments_keep_their_sharding():
    module = parse_module(SCAN.replace("REVERSE", "true"))
    assert module.main.body.ops[0].regions[0].arg_sharding(0) is not None
    text = print_module(parse_module(LOOPS))
    assert "^cond(" in text and "^branch2(" in text


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_interprets_forward_and_backward(reverse):
    module = parse_module(SCAN.replace("REVERSE", "true" if reverse else "false"))
    w, h, xs = _random(4, 4), _random(2, 4, seed=1), _random(5, 2, 4, seed=2)
    last, ys = interpret(module, w, h, xs)
    expected, stacked = h, np.zeros_like(xs)
    for step in (range(4, -1, -1) if reverse else range(5)):
        stacked[step] = expected @ w + xs[step]
        expected = np.tanh(stacked[step])
    # NOTE: the reference's float32 tanh is XLA's (a few ulps from numpy's), and the
    # difference passes through the next steps' sums: close in absolute terms, not relative
    # ones where a sum cancels to near zero
    np.testing.assert_allclose(last, expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ys, stacked, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("index, expected", [(-4, lambda x: -x), (0, lambda x: -x), (1, np.exp), (2, lambda x: x),
                                             (9, lambda x: x)])
def test_while_counts_and_cond_clamps_its_index(index, expected):
    module = parse_module(LOOPS)
    x = _random(3)
    count, doubled, chosen = interpret(module, np.int32(4), x, np.int32(index))
    assert int(count) == 4
    np.testing.assert_allclose(doubled, x * 16, rtol=1e-6)
    np.testing.assert_allclose(chosen, expected(x), rtol=1e-6)


def test_scan_of_length_zero_returns_the_initial_carry_and_empty_ys():
    text = MESH + """func @main(%h: f32[2], %xs: f32[0,2]) -> (f32[2], f32[0,2]) {
  %0, %1 = scan(%h, %xs) {length = 0, num_carry = 1, num_consts = 0, reverse = false, unroll = 1} ({
  ^body(%a: f32[2], %b: f32[2]):
    %2 = add(%a, %b) : f32[2]
    return %2, %2
  }) : f32[2], f32[0,2]
  return %0, %1
}
"""
    h = _random(2)
    last, ys = interpret(parse_module(text), h, np.zeros((0, 2), np.float32))
    np.testing.assert_array_equal(last, h)
    assert ys.shape == (0, 2)


def test_a_per_device_scan_runs_its_collectives_every_step():
    text = MESH + """func @main(%h: f32[2]) -> (f32[2]) attributes {spmd_mesh = @mesh} {
  %0 = scan(%h) {length = 3, num_carry = 1, num_consts = 0, reverse = false, unroll = 1} ({
  ^body(%a: f32[2]):
    %1 = all_reduce(%a) {axes = ["y"], mesh = @mesh, reduction = "sum"} : f32[2]
    return %1
  }) : f32[2]
  return %0
}
"""
    stacked = np.ones((8, 2), np.float32)
    (result,) = interpret(parse_module(text), stacked)
    np.testing.assert_array_equal(result, np.full((8, 2), 64.0, np.float32))


def test_a_predicate_that_differs_between_devices_is_an_error():
    text = MESH + """func @main(%i: i32[]) -> (i32[]) attributes {spmd_mesh = @mesh} {
  %0 = axis_index() {axis = "y", mesh = @mesh} : i32[]
  %1 = cond(%0, %i) ({
  ^branch0(%a: i32[]):
    return %a
  }, {
  ^branch1(%b: i32[]):
    return %b
  }) : i32[]
  return %1
}
"""
    with pytest.raises(ValueError, match="the branch index differs between devices"):
        interpret(parse_module(text), np.zeros(8, np.int32))


BAD = [
    ("scanned dim", SCAN.replace("REVERSE", "false").replace("length = 5", "length = 4"),
     "scanned operand 0 f32[5,2,4] must have a leading dim of the length 4"),
    ("cond arguments", LOOPS.replace("%v: f32[3]", "%v: f32[4]"),
     "the cond's argument types are (i32[], i32[], f32[4]), expected (i32[], i32[], f32[3])"),
    ("branch results", LOOPS.replace("return %r", "%10 = convert(%r) {new_dtype = \"f64\"} : f64[3]\n    return %10"),
     "branch 2's result types are (f64[3]), expected (f32[3])"),
    ("while predicate", LOOPS.replace("return %3\n", "return %i\n"), "the cond must return one bool[] value"),
    ("cond index", LOOPS.replace("%7 = cond(%k, %x)", "%7 = cond(%x, %x)"), "the index must be 0-d, got f32[3]"),
    ("while carry", LOOPS.replace("return %5, %6", "return %6, %5"), "the body's result types are (f32[3], i32[])"),
]


@pytest.mark.parametrize("name, text, message", BAD, ids=[row[0] for row in BAD])
def test_the_verifier_checks_region_signatures(name, text, message):
    with pytest.raises(VerifyError) as raised:
        verify(parse_module(text))
    assert message in str(raised.value)


def test_the_graph_view_sees_control_flow_ops():
    graph = to_digraph(parse_module(LOOPS))
    names = {data.get("name") for _, data in graph.nodes(data=True)}
    assert {"while", "cond"} <= names
