"""Op-table rows of sharding_constraint, manual_computation and the per-device ops; their
values are checked by the interpreter tests."""

from __future__ import annotations

import numpy as np
from meshjit.ir import SymbolRef, TensorSharding
from meshjit.ir.ops.debug import register_callback
from op_records import (
    ALL,
    MESH,
    NUMERIC,
    Bad,
    Case,
    OpRecord,
)

# --- sharding, manual regions and per-device ops ---------------------------------------------

_IGNORED_CALLBACK = register_callback(lambda *operands: None)
# NOTE: a host function that returns its first operand (a copy), as the callback ops' rows need
_ECHO_CALLBACK = register_callback(lambda first, *rest: [np.array(first)])


def _echo(shape) -> Case:
    return Case(lambda dtype: {"callback": _ECHO_CALLBACK, "result_shapes": (shape,), "result_dtypes": (dtype,)},
                (shape, (3,)))


def _callback_record(name: str) -> OpRecord:
    """pure_callback or io_callback calling a host function that returns its first operand."""
    return OpRecord(
        name,
        ALL,
        (_echo((2, 3)), _echo(())),
        lambda attrs, first, *rest: (first,),
        (Bad("f32[4]", {"callback": _ECHO_CALLBACK, "result_shapes": ((-1,),), "result_dtypes": ("f32",)},
             f"{name}: attribute 'result_shapes' must be a tuple of shapes"),
         Bad("f32[4]", {"callback": _ECHO_CALLBACK, "result_shapes": ((4,),), "result_dtypes": ("f32", "f32")},
             f"{name}: result_shapes names 1 results but result_dtypes 2"),
         Bad("f32[4]", {"callback": _ECHO_CALLBACK, "result_shapes": ((4,),), "result_dtypes": ("f4",)},
             f"{name}: result dtype 'f4' is not one of"),
         Bad("f32[4]", {"result_shapes": ((4,),), "result_dtypes": ("f32",)}, f"{name}: missing attribute 'callback'")),
    )


def _sharding(*dims) -> TensorSharding:
    return TensorSharding.from_axis_names("mesh", dims)


def _collective(name, dtypes, rows, bad) -> OpRecord:
    """A per-device op: its rows are (attrs, operand shapes, result types); no oracle here, the
    interpreter tests check its values."""
    cases = tuple(
        Case({"mesh": MESH, **attrs}, shapes, expected) for attrs, shapes, expected in rows
    )
    return OpRecord(name, dtypes, cases, None, bad)


