"""The program family of the reduce_scatter bug fixed in 49efa5f (tanh, dot, reduce_sum on a
2x4 mesh, the operand under a layout such as ``y(2)2,x``, a sub-axis of y then x, and the sum
constrained to ``yx``): random layouts, sub-axes included, for the operand, the product and
the sum, each partitioned module checked against the reference interpreter and the compiled
run. The reshard split the summed dim locally over an axis a sub-axis of which another dim
held, and the devices summed the wrong blocks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from meshjit.ir import TensorType
from partition_cases import LAYOUTS_2D
from test_partition_differential import LAYOUTS_1D, MESHES, ProgramBuilder, partition_and_compare

pytestmark = pytest.mark.filterwarnings("ignore::meshjit.compiler.partitioning.partition.FullRematerializationWarning")


# NOTE: the product layouts with sub-axes, where a reduce_scatter meets an axis in play
SUB_AXIS_PRODUCTS = ("xy(1)2,y(2)2", "-,y(2)2x", "y(1)2,y(2)2", "y(2)2,y(1)2", "y(1)2,-", "y(2)2,x")


def _program(mesh_name, shape, lhs_layout, rhs_layout, product_layout, axis, total_layout):
    """tanh(lhs) @ rhs summed over ``axis``, with its arguments, product and sum so laid out."""
    rows, inner, cols = shape
    builder = ProgramBuilder(MESHES[mesh_name])
    lhs = builder.argument(TensorType((rows, inner), "f64"), lhs_layout)
    rhs = builder.argument(TensorType((inner, cols), "f64"), rhs_layout)
    hidden = builder.emit("tanh", [lhs], {})[0]
    product = builder.emit("dot_general", [hidden, rhs], {"contracting_dims": ((1,), (0,)), "batch_dims": ((), ())},
                           product_layout)[0]
    total = builder.emit("reduce_sum", [product], {"axes": (axis,)}, total_layout)[0]
    rng = np.random.default_rng(5)
    return builder.module([total]), [rng.normal(size=(rows, inner)), rng.normal(size=(inner, cols))]


def test_every_operand_layout_against_sub_axis_products():
    """The note's program with every 2x4 operand layout, each sub-axis product layout, both sum
    axes and the sum constrained to yx, y(2)2 or left free (612 programs; before the fix
    y(2)2,x -> -,y(2)2x -> yx and at least five others summed the wrong blocks)."""
    for lhs, product, axis, total in itertools.product(LAYOUTS_2D["2x4"], SUB_AXIS_PRODUCTS, (0, 1),
                                                       ("yx", "y(2)2", None)):
        module, arrays = _program("2x4", (8, 8, 4), lhs, None, product, axis, total)
        partition_and_compare(module, arrays)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), mesh_name=st.sampled_from(["2x4", "8"]),
       shape=st.tuples(*(st.sampled_from([2, 4, 8]) for _ in range(3))), axis=st.sampled_from([0, 1]))
def test_tanh_dot_reduce_sum_under_random_layouts(data, mesh_name, shape, axis):
    layouts_2d, layouts_1d = LAYOUTS_2D[mesh_name], LAYOUTS_1D[mesh_name]
    layouts = [data.draw(st.sampled_from(options)) for options in
               (layouts_2d, [None, *layouts_2d], [None, *layouts_2d], [None, *layouts_1d])]
    module, arrays = _program(mesh_name, shape, *layouts[:3], axis, layouts[3])
    partition_and_compare(module, arrays)
