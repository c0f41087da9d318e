"""Op-table rows of the windowed ops: convolutions over several dimension numbers, strides,
dilations, negative padding, feature and batch groups; window sums, maxima and minima."""

from __future__ import annotations

import op_oracles_structural as oracles
from op_oracles import maximum, minimum
from op_records import FLOAT, NUMERIC, Bad, Case, OpRecord, finite_operands, random_operands


def _conv(lhs_spec, rhs_spec, out_spec, strides, padding, lhs_dilation, rhs_dilation, groups=1, batch_groups=1):
    return {"lhs_spec": lhs_spec, "rhs_spec": rhs_spec, "out_spec": out_spec, "window_strides": strides,
            "padding": padding, "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
            "feature_group_count": groups, "batch_group_count": batch_groups}


def _window(window, strides, padding, base=None, dilation=None):
    rank = len(window)
    return {"window_dimensions": window, "window_strides": strides, "padding": padding,
            "base_dilation": base or (1,) * rank, "window_dilation": dilation or (1,) * rank}


NCHW = ((0, 1, 2, 3),) * 3
_CONV_CASES = [
    (_conv(*NCHW, (1, 1), ((1, 1), (0, 1)), (1, 1), (1, 1)), ((2, 3, 4, 3), (2, 3, 3, 2))),
    (_conv((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2), (2, 1), ((1, 2), (-1, 1)), (1, 1), (1, 2)),
     ((1, 5, 4, 2), (2, 2, 2, 3))),
    (_conv((0, 1, 2), (0, 1, 2), (0, 1, 2), (2,), ((2, 1),), (2,), (1,), groups=2), ((2, 4, 4), (4, 2, 3))),
    (_conv((0, 1, 2), (0, 1, 2), (0, 2, 1), (1,), ((0, 0),), (1,), (2,), batch_groups=2), ((4, 2, 5), (4, 2, 2))),
    (_conv((0, 1, 2), (0, 1, 2), (0, 1, 2), (1,), ((0, 0),), (1,), (1,)), ((1, 1, 2), (1, 1, 3))),
]
_WINDOW_CASES = [
    (_window((2, 3), (1, 2), ((1, 0), (1, 1))), (4, 5)),
    (_window((3, 2), (2, 1), ((0, 0), (2, 1)), (2, 1), (1, 2)), (4, 3)),
    (_window((2,), (1,), ((-1, 2),)), (5,)),
    (_window((3,), (1,), ((0, 0),)), (2,)),
]

CONV_RECORD = OpRecord(
    "conv_general_dilated",
    NUMERIC,
    tuple(Case(attrs, shapes) for attrs, shapes in _CONV_CASES),
    oracles.conv_general_dilated,
    (
        Bad("f32[1,2,5] f32[3,3,2]", _conv(*((0, 1, 2),) * 3, (1,), ((0, 0),), (1,), (1,)),
            "conv_general_dilated: lhs feature dim 2 must be rhs input features 3 x feature_group_count 1"),
        Bad("f32[1,2,5] f32[3,2,2]", _conv((0, 1, 1), (0, 1, 2), (0, 1, 2), (1,), ((0, 0),), (1,), (1,)),
            "conv_general_dilated: lhs_spec (0, 1, 1) must be a permutation of the 3 dims"),
        Bad("f32[1,2,5] f32[3,2,2]", _conv(*((0, 1, 2),) * 3, (1,), ((0, 0),), (1,), (1,), 2, 3),
            "conv_general_dilated: feature_group_count 2 and batch_group_count 3 must be >= 1, one of them 1"),
        Bad("f32[1,2,5] f32[3,2,2]", _conv(*((0, 1, 2),) * 3, (1,), ((-6, 0),), (1,), (1,)),
            "conv_general_dilated: spatial dim 0: padding (-6, 0) leaves a negative size"),
    ),
    make=finite_operands,
    rtol=1e-5,
    atol=1e-5,
)


def _window_record(name: str, combine) -> OpRecord:
    def operands(rng, shapes, dtype, attrs):
        make = finite_operands if name == "reduce_window_sum" else random_operands
        return make(rng, shapes, dtype)

    return OpRecord(
        name,
        NUMERIC if name != "reduce_window_sum" else FLOAT + ("i32",),
        tuple(Case(attrs, (shape, ())) for attrs, shape in _WINDOW_CASES),
        oracles.reduce_window(combine),
        (
            Bad("f32[4] f32[2]", _window((2,), (1,), ((0, 0),)), f"{name}: init value must be f32[], got f32[2]"),
            Bad("f32[4] f32[]", _window((2,), (0,), ((0, 0),)),
                f"{name}: attribute 'window_strides' must be a tuple of ints >= 1"),
        ),
        make=operands,
        rtol=1e-5,
        atol=1e-5,
    )


WINDOW_RECORDS = [
    CONV_RECORD,
    _window_record("reduce_window_sum", lambda a, b: a + b),
    _window_record("reduce_window_max", maximum),
    _window_record("reduce_window_min", minimum),
]
