"""A StableHLO module JAX 0.10.2 printed in float16 and bfloat16 (stablehlo_half/, made by
make_half_program.py): it imports with f16 and bf16 tensors and constants, prints and reads
back, and the interpreter gives JAX's outputs bit for bit (its inputs make every output exact
arithmetic; tests/api/test_half_floats.py runs jitted and sharded programs against JAX)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from meshjit.ir import interpret, parse_module, parse_stablehlo, print_module, verify
from meshjit.ir.dtypes import to_numpy

FOLDER = Path(__file__).parent / "stablehlo_half"


def load():
    module = parse_stablehlo((FOLDER / "half_floats.mlir").read_text(), "half_floats.mlir")
    data = np.load(FOLDER / "half_floats.npz")

    def typed(name, value_type):
        return data[name].view(to_numpy(value_type.dtype))

    arguments = [typed(f"arg{index}", arg.type) for index, arg in enumerate(module.main.body.args)]
    outputs = [typed(f"out{index}", value.type) for index, value in enumerate(module.main.returns)]
    return module, arguments, outputs


def test_imports_the_16_bit_element_types():
    module, _, _ = load()
    verify(module)
    assert [arg.type.dtype for arg in module.main.body.args] == ["bf16", "bf16", "f16"]
    assert [value.type.dtype for value in module.main.returns] == ["bf16", "bf16", "f16", "bf16", "f32"]
    assert print_module(parse_module(print_module(module))) == print_module(module)


def _bits(array) -> np.ndarray:
    array = np.asarray(array)
    return array.view(np.uint16) if array.dtype.itemsize == 2 else array


def test_interprets_to_jax_outputs():
    module, arguments, expected = load()
    for index, (result, want) in enumerate(zip(interpret(module, *arguments), expected)):
        assert result.dtype == want.dtype, f"output {index}"
        np.testing.assert_array_equal(_bits(result), _bits(want), err_msg=f"output {index}")
