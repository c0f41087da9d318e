"""Readable text of a propagation result: each value's sharding and where every axis came from."""

from __future__ import annotations

import linecache

from meshjit.ir import Module
from meshjit.ir.printer import format_axis, format_sharding, name_values

from .propagate_shardings import PropagationResult


def _source_line(location: str | None) -> str:
    """The user's source text at ``file:line``, when the file can be read."""
    if not location or ":" not in location:
        return ""
    # NOTE: a location inside jax.named_scope reads ``scope @ file:line``
    filename, _, line = location.rpartition(" @ ")[2].rpartition(":")
    text = linecache.getline(filename, int(line)) if line.isdigit() else ""
    return text.strip()


def _describe_value(name: str, op_name: str | None, location: str | None) -> str:
    head = f"{name} = {op_name}" if op_name else name
    if location:
        head += f"  at {location}"
        source = _source_line(location)
        if source:
            head += f"  `{source}`"
    return head


def _axis_lines(axis, record) -> list[str]:
    """``"x" from input 0 %a via %a -[dot_general]-> %0``, then the last step's source line."""
    text = f"    {format_axis(axis)} from {record.origin}"
    if not record.hops:
        return [text]
    path = record.hops[0].source + "".join(
        f" -[{hop.op_name}]-> {hop.target}" for hop in record.hops)
    last = record.hops[-1]
    where = f" at {last.location}" if last.location else ""
    source = _source_line(last.location)
    detail = (f"        last step: {last.op_name}{where}" + (f"  `{source}`" if source else "")
              + f" (stage: {last.stage})")
    return [f"{text} via {path}", detail]


def _entries(block):
    """(value id, what defines it, location) for every value propagation saw, in program order:
    op results, and the arguments and values of control flow regions."""
    for op in block.ops:
        if op.name != "manual_computation":
            for region in op.regions:
                yield from ((arg.id, f"region argument of {op.name}", op.location) for arg in region.args)
                yield from _entries(region)
        yield from ((value.id, op.name, op.location) for value in op.results)


def format_provenance(module: Module, result: PropagationResult, strategy_name: str) -> str:
    """One paragraph per value: its sharding, then a line per mesh axis with its origin and path."""
    func = module.main
    names = name_values(func)
    if result.mesh_name is None:
        return "no shardings: the program names no mesh, so every value is unsharded\n"
    lines = [f"sharding propagation ({strategy_name}) over @{result.mesh_name}", ""]
    entries = [(arg.id, None, None) for arg in func.args] + list(_entries(func.body))
    for value_id, op_name, location in entries:
        sharding = result.shardings.get(value_id)
        lines.append(f"{_describe_value(names[value_id], op_name, location)}")
        lines.append(f"    sharding {format_sharding(sharding) if sharding else 'none'}")
        records = result.provenance.of(value_id)
        for axis in sorted(records, key=format_axis):
            lines.extend(_axis_lines(axis, records[axis]))
    return "\n".join(lines) + "\n"
