"""Float arithmetic rewritten as XLA rewrites every program JAX compiles for the CPU, so a jitted
meshjit program gives JAX's numbers.

Two sources of JAX's bits that are not IEEE's op by op:
- XLA's algebraic simplifier rewrites divisions: ``x / 100.0`` is ``x * (1 / 100.0)``, the
  reciprocal rounded to the dtype (JAX: ``30 / 100`` is 0.29999998 jitted, 0.3 eagerly);
  ``a / sqrt(b)`` is ``a * rsqrt(b)``; ``(a / b) / c`` is ``a / (b * c)``; and so on
  (``_rewrite_division`` lists the rules in XLA's order);
- XLA's CPU code is compiled with floating-point contraction: a float32 or float64 product
  added to or subtracted from something in the same fused computation is one fused
  multiply-add (``a * b + c`` rounds once: ``_contract``).
Each rule was checked against JAX 0.10.2 on this kind of CPU (every x86-64 CPU meshjit runs on has
FMA; meshjit's ``fma`` op rounds once on any of them). The traced module keeps its ops
(make_jaxpr prints JAX's jaxpr; eager ops never compile and keep IEEE arithmetic, as JAX's);
``compile_module`` runs this first, so the module compiled, checked and dumped is rewritten.

"Constant" is what XLA's constant folding makes one: constants of the same block and values
computed from them by layout, dtype and exactly rounded ops (``x / jnp.sqrt(64.0)``). A loop or
branch body sees its parent's values as arguments (as XLA's loop bodies are computations of their
own); an array a function closes over is an argument of meshjit's program (JAX makes it a
constant), so dividing by it stays a division.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from meshjit.ir import Block, DenseAttr, Module, Op, Value
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.ops.elementwise import OPS as ELEMENTWISE_OPS
from meshjit.ir.reference import reference_impls

from .cse import eliminate_common_subexpressions
from .dce import eliminate_dead_code
from .rewrite_util import with_ops, with_regions

# NOTE: ops XLA's constant folding evaluates to the same bits as meshjit's reference does (exact
# IEEE arithmetic, layout and dtype changes), so a divisor computed from constants is a constant
_EVALUATED = frozenset(("convert", "reshape", "broadcast_in_dim", "transpose", "iota", "neg", "abs", "sqrt",
                        "add", "sub", "mul", "div", "max", "min"))
# NOTE: a reciprocal of at most this many elements is written out as a constant
_LARGEST_CONSTANT = 1 << 16


def rewrite_divisions(module: Module) -> Module:
    """The module with its float divisions rewritten by XLA's simplifier's rules (on the ops as
    traced: XLA simplifies before its CSE). Replaced ops are left for dead-code elimination."""
    return _rewrite_blocks(module, _divisions)


def contract_multiply_adds(module: Module) -> Module:
    """The module with float products added or subtracted made fused multiply-adds where XLA's
    fused loops contract them (run after common subexpressions are merged, as XLA's fusion sees
    them). Replaced products are left for dead-code elimination."""
    return _rewrite_blocks(module, _contractions)


def rewrite_as_xla(module: Module) -> Module:
    """Both rewrites in the pipeline's order, for a whole traced module (the interpreter's
    reference): divisions, common subexpressions, contraction, dead code."""
    divided = eliminate_common_subexpressions(rewrite_divisions(module))
    return eliminate_dead_code(contract_multiply_adds(divided))


def _divisions(op: Op, block: _Block) -> list[Op] | None:
    if op.name != "div" or _folded(op, block.constants):
        return None
    return _rewrite_division(op, block.constants, block.uses)


def _contractions(op: Op, block: _Block) -> list[Op] | None:
    if op.name not in ("add", "sub") or _folded(op, block.constants):
        return None
    return _contract(op, block.constants, block.fusion)


def _folded(op: Op, constants: _Constants) -> bool:
    """Whether XLA computes ``op`` at compile time (every operand a constant), as IEEE
    arithmetic: no rewrite applies to it."""
    return all(constants.value(operand) is not None for operand in op.operands)


def _rewrite_blocks(module: Module, rule) -> Module:
    """``module`` with ``rule(op, block) -> [ops] | None`` applied to every op of every block."""

    def rewrite(source, returns) -> list[Op]:
        block = _Block(source, returns)
        ops: list[Op] = []
        for op in source:
            op = with_regions(op, lambda region: Block(region.args, tuple(rewrite(region.ops, region.returns)),
                                                       region.returns, region.arg_shardings))
            for new_op in rule(op, block) or (op,):
                ops.append(new_op)
                block.constants.define(new_op)
        return ops

    return with_ops(module, rewrite(module.main.body.ops, module.main.returns))


class _Block:
    """What the rules know of the block being rewritten: its ops so far (and which of their
    results are constants), each value's use count, and which ops XLA would fuse together."""

    def __init__(self, source, returns):
        self.constants = _Constants()
        self.uses = _use_counts(source, returns)
        self.fusion = _Fusion(source, returns)


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
    if broadcast is not None and broadcast.name == "broadcast_in_dim" and constants.value(broadcast.operands[0]) is not None:
        base = broadcast.operands[0]  # NOTE: the reciprocal of what is broadcast, broadcast alike
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
    ``a / broadcast(b) -> a * broadcast(1 / b)`` when the broadcast adds elements (``1 / b`` is
    ``rsqrt(c)`` for ``b = sqrt(c)`` used only there), ``(a / b) / (c / d) -> (a * d) / (b * c)``, ``(a / b) / c -> a / (b * c)``,
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
    real = to_numpy(op.result.type.dtype).kind == "f"  # NOTE: checked against XLA on real floats
    if real and _named(bottom, "broadcast_in_dim") and _elements(bottom.operands[0]) < _elements(divisor):
        small = bottom.operands[0]
        root = constants.definition(small)
        if _named(root, "sqrt") and uses.get(small.id, 0) == 1:
            reciprocal = emit.typed("rsqrt", small.type, root.operands[0])
        else:
            reciprocal = emit.typed("div", small.type, emit.ones(small.type), small)
        spread = emit.typed("broadcast_in_dim", divisor.type, reciprocal, attrs=bottom.attrs)
        return emit.done("mul", numerator, spread)
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


