"""``result_dims``: a factor rule evaluated on operand sharding dims (compiler/factor_types.py),
the default of explicit mode's type rules."""

from __future__ import annotations

import pytest
from meshjit.compiler.sharding.factor_rules import rule_from_spec
from meshjit.compiler.sharding.factor_types import DuplicateAxisError, result_dims
from meshjit.compiler.sharding.sharding_types import ShardingTypeError, lenient_sharding_types
from meshjit.ir.abstract_mesh import AbstractMesh, AxisType

MESH = AbstractMesh((2, 4), ("X", "Y"), (AxisType.Explicit,) * 2)


def dims_of(spec, shapes, result_shape, operands, kinds=None):
    rule = rule_from_spec(spec, shapes, [result_shape], kinds)
    return result_dims(rule, operands, shapes, [result_shape], MESH, "op")[0]


def test_pass_factors_take_the_axes_the_operands_agree_on():
    shapes = [(8, 4), (8, 4)]
    assert dims_of("i j, i j -> i j", shapes, (8, 4), [(("X",), ()), ((), ("Y",))]) == (("X",), ("Y",))
    with pytest.raises(ShardingTypeError, match=r"op got incompatible shardings for broadcasting: \('X', None\), "
                                                r"\('Y', None\)"):
        dims_of("i j, i j -> i j", shapes, (8, 4), [(("X",), ()), (("Y",), ())])
    with lenient_sharding_types():
        assert dims_of("i j, i j -> i j", shapes, (8, 4), [(("X",), ()), (("Y",), ())]) == ((), ())


def test_reduction_factors_drop_out_and_a_repeated_axis_is_an_error():
    shapes = [(8, 4), (4, 16)]
    assert dims_of("i k, k j -> i j", shapes, (8, 16), [(("X",), ("Y",)), (("Y",), ())],
                   {"k": "reduction"}) == (("X",), ())
    with pytest.raises(DuplicateAxisError):
        dims_of("i k, k j -> i j", shapes, (8, 16), [(("X",), ()), ((), ("X",))], {"k": "reduction"})


def test_replication_and_permutation_factors():
    with pytest.raises(ShardingTypeError, match="needs its operands unsplit"):
        dims_of("i j -> i j", [(8, 4)], (8, 4), [(("X",), ())], {"i": "replication"})
    assert dims_of("i j -> i j", [(8, 4)], (4, 4), [(("X",), ())], {"i": "permutation"}) == (("X",), ())
    with pytest.raises(ShardingTypeError, match=r"out dim \(3\) is not divisible by mesh axes \(2\)"):
        dims_of("i j -> i j", [(8, 4)], (3, 4), [(("X",), ())], {"i": "permutation"})


def test_compound_dims_share_their_axes_major_first():
    rule = rule_from_spec("(i j) -> i j", [(8,)], [(2, 4)])
    assert result_dims(rule, [((("X", "Y")),)], [(8,)], [(2, 4)], MESH, "reshape") == [(("X",), ("Y",))]
