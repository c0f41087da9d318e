"""Provenance of propagated shardings: for every value and mesh axis, the user sharding it came
from (input N, output N, constraint N, manual N) and the op edges that carried it, as data
(``PropagationResult.provenance``) and as text (``format_provenance``)."""

from __future__ import annotations

from meshjit.compiler.propagation.explain import format_provenance
from meshjit.compiler.propagation.propagate_shardings import analyze_shardings
from meshjit.ir import AxisRef, parse_module

MODULE = """
mesh @mesh = <["x"=2, "y"=4]>
func @main(%a: f32[8,16], %w: f32[16,32], %b: f32[8,32] {sharding = <@mesh, [{}, {}]>})
    -> (f32[8,32] {sharding = <@mesh, [{?}, {"y"}]>}, f32[8,32]) {
  %0 = dot_general(%a, %w) {batch_dims = [[], []], contracting_dims = [[1], [0]]}
      : f32[8,32] loc("SOURCE":2)
  %1 = tanh(%0) : f32[8,32] loc("SOURCE":3)
  %2 = sharding_constraint(%1) {sharding = <@mesh, [{"x", ?}, {?}]>} : f32[8,32]
  %3 = add(%2, %b) : f32[8,32]
  return %2, %3
}
"""

SOURCE = "def layer(x, w, b):\n    h = x @ w\n    return jnp.tanh(h)\n"


def _explain(tmp_path) -> tuple[str, object, object]:
    source = tmp_path / "model.py"
    source.write_text(SOURCE)
    module = parse_module(MODULE.replace("SOURCE", str(source)))
    result = analyze_shardings(module)
    return format_provenance(module, result, "shardy"), module, result


def _paragraph(text: str, head: str) -> str:
    """The lines describing one value, starting with the line that starts with ``head``."""
    lines = text.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(head))
    following = range(start + 1, len(lines))
    end = next((index for index in following if not lines[index].startswith(" ")), len(lines))
    return "\n".join(lines[start:end])


def test_each_axis_names_its_origin_and_path(tmp_path):
    text, _, _ = _explain(tmp_path)
    assert text.startswith("sharding propagation (shardy) over @mesh\n")
    assert _paragraph(text, "%a") == (
        '%a\n'
        '    sharding <@mesh, [{"x"}, {}]>\n'
        '    "x" from constraint 0 %2 via %2 -[sharding_constraint]-> %1 -[tanh]-> %0 '
        '-[dot_general]-> %a\n'
        f'        last step: dot_general at {tmp_path / "model.py"}:2  `h = x @ w` '
        '(stage: pass-through factors, broadcast backward)')
    w_lines = _paragraph(text, "%w").splitlines()
    assert w_lines[2] == ('    "y" from output 0 via output 0 -[return]-> %2 '
                          '-[sharding_constraint]-> %1 -[tanh]-> %0 -[dot_general]-> %w')


def test_user_shardings_are_their_own_origin(tmp_path):
    text, _, _ = _explain(tmp_path)
    constraint = _paragraph(text, "%2 = sharding_constraint")
    assert '    "x" from constraint 0 %2\n' in constraint + "\n"
    assert '"y" from output 0 via output 0 -[return]-> %2' in constraint
    # an input's own axes: %3 takes "x" and "y" from %2; %b (closed, replicated) gets nothing
    assert _paragraph(text, "%b") == "%b\n    sharding <@mesh, [{}, {}]>"
    assert '"x" from constraint 0 %2 via %2 -[add]-> %3' in _paragraph(text, "%3 = add")


def test_values_show_their_source_line(tmp_path):
    text, _, _ = _explain(tmp_path)
    assert f"%1 = tanh  at {tmp_path / 'model.py'}:3  `return jnp.tanh(h)`" in text


def test_provenance_table_holds_origins_and_hops(tmp_path):
    _, module, result = _explain(tmp_path)
    w = module.main.args[1]
    record = result.provenance.of(w.id)[AxisRef("y")]
    assert (record.origin.kind, record.origin.index) == ("output", 0)
    hops = [hop.op_name for hop in record.hops]
    assert hops == ["return", "sharding_constraint", "tanh", "dot_general"]
    assert record.hops[-1].target == "%w"
    a = module.main.args[0]
    assert result.provenance.of(a.id)[AxisRef("x")].origin.kind == "constraint"


def test_input_origins_and_sub_axes():
    module = parse_module("""
mesh @mesh = <["x"=4]>
func @main(%a: f32[8,16] {sharding = <@mesh, [{"x"}, {}]>}) -> (f32[2,4,16]) {
  %0 = reshape(%a) {new_sizes = [2, 4, 16]} : f32[2,4,16]
  return %0
}
""")
    text = format_provenance(module, analyze_shardings(module), "shardy")
    assert '    "x" from input 0 %a\n' in text
    assert '    "x":(1)2 from input 0 %a via %a -[reshape]-> %0\n' in text
    assert '    "x":(2)2 from input 0 %a via %a -[reshape]-> %0\n' in text


def test_manual_computation_boundaries_are_origins():
    module = parse_module("""
mesh @mesh = <["x"=2]>
func @main(%a: f32[8,16]) -> (f32[8,16]) {
  %0 = manual_computation(%a) {in_shardings = [<@mesh, [{"x"}, {}]>], manual_axes = ["x"],
                               out_shardings = [<@mesh, [{"x"}, {}]>]} ({
  ^body(%local: f32[4,16]):
    return %local
  }) : f32[8,16]
  %1 = exp(%0) : f32[8,16]
  return %1
}
""")
    text = format_provenance(module, analyze_shardings(module), "shardy")
    assert '"x" from manual 0 operand 0 via manual 0 operand 0 -[manual_input]-> %a' in text
    assert '"x" from manual 0 result 0 via %0 -[exp]-> %1' in text


def test_a_module_without_a_mesh_explains_that():
    text = "func @main(%a: f32[4]) -> (f32[4]) {\n  %0 = exp(%a) : f32[4]\n  return %0\n}\n"
    module = parse_module(text)
    assert "no shardings" in format_provenance(module, analyze_shardings(module), "shardy")
