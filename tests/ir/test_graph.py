"""The networkx view of the IR and its DOT text."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from meshjit.ir import Block, Func, Module, Op, TensorType, Value, parse_module, to_digraph
from meshjit.ir.graph import to_dot

GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "ir"
TEXT = """mesh @m = <["x"=2]>

func @main(%a: f32[8] {sharding = <@m, [{"x"}]>}, %b: f32[8]) -> (f32[8], f32[8]) {
  %0 = add(%a, %b) : f32[8]
  %1 = tanh(%0) : f32[8] <@m, [{?}]>
  return %1, %0
}

func @helper(%a: f32[8]) -> (f32[8]) {
  return %a
}
"""


@pytest.fixture(scope="module")
def graph():
    return to_digraph(parse_module(TEXT))


def test_nodes_for_values_ops_and_returns(graph):
    kinds = {key: data["kind"] for key, data in graph.nodes(data=True)}
    assert kinds == {
        "@main:%a": "value",
        "@main:%b": "value",
        "@main:op0": "op",
        "@main:%0": "value",
        "@main:op1": "op",
        "@main:%1": "value",
        "@main:return": "return",
        "@helper:%a": "value",
        "@helper:return": "return",
    }


def test_node_attributes(graph):
    assert graph.nodes["@main:%a"]["sharding"] == '<@m, [{"x"}]>'
    assert graph.nodes["@main:%a"]["type"] == "f32[8]"
    assert graph.nodes["@main:%a"]["label"] == "%a: f32[8]"
    assert graph.nodes["@main:%1"]["sharding"] == "<@m, [{?}]>"
    assert graph.nodes["@main:%b"]["sharding"] is None
    assert graph.nodes["@main:op1"]["name"] == "tanh"
    assert graph.nodes["@main:op1"]["ir"].name == "tanh"
    assert graph.nodes["@main:op1"]["parent"] is None
    assert isinstance(graph.nodes["@main:%0"]["ir"], Value)


def test_def_use_edges(graph):
    edges = {
        (source, target): (data["kind"], data["index"])
        for source, target, data in graph.edges(data=True)
    }
    assert edges[("@main:%a", "@main:op0")] == ("use", 0)
    assert edges[("@main:%b", "@main:op0")] == ("use", 1)
    assert edges[("@main:op0", "@main:%0")] == ("def", 0)
    assert edges[("@main:%1", "@main:return")] == ("return", 0)
    assert edges[("@main:%0", "@main:return")] == ("return", 1)


def test_ordering_and_reachability(graph):
    order = [key for key in nx.topological_sort(graph) if graph.nodes[key]["kind"] == "op"]
    assert order == ["@main:op0", "@main:op1"]
    assert "@main:return" in nx.descendants(graph, "@main:%b")
    assert nx.ancestors(graph, "@main:%1") == {
        "@main:%a",
        "@main:%b",
        "@main:op0",
        "@main:%0",
        "@main:op1",
    }


def test_the_view_is_read_only(graph):
    with pytest.raises(nx.NetworkXError):
        graph.add_node("extra")


def test_regions_join_through_enter_and_exit_edges():
    graph = to_digraph(parse_module((GOLDEN_DIR / "sharding_manual.mjir").read_text()).main)
    manual = next(
        key for key, data in graph.nodes(data=True) if data.get("name") == "manual_computation"
    )
    entered = [
        target for _, target, data in graph.out_edges(manual, data=True) if data["kind"] == "enter"
    ]
    assert entered == ["@main:%arg3", "@main:%arg4"]
    exits = [
        (source, target)
        for source, target, data in graph.edges(data=True)
        if data["kind"] == "exit"
    ]
    assert exits == [(f"{manual}:return", "@main:%3")]
    body_ops = [data["name"] for _, data in graph.nodes(data=True) if data.get("parent") == manual]
    assert body_ops == ["slice", "add", "all_reduce", "axis_index"]
    assert nx.is_directed_acyclic_graph(graph)
    assert nx.has_path(graph, "@main:%a", "@main:%8")


def test_a_use_without_a_definition_still_draws():
    stray = Value.fresh(TensorType((2,), "f32"))
    op = Op("tanh", (stray,), (Value.fresh(stray.type),))
    graph = to_digraph(Func("f", Block((), (op,), op.results)))
    assert graph.nodes[f"@f:%undefined_{stray.id}"]["kind"] == "value"


def test_dot_text():
    module = parse_module(TEXT)
    dot = to_dot(module)
    assert dot == to_dot(parse_module(TEXT))
    assert dot.startswith('digraph "meshjit" {\n')
    assert dot.endswith("}\n")
    assert 'subgraph cluster_0 {\n    label="@main";' in dot
    assert '"@main:%a" [shape=ellipse, label="%a: f32[8]\\n<@m, [{\\"x\\"}]>"];' in dot
    assert '"@main:op0" [shape=box, label="add"];' in dot
    assert '"@main:%a" -> "@main:op0" [label="0"];' in dot
    assert dot.count("{") == dot.count("}")


def test_an_empty_module_has_an_empty_graph():
    assert to_digraph(Module()).number_of_nodes() == 0
    assert (
        to_dot(Module())
        == 'digraph "meshjit" {\n  rankdir=TB;\n  node [fontname="monospace"];\n}\n'
    )
