"""Divisions rewritten as XLA's algebraic simplifier rewrites every program JAX compiles, so a
jitted meshjit program gives JAX's numbers.

``x / 100.0`` under ``jax.jit`` is ``x * (1 / 100.0)``, the reciprocal rounded to the dtype, which
can differ from IEEE division in the last bit (JAX: ``30 / 100`` is 0.29999998 jitted, 0.3
eagerly); ``a / sqrt(b)`` is ``a * rsqrt(b)``; ``(a / b) / c`` is ``a / (b * c)``; and so on
(``_rewrite_division`` lists the rules in XLA's order, each checked against JAX 0.10.2). The
traced module keeps its ``div`` ops (make_jaxpr prints JAX's jaxpr; eager ops never compile and
keep IEEE division, as JAX's); ``compile_module`` runs this first.

"Constant" is what XLA's constant folding makes one: constants of the same block and values
computed from them by layout, dtype and exactly rounded ops (``x / jnp.sqrt(64.0)``). A loop or
branch body sees its parent's values as arguments; an array a function closes over is an
argument of meshjit's program (JAX makes it a constant), so dividing by it stays a division.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from meshjit.ir import Block, DenseAttr, Module, Op, Value
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.reference import reference_impls

from .rewrite_util import with_ops, with_regions

# NOTE: ops XLA's constant folding evaluates to the same bits as meshjit's reference does (exact
# IEEE arithmetic, layout and dtype changes), so a divisor computed from constants is a constant
_EVALUATED = frozenset(("convert", "reshape", "broadcast_in_dim", "transpose", "neg", "abs", "sqrt",
                        "add", "sub", "mul", "div", "max", "min"))
# NOTE: a constant of at most this many elements is written out; a larger divisor keeps its last
# broadcast (the reciprocal of the broadcast operand is broadcast instead)
_LARGEST_CONSTANT = 1 << 16


def multiply_by_reciprocals(module: Module) -> Module:
    """The module with its float divisions rewritten as XLA's simplifier rewrites them."""
    ops = _rewrite_block_ops(module.main.body.ops, module.main.returns)
    return with_ops(module, ops)


def _in_region(block: Block) -> Block:
    return Block(block.args, tuple(_rewrite_block_ops(block.ops, block.returns)), block.returns, block.arg_shardings)


def _rewrite_block_ops(source, returns=()) -> list[Op]:
    constants = _Constants()
    uses = _use_counts(source, returns)
    ops: list[Op] = []
    for op in source:
        op = with_regions(op, _in_region)
        replacement = _rewrite_division(op, constants, uses) if op.name == "div" else None
        for new_op in replacement or (op,):
            ops.append(new_op)
            constants.define(new_op)
    return ops


class _Constants:
    """The ops of one block so far, and the values among their results known at compile time."""

    def __init__(self):
        self._definitions: dict[int, Op] = {}
        self._values: dict[int, np.ndarray | None] = {}

    def define(self, op: Op) -> None:
        self._definitions.update((result.id, op) for result in op.results)

    def definition(self, value: Value) -> Op | None:
        return self._definitions.get(value.id)

    def value(self, value: Value) -> np.ndarray | None:
        """``value``'s elements if constants alone compute it, else None."""
        if value.id not in self._values:
            self._values[value.id] = self._evaluate(self._definitions.get(value.id))
        return self._values[value.id]

    def _evaluate(self, op: Op | None) -> np.ndarray | None:
        if op is None or op.regions or len(op.results) != 1:
            return None
        if op.name == "constant":
            return op.attrs["value"].array
        if op.name not in _EVALUATED:
            return None
        operands = [self.value(operand) for operand in op.operands]
        if any(operand is None for operand in operands):
            return None
        (result,) = reference_impls[op.name](op.attrs, *operands)
        return np.asarray(result, dtype=to_numpy(op.result.type.dtype))


