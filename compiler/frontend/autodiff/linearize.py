"""Linearization: the JVP of a block, traced into a new block and split by partial evaluation
into a forward part (every op that does not depend on a tangent, emitted now into the current
trace) and a linear part (a block from residuals and tangents to output tangents, kept to be
run forward by ``linearize`` or transposed by ``vjp``).

Known values the linear part uses become residuals, except constants (ops computed from no
input at all, such as the zeros of a symbolic tangent), which are recomputed instead of saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from meshjit.ir import Block, MeshAttr, SymbolRef, TensorSharding, TensorType

from ..trace import current_trace, operand_sharding_type
from .evaluate import evaluate_ops
from .jvp import jvp_block
from .partial_eval import split_block
from .registries import instantiate, is_float, type_of, zeros
from .tracing import trace_for_differentiation


@dataclass
class LinearFunction:
    """The tangent part of a linearized function.

    ``block`` takes the residuals, then one tangent per differentiable input, and returns one
    tangent per output; ``residuals`` are the residuals' values in the trace where the forward
    part ran; ``meshes`` is that trace's mesh table, which the block's mesh symbols name.
    """

    block: Block
    residuals: list
    tangent_types: list[TensorType]
    meshes: dict[str, MeshAttr] = field(default_factory=dict)

    def block_for_current_trace(self) -> Block:
        """The block with its meshes named as the current trace names them (added there when
        new): vjp and linearize run the linear part in a later trace than the forward part."""
        trace = current_trace()
        names = {name: trace.add_mesh(mesh) for name, mesh in self.meshes.items()}
        if all(old == new for old, new in names.items()):
            return self.block
        return _renamed_block(self.block, names)


def _renamed_attr(value, names: dict[str, str]):
    if isinstance(value, SymbolRef) and value.name in names:
        return SymbolRef(names[value.name])
    if isinstance(value, TensorSharding) and value.mesh_name in names:
        return replace(value, mesh_name=names[value.mesh_name])
    if isinstance(value, tuple):
        return tuple(_renamed_attr(item, names) for item in value)
    return value


def _renamed_block(block: Block, names: dict[str, str]) -> Block:
    ops = tuple(replace(op, attrs={key: _renamed_attr(value, names) for key, value in op.attrs.items()},
                        regions=tuple(_renamed_block(region, names) for region in op.regions),
                        shardings=_renamed_attr(op.shardings, names))
                for op in block.ops)
    return replace(block, ops=ops)


def linearize_block(
    block: Block, primals: Sequence, differentiable: Sequence[bool]
) -> tuple[list, LinearFunction]:
    """Run ``block`` on ``primals`` now; return its outputs and its linear part with respect to
    the inputs marked ``differentiable``."""
    count = len(primals)
    tangent_types = [argument.type for argument, flag in zip(block.args, differentiable) if flag]

    def jvp_function(*arguments):
        tangents = iter(arguments[count:])
        full_tangents = [next(tangents) if flag else None for flag in differentiable]
        outputs, output_tangents = jvp_block(block, arguments[:count], full_tangents)
        filled = [
            instantiate(tangent, type_of(output))
            if is_float(type_of(output).dtype)
            else zeros(type_of(output))
            for output, tangent in zip(outputs, output_tangents)
        ]
        return list(outputs) + filled

    arg_types = [argument.type for argument in block.args] + tangent_types
    # NOTE: a tangent has its primal's sharding type (explicit mode)
    primal_shardings = [operand_sharding_type(primal) for primal in primals]
    primal_shardings += [None] * (len(block.args) - len(primal_shardings))
    shardings = primal_shardings + [sharding for sharding, flag in zip(primal_shardings, differentiable) if flag]
    traced = trace_for_differentiation(
        jvp_function, arg_types, [False] * len(arg_types), name="linearize", transposable=True,
        arg_sharding_types=shardings, arg_sources=list(primals) + [None] * len(tangent_types),
    )
    return _split(traced.block, list(primals) + list(traced.captured), count, len(tangent_types))


def _split(
    jvp: Block, inputs: list, primal_count: int, tangent_count: int
) -> tuple[list, LinearFunction]:
    """Partially evaluate the traced JVP: emit the known ops, keep the linear ones."""
    tangent_args = jvp.args[primal_count : primal_count + tangent_count]
    known_args = jvp.args[:primal_count] + jvp.args[primal_count + tangent_count :]
    output_count = len(jvp.returns) // 2
    outputs, tangent_outputs = jvp.returns[:output_count], jvp.returns[output_count:]
    split = split_block(jvp, [argument in tangent_args for argument in jvp.args], tangent_outputs)
    if any(value.id in split.linear_ids for value in outputs):
        raise AssertionError("autodiff internal error: a primal output depends on a tangent")
    environment = {argument.id: value for argument, value in zip(known_args, inputs, strict=True)}
    evaluate_ops(split.known_ops, environment)
    residuals = split.residuals
    linear_block = Block(tuple(residuals) + tuple(tangent_args), tuple(split.linear_ops),
                         tuple(tangent_outputs))
    linear = LinearFunction(
        linear_block,
        [environment[value.id] for value in residuals],
        [argument.type for argument in tangent_args],
        dict(current_trace().meshes),
    )
    return [environment[value.id] for value in outputs], linear
