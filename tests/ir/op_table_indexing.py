"""Op-table rows of gather and the scatters, over XLA's dimension numbers: take-like and
windowed gathers, batching dims, index vectors of several components, repeated indices, and
windows out of range in both modes."""

from __future__ import annotations

import numpy as np
import op_oracles_structural as oracles
from op_records import ALL, NUMERIC, Bad, Case, OpRecord, random_array, tied_operands


def _gather(offset, collapsed, index_map, sizes, batching=((), ()), mode="clip", **extra):
    return {"offset_dims": offset, "collapsed_slice_dims": collapsed, "start_index_map": index_map,
            "operand_batching_dims": batching[0], "start_indices_batching_dims": batching[1],
            "slice_sizes": sizes, "mode": mode, **extra}


def _scatter(window, inserted, index_map, batching=((), ()), mode="fill"):
    return {"update_window_dims": window, "inserted_window_dims": inserted, "scatter_dims_to_operand_dims": index_map,
            "operand_batching_dims": batching[0], "scatter_indices_batching_dims": batching[1], "mode": mode}


def index_operands(rng, shapes, dtype, attrs):
    """The operand (and updates) of the dtype, and i32 indices a little past the operand's
    bounds on both sides, so that both modes meet windows out of range."""
    operand = random_array(rng, shapes[0], dtype)
    high = max(shapes[0]) + 2 if shapes[0] else 2
    indices = np.asarray(rng.integers(-2, high, shapes[1]), np.int32)
    return [operand, indices] + [random_array(rng, shape, dtype) for shape in shapes[2:]]


# (attrs, operand shape, indices shape) per case, each in both modes
_GATHER_CASES = [
    (_gather((1,), (0,), (0,), (1, 4)), (5, 4), (3, 1)),
    (_gather((2,), (0,), (0, 1), (1, 2)), (5, 4), (2, 3, 2)),
    (_gather((0, 1), (), (1, 0), (2, 3)), (6, 5), (4, 2)),
    (_gather((2,), (1,), (1,), (1, 1, 4), ((0,), (0,))), (3, 5, 4), (3, 2, 1)),
    (_gather((0, 3), (0,), (0,), (1, 3, 2)), (4, 3, 5), (2, 4, 1)),
    (_gather((), (0,), (0,), (1,)), (5,), (1,)),
    (_gather((0,), (), (0,), (0,)), (0,), (2, 1)),
]

_SCATTER_CASES = [
    (_scatter((1,), (0,), (0,)), (5, 4), (3, 1), (3, 4)),
    (_scatter((), (0, 1), (0, 1)), (5, 4), (2, 3, 2), (2, 3)),
    (_scatter((2,), (1,), (1,), ((0,), (0,))), (3, 5, 4), (3, 2, 1), (3, 2, 4)),
    (_scatter((1, 2), (), (1, 0)), (6, 5), (4, 2), (4, 2, 3)),
    (_scatter((1,), (0,), (0,)), (3, 2), (6, 1), (6, 2)),
    (_scatter((), (0,), (0,)), (4,), (0, 1), (0,)),
]


def _modes(attrs):
    return [{**attrs, "mode": mode} for mode in ("clip", "fill")]


GATHER_RECORD = OpRecord(
    "gather",
    ALL,
    tuple(Case(attrs, (operand, indices)) for base, operand, indices in _GATHER_CASES for attrs in _modes(base))
    + (Case(_gather((1,), (0,), (0,), (1, 4), mode="fill", fill_value=-3), ((5, 4), (3, 1)), dtypes=("i32", "f32")),),
    oracles.gather,
    (
        Bad("f32[5] f32[2,1]", _gather((), (0,), (0,), (1,)), "gather: indices has dtype f32, expected i8 or i16 or i32 or i64 or u8 or u16 or u32 or u64"),
        Bad("f32[5] i32[2,1]", _gather((), (0,), (0,), (1,), mode="wrap"),
            "gather: attribute 'mode' must be one of 'clip', 'fill', got 'wrap'"),
        Bad("f32[5] i32[2,1]", _gather((), (0,), (0,), (2,)),
            "gather: collapsed_slice_dims has dim 0, whose slice size 2 is not <= 1"),
        Bad("f32[5] i32[2,1]", _gather((), (0,), (0,), (6,)), "gather: slice_sizes (6,): dim 0 needs 0 <= 6 <= 5"),
        Bad("f32[5,3] i32[2,2]", _gather((1,), (0,), (0,), (1, 3)),
            "gather: start_index_map (0,) must have one entry per index vector component (2"),
        Bad("f32[5,3] i32[2,1]", _gather((), (0,), (0,), (1, 3)), "gather: offset_dims () must name one result dim"),
        Bad("f32[5] i32[]", _gather((), (0,), (0,), (1,)), "gather: indices i32[] need a last dim"),
    ),
    make=index_operands,
)


def _scatter_record(name: str, dtypes) -> OpRecord:
    return OpRecord(
        name,
        dtypes,
        tuple(Case(attrs, shapes) for base, *shapes in _SCATTER_CASES for attrs in _modes(base)),
        oracles.scatter(oracles.SCATTER_COMBINE[name]),
        (
            Bad("f32[5] i32[2,1] f32[3]", _scatter((), (0,), (0,)),
                f"{name}: update dim 0 of f32[3] must match the indices' batch dims (2,)"),
            Bad("f32[5] i32[2,1] i32[2]", _scatter((), (0,), (0,)),
                f"{name}: updates i32[2] must have the dtype of the operand f32[5]"),
            Bad("f32[5,2] i32[2,1] f32[2,3]", _scatter((1,), (0,), (0,)),
                f"{name}: update window dim 1 of f32[2,3] is larger than operand dim 1 of f32[5,2]"),
            Bad("f32[5] i32[2,1] f32[2]", _scatter((), (), (0,)),
                f"{name}: update_window_dims () must name one update dim per operand dim"),
        ),
        make=index_operands,
    )


TOP_K_RECORD = OpRecord(
    "top_k",
    NUMERIC,
    (Case({"k": 3}, ((7,),)), Case({"k": 2}, ((3, 5),)), Case({"k": 0}, ((2, 4),)), Case({"k": 4}, ((2, 1, 4),))),
    oracles.top_k,
    (
        Bad("f32[4]", {"k": 5}, "top_k: k 5 must be between 0 and the last dim 4 of f32[4]"),
        Bad("f32[]", {"k": 0}, "top_k: operand f32[] needs a last dim"),
        Bad("bool[3]", {"k": 1}, "top_k: operand has dtype bool"),
    ),
    make=tied_operands,
)

INDEXING_RECORDS = [GATHER_RECORD, TOP_K_RECORD] + [
    _scatter_record("scatter", ALL),
    _scatter_record("scatter_add", ALL),
    _scatter_record("scatter_mul", ALL),
    _scatter_record("scatter_min", NUMERIC),
    _scatter_record("scatter_max", NUMERIC),
]
