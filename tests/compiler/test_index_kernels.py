"""The compiled kernels of gather, the scatters, conv_general_dilated and the window reductions
(``compiler/index_kernels.py``), and the numpy ones of dynamic_slice and dynamic_update_slice
(``compiler/dynamic_slice_kernels.py``), against the numpy reference, on plan buffers with leading mesh
dims (one replicated, one varying), repeated and out-of-range indices, bools and ints; and once
with NUMBA_DISABLE_JIT=1 so the Numba loops' Python bodies run."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from meshjit.compiler.rules import kernel_rules
from meshjit.ir import Op, TensorType, Value, infer_result_types
from meshjit.ir.reference import reference_impls
from python_scripts import run_without_jit



def _gather(offset, collapsed, index_map, sizes, mode, batching=((), ())):
    return {"offset_dims": offset, "collapsed_slice_dims": collapsed, "start_index_map": index_map,
            "operand_batching_dims": batching[0], "start_indices_batching_dims": batching[1], "slice_sizes": sizes,
            "mode": mode}


def _scatter(window, inserted, index_map, mode, batching=((), ())):
    return {"update_window_dims": window, "inserted_window_dims": inserted, "scatter_dims_to_operand_dims": index_map,
            "operand_batching_dims": batching[0], "scatter_indices_batching_dims": batching[1], "mode": mode}


def _conv(specs, strides, padding, lhs_dilation, rhs_dilation, groups=1, batch_groups=1):
    return {"lhs_spec": specs[0], "rhs_spec": specs[1], "out_spec": specs[2], "window_strides": strides,
            "padding": padding, "lhs_dilation": lhs_dilation, "rhs_dilation": rhs_dilation,
            "feature_group_count": groups, "batch_group_count": batch_groups}


def _window(window, strides, padding, base, dilation):
    return {"window_dimensions": window, "window_strides": strides, "padding": padding, "base_dilation": base,
            "window_dilation": dilation}


NHWC = ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
NCH = ((0, 1, 2),) * 3
# (op, attrs, operand types); indices are drawn around the operand's bounds
CASES = [
    ("gather", _gather((1,), (0,), (0,), (1, 4), "clip"), ["f32[6,4]", "i32[5,1]"]),
    ("gather", _gather((1, 2), (), (1, 0), (2, 3), "fill"), ["i32[6,5]", "i32[4,2]"]),
    ("gather", _gather((2,), (1,), (1,), (1, 1, 4), "fill", ((0,), (0,))), ["bool[3,5,4]", "i32[3,2,1]"]),
    ("scatter", _scatter((1,), (0,), (0,), "fill"), ["f32[6,4]", "i32[7,1]", "f32[7,4]"]),
    ("scatter_add", _scatter((1, 2), (), (1, 0), "clip"), ["f32[6,5]", "i32[4,2]", "f32[4,2,3]"]),
    ("scatter_add", _scatter((), (0,), (0,), "fill"), ["bool[5]", "i32[6,1]", "bool[6]"]),
    ("scatter_mul", _scatter((2,), (1,), (1,), "fill", ((0,), (0,))), ["i32[3,5,4]", "i32[3,2,1]", "i32[3,2,4]"]),
    ("scatter_min", _scatter((1,), (0,), (0,), "clip"), ["f32[6,4]", "i32[7,1]", "f32[7,4]"]),
    ("scatter_max", _scatter((1,), (0,), (0,), "fill"), ["i32[6,4]", "i32[7,1]", "i32[7,4]"]),
    ("conv_general_dilated", _conv(NHWC, (2, 1), ((1, 2), (-1, 1)), (1, 1), (1, 2)), ["f32[2,7,5,3]", "f32[3,2,3,4]"]),
    ("conv_general_dilated", _conv(NCH, (2,), ((2, 1),), (2,), (1,), groups=2), ["f32[2,4,5]", "f32[6,2,3]"]),
    ("conv_general_dilated", _conv(NCH, (1,), ((0, 0),), (1,), (2,), batch_groups=2), ["i32[4,3,6]", "i32[6,3,2]"]),
    ("reduce_window_sum", _window((2, 3), (1, 2), ((1, 0), (1, 1)), (1, 1), (1, 1)), ["f32[5,7]", "f32[]"]),
    ("reduce_window_max", _window((3, 2), (2, 1), ((0, 0), (2, 1)), (2, 1), (1, 2)), ["f32[6,4]", "f32[]"]),
    ("reduce_window_min", _window((2,), (1,), ((-1, 2),), (1,), (1,)), ["i32[6]", "i32[]"]),
    ("dynamic_slice", {"slice_sizes": (2, 3)}, ["f32[6,4]", "i32[]", "i32[]"]),
    ("dynamic_slice", {"slice_sizes": (0, 5, 1)}, ["bool[3,5,4]", "i32[]", "i32[]", "i32[]"]),
    ("dynamic_update_slice", {}, ["f32[6,4]", "f32[3,2]", "i32[]", "i32[]"]),
    ("dynamic_update_slice", {}, ["i32[5]", "i32[5]", "i32[]"]),
]


def _type(text: str) -> TensorType:
    dtype, dims = text.split("[")
    return TensorType(tuple(int(size) for size in dims.rstrip("]").split(",") if size), dtype)


def _values(rng, value_type: TensorType, bound: int):
    if value_type.dtype == "bool":
        return rng.random(value_type.shape) < 0.5
    if value_type.dtype == "i32":
        return rng.integers(-3, bound + 3, value_type.shape).astype(np.int32)
    return rng.standard_normal(value_type.shape).astype(np.float32)


# leading mesh dims (2, 3) of the first operand and of the others: the first varying along both
# and the others replicated, or each varying along one (gathers and scatters then run every
# position's windows in one loop, over blocks of a broadcast layout)
LAYOUTS = {"first-varies": ((2, 3), (1, 1)), "crossed": ((1, 3), (2, 1))}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name, attrs, types", CASES, ids=[f"{case[0]}-{i}" for i, case in enumerate(CASES)])
def test_kernel_matches_reference_on_plan_buffers(name, attrs, types, layout):
    operand_types = [_type(text) for text in types]
    results = infer_result_types(name, operand_types, attrs)
    op = Op(name, tuple(Value.fresh(t) for t in operand_types), tuple(Value.fresh(t) for t in results), attrs)
    rng = np.random.default_rng(len(name))
    bound = max(operand_types[0].shape)
    first_lead, other_lead = LAYOUTS[layout]

    def stack(value_type, lead):
        return np.stack([_values(rng, value_type, bound) for _ in range(int(np.prod(lead)))]).reshape(
            lead + value_type.shape)

    stacked = [stack(operand_types[0], first_lead)] + [stack(t, other_lead) for t in operand_types[1:]]
    got = kernel_rules[name](op, 2)(*stacked)
    for position in np.ndindex(2, 3):
        pieces = [array[tuple(p if size > 1 else 0 for p, size in zip(position, array.shape[:2]))]
                  for array in stacked]
        expected = reference_impls[name](attrs, *pieces)
        for output, want in zip(got, expected):
            assert output.dtype == want.dtype
            np.testing.assert_allclose(output[position], want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_kernels_run_without_numba_jit(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        import meshjit.numpy as jnp
        from meshjit import lax
        x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
        ids = np.array([2, 0, 2, 9], np.int32)
        got = np.asarray(jnp.asarray(x).at[ids].add(1.0))
        expected = x.copy(); np.add.at(expected, ids[:3], 1.0)
        assert (got == expected).all()
        assert (np.asarray(jnp.asarray(x)[ids]) == x[np.clip(ids, 0, 3)]).all()
        pooled = lax.reduce_window(x, -np.inf, lax.max, (2, 1), (1, 1), "VALID")
        assert (np.asarray(pooled) == np.maximum(x[:-1], x[1:])).all()
        print("ok")
    """)
    run_without_jit(script, tmp_path)
