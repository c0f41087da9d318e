"""A read-only networkx view of a module's def-use graph, for ordering, reachability and
drawing, and its DOT text. The IR stays the source of truth; nothing here changes it."""

from __future__ import annotations

import networkx as nx

from .core import Block, Func, Module, Op
from .printer import format_attrs, format_sharding, name_values

__all__ = ["to_digraph", "to_dot"]


def to_digraph(func_or_module: Func | Module) -> nx.DiGraph:
    """Nodes for ops, values and returns; edges from each value to its users and from each op
    to its results.

    Node keys are ``"@func:%name"`` for values, ``"@func:op<k>"`` for ops (``k`` counts ops in
    textual order, nested ones included) and ``"@func:return"`` for a function's return
    (``"@func:op<k>:return"`` for a region's). Every node has ``kind`` (``"value"``, ``"op"``
    or ``"return"``), ``func``, ``label`` and ``ir`` (the Value, Op or Block); value nodes add
    ``type`` and ``sharding`` text, op nodes ``name``, ``attrs`` text and ``parent`` (the key
    of the op whose region holds it, or None). Region bodies join the graph through ``enter``
    edges (op to the body's arguments) and ``exit`` edges (the body's return to the op's
    results), so the graph stays acyclic.
    """
    funcs = func_or_module.funcs if isinstance(func_or_module, Module) else (func_or_module,)
    graph = nx.DiGraph()
    for func in funcs:
        _FunctionGraph(graph, func).add()
    return nx.freeze(graph)


class _FunctionGraph:
    def __init__(self, graph: nx.DiGraph, func: Func):
        self.graph = graph
        self.func = func
        self.names = name_values(func)
        self.op_count = 0

    def value_key(self, value) -> str:
        return f"@{self.func.name}:{self.names.get(value.id, f'%undefined_{value.id}')}"

    def add(self) -> None:
        func = self.func
        for index, value in enumerate(func.args):
            sharding = func.arg_shardings[index] if index < len(func.arg_shardings) else None
            self.add_value(value, sharding)
        return_key = self.add_block(func.body, None, f"@{func.name}:return")
        self.graph.nodes[return_key]["result_shardings"] = tuple(
            None if sharding is None else format_sharding(sharding)
            for sharding in func.result_shardings
        )

    def add_value(self, value, sharding) -> str:
        key = self.value_key(value)
        sharding_text = None if sharding is None else format_sharding(sharding)
        label = f"{self.names.get(value.id, key)}: {value.type}"
        self.graph.add_node(
            key,
            kind="value",
            func=self.func.name,
            label=label,
            ir=value,
            type=str(value.type),
            sharding=sharding_text,
        )
        return key

    def add_block(self, block: Block, parent: str | None, return_key: str) -> str:
        for op in block.ops:
            self.add_op(op, parent)
        self.graph.add_node(
            return_key, kind="return", func=self.func.name, label="return", ir=block
        )
        for index, value in enumerate(block.returns):
            if self.value_key(value) not in self.graph:
                self.add_value(value, None)
            self.graph.add_edge(self.value_key(value), return_key, kind="return", index=index)
        return return_key

    def add_op(self, op: Op, parent: str | None) -> None:
        key = f"@{self.func.name}:op{self.op_count}"
        self.op_count += 1
        self.graph.add_node(
            key,
            kind="op",
            func=self.func.name,
            label=op.name,
            ir=op,
            name=op.name,
            attrs=format_attrs(op.attrs) if op.attrs else "",
            parent=parent,
        )
        for index, operand in enumerate(op.operands):
            if self.value_key(operand) not in self.graph:
                self.add_value(operand, None)  # invalid IR: a use before (or without) a definition
            self.graph.add_edge(self.value_key(operand), key, kind="use", index=index)
        results = [
            self.add_value(result, op.sharding_of(index)) for index, result in enumerate(op.results)
        ]
        for index, result_key in enumerate(results):
            self.graph.add_edge(key, result_key, kind="def", index=index)
        for region_index, region in enumerate(op.regions):
            for index, argument in enumerate(region.args):
                self.graph.add_edge(key, self.add_value(argument, None), kind="enter", index=index)
            return_key = self.add_block(region, key, f"{key}:return{region_index or ''}")
            for index, result_key in enumerate(results):
                self.graph.add_edge(return_key, result_key, kind="exit", index=index)


def to_dot(func_or_module: Func | Module, name: str = "meshjit") -> str:
    """DOT text of ``to_digraph``: ops as boxes, values as ellipses, returns as diamonds, one
    cluster per function. Deterministic; needs no graphviz bindings."""
    graph = to_digraph(func_or_module)
    lines = [f"digraph {_quote(name)} {{", "  rankdir=TB;", '  node [fontname="monospace"];']
    funcs = dict.fromkeys(data["func"] for _, data in graph.nodes(data=True))
    for cluster, func in enumerate(funcs):
        lines.append(f"  subgraph cluster_{cluster} {{")
        lines.append(f"    label={_quote('@' + func)};")
        for key, data in graph.nodes(data=True):
            if data["func"] == func:
                lines.append(f"    {_quote(key)} [{_node_style(data)}];")
        lines.append("  }")
    for source, target, data in graph.edges(data=True):
        style = ' style="dashed"' if data["kind"] in ("enter", "exit") else ""
        lines.append(
            f"  {_quote(source)} -> {_quote(target)} [label={_quote(str(data['index']))}{style}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_style(data: dict) -> str:
    label = data["label"]
    if data["kind"] == "op" and data["attrs"]:
        label += "\n" + data["attrs"]
    if data["kind"] == "value" and data["sharding"]:
        label += "\n" + data["sharding"]
    shape = {"op": "box", "value": "ellipse", "return": "diamond"}[data["kind"]]
    return f"shape={shape}, label={_quote(label)}"


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
