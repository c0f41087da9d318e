"""Op-table rows of dot_general, the reductions and scans, and sort."""

from __future__ import annotations

import op_oracles_structural as oracles
from op_records import (
    ALL,
    BOOL_INT,
    NUMERIC,
    Bad,
    Case,
    OpRecord,
    finite_operands,
    random_operands,
    tied_operands,
)

# --- contraction, reductions, scans, sort, gather --------------------------------------------

_MATMUL = {"contracting_dims": ((1,), (0,)), "batch_dims": ((), ())}

CONTRACTION_RECORDS = [
    OpRecord(
        "dot_general",
        NUMERIC,
        tuple(
            Case(attrs, shapes)
            for attrs, shapes in (
                (_MATMUL, ((2, 3), (3, 4))),
                (
                    {"contracting_dims": ((2,), (1,)), "batch_dims": ((0,), (0,))},
                    ((2, 3, 4), (2, 4, 5)),
                ),
                ({"contracting_dims": ((), ()), "batch_dims": ((), ())}, ((2,), (3,))),
                ({"contracting_dims": ((0,), (0,)), "batch_dims": ((), ())}, ((4,), (4,))),
                (_MATMUL, ((2, 0), (0, 3))),
                ({"contracting_dims": ((0,), (1,)), "batch_dims": ((), ())}, ((3, 2), (4, 3))),
                (
                    {"contracting_dims": ((0, 2), (2, 0)), "batch_dims": ((1,), (1,))},
                    ((3, 2, 4), (4, 2, 3)),
                ),
            )
        )
        + (
            Case(
                {**_MATMUL, "preferred_element_type": "f64"},
                ((2, 3), (3, 4)),
                dtypes=("i32", "f32"),
            ),
            Case({**_MATMUL, "preferred_element_type": "i64"}, ((2, 3), (3, 4)), dtypes=("i32",)),
        ),
        oracles.dot_general,
        (
            Bad(
                "f32[2,16] f32[8,3]",
                _MATMUL,
                "dot_general: contracting dim 1 of lhs has size 16 but contracting dim 0 of rhs has size 8",
            ),
            Bad(
                "f32[2,3,4] f32[3,4,5]",
                {"contracting_dims": ((2,), (1,)), "batch_dims": ((0,), (0,))},
                "dot_general: batch dim 0 of lhs has size 2 but batch dim 0 of rhs has size 3",
            ),
            Bad(
                "f32[2,3] i32[3,4]",
                _MATMUL,
                "dot_general: operands must have equal dtypes, got lhs f32[2,3] and rhs i32[3,4]",
            ),
            Bad(
                "f32[2,3] f32[3,4]",
                {"contracting_dims": ((1,), (0,))},
                "dot_general: missing attribute 'batch_dims'",
            ),
            Bad(
                "f32[2,3] f32[3,4]",
                {"contracting_dims": ((True,), (0,)), "batch_dims": ((), ())},
                "dot_general: attribute 'contracting_dims' must be a pair ((lhs dims..), (rhs dims..))",
            ),
            Bad(
                "f32[2,3] f32[3,4]",
                {**_MATMUL, "preferred_element_type": "i32"},
                "dot_general: preferred_element_type i32 cannot hold f32 products",
            ),
            Bad(
                "f32[3,3] f32[3,3]",
                {"contracting_dims": ((1,), (0,)), "batch_dims": ((1,), (1,))},
                "dot_general: lhs contracting and batch dims (1, 1) has duplicates",
            ),
            Bad(
                "f32[2,3] f32[3,4]",
                {"contracting_dims": ((1,), (0, 1)), "batch_dims": ((), ())},
                "dot_general: contracting_dims ((1,), (0, 1)) must list as many lhs dims as rhs dims",
            ),
            Bad("bool[2,3] bool[3,4]", _MATMUL, "dot_general: lhs has dtype bool"),
        ),
        make=finite_operands,
        rtol=1e-5,
        atol=1e-5,
    ),
]

_REDUCTION_ROWS = (
    ((1,), (2, 3)),
    ((0, 1), (2, 3)),
    ((0, 2), (3, 1, 2)),
    ((), ()),
    ((0,), (0, 3)),
    ((), (2, 3)),
    ((1,), (0, 3)),
    ((0,), (7,)),
)


def _reduction_record(name, dtypes, make, **options):
    bad_dtype = "f32" if "bool" in dtypes else "bool"
    return OpRecord(
        name,
        dtypes,
        tuple(Case({"axes": axes}, (shape,)) for axes, shape in _REDUCTION_ROWS),
        oracles.reduction(name),
        (
            Bad("i32[2,3]", {"axes": (1, 1)}, f"{name}: axes (1, 1) has duplicates"),
            Bad("i32[2,3]", {"axes": (2,)}, f"{name}: axes (2,) has 2, out of range for rank 2"),
            Bad(f"{bad_dtype}[2]", {"axes": (0,)}, f"{name}: operand 0 has dtype {bad_dtype}"),
        ),
        make=make,
        **options,
    )


