"""``meshjit draw``: a module's dataflow graph (the networkx view of ir.graph) as DOT, with every
value filled in the colour of its sharding and collectives highlighted; SVG through Graphviz's
``dot`` when it is installed, DOT text otherwise (Graphviz is never required).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from meshjit.compiler.analysis.collectives import COLLECTIVES
from meshjit.ir import DimSharding, Module, TensorSharding, to_digraph
from meshjit.ir.printer import format_sharding

from .cli_tools import ToolError, file_stem, is_partitioned, load_module, module_passes, run_passes, select_passes

# NOTE: ColorBrewer's Set3, light enough for black text; shardings take them in order of first use.
PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
           "#bc80bd", "#ccebc5", "#ffed6f", "#d9d9d9")
REPLICATED_COLOUR = "#f2f2f2"
COLLECTIVE_COLOUR = "#ff7f0e"
_SHAPES = {"op": "box", "value": "ellipse", "return": "diamond"}


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _layout_key(sharding: TensorSharding) -> str:
    """The sharding without open/closed marks or priorities: what the data layout is."""
    dims = tuple(DimSharding(dim.axes) for dim in sharding.dims)
    return format_sharding(TensorSharding(sharding.mesh_name, dims, (), sharding.unreduced, sharding.reduction))


def value_shardings(module: Module) -> dict[int, TensorSharding]:
    """Every value of the entry function that carries a sharding, by value id."""
    func = module.main
    shardings = {arg.id: sharding for arg, sharding in zip(func.args, func.arg_shardings) if sharding is not None}
    for op in func.body.walk():
        for index, result in enumerate(op.results):
            if op.sharding_of(index) is not None:
                shardings[result.id] = op.sharding_of(index)
    return shardings


class _Colours:
    """One fill colour per distinct layout, in order of first use; replicated values are grey."""

    def __init__(self):
        self.legend: dict[str, str] = {}
        self.used = 0

    def of(self, sharding: TensorSharding | None) -> str:
        if sharding is None:
            return "white"
        if sharding.is_fully_replicated():
            self.legend.setdefault(_layout_key(sharding) + " (replicated)", REPLICATED_COLOUR)
            return REPLICATED_COLOUR
        key = _layout_key(sharding)
        if key not in self.legend:
            self.legend[key] = PALETTE[self.used % len(PALETTE)]
            self.used += 1
        return self.legend[key]


def _node_line(key: str, data: dict, shardings: dict[int, TensorSharding], colours: _Colours) -> str:
    label, fill = data["label"], "white"
    if data["kind"] == "value":
        sharding = shardings.get(data["ir"].id)
        fill = colours.of(sharding)
        if sharding is not None:
            label += "\n" + _layout_key(sharding)
    elif data["kind"] == "op" and data["name"] in COLLECTIVES:
        fill = COLLECTIVE_COLOUR
        label += "\naxes = " + ",".join(data["ir"].attrs.get("axes", ()))
    return f"  {_quote(key)} [shape={_SHAPES[data['kind']]}, fillcolor={_quote(fill)}, label={_quote(label)}];"


def to_coloured_dot(module: Module, title: str = "meshjit") -> str:
    """DOT text of the entry function: ops as boxes (collectives orange), values as ellipses
    filled by sharding, a legend of the shardings; deterministic."""
    graph = to_digraph(module.main)
    shardings = value_shardings(module)
    colours = _Colours()
    nodes = [_node_line(key, data, shardings, colours) for key, data in graph.nodes(data=True)]
    lines = [f"digraph {_quote(title)} {{", "  rankdir=TB;",
             '  node [fontname="monospace", style="filled"];', *nodes]
    for source, target, data in graph.edges(data=True):
        style = ', style="dashed"' if data["kind"] in ("enter", "exit") else ""
        lines.append(f"  {_quote(source)} -> {_quote(target)} [label={_quote(str(data['index']))}{style}];")
    if colours.legend:
        lines += ["  subgraph cluster_legend {", '    label="shardings";']
        for index, (text, colour) in enumerate(colours.legend.items()):
            lines.append(f"    {_quote(f'legend {index}')} [shape=box, fillcolor={_quote(colour)}, label={_quote(text)}];")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_graph(dot_text: str, output: str) -> str:
    """Write ``dot_text`` to ``output`` (``-`` for stdout, ``.dot``, or ``.svg`` through
    Graphviz); returns what was done, for the user."""
    if output == "-":
        sys.stdout.write(dot_text)
        return ""
    path = Path(output)
    if path.suffix not in (".dot", ".svg"):
        raise ToolError(f"-o {output}: the output must end in .svg or .dot (or be - for DOT on stdout)")
    if path.suffix == ".dot":
        _write(path, dot_text)
        return f"wrote {path}"
    dot = shutil.which("dot")
    if dot is None:
        fallback = path.with_suffix(".dot")
        _write(fallback, dot_text)
        return (f"Graphviz's `dot` is not installed, so wrote DOT to {fallback} instead of SVG "
                f"(render it with `dot -Tsvg {fallback} -o {path}`)")
    result = subprocess.run([dot, "-Tsvg", "-o", str(path)], input=dot_text, text=True, capture_output=True,
                            timeout=120, check=False)
    if result.returncode != 0:
        raise ToolError(f"Graphviz's dot failed to write {path}: {result.stderr.strip()}")
    return f"wrote {path}"


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as error:
        raise ToolError(f"cannot write {path}: {error}") from None


def run_draw(arguments) -> int:
    """``meshjit draw``: propagate (unless told otherwise) and draw the module."""
    module = load_module(arguments.file, arguments.mesh)
    if arguments.passes is None:
        names = [] if is_partitioned(module) else ["propagate_shardings"]
        passes = module_passes(arguments.strategy).select(names)
    else:
        passes = select_passes(arguments.passes, module, arguments.strategy)
    module = run_passes(module, passes)
    message = write_graph(to_coloured_dot(module, file_stem(arguments.file)), arguments.output)
    if message:
        print(message)
    return 0
