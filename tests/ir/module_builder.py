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


def ir_dtype(array: np.ndarray) -> str:
    return {"b": "bool", "i": f"i{array.dtype.itemsize * 8}", "f": f"f{array.dtype.itemsize * 8}"}[
        array.dtype.kind
    ]


def type_text(array: np.ndarray) -> str:
    """The IR type of a numpy array as text, e.g. ``f32[2,3]``."""
    return f"{ir_dtype(array)}[{','.join(map(str, array.shape))}]"
