"""Op-table rows of the creation ops and the shape and layout ops."""

from __future__ import annotations

import numpy as np
import op_oracles_structural as oracles
from meshjit.ir import DenseAttr, TensorType
from op_oracles import NUMPY_DTYPES, build
from op_records import (
    ALL,
    NUMERIC,
    SHAPES,
    Bad,
    Case,
    OpRecord,
    random_array,
    rng_for,
    with_start_indices,
)

# --- creation and shape ----------------------------------------------------------------------


def _constant_value(dtype: str, shape) -> DenseAttr:
    return DenseAttr.from_array(random_array(rng_for(f"constant-{dtype}-{shape}"), shape, dtype))


def _layout(name: str, rows, oracle, bad, **options) -> OpRecord:
    """A record over every dtype from rows of (attrs, operand shapes)."""
    return OpRecord(
        name, ALL, tuple(Case(attrs, shapes) for attrs, shapes in rows), oracle, bad, **options
    )


CREATION_AND_SHAPE_RECORDS = [
    OpRecord(
        "iota",
        NUMERIC,
        tuple(
            Case(
                lambda dtype, shape=shape, dim=dim: {
                    "dtype": dtype,
                    "shape": shape,
                    "dimension": dim,
                }
            )
            for shape, dim in (((5,), 0), ((2, 3), 1), ((3, 1, 2), 0), ((0, 4), 1))
        ),
        lambda attrs: (
            build(
                attrs["shape"],
                NUMPY_DTYPES[attrs["dtype"]],
                lambda index: index[attrs["dimension"]],
            ),
        ),
        (
            Bad(
                "",
                {"dtype": "f32", "shape": (2, 3), "dimension": 2},
                "iota: dimension 2 is out of range for rank 2",
            ),
            Bad(
                "",
                {"dtype": "bool", "shape": (2,), "dimension": 0},
                "iota: attribute 'dtype' must be one of",
            ),
            Bad(
                "",
                {"dtype": "f32", "shape": (-1,), "dimension": 0},
                "iota: attribute 'shape' must be a tuple of ints >= 0",
            ),
            Bad(
                "f32[2]",
                {"dtype": "f32", "shape": (2,), "dimension": 0},
                "iota: expected 0 operands, got 1",
            ),
        ),
    ),
    OpRecord(
        "constant",
        ALL,
        tuple(
            Case(lambda dtype, shape=shape: {"value": _constant_value(dtype, shape)})
            for shape in SHAPES
        ),
        lambda attrs: (
            np.frombuffer(attrs["value"].data, NUMPY_DTYPES[attrs["value"].type.dtype]).reshape(
                attrs["value"].type.shape
            ),
        ),
        (
            Bad("", {"value": 1.0}, "constant: attribute 'value' must be a DenseAttr, got 1.0"),
            Bad(
                "",
                {"value": DenseAttr(TensorType((2,), "f32"), b"\0" * 4)},
                "constant: value holds 4 bytes but f32[2] needs 8",
            ),
        ),
    ),
    _layout(
        "broadcast_in_dim",
        [
            ({"shape": (2, 3), "broadcast_dimensions": (1,)}, ((3,),)),
            ({"shape": (2, 3), "broadcast_dimensions": ()}, ((),)),
            ({"shape": (4, 2, 3), "broadcast_dimensions": (0, 2)}, ((1, 3),)),
            ({"shape": (0, 3), "broadcast_dimensions": (1,)}, ((3,),)),
            ({"shape": (2, 0), "broadcast_dimensions": (0, 1)}, ((2, 1),)),
            ({"shape": (), "broadcast_dimensions": ()}, ((),)),
        ],
        oracles.broadcast_in_dim,
        (
            Bad(
                "f32[3]",
                {"shape": (2, 4), "broadcast_dimensions": (1,)},
                "broadcast_in_dim: operand dim 0 of size 3 cannot broadcast to size 4",
            ),
            Bad(
                "f32[2,3]",
                {"shape": (2, 3), "broadcast_dimensions": (1, 0)},
                "broadcast_in_dim: broadcast_dimensions (1, 0) must be strictly increasing",
            ),
            Bad(
                "f32[3]",
                {"shape": (3,), "broadcast_dimensions": ()},
                "broadcast_in_dim: broadcast_dimensions () needs one entry per dim",
            ),
            Bad(
                "f32[3]",
                {"shape": (3,), "broadcast_dimensions": (1,)},
                "broadcast_in_dim: broadcast_dimensions (1,) has 1, out of range for rank 1",
            ),
        ),
    ),
    _layout(
        "reshape",
        [
            ({"new_sizes": (3, 2)}, ((2, 3),)),
            ({"new_sizes": (6,)}, ((2, 3),)),
            ({"new_sizes": (1, 1)}, ((),)),
            ({"new_sizes": (3, 0)}, ((0, 3),)),
            ({"new_sizes": ()}, ((1, 1),)),
            ({"new_sizes": (2, 1, 3)}, ((3, 1, 2),)),
        ],
        oracles.reshape_to(lambda attrs, x: attrs["new_sizes"]),
        (
            Bad(
                "f32[2,3]",
                {"new_sizes": (4,)},
                "reshape: new_sizes (4,) hold 4 elements, f32[2,3] holds 6",
            ),
            Bad(
                "f32[2,3]",
                {"new_sizes": "6"},
                "reshape: attribute 'new_sizes' must be a tuple of ints",
            ),
        ),
    ),
    _layout(
        "transpose",
        [
            ({"permutation": (1, 0)}, ((2, 3),)),
            ({"permutation": (2, 0, 1)}, ((3, 1, 2),)),
            ({"permutation": ()}, ((),)),
            ({"permutation": (1, 0)}, ((0, 3),)),
        ],
        oracles.transpose,
        (
            Bad(
                "f32[2,3]",
                {"permutation": (0, 0)},
                "transpose: permutation (0, 0) is not a permutation of the 2 dims",
            ),
            Bad("f32[2,3]", {}, "transpose: missing attribute 'permutation'"),
        ),
    ),
    _layout(
        "slice",
        [
            ({"start_indices": (1,), "limit_indices": (5,), "strides": (2,)}, ((5,),)),
            ({"start_indices": (0, 1), "limit_indices": (2, 3), "strides": (1, 1)}, ((2, 3),)),
            (
                {"start_indices": (1, 0, 0), "limit_indices": (3, 1, 2), "strides": (2, 1, 3)},
                ((3, 1, 2),),
            ),
            ({"start_indices": (), "limit_indices": (), "strides": ()}, ((),)),
            ({"start_indices": (0,), "limit_indices": (0,), "strides": (1,)}, ((0,),)),
            ({"start_indices": (2,), "limit_indices": (2,), "strides": (3,)}, ((5,),)),
        ],
        oracles.slice_,
        (
            Bad(
                "f32[5]",
                {"start_indices": (2,), "limit_indices": (1,), "strides": (1,)},
                "slice: dim 0: need 0 <= start 2 <= limit 1 <= size 5",
            ),
            Bad(
                "f32[5]",
                {"start_indices": (0,), "limit_indices": (5,), "strides": (0,)},
                "slice: attribute 'strides' must be a tuple of ints >= 1, got (0,)",
            ),
            Bad(
                "f32[5]",
                {"start_indices": (0,), "limit_indices": (5,)},
                "slice: missing attribute 'strides'",
            ),
            Bad(
                "f32[5]",
                {"start_indices": (0, 0), "limit_indices": (5,), "strides": (1,)},
                "slice: start_indices (0, 0) must have one entry per dim (rank 1)",
            ),
        ),
    ),
    _layout(
        "dynamic_slice",
        [
            (
                {"slice_sizes": (3,)},
                (
                    (5,),
                    (),
                ),
            ),
            ({"slice_sizes": (1, 2)}, ((2, 3), (), ())),
            ({"slice_sizes": ()}, ((),)),
            ({"slice_sizes": (0, 2)}, ((0, 4), (), ())),
            ({"slice_sizes": (3, 1, 0)}, ((3, 1, 2), (), (), ())),
        ],
        oracles.dynamic_slice,
        (
            Bad(
                "f32[5]",
                {"slice_sizes": (2,)},
                "dynamic_slice: expected 1 start indices (one per dim of f32[5]), got 0",
            ),
            Bad(
                "f32[5] f32[]",
                {"slice_sizes": (2,)},
                "dynamic_slice: start index 0 has dtype f32, expected i8 or i16 or i32 or i64 or u8 or u16 or u32 or u64",
            ),
            Bad(
                "f32[5] i32[1]",
                {"slice_sizes": (2,)},
                "dynamic_slice: start index 0 must be 0-d, got i32[1]",
            ),
            Bad(
                "f32[5] i32[]",
                {"slice_sizes": (6,)},
                "dynamic_slice: slice_sizes (6,): dim 0 has size 5, smaller than 6",
            ),
        ),
        make=with_start_indices(1),
    ),
    _layout(
        "dynamic_update_slice",
        [
            ({}, ((5,), (2,), ())),
            ({}, ((2, 3), (2, 1), (), ())),
            ({}, ((), ())),
            ({}, ((0, 3), (0, 2), (), ())),
            ({}, ((4,), (0,), ())),
        ],
        oracles.dynamic_update_slice,
        (
            Bad(
                "f32[2] f32[3] i32[]",
                {},
                "dynamic_update_slice: update f32[3] does not fit in the operand f32[2]",
            ),
            Bad(
                "f32[2] i32[1] i32[]",
                {},
                "dynamic_update_slice: update i32[1] must have the dtype and rank of the operand f32[2]",
            ),
            Bad(
                "f32[2]",
                {},
                "dynamic_update_slice: expected an operand, an update and start indices, got 1 operands",
            ),
        ),
        make=with_start_indices(2),
    ),
    _layout(
        "pad",
        [
            ({"padding_config": ((1, 2, 1),)}, ((5,), ())),
            ({"padding_config": ((0, -1, 0), (-1, 2, 2))}, ((2, 3), ())),
            ({"padding_config": ()}, ((), ())),
            ({"padding_config": ((2, 1, 3),)}, ((0,), ())),
            ({"padding_config": ((-3, 1, 1),)}, ((2,), ())),
            ({"padding_config": ((0, 0, 0), (1, 0, 0), (-1, -1, 1))}, ((3, 1, 2), ())),
        ],
        oracles.pad,
        (
            Bad(
                "f32[5] f32[]",
                {"padding_config": ((0, 0, -1),)},
                "pad: dim 0: interior padding must be >= 0, got -1",
            ),
            Bad(
                "f32[5] f32[1]",
                {"padding_config": ((0, 0, 0),)},
                "pad: padding_value must be f32[], got f32[1]",
            ),
            Bad(
                "f32[5] f32[]",
                {"padding_config": ((0, 0, 0), (0, 0, 0))},
                "pad: padding_config has 2 entries, the operand f32[5] has rank 1",
            ),
            Bad(
                "f32[2] f32[]",
                {"padding_config": ((-2, -1, 0),)},
                "pad: dim 0: padding (-2, -1, 0) of size 2 gives negative size -1",
            ),
            Bad(
                "f32[2] f32[]",
                {"padding_config": ((1, 1),)},
                "pad: attribute 'padding_config' must be a tuple of (lo, hi, interior) int triples",
            ),
        ),
    ),
    _layout(
        "concatenate",
        [
            ({"dimension": 1}, ((2, 3), (2, 1))),
            ({"dimension": 0}, ((1, 2), (0, 2), (3, 2))),
            ({"dimension": 0}, ((5,),)),
            ({"dimension": 2}, ((3, 1, 2), (3, 1, 0))),
        ],
        oracles.concatenate,
        (
            Bad(
                "f32[2,3] f32[3,3]",
                {"dimension": 1},
                "concatenate: operand 1 is f32[3,3], which does not concatenate with f32[2,3] along dim 1",
            ),
            Bad("f32[2] i32[2]", {"dimension": 0}, "concatenate: operand 1 is i32[2]"),
            Bad("", {"dimension": 0}, "concatenate: expected at least one operand, got none"),
            Bad(
                "f32[] f32[]",
                {"dimension": 0},
                "concatenate: dimension 0 is out of range for rank 0",
            ),
        ),
    ),
    _layout(
        "rev",
        [
            ({"dimensions": (0,)}, ((5,),)),
            ({"dimensions": (0, 1)}, ((2, 3),)),
            ({"dimensions": (2,)}, ((3, 1, 2),)),
            ({"dimensions": ()}, ((),)),
            ({"dimensions": (0,)}, ((0,),)),
        ],
        oracles.rev,
        (
            Bad("f32[2,3]", {"dimensions": (0, 0)}, "rev: dimensions (0, 0) has duplicates"),
            Bad(
                "f32[2,3]",
                {"dimensions": (2,)},
                "rev: dimensions (2,) has 2, out of range for rank 2",
            ),
        ),
    ),
    _layout(
        "squeeze",
        [
            ({"dimensions": (0,)}, ((1, 3),)),
            ({"dimensions": (1,)}, ((3, 1, 2),)),
            ({"dimensions": (0,)}, ((1,),)),
            ({"dimensions": ()}, ((2, 3),)),
            ({"dimensions": (0,)}, ((1, 0),)),
            ({"dimensions": (1, 0)}, ((1, 1),)),
        ],
        oracles.reshape_to(
            lambda attrs, x: [s for d, s in enumerate(x.shape) if d not in attrs["dimensions"]]
        ),
        (
            Bad("f32[3]", {"dimensions": (0,)}, "squeeze: dim 0 of f32[3] has size 3, expected 1"),
            Bad(
                "f32[1]",
                {"dimensions": (1,)},
                "squeeze: dimensions (1,) has 1, out of range for rank 1",
            ),
        ),
    ),
    _layout(
        "expand_dims",
        [
            ({"dimensions": (0,)}, ((3,),)),
            ({"dimensions": (1, 3)}, ((2, 3),)),
            ({"dimensions": (0,)}, ((),)),
            ({"dimensions": (1,)}, ((0,),)),
            ({"dimensions": (3, 0)}, ((2, 3),)),
        ],
        oracles.reshape_to(lambda attrs, x: _expanded_shape(x.shape, attrs["dimensions"])),
        (
            Bad(
                "f32[2]",
                {"dimensions": (2,)},
                "expand_dims: dimensions (2,) has 2, out of range for rank 2",
            ),
            Bad("f32[2]", {"dimensions": (0, 0)}, "expand_dims: dimensions (0, 0) has duplicates"),
        ),
    ),
]


def _expanded_shape(shape, dimensions):
    result, sizes = [], list(shape)
    for position in range(len(shape) + len(dimensions)):
        result.append(1 if position in dimensions else sizes.pop(0))
    return result