def _reciprocal_multiply(op: Op, constants: _Constants) -> list[Op] | None:
    """``[constant, (broadcast,) mul]`` standing for ``op`` (a div), or None to keep it."""
    numerator, divisor = op.operands
    if constants.value(numerator) is not None:
        return None
    broadcast = constants.definition(divisor)
    if broadcast is not None and broadcast.name == "broadcast_in_dim" and _size(divisor) > _LARGEST_CONSTANT:
        base = broadcast.operands[0]
    else:
        base, broadcast = divisor, None
    value = constants.value(base)
    if value is None or value.size > _LARGEST_CONSTANT:
        return None
    (reciprocal,) = reference_impls["div"]({}, np.ones_like(value), value)
    constant = Value.fresh(base.type)
    new_ops = [Op("constant", (), (constant,), {"value": DenseAttr.from_array(reciprocal)}, location=op.location)]
    if broadcast is not None:
        spread = Value.fresh(divisor.type)
        new_ops.append(replace(broadcast, operands=(constant,), results=(spread,)))
        constant = spread
    new_ops.append(replace(op, name="mul", operands=(numerator, constant)))
    return new_ops


def _rewrite_division(op: Op, constants: _Constants, uses: dict[int, int]) -> list[Op] | None:
    """The ops standing for a float ``div`` under XLA's first matching rule, or None.

    In XLA's order: ``exp(a) / exp(b) -> exp(a - b)``, ``a / exp(b) -> a * exp(-b)``,
    ``a / pow(b, c) -> a * pow(b, -c)``, ``a / sqrt(b) -> a * rsqrt(b)`` and ``a / rsqrt(b) ->
    a * sqrt(b)`` (the root used only here), ``a / constant -> a * (1 / constant)``,
    ``(a / b) / (c / d) -> (a * d) / (b * c)``, ``(a / b) / c -> a / (b * c)``,
    ``a / (b / c) -> (a * c) / b``."""
    if to_numpy(op.result.type.dtype).kind not in "fc":
        return None
    numerator, divisor = op.operands
    top, bottom = constants.definition(numerator), constants.definition(divisor)
    emit = _Emitter(op)
    if _named(top, "exp") and _named(bottom, "exp"):
        return emit.done("exp", emit("sub", top.operands[0], bottom.operands[0]))
    if _named(bottom, "exp"):
        return emit.done("mul", numerator, emit("exp", emit("neg", bottom.operands[0])))
    if _named(bottom, "pow"):
        base, exponent = bottom.operands
        return emit.done("mul", numerator, emit("pow", base, emit("neg", exponent)))
    for root, inverse in (("sqrt", "rsqrt"), ("rsqrt", "sqrt")):
        if _named(bottom, root) and uses.get(divisor.id, 0) == 1:
            return emit.done("mul", numerator, emit(inverse, bottom.operands[0]))
    by_constant = _reciprocal_multiply(op, constants)
    if by_constant is not None:
        return by_constant
    if _named(top, "div") and _named(bottom, "div"):
        (a, b), (c, d) = top.operands, bottom.operands
        return emit.done("div", emit("mul", a, d), emit("mul", b, c))
    if _named(top, "div"):
        a, b = top.operands
        return emit.done("div", a, emit("mul", b, divisor))
    if _named(bottom, "div"):
        b, c = bottom.operands
        return emit.done("div", emit("mul", numerator, c), b)
    return None


def _named(op: Op | None, name: str) -> bool:
    return op is not None and op.name == name


class _Emitter:
    """New elementwise ops of a div's type and location, ending in the op that replaces it."""

    def __init__(self, div: Op):
        self._div = div
        self.ops: list[Op] = []

    def __call__(self, name: str, *operands: Value) -> Value:
        result = Value.fresh(self._div.result.type)
        self.ops.append(Op(name, operands, (result,), location=self._div.location))
        return result

    def done(self, name: str, *operands: Value) -> list[Op]:
        """The ops so far and the div itself turned into ``name`` of ``operands``."""
        return [*self.ops, replace(self._div, name=name, operands=operands)]


def _use_counts(ops, returns) -> dict[int, int]:
    counts: dict[int, int] = {}
    for value in [operand for op in ops for operand in op.operands] + list(returns):
        counts[value.id] = counts.get(value.id, 0) + 1
    return counts


def _size(value: Value) -> int:
    return int(np.prod(value.type.shape, dtype=np.int64))