SPMD_RECORDS = [
    OpRecord(
        "sharding_constraint",
        ALL,
        (
            Case({"sharding": _sharding(("x",), ())}, ((2, 3),)),
            Case({"sharding": _sharding()}, ((),)),
            Case({"sharding": _sharding(("y", "x"))}, ((0,),)),
        ),
        lambda attrs, x: (x,),
        (
            Bad(
                "f32[3]",
                {"sharding": _sharding((), ())},
                "sharding_constraint: sharding has 2 dims but f32[3] has rank 1",
            ),
            Bad(
                "f32[3]",
                {"sharding": "x"},
                "sharding_constraint: attribute 'sharding' must be a TensorSharding, got 'x'",
            ),
            Bad(
                "f32[3]",
                {"sharding": _sharding(("z",))},
                "sharding_constraint: sharding names axis 'z', not in mesh @mesh",
            ),
        ),
    ),
    # Its region makes it a poor fit for rows; test_shape_rules and test_interpret cover it.
    OpRecord(
        "manual_computation",
        ALL,
        (),
        None,
        (
            Bad(
                "f32[4]",
                {"in_shardings": (), "out_shardings": (), "manual_axes": ("x",)},
                "manual_computation: in_shardings has 0 entries for 1 operands",
            ),
            Bad(
                "f32[4]",
                {"in_shardings": (_sharding(("x",)),), "out_shardings": (), "manual_axes": ("x",)},
                "manual_computation: expected one region (the body), got 0",
            ),
        ),
    ),
    OpRecord(
        "optimization_barrier",
        ALL,
        (Case({}, ((2, 3), (4,))), Case({}, ((),))),
        lambda attrs, *operands: tuple(operands),
        (Bad("", {}, "optimization_barrier: expected at least one operand"),),
    ),
    # An effect with no results (what it calls back is checked by tests/api/test_debug_callbacks.py)
    OpRecord(
        "debug_callback",
        ALL,
        (Case({"callback": _IGNORED_CALLBACK}, ((2, 3),)), Case({"callback": _IGNORED_CALLBACK}, ((), (4,)))),
        lambda attrs, *operands: (),
        (Bad("f32[4]", {}, "debug_callback: missing attribute 'callback'"),
         Bad("f32[4]", {"callback": "print"}, "debug_callback: attribute 'callback' must be"),),
    ),
    # Host callbacks with results (their transformations: tests/api/test_callbacks.py)
    _callback_record("pure_callback"),
    _callback_record("io_callback"),
    # Control flow ops: their regions make them a poor fit for rows too; test_control_flow_ops
    # covers their shape rules, verifier messages and interpretation.
    OpRecord(
        "scan",
        ALL,
        (),
        None,
        (
            Bad("f32[4]", {"length": 4, "num_consts": 0, "num_carry": 2, "reverse": False, "unroll": 1},
                "scan: num_carry = 2 does not fit 1 operands"),
            Bad("f32[3]", {"length": 4, "num_consts": 0, "num_carry": 0, "reverse": False, "unroll": 1},
                "scan: expected one region (the body), got 0"),
            Bad("f32[4]", {"length": 4, "num_consts": 0, "num_carry": 0, "reverse": False, "unroll": 0},
                "scan: unroll must be >= 1, got 0"),
        ),
    ),
    OpRecord(
        "while",
        ALL,
        (),
        None,
        (Bad("f32[4]", {"num_consts": 0}, "while: expected two regions (cond and body), got 0"),),
    ),
    OpRecord(
        "cond",
        ALL,
        (),
        None,
        (
            Bad("f32[] f32[4]", {}, "cond: the index has dtype f32, expected i32"),
            Bad("i32[2]", {}, "cond: the index must be 0-d, got i32[2]"),
            Bad("i32[]", {}, "cond: expected at least one region (a branch)"),
        ),
    ),
    _collective(
        "all_reduce",
        NUMERIC,
        [
            ({"axes": ("x",), "reduction": "sum"}, ((2, 3),), ("{dtype}[2,3]",)),
            ({"axes": ("x", "y"), "reduction": "max"}, ((),), ("{dtype}[]",)),
            ({"axes": (), "reduction": "min"}, ((0,),), ("{dtype}[0]",)),
        ],
        (
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("z",), "reduction": "sum"},
                "all_reduce: axis 'z' is not an axis of the mesh ['x', 'y']",
            ),
            Bad(
                "f32[2]",
                {"axes": ("x",), "reduction": "sum"},
                "all_reduce: missing attribute 'mesh'",
            ),
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("x",), "reduction": "mean"},
                "all_reduce: attribute 'reduction' must be one of 'sum', 'max', 'min', got 'mean'",
            ),
            Bad(
                "bool[2]",
                {"mesh": MESH, "axes": ("x",), "reduction": "sum"},
                "all_reduce: operand 0 has dtype bool",
            ),
            Bad(
                "f32[2]",
                {"mesh": SymbolRef("other"), "axes": ("x",), "reduction": "sum"},
                "all_reduce: mesh @other is not defined; the module has ['mesh']",
            ),
        ),
    ),
    _collective(
        "all_gather",
        ALL,
        [
            ({"axes": ("y",), "dim": 0}, ((3, 2),), ("{dtype}[12,2]",)),
            ({"axes": ("x", "y"), "dim": 1}, ((2, 3),), ("{dtype}[2,24]",)),
            ({"axes": (), "dim": 0}, ((5,),), ("{dtype}[5]",)),
        ],
        (
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("x",), "dim": 1},
                "all_gather: dim 1 is out of range for rank 1",
            ),
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("x", "x"), "dim": 0},
                "all_gather: axes ('x', 'x') has duplicates",
            ),
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": "x", "dim": 0},
                "all_gather: attribute 'axes' must be a tuple of strings, got 'x'",
            ),
        ),
    ),
    _collective(
        "reduce_scatter",
        NUMERIC,
        [
            ({"axes": ("y",), "dim": 0, "reduction": "sum"}, ((8, 3),), ("{dtype}[2,3]",)),
            ({"axes": ("x", "y"), "dim": 1, "reduction": "max"}, ((2, 8),), ("{dtype}[2,1]",)),
        ],
        (
            Bad(
                "f32[6,3]",
                {"mesh": MESH, "axes": ("y",), "dim": 0, "reduction": "sum"},
                "reduce_scatter: dim 0 of f32[6,3] has size 6, which does not divide into the group size 4",
            ),
            Bad(
                "f32[8]",
                {"mesh": MESH, "axes": ("y",), "dim": 0},
                "reduce_scatter: missing attribute 'reduction'",
            ),
        ),
    ),
    _collective(
        "all_to_all",
        ALL,
        [
            ({"axes": ("y",), "split_dim": 0, "concat_dim": 1}, ((4, 6),), ("{dtype}[1,24]",)),
            ({"axes": ("x", "y"), "split_dim": 0, "concat_dim": 0}, ((8,),), ("{dtype}[8]",)),
        ],
        (
            Bad(
                "f32[6,2]",
                {"mesh": MESH, "axes": ("y",), "split_dim": 0, "concat_dim": 1},
                "all_to_all: split_dim 0 of f32[6,2] has size 6, which does not divide into the group size 4",
            ),
            Bad(
                "f32[8]",
                {"mesh": MESH, "axes": ("y",), "split_dim": 0, "concat_dim": 1},
                "all_to_all: concat_dim 1 is out of range for rank 1",
            ),
        ),
    ),
    _collective(
        "collective_permute",
        ALL,
        [
            ({"axes": ("x",), "pairs": ((0, 1), (1, 0))}, ((2, 3),), ("{dtype}[2,3]",)),
            ({"axes": ("y",), "pairs": ((0, 1), (1, 2), (2, 3))}, ((),), ("{dtype}[]",)),
        ],
        (
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("y",), "pairs": ((0, 4),)},
                "collective_permute: pair (0, 4) is out of range for a group of 4 devices",
            ),
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("y",), "pairs": ((0, 1), (2, 1))},
                "collective_permute: pairs ((0, 1), (2, 1)) repeat a target",
            ),
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("y",), "pairs": (0, 1)},
                "collective_permute: attribute 'pairs' must be a tuple of (source, target) int pairs",
            ),
        ),
    ),
    _collective(
        "axis_index",
        ("i32",),
        [({"axis": "y"}, (), ("i32[]",))],
        (
            Bad(
                "",
                {"mesh": MESH, "axis": "z"},
                "axis_index: axis 'z' is not an axis of the mesh ['x', 'y']",
            ),
            Bad("f32[2]", {"mesh": MESH, "axis": "x"}, "axis_index: expected 0 operands, got 1"),
        ),
    ),
    _collective(
        "pvary",
        ALL,
        [
            ({"axes": ("x",)}, ((2, 3),), ("{dtype}[2,3]",)),
            ({"axes": ("y", "x")}, ((),), ("{dtype}[]",)),
        ],
        (
            Bad(
                "f32[2]",
                {"mesh": MESH, "axes": ("z",)},
                "pvary: axis 'z' is not an axis of the mesh ['x', 'y']",
            ),
            Bad("f32[2]", {"axes": ("x",)}, "pvary: missing attribute 'mesh'"),
            Bad("", {"mesh": MESH, "axes": ("x",)}, "pvary: expected 1 operand, got 0"),
        ),
    ),
    _collective(
        "partition_id",
        ("i32",),
        [({}, (), ("i32[]",))],
        (
            Bad("", {"mesh": SymbolRef("other")}, "partition_id: mesh @other is not defined"),
            Bad("", {}, "partition_id: missing attribute 'mesh'"),
        ),
    ),
]