def _contract(op: Op, constants: _Constants, fusion: _Fusion) -> list[Op] | None:
    """An add or sub of a float32/float64 product as one ``fma`` (LLVM's contraction in XLA's
    code), or None. The left operand's product goes first; a negated product and a subtracted
    one fold their sign into the fma: ``c - a * b`` is ``fma(-a, b, c)``, ``a * b - c`` is
    ``fma(a, b, -c)``; squares (``square``, ``integer_pow`` 2 and 3) are products too. A product
    with another user in the same fused computation stays one (LLVM contracts a multiply with a
    single use; XLA copies a product into each fusion that uses it)."""
    if op.result.type.dtype not in ("f32", "f64"):
        return None
    left, right = op.operands
    emit = _Emitter(op)
    factors = _product(left, op, constants, fusion, emit)
    if factors is not None:
        addend = emit("neg", right) if op.name == "sub" else right
        return emit.done("fma", *factors, addend)
    factors = _product(right, op, constants, fusion, emit)
    if factors is not None:
        first, second = factors
        if op.name == "sub":
            first = emit("neg", first)
        return emit.done("fma", first, second, left)
    return None


def _product(value: Value, user: Op, constants: _Constants, fusion: _Fusion, emit: _Emitter):
    """The two factors whose product ``value`` is (emitting what they need), or None if it is no
    product or is used elsewhere in ``user``'s fusion too."""
    op = constants.definition(value)
    if op is None or op.regions or fusion.shares(value, user) or constants.value(value) is not None:
        return None  # NOTE: a product of constants is folded to one, which contracts with nothing
    if op.name == "mul":
        return op.operands
    if op.name == "square" or (op.name == "integer_pow" and op.attrs["y"] == 2):
        return op.operands[0], op.operands[0]
    if op.name == "integer_pow" and op.attrs["y"] == 3:
        (base,) = op.operands
        return emit("mul", base, base), base
    if op.name == "neg":
        inner = constants.definition(op.operands[0])
        if inner is not None and inner.name == "mul" and not fusion.shares(op.operands[0], op):
            first, second = inner.operands
            return emit("neg", first), second
    return None


