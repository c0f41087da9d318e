"""meshjit.testing.assert_collectives: passing checks return the collectives, failing ones list
the actual collectives with their reasons."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import meshjit as jax
from meshjit.sharding import NamedSharding
from meshjit.sharding import PartitionSpec as P
from meshjit.testing import assert_collectives

pytestmark = pytest.mark.usefixtures("restore_runtime_state")


def megatron_mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2


@pytest.fixture
def mlp(mesh_2x4):
    """The jitted Megatron MLP on the 2 x 4 mesh and its arguments: one all_reduce over "y"."""
    shardings = (NamedSharding(mesh_2x4, P("x", None)), NamedSharding(mesh_2x4, P(None, "y")),
                 NamedSharding(mesh_2x4, P("y", None)))
    jitted = jax.jit(megatron_mlp, in_shardings=shardings, out_shardings=NamedSharding(mesh_2x4, P("x", None)))
    arguments = (np.ones((8, 16), np.float32), np.ones((16, 32), np.float32), np.ones((32, 16), np.float32))
    return jitted, arguments


def test_matching_expectations_pass_and_return_the_records(mlp):
    jitted, arguments = mlp
    records = assert_collectives(jitted, *arguments, expect=["all_reduce"], max_bytes=384, forbid=["all_gather"])
    assert [(record.kind, record.axes, record.bytes) for record in records] == [("all_reduce", ("y",), 384)]
    assert_collectives(jitted, *arguments, expect=[("all_reduce", "y")])
    assert_collectives(jitted, *arguments, expect=Counter({("all_reduce", ("y",)): 1}))
    assert_collectives(jitted, *arguments, forbid="all_to_all")


def test_a_plain_function_is_jitted_with_its_arguments_layouts(mesh_2x4):
    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh_2x4, P("x", "y")))
    records = assert_collectives(lambda x: x.sum(axis=1), x, expect=["all_reduce"])
    assert records[0].axes == ("y",)
    assert_collectives(lambda x: x * 2, x, expect=[], max_bytes=0)


def test_wrong_kind_count_lists_actual_collectives_with_reasons(mlp):
    jitted, arguments = mlp
    with pytest.raises(AssertionError) as failure:
        assert_collectives(jitted, *arguments, expect=Counter({"all_gather": 1}))
    message = str(failure.value)
    assert message.startswith("collectives of megatron_mlp do not match:")
    assert "  - expected 1 all_gather, found 0\n" in message
    assert "  - expected 0 all_reduce, found 1\n" in message
    assert "actual collectives (1, 384 bytes per device in total):" in message
    assert "  0. all_reduce over y of f32[4, 16]: 384 bytes/device (output 0)" in message


def test_wrong_axes_too_many_bytes_and_forbidden_kinds(mlp):
    jitted, arguments = mlp
    with pytest.raises(AssertionError) as failure:
        assert_collectives(jitted, *arguments, expect=[("all_reduce", "x")], max_bytes=100, forbid=["all_reduce"])
    message = str(failure.value)
    assert "expected 1 all_reduce over x, found 0" in message
    assert "384 bytes per device exceed max_bytes=100" in message
    assert "all_reduce is forbidden, found 1" in message


def test_no_collectives_is_said_plainly(mesh_2x4):
    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh_2x4, P("x", None)))
    with pytest.raises(AssertionError, match=r"actual collectives \(0, 0 bytes per device in total\):\n  \(none\)"):
        assert_collectives(lambda x: x + 1, x, expect=["all_gather"])


def test_unknown_kinds_and_malformed_entries_are_rejected(mlp):
    jitted, arguments = mlp
    with pytest.raises(ValueError, match=r"expect\[0\]: 'allreduce' is not a collective; expected one of all_reduce"):
        assert_collectives(jitted, *arguments, expect=["allreduce"])
    with pytest.raises(ValueError, match="forbid: 'psum' is not a collective"):
        assert_collectives(jitted, *arguments, forbid=["psum"])
    with pytest.raises(TypeError, match=r"expect\[0\] must be a collective kind .* got 3"):
        assert_collectives(jitted, *arguments, expect=[3])
