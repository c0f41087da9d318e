"""A small builder of one-function modules for the interpreter tests; every op's result types
come from the shape rules."""

from __future__ import annotations

import numpy as np
from meshjit.ir import (
    Attrs,
    Block,
    Func,
    MeshAttr,
    Module,
    Op,
    SymbolRef,
    Value,
    infer_result_types,
)
from op_oracles import NUMPY_DTYPES
from op_records import parse_types


class Builder:
    """Builds a one-function module; every op's result types come from the shape rules."""

    def __init__(self, meshes: dict[str, MeshAttr] | None = None):
        self.meshes = meshes or {}
        self.args: list[Value] = []
        self.ops: list[Op] = []

    def arg(self, text: str) -> Value:
        self.args.append(Value.fresh(parse_types(text)[0]))
        return self.args[-1]

    def op(self, name: str, *operands: Value, regions=(), **attrs):
        types = infer_result_types(
            name, [operand.type for operand in operands], attrs, regions, self.meshes
        )
        results = tuple(Value.fresh(result_type) for result_type in types)
        self.ops.append(Op(name, operands, results, Attrs(attrs), tuple(regions)))
        return results[0] if len(results) == 1 else results

    def block(self, *returns: Value) -> Block:
        return Block(tuple(self.args), tuple(self.ops), returns)

    def module(self, *returns: Value, spmd_mesh: str | None = None) -> Module:
        attrs = {"spmd_mesh": SymbolRef(spmd_mesh)} if spmd_mesh else {}
        func = Func("main", self.block(*returns), attrs=attrs)
        return Module(tuple(self.meshes.items()), (func,))


def mesh_of(*sizes: int) -> MeshAttr:
    return MeshAttr(tuple(zip(("x", "y"), sizes)))


def type_text(shape, dtype: np.dtype) -> str:
    """An IR type as text, e.g. ``f32[2,3]``, from a shape and a numpy dtype."""
    ir_dtype = {numpy_dtype: name for name, numpy_dtype in NUMPY_DTYPES.items()}[np.dtype(dtype)]
    return f"{ir_dtype}[{','.join(map(str, shape))}]"