def _elements(value: Value) -> int:
    return int(np.prod(value.type.shape, dtype=np.int64))


def _named(op: Op | None, name: str) -> bool:
    return op is not None and op.name == name


class _Emitter:
    """New elementwise ops of the rewritten op's type and location, ending in the op that
    replaces it (same result, so its users need no renaming)."""

    def __init__(self, op: Op):
        self._op = op
        self.ops: list[Op] = []

    def __call__(self, name: str, *operands: Value) -> Value:
        return self.typed(name, self._op.result.type, *operands)

    def typed(self, name: str, result_type, *operands: Value, attrs=None) -> Value:
        """A new op ``name`` of ``operands`` with one result of ``result_type``."""
        result = Value.fresh(result_type)
        self.ops.append(Op(name, operands, (result,), attrs or {}, location=self._op.location))
        return result

    def ones(self, result_type) -> Value:
        """A constant of ones (a scalar, broadcast unless ``result_type`` is a scalar)."""
        one = np.ones((), to_numpy(result_type.dtype))
        scalar = self.typed("constant", replace(result_type, shape=()), attrs={"value": DenseAttr.from_array(one)})
        if not result_type.shape:
            return scalar
        return self.typed("broadcast_in_dim", result_type, scalar,
                          attrs={"broadcast_dimensions": (), "shape": tuple(result_type.shape)})

    def done(self, name: str, *operands: Value) -> list[Op]:
        """The ops so far and the rewritten op itself turned into ``name`` of ``operands``."""
        return [*self.ops, replace(self._op, name=name, operands=operands)]


class _Fusion:
    """Which ops of a block XLA would fuse together, as far as contraction needs. XLA copies a
    cheap product into every consumer's fused loop only when every consumer can take it (an
    elementwise or layout op); a product the block returns, or that a reduction, a dot or a
    loop also reads, is computed once and stored, and an add reading it back cannot contract.
    Two consumers share one fused loop when one reaches the other, or both reach a common op,
    through elementwise ops; there the product is one multiply with two uses, which LLVM keeps."""

    # NOTE: a bound on the ops followed from each user; chains longer than this are rare
    _REACH = 64
    _FUSIBLE = ELEMENTWISE_OPS + ("broadcast_in_dim", "reshape", "transpose", "slice", "concatenate", "pad")

    def __init__(self, ops, returns=()):
        self._users: dict[int, list[Op]] = {}
        for op in ops:
            for operand in op.operands:
                self._users.setdefault(operand.id, []).append(op)
        self._returned = {value.id for value in returns}

    def shares(self, value: Value, user: Op) -> bool:
        """Whether ``value`` stays one shared multiply for ``user``: returned, read by an op that
        does not fuse, read twice by ``user``, or read by another op of ``user``'s fused loop."""
        users = self._users.get(value.id, [])
        if value.id in self._returned or any(op.name not in self._FUSIBLE for op in users):
            return True
        if sum(op is user for op in users) > 1:
            return True
        others = [op for op in users if op is not user]
        if not others:
            return False
        reached = self._reach(user)
        return any(not reached.isdisjoint(self._reach(other)) for other in others)

    def _reach(self, start: Op) -> set[int]:
        reached, frontier = {id(start)}, [start]
        while frontier and len(reached) < self._REACH:
            op = frontier.pop()
            for result in op.results:
                for user in self._users.get(result.id, []):
                    if user.name in ELEMENTWISE_OPS and id(user) not in reached:
                        reached.add(id(user))
                        frontier.append(user)
        return reached


def _use_counts(ops, returns) -> dict[int, int]:
    counts: dict[int, int] = {}
    for value in [operand for op in ops for operand in op.operands] + list(returns):
        counts[value.id] = counts.get(value.id, 0) + 1
    return counts
