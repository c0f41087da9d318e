"""broadcast_in_dim's kernel writes small results out and views large ones; both equal numpy's
broadcast of the operand, on plan buffers with leading mesh dims."""

from __future__ import annotations

import numpy as np
import pytest
from meshjit.compiler.rules import kernel_rules
from meshjit.compiler.rules import layout_kernels as layout
from meshjit.ir import Op, TensorType, Value


@pytest.mark.parametrize("operand_shape, dims, shape, lead", [
    ((), (), (3, 4), 0), ((4,), (1,), (3, 4), 2), ((3,), (0,), (3, 5, 2), 1), ((2, 1), (0, 2), (2, 6, 3), 0),
])
@pytest.mark.parametrize("small", [True, False])
def test_broadcast_kernel_equals_numpy(monkeypatch, operand_shape, dims, shape, lead, small):
    monkeypatch.setattr(layout, "SMALL_BROADCAST_ELEMENTS", 1 << 20 if small else 0)
    operand_type = TensorType(operand_shape, "f32")
    attrs = {"broadcast_dimensions": dims, "shape": shape}
    op = Op("broadcast_in_dim", (Value.fresh(operand_type),), (Value.fresh(TensorType(shape, "f32")),), attrs)
    leading = (2,) * lead
    buffer = np.arange(np.prod(leading + operand_shape), dtype=np.float32).reshape(leading + operand_shape)
    (got,) = kernel_rules["broadcast_in_dim"](op, lead)(buffer)
    expanded = [1] * len(shape)
    for operand_dim, result_dim in enumerate(dims):
        expanded[result_dim] = operand_shape[operand_dim]
    want = np.broadcast_to(buffer.reshape(leading + tuple(expanded)), leading + shape)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert got.flags.owndata == small
