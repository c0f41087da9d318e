"""Malformed IR text: every input gets a ParseError (or, once parsed, a VerifyError) that says
where and what; nothing else escapes the parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from meshjit.ir import ParseError, VerifyError, parse_module, verify

MESH = 'mesh @m = <["x"=2, "y"=4]>\n'
GOLDEN_DIR = Path(__file__).parent.parent / "golden" / "ir"


def func(body: str, signature: str = "(%x: f32[8]) -> (f32[8])", attributes: str = "") -> str:
    """A function ``@f`` whose body lines follow its header (line 1, or 2 after MESH)."""
    return f"func @f{signature}{attributes} {{\n{body}}}\n"


def manual(body: str, axes: str = '"x"') -> str:
    """A manual_computation over %x: f32[8] sharded on "x"; its body takes %arg1: f32[4]."""
    return (
        '  %0 = manual_computation(%x) {in_shardings = [<@m, [{"x"}]>], '
        f'manual_axes = [{axes}], out_shardings = [<@m, [{{"x"}}]>]}} ({{\n'
        "  ^body(%arg1: f32[4]):\n"
        f"{body}"
        "  }) : f32[8]\n"
        "  return %0\n"
    )


REGION = MESH + func(manual("    return %arg1\n"))
GOOD = MESH + func("  %0 = tanh(%x) : f32[8]\n  return %0\n")
DEEP = 100_000

# (id, text, error class, (line, column) for ParseErrors, message fragment)
# fmt: off
CASES = [
    # empty, garbage and non-text input
    ("empty", "", ParseError, (1, 1), "empty module"),
    ("only a comment", "  // nothing\n", ParseError, (2, 1), "empty module"),
    ("a bare word", "hello", ParseError, (1, 1), "expected one of 'func', 'mesh', end of input, found 'hello'"),
    ("binary garbage", "\x00\x01\x02garbage", ParseError, (1, 1), "character '\\x00'"),
    ("bytes not utf-8", b"func @f\xff() -> () {}", ParseError, (1, 8), "not UTF-8: byte 0xff"),
    ("png bytes", b"\x89PNG\r\n\x1a\n\x00\x00", ParseError, (1, 1), "not UTF-8: byte 0x89"),
    ("bytes with a bad second line", "func @f() -> () {\n  return é\n}".encode("latin-1"), ParseError, (2, 10), "not UTF-8"),
    ("not text at all", 42, ParseError, (1, 1), "expected the module text as str or bytes"),
    ("deeply nested list", "func @f() -> () attributes {a = " + "[" * DEEP + "]" * DEEP + "} {\n  return\n}\n", ParseError, (1, 132), "deeper than 100 levels"),
    ("deeply nested parens", "(" * DEEP, ParseError, (1, 101), "deeper than 100 levels"),
    ("deep dense constant", "func @f() -> () attributes {a = dense<" + "[" * 500 + "1" + "]" * 500 + "> : f32[1]} {\n  return\n}\n", ParseError, (1, 138), "deeper than 100 levels"),
    ("unknown character", MESH + func("  %0 = tanh(%x) : f32[8] $\n  return %0\n"), ParseError, (3, 26), "character '$'"),
    ("unterminated string", 'mesh @m = <["x=2]>\n', ParseError, (1, 13), "unterminated string literal"),
    ("bad string escape", MESH + func('  %0 = tanh(%x) {a = "\\q"} : f32[8]\n  return %0\n'), ParseError, (3, 22), "malformed string literal"),
    # truncated input
    ("truncated after mesh keyword", "mesh", ParseError, (1, 5), "expected a symbol like @main, found end of input"),
    ("truncated in mesh axes", 'mesh @m = <["x"=2,', ParseError, (1, 19), "found end of input"),
    ("truncated after func name", "func @f", ParseError, (1, 8), "expected '(', found end of input"),
    ("truncated in arguments", "func @f(%x: f32[8", ParseError, (1, 18), "expected one of ',', ']', found end of input"),
    ("truncated before body", "func @f(%x: f32[8]) -> (f32[8])\n", ParseError, (2, 1), "expected one of 'attributes', '{', found end of input"),
    ("truncated in an op", MESH + "func @f(%x: f32[8]) -> (f32[8]) {\n  %0 = tanh(%x", ParseError, (3, 15), "found end of input"),
    ("truncated after colon", MESH + "func @f(%x: f32[8]) -> (f32[8]) {\n  %0 = tanh(%x) :", ParseError, (3, 18), "expected one of '(', a name, found end of input"),
    ("truncated in a sharding", MESH + 'func @f(%x: f32[8] {sharding = <@m, [{"x"', ParseError, (2, 42), "found end of input"),
    ("truncated after return", GOOD[: GOOD.rindex("}")], ParseError, (5, 1), "found end of input"),
    ("truncated in a region", REGION[: REGION.index("  })")], ParseError, (6, 1), "found end of input"),
    ("truncated dense constant", "func @f() -> () attributes {a = dense<[1.0, 2.0", ParseError, (1, 48), "found end of input"),
    # names and scopes
    ("unknown value", MESH + func("  %0 = tanh(%q) : f32[8]\n  return %0\n"), ParseError, (3, 13), "undefined value %q"),
    ("use before definition", MESH + func("  %0 = add(%x, %1) : f32[8]\n  %1 = tanh(%x) : f32[8]\n  return %0\n"), ParseError, (3, 16), "undefined value %1"),
    ("self use", MESH + func("  %0 = add(%0, %x) : f32[8]\n  return %0\n"), ParseError, (3, 12), "undefined value %0"),
    ("unknown returned value", MESH + func("  return %nope\n"), ParseError, (3, 10), "undefined value %nope"),
    ("redefinition", MESH + func("  %0 = tanh(%x) : f32[8]\n  %0 = exp(%x) : f32[8]\n  return %0\n"), ParseError, (4, 3), "%0 is already defined at line 3, column 3"),
    ("argument defined twice", func("  return %x\n", "(%x: f32[8], %x: f32[8]) -> (f32[8])"), ParseError, (1, 21), "%x is already defined at line 1, column 9"),
    ("region redefines an outer name", MESH + func(manual("    %x = tanh(%arg1) : f32[4]\n    return %x\n")), ParseError, (5, 5), "%x is already defined"),
    ("outer value inside a region", MESH + func(manual("    %1 = add(%arg1, %x) : f32[4]\n    return %1\n")), ParseError, (5, 21), "isolated from above"),
    ("region value used outside", MESH + func(manual("    %1 = tanh(%arg1) : f32[4]\n    return %1\n").replace("return %0\n", "return %1\n")), ParseError, (8, 10), "undefined value %1"),
    ("return type differs from the signature", MESH + func("  %0 = tanh(%x) : f32[8]\n  return %0\n", "(%x: f32[8]) -> (f32[4])"), ParseError, (4, 10), "%0 has type f32[8] but the signature of @f declares result 0 as f32[4]"),
    ("return count differs from the signature", MESH + func("  return %x\n", "(%x: f32[8]) -> (f32[8], f32[8])"), ParseError, (3, 3), "@f returns 1 values but its signature declares 2 results"),
    ("more result names than types", MESH + func("  %0, %1 = tanh(%x) : f32[8]\n  return %0\n"), ParseError, (3, 12), "tanh defines 2 values but lists 1 result types"),
    ("a result with no type", MESH + func("  %0 = tanh(%x) : ()\n  return %0\n"), ParseError, (3, 8), "defines 1 values but lists 0 result types"),
    ("duplicate function", MESH + func("  return %x\n") + func("  return %x\n"), ParseError, (5, 6), "function @f is defined twice (first at line 2, column 6)"),
    ("duplicate mesh", MESH + MESH + func("  return %x\n"), ParseError, (2, 6), "mesh @m is defined twice"),
    ("unknown mesh", MESH + func("  return %x\n", "(%x: f32[8] {sharding = <@mesh, [{}]>}) -> (f32[8])"), ParseError, (2, 33), "unknown mesh @mesh; the module defines @m"),
    ("bad sharding axis", MESH + func("  return %x\n", '(%x: f32[8] {sharding = <@m, [{"q"}]>}) -> (f32[8])'), ParseError, (2, 39), "mesh @m has no axis 'q'; its axes are 'x', 'y'"),
    ("bad replicated axis", MESH + func('  %0 = tanh(%x) : f32[8] <@m, [{}], replicated={"x", "w"}>\n  return %0\n'), ParseError, (3, 54), "has no axis 'w'"),
    # types, attributes and shardings
    ("unknown dtype", MESH + func("  return %x\n", "(%x: f8[8]) -> (f32[8])"), ParseError, (2, 13), "unknown element type 'f8'"),
    ("negative dim", MESH + func("  return %x\n", "(%x: f32[-1]) -> (f32[8])"), ParseError, (2, 17), "dimension sizes must not be negative"),
    ("attribute given twice", MESH + func("  %0 = tanh(%x) {a = 1, a = 2} : f32[8]\n  return %0\n"), ParseError, (3, 25), "attribute 'a' is given twice"),
    ("bare word as a value", MESH + func("  %0 = tanh(%x) {a = maybe} : f32[8]\n  return %0\n"), ParseError, (3, 22), "found 'maybe'"),
    ("float out of range", MESH + func("  %0 = tanh(%x) {a = 1e400} : f32[8]\n  return %0\n"), ParseError, (3, 22), "float 1e400 is out of range"),
    ("unknown sharding field", MESH + func('  %0 = tanh(%x) : f32[8] <@m, [{}], shared={"x"}>\n  return %0\n'), ParseError, (3, 37), "unknown sharding field 'shared'"),
    ("open dim marker not last", MESH + func('  %0 = tanh(%x) : f32[8] <@m, [{?, "x"}]>\n  return %0\n'), ParseError, (3, 33), "'?' (an open dim) must come last"),
    ("unreduced given twice", MESH + func('  %0 = tanh(%x) : f32[8] <@m, [{}], unreduced={"x"}, unreduced_max={"y"}>\n  return %0\n'), ParseError, (3, 54), "sharding field unreduced is given twice"),
    ("sub-axis pre-size zero", MESH + func('  %0 = tanh(%x) : f32[8] <@m, [{"y":(0)2}]>\n  return %0\n'), ParseError, (3, 38), "pre-size must be a positive integer"),
    ("unknown argument attribute", MESH + func("  return %x\n", "(%x: f32[8] {donate = true}) -> (f32[8])"), ParseError, (2, 21), "unknown argument attribute 'donate'"),
    ("argument sharding is not a sharding", MESH + func("  return %x\n", "(%x: f32[8] {sharding = 1}) -> (f32[8])"), ParseError, (2, 21), "argument sharding must look like"),
    ("mesh axis declared twice", 'mesh @m = <["x"=2, "x"=4]>\n', ParseError, (1, 20), "mesh axis 'x' is declared twice"),
    ("mesh axis of size zero", 'mesh @m = <["x"=0]>\n', ParseError, (1, 17), "a mesh axis size must be a positive integer"),
    ("device ids repeated", 'mesh @m = <["x"=2], device_ids=[0, 0]>\n', ParseError, (1, 21), "device_ids must be 2 distinct"),
    ("too few device ids", 'mesh @m = <["x"=2], device_ids=[3]>\n', ParseError, (1, 21), "device_ids must be 2 distinct"),
    ("unknown mesh option", 'mesh @m = <["x"=2], devices=[0, 1]>\n', ParseError, (1, 21), "unknown mesh option 'devices'"),
    ("negative location line", MESH + func('  %0 = tanh(%x) : f32[8] loc("a.py":-1)\n  return %0\n'), ParseError, (3, 37), "must not be negative"),
    ("symbol without @", "mesh m = <[]>\n", ParseError, (1, 6), "expected a symbol like @main, found 'm'"),
    ("extra closing brace", func("  return %x\n") + "}\n", ParseError, (4, 1), "expected one of 'func', 'mesh', end of input, found '}'"),
    ("missing return", MESH + func("  %0 = tanh(%x) : f32[8]\n"), ParseError, (4, 1), "found '}'"),
    ("op after return", MESH + func("  return %x\n  %0 = tanh(%x) : f32[8]\n"), ParseError, (4, 3), "found '%0'"),
    # dense constants
    ("constant with too few elements", "func @f() -> () attributes {a = dense<[1.0, 2.0]> : f32[3]} {\n  return\n}\n", ParseError, (1, 39), "dim 0 has size 3 but this list has 2 elements"),
    ("constant nested too shallow", "func @f() -> () attributes {a = dense<[1.0, 2.0]> : f32[2,1]} {\n  return\n}\n", ParseError, (1, 40), "expected a list of 1 elements for dim 1"),
    ("bool constant with a number", "func @f() -> () attributes {a = dense<[1]> : bool[1]} {\n  return\n}\n", ParseError, (1, 40), "expected true or false"),
    ("int constant out of range", "func @f() -> () attributes {a = dense<3000000000> : i32[]} {\n  return\n}\n", ParseError, (1, 39), "does not fit i32"),
    ("float constant out of range", "func @f() -> () attributes {a = dense<1e39> : f32[]} {\n  return\n}\n", ParseError, (1, 39), "out of range for f32"),
    ("hex element too wide", "func @f() -> () attributes {a = dense<0x7FF0000000000000> : f32[]} {\n  return\n}\n", ParseError, (1, 39), "has more bits than f32"),
    ("byte string of the wrong length", 'func @f() -> () attributes {a = dense<"0x0000"> : f32[1]} {\n  return\n}\n', ParseError, (1, 39), "f32[1] needs 4 bytes but the constant has 2"),
    ("byte string with odd digits", 'func @f() -> () attributes {a = dense<"0x000">: f32[1]} {\n  return\n}\n', ParseError, (1, 39), "even number of hex digits"),
    # parsed, then refused by the verifier
    ("unknown op", MESH + func("  %0 = frobnicate(%x) : f32[8]\n  return %0\n"), VerifyError, None, "unknown op 'frobnicate': it has no shape rule"),
    ("attribute of the wrong kind", MESH + func('  %0, %1 = sort(%x, %x) {dimension = "a", is_stable = true, num_keys = 1} : f32[8], f32[8]\n  return %0\n'), VerifyError, None, "dimension"),
    ("result type differs from the shape rule", MESH + func("  %0 = tanh(%x) : f32[4]\n  return %x\n"), VerifyError, None, "result 0 has type f32[4] but the shape rule gives f32[8]"),
    ("too many results for the shape rule", MESH + func("  %0, %1 = tanh(%x) : f32[8], f32[8]\n  return %0\n"), VerifyError, None, "tanh has 2 results but its shape rule gives 1"),
    ("axis used twice", MESH + func("  return %x\n", '(%x: f32[8] {sharding = <@m, [{"x", "x"}]>}) -> (f32[8])'), VerifyError, None, 'axis "x" is used twice'),
    ("axis sharded and replicated", MESH + func('  %0 = tanh(%x) : f32[8] <@m, [{"x"}], replicated={"x"}>\n  return %0\n'), VerifyError, None, 'axis "x" is used twice'),
    ("overlapping sub-axes", MESH + func("  return %x\n", '(%x: f32[8] {sharding = <@m, [{"y":(1)2, "y":(1)4}]>}) -> (f32[8])'), VerifyError, None, 'overlap'),
    ("sub-axis that does not divide", MESH + func("  return %x\n", '(%x: f32[8] {sharding = <@m, [{"y":(1)3}]>}) -> (f32[8])'), VerifyError, None, "does not divide axis 'y'"),
    ("sharding rank differs from the type", MESH + func("  return %x\n", '(%x: f32[8] {sharding = <@m, [{"x"}, {}]>}) -> (f32[8])'), VerifyError, None, "2 dims for a rank-1 tensor"),
    ("collective outside an spmd function", MESH + func('  %0 = all_reduce(%x) {axes = ["x"], mesh = @m, reduction = "sum"} : f32[8]\n  return %0\n'), VerifyError, None, "all_reduce runs per device"),
    ("collective on a non-manual axis", MESH + func(manual('    %1 = all_reduce(%arg1) {axes = ["y"], mesh = @m, reduction = "sum"} : f32[4]\n    return %1\n')), VerifyError, None, "not one of the manual axes"),
    ("collective on an unknown axis", MESH + func('  %0 = all_gather(%x) {axes = ["z"], dim = 0, mesh = @m} : f32[16]\n  return %x\n', attributes=" attributes {spmd_mesh = @m}"), VerifyError, None, "names axis 'z'"),
    ("spmd_mesh names no mesh", MESH + func("  return %x\n", attributes=" attributes {spmd_mesh = @nope}"), VerifyError, None, "spmd_mesh must name a mesh"),
    ("collective axes that are a bool", MESH + func('  %0 = all_reduce(%x) {axes = true, mesh = @m, reduction = "sum"} : f32[8]\n  return %0\n', attributes=" attributes {spmd_mesh = @m}"), VerifyError, None, "attribute 'axes' must be a list of mesh axis names, got True"),
    ("collective axes that are an int", MESH + func('  %0 = all_reduce(%x) {axes = 7, mesh = @m, reduction = "sum"} : f32[8]\n  return %0\n', attributes=" attributes {spmd_mesh = @m}"), VerifyError, None, "got 7"),
    ("collective axes that are a symbol", MESH + func('  %0 = all_reduce(%x) {axes = @m, mesh = @m, reduction = "sum"} : f32[8]\n  return %0\n', attributes=" attributes {spmd_mesh = @m}"), VerifyError, None, "attribute 'axes' must be a list"),
    ("manual body argument with a sharding", MESH + func(manual("    return %arg1\n").replace("%arg1: f32[4]", '%arg1: f32[4] {sharding = <@m, [{}]>}')), VerifyError, None, "a manual_computation body's arguments take no sharding"),
    ("manual axes that are not a list", MESH + func(manual("    return %arg1\n").replace('manual_axes = ["x"]', "manual_axes = 7")), VerifyError, None, "attribute 'manual_axes' must be a list of mesh axis names, got 7"),
    ("manual axes that are a symbol", MESH + func(manual("    return %arg1\n").replace('manual_axes = ["x"]', "manual_axes = @m")), VerifyError, None, "attribute 'manual_axes' must be a list"),
]
# fmt: on


@pytest.mark.parametrize(
    ("text", "error", "position", "fragment"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_malformed_input(text, error, position, fragment):
    if error is ParseError:
        with pytest.raises(ParseError) as info:
            parse_module(text)
        assert fragment in info.value.message
        assert (info.value.line, info.value.column) == position
        assert f"line {position[0]}, column {position[1]}" in str(info.value)
    else:
        module = parse_module(text)
        with pytest.raises(VerifyError) as info:
            verify(module)
        assert fragment in str(info.value)


def test_there_are_enough_malformed_cases():
    assert len(CASES) >= 60


def test_parse_errors_are_value_errors_with_the_source_line():
    with pytest.raises(ValueError) as info:
        parse_module(MESH + func("  %0 = tanh(%q) : f32[8]\n  return %0\n"))
    assert str(info.value).splitlines()[1:] == ["    %0 = tanh(%q) : f32[8]", "              ^"]


def test_verify_errors_name_the_function_and_print_the_op():
    module = parse_module(MESH + func("  %0 = tanh(%x) : f32[4]\n  return %x\n"))
    with pytest.raises(VerifyError) as info:
        verify(module)
    assert str(info.value).splitlines()[0] == "@f: %0 = tanh(%x) : f32[4]"
    assert info.value.func == "f" and info.value.op.name == "tanh"


def test_every_truncation_of_a_golden_file_is_a_parse_error_or_a_module():
    text = (GOLDEN_DIR / "sharding_manual.mjir").read_text()
    for end in range(len(text)):
        try:
            parse_module(text[:end])
        except ParseError as error:
            assert 1 <= error.line <= text[:end].count("\n") + 1
            assert error.column >= 1


golden_texts = st.sampled_from([path.read_text() for path in sorted(GOLDEN_DIR.glob("*.mjir"))])


@st.composite
def mutated_texts(draw):
    """A golden file with a few characters deleted, replaced or inserted."""
    text = draw(golden_texts)
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, len(text)))
        junk = draw(st.text(alphabet='%@{}[]()<>,:="?^x0-. \n\\', max_size=3))
        cut = draw(st.integers(0, 3))
        text = text[:position] + junk + text[position + cut :]
    return text


# NOTE: a value of every attribute kind, so a rule expecting a list meets a bool, an int, a symbol...
ATTRIBUTE_VALUES = ["true", "7", "-1", "1.5", '"x"', '"z"', "@m", "@nope", "[]", "[7]", '["x", "x"]', '[["x"]]',
                    "[true]", "dense<1> : i32[]", "<@m, [{}]>", 'f32[8]']
ATTRIBUTE = re.compile(r"(\w+) = (\[[^\[\]]*\]|[^,{}\[\]()]+)")


@st.composite
def texts_with_a_mutated_attribute(draw):
    """A golden file with one attribute's value replaced by a value of another kind."""
    text = draw(golden_texts)
    matches = [match for match in ATTRIBUTE.finditer(text) if not match.group(1).startswith("sharding")]
    match = draw(st.sampled_from(matches))
    value = draw(st.sampled_from(ATTRIBUTE_VALUES))
    return text[: match.start(2)] + value + text[match.end(2):]


@settings(max_examples=250, deadline=None)
@given(st.one_of(mutated_texts(), texts_with_a_mutated_attribute(), st.text(max_size=200), st.binary(max_size=200)))
def test_no_other_exception_escapes(text):
    try:
        module = parse_module(text)
    except ParseError as error:
        assert error.line >= 1 and error.column >= 1
        return
    try:
        verify(module)
    except VerifyError:
        pass