def _scan_record(name, make, **options):
    rows = (
        ((5,), 0, False),
        ((5,), 0, True),
        ((2, 3), 1, False),
        ((2, 3), 0, True),
        ((0, 3), 0, False),
        ((3, 0), 1, True),
    )
    return OpRecord(
        name,
        NUMERIC,
        tuple(Case({"axis": axis, "reverse": reverse}, (shape,)) for shape, axis, reverse in rows),
        oracles.scan(oracles.SCAN_STEPS[name]),
        (
            Bad(
                "f32[3]",
                {"axis": 0, "reverse": 1},
                f"{name}: attribute 'reverse' must be a bool, got 1",
            ),
            Bad(
                "f32[]", {"axis": 0, "reverse": False}, f"{name}: axis 0 is out of range for rank 0"
            ),
            Bad("bool[3]", {"axis": 0, "reverse": False}, f"{name}: operand 0 has dtype bool"),
        ),
        make=make,
        **options,
    )


def _arg_record(name, pick):
    rows = (
        ((2, 3), 1, "i32"),
        ((5,), 0, "i64"),
        ((3, 1, 2), 0, "i32"),
        ((0, 3), 1, "i32"),
        ((4, 5), 0, "i64"),
    )
    return OpRecord(
        name,
        ALL,
        tuple(Case({"axis": axis, "index_dtype": index}, (shape,)) for shape, axis, index in rows),
        oracles.arg_reduction(pick),
        (
            Bad(
                "f32[0]",
                {"axis": 0, "index_dtype": "i32"},
                f"{name}: axis 0 of f32[0] is empty; {name} needs at least one element",
            ),
            Bad("f32[2]", {"axis": 0}, f"{name}: missing attribute 'index_dtype'"),
            Bad(
                "f32[2]",
                {"axis": 0, "index_dtype": "f32"},
                f"{name}: attribute 'index_dtype' must be one of 'i8', 'i16', 'i32', 'i64', 'u8', 'u16', 'u32', 'u64', got 'f32'",
            ),
        ),
        make=tied_operands,
    )


REDUCTION_RECORDS = [
    _reduction_record("reduce_sum", NUMERIC, finite_operands, rtol=1e-5, atol=1e-5),
    _reduction_record("reduce_prod", NUMERIC, finite_operands, rtol=1e-5, atol=1e-5),
    _reduction_record("reduce_max", NUMERIC, random_operands),
    _reduction_record("reduce_min", NUMERIC, random_operands),
    _reduction_record("reduce_and", BOOL_INT, random_operands),
    _reduction_record("reduce_or", BOOL_INT, random_operands),
    _arg_record("argmax", max),
    _arg_record("argmin", min),
    _scan_record("cumsum", finite_operands, rtol=1e-5, atol=1e-5),
    _scan_record("cumprod", finite_operands, rtol=1e-5, atol=1e-5),
    _scan_record("cummax", random_operands),
    _scan_record("cummin", random_operands),
    OpRecord(
        "sort",
        ALL,
        tuple(
            Case({"dimension": dimension, "is_stable": stable, "num_keys": keys}, shapes)
            for dimension, stable, keys, shapes in (
                (0, True, 1, ((9,),)),
                (1, True, 1, ((2, 5), (2, 5))),
                (1, True, 2, ((2, 5), (2, 5))),
                (0, False, 2, ((6, 2), (6, 2), (6, 2))),
                (0, True, 1, ((0, 3),)),
                (1, True, 1, ((3, 0), (3, 0))),
            )
        ),
        oracles.sort,
        (
            Bad(
                "f32[2] f32[3]",
                {"dimension": 0, "is_stable": True, "num_keys": 1},
                "sort: operand 1 is f32[3], expected the shape of operand 0 f32[2]",
            ),
            Bad(
                "f32[2]",
                {"dimension": 0, "is_stable": True, "num_keys": 2},
                "sort: num_keys 2 must be between 1 and the 1 operands",
            ),
            Bad(
                "f32[2]",
                {"dimension": 1, "is_stable": True, "num_keys": 1},
                "sort: dimension 1 is out of range for rank 1",
            ),
            Bad(
                "",
                {"dimension": 0, "is_stable": True, "num_keys": 1},
                "sort: expected at least one operand, got none",
            ),
        ),
        make=tied_operands,
    ),
]
