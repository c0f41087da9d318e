"""Chains that hand a pending reduction to an op, for ``test_partial_sums``.

A chain makes one or two values pending over the mesh axes ``reduced`` (a dot whose contracting
dim, or a reduction whose reduced dim, is split over them), hands them to one op, and returns
its result, through a constraint when the layout asks for one. ``passes`` says whether the
op's result must still be pending over those axes (the reduction passed through it), must have
been reduced before it (the algebra forbids it, or passing costs more in every layout), or is
left to the cost model (None: only the numbers are checked).

Pending values are f64[6,10] (i32 for the integer chains), shapes that split unevenly over 4
and 8 devices, so padding is masked and poisoned on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from meshjit.ir import TensorType, Value
from partition_cases import MATMUL, Operand, integers, normal, positive

SHAPE = (6, 10)
CONTRACTED = 10


@dataclass(frozen=True)
class Layout:
    """``reduced``: the axes the pending reduction is over; ``dims``: the pending value's own
    dims; ``output``: the result's layout (None: left to propagation), cut to its rank."""

    mesh: str
    reduced: str
    dims: str
    output: str | None = None

    @property
    def name(self) -> str:
        return f"{self.mesh}-pending[{self.reduced}]-dims[{self.dims}]->[{self.output or '?'}]"


LAYOUTS = [
    Layout("2", "x", "-,-"),
    Layout("2", "x", "-,-", "x,-"),
    Layout("2x2", "x", "y,-"),
    Layout("2x2", "xy", "-,-", "-,y"),
    Layout("2x2", "y", "-,x", "x,y"),
    Layout("2x4", "y", "x,-"),
    Layout("2x4", "x", "-,y", "y,-"),
    Layout("2x4", "yx", "-,-", "xy,-"),
    Layout("8", "x", "-,-"),
    Layout("8", "x", "-,-", "x,-"),
]


class Chain:
    """Builds one chain into a ProgramBuilder (test_partition_differential's): ``pending(kind)``
    is a new pending value made by ``kind`` ("dot", "reduce_sum", "reduce_max", "reduce_min"),
    ``free(shape)`` a new argument the same on every device along the pending axes."""

    def __init__(self, builder, layout: Layout, dtype: str):
        self.builder = builder
        self.layout = layout
        self.dtype = dtype
        self.operands: list[Operand] = []

    def _argument(self, shape, text: str | None, values=None) -> Value:
        if values is positive and self.dtype == "i32":
            values = integers(1, 6)
        operand = Operand(f"{self.dtype}[{','.join(map(str, shape))}]", values or self._values())
        self.operands.append(operand)
        return self.builder.argument(TensorType(tuple(shape), self.dtype), text)

    def _values(self):
        return integers(-5, 6) if self.dtype == "i32" else normal

    def pending(self, kind: str) -> Value:
        rows, cols = self.layout.dims.split(",")
        reduced = self.layout.reduced
        if kind == "dot":
            lhs = self._argument((SHAPE[0], CONTRACTED), f"{rows},{reduced}")
            rhs = self._argument((CONTRACTED, SHAPE[1]), f"{reduced},{cols}")
            return self.builder.emit("dot_general", [lhs, rhs], MATMUL)[0]
        operand = self._argument((CONTRACTED,) + SHAPE, f"{reduced},{rows},{cols}")
        return self.builder.emit(kind, [operand], {"axes": (0,)})[0]

    def free(self, shape=SHAPE, values=None) -> Value:
        """An argument laid out like the pending value's dims where it has their shape."""
        text = self.layout.dims if tuple(shape) == SHAPE else None
        return self._argument(shape, text, values)

    def on_pending_axes(self) -> Value:
        """An argument split over the pending axes: the op must gather it to pass them on."""
        return self._argument(SHAPE, f"{self.layout.reduced},-")

    def predicate(self) -> Value:
        self.operands.append(Operand(f"bool[{SHAPE[0]},{SHAPE[1]}]"))
        return self.builder.argument(TensorType(SHAPE, "bool"), self.layout.dims)

    def op(self, name: str, operands, attrs=None) -> Value:
        return self.builder.emit(name, list(operands), dict(attrs or {}))[0]


@dataclass(frozen=True)
class ChainCase:
    """``build(chain)`` returns the op's result; ``passes``: it must still be pending (True),
    must not be (False), or either, as the cost model decides (None)."""

    name: str
    build: Callable[[Chain], Value]
    passes: bool | None
    dtype: str = "f64"


def _transpose(chain: Chain) -> Value:
    return chain.op("transpose", [chain.pending("dot")], {"permutation": (1, 0)})


def _squeeze_back(chain: Chain) -> Value:
    expanded = chain.op("expand_dims", [chain.pending("dot")], {"dimensions": (1,)})
    return chain.op("squeeze", [expanded], {"dimensions": (1,)})


def _slice(chain: Chain) -> Value:
    attrs = {"start_indices": (1, 0), "limit_indices": (5, 10), "strides": (2, 1)}
    return chain.op("slice", [chain.pending("dot")], attrs)


def _constraint(chain: Chain) -> Value:
    return chain.builder.constrain(chain.pending("dot"), chain.layout.dims)


def _select(pending_kind: str, both: bool) -> Callable[[Chain], Value]:
    def build(chain: Chain) -> Value:
        first = chain.pending(pending_kind)
        second = chain.pending(pending_kind) if both else chain.free()
        return chain.op("select", [chain.predicate(), first, second])
    return build


def _binary(name: str, first: str, second: str) -> Callable[[Chain], Value]:
    """``name(a, b)`` with each side "pending:<kind>", "free", "positive" or "on_pending_axes"."""
    def side(chain: Chain, text: str) -> Value:
        if text.startswith("pending:"):
            return chain.pending(text.split(":")[1])
        if text == "positive":
            return chain.free(values=positive)
        return chain.on_pending_axes() if text == "on_pending_axes" else chain.free()

    def build(chain: Chain) -> Value:
        return chain.op(name, [side(chain, first), side(chain, second)])
    return build


def _unary(name: str, kind: str, attrs=None) -> Callable[[Chain], Value]:
    def build(chain: Chain) -> Value:
        return chain.op(name, [chain.pending(kind)], attrs)
    return build


def _matmul(pending_side: int) -> Callable[[Chain], Value]:
    def build(chain: Chain) -> Value:
        partial = chain.pending("dot")
        if pending_side == 0:
            return chain.op("dot_general", [partial, chain.free((SHAPE[1], 3))], MATMUL)
        return chain.op("dot_general", [chain.free((4, SHAPE[0])), partial], MATMUL)
    return build


def _dense_conv(chain: Chain) -> Value:
    # a convolution without spatial dims is a matmul: (batch, features) by (out, in) features
    attrs = {"lhs_spec": (0, 1), "rhs_spec": (0, 1), "out_spec": (0, 1), "window_strides": (), "padding": (),
             "lhs_dilation": (), "rhs_dilation": (), "feature_group_count": 1, "batch_group_count": 1}
    return chain.op("conv_general_dilated", [chain.pending("dot"), chain.free((3, SHAPE[1]))], attrs)


def _both_matmul(chain: Chain) -> Value:
    flipped = chain.op("transpose", [chain.pending("dot")], {"permutation": (1, 0)})
    return chain.op("dot_general", [chain.pending("dot"), flipped], MATMUL)


CHAINS = [
    # linear and data-movement ops pass every pending sum on
    ChainCase("neg-sum", _unary("neg", "dot"), True),
    ChainCase("neg-max-to-min", _unary("neg", "reduce_max"), True),
    ChainCase("neg-min-to-max", _unary("neg", "reduce_min"), True),
    ChainCase("neg-i32-sum", _unary("neg", "dot"), True, "i32"),
    ChainCase("add", _binary("add", "pending:dot", "pending:dot"), True),
    ChainCase("sub-i32", _binary("sub", "pending:reduce_sum", "pending:dot"), True, "i32"),
    ChainCase("mul-free", _binary("mul", "pending:dot", "free"), True),
    ChainCase("mul-free-first", _binary("mul", "free", "pending:reduce_sum"), True),
    ChainCase("conv-free", _dense_conv, True),
    ChainCase("div-by-free", _binary("div", "pending:dot", "positive"), True),
    ChainCase("max-both", _binary("max", "pending:reduce_max", "pending:reduce_max"), True),
    ChainCase("max-free", _binary("max", "pending:reduce_max", "free"), True),
    ChainCase("min-free", _binary("min", "free", "pending:reduce_min"), True),
    ChainCase("reshape-flat", _unary("reshape", "dot", {"new_sizes": (60,)}), True),
    ChainCase("reshape-split", _unary("reshape", "reduce_max", {"new_sizes": (6, 2, 5)}), None),
    ChainCase("transpose", _transpose, True),
    ChainCase("expand-squeeze", _squeeze_back, True),
    ChainCase("broadcast-unit", _unary("broadcast_in_dim", "dot", {"shape": (1, 6, 10),
                                                                   "broadcast_dimensions": (1, 2)}), True),
    ChainCase("slice", _slice, True),
    ChainCase("constraint", _constraint, True),
    ChainCase("select-both", _select("dot", both=True), True),
    ChainCase("select-both-max", _select("reduce_max", both=True), True),
    ChainCase("reduce_sum", _unary("reduce_sum", "dot", {"axes": (1,)}), True),
    ChainCase("reduce_sum-all-i32", _unary("reduce_sum", "reduce_sum", {"axes": (0, 1)}), True, "i32"),
    ChainCase("reduce_max", _unary("reduce_max", "reduce_max", {"axes": (0,)}), True),
    ChainCase("reduce_min", _unary("reduce_min", "reduce_min", {"axes": (1,)}), True),
    ChainCase("matmul-pending-left", _matmul(0), True),
    ChainCase("matmul-pending-right", _matmul(1), True),
    # the algebra forbids these: the pending values are reduced before the op
    ChainCase("add-free", _binary("add", "pending:dot", "free"), False),
    ChainCase("mul-both", _binary("mul", "pending:dot", "pending:dot"), False),
    ChainCase("matmul-both", _both_matmul, False),
    ChainCase("div-pending-divisor", _binary("div", "positive", "pending:dot"), False),
    ChainCase("div-i32", _binary("div", "pending:dot", "positive"), False, "i32"),
    ChainCase("neg-i32-max", _unary("neg", "reduce_max"), False, "i32"),
    ChainCase("max-of-sums", _binary("max", "pending:dot", "pending:dot"), False),
    ChainCase("add-of-maxes", _binary("add", "pending:reduce_max", "pending:reduce_max"), False),
    ChainCase("reduce_sum-of-max", _unary("reduce_sum", "reduce_max", {"axes": (1,)}), False),
    ChainCase("reduce_max-of-sum", _unary("reduce_max", "dot", {"axes": (1,)}), False),
    ChainCase("select-one-branch", _select("dot", both=False), False),
    ChainCase("exp", _unary("exp", "dot"), False),
    ChainCase("convert", _unary("convert", "dot", {"new_dtype": "f32"}), False),
    # allowed, but passing on costs more: a bigger result
    ChainCase("broadcast-bigger", _unary("broadcast_in_dim", "dot", {"shape": (8, 6, 10),
                                                                     "broadcast_dimensions": (1, 2)}), False),
    # the cost model decides: gathering the free operand, or a reshape that must gather a dim
    ChainCase("mul-split-on-pending-axes", _binary("mul", "pending:dot", "on_pending_axes"), None),
]

# (chain, layout) -> the bytes per device of the plan that passed the reduction on. Under these,
# propagation gives the pending producer the output's y on dim 0, which 4 does not divide (6
# rows: padded shards), so the producer gathers its contracted or reduced dim and nothing is
# pending; the new plan must move at most the old plan's bytes.
PRODUCER_GATHERS = {
    (name, "2x4-pending[x]-dims[-,y]->[y,-]"): before
    for name, before in (("neg-sum", 1000), ("neg-max-to-min", 2800), ("neg-min-to-max", 2800), ("add", 1360),
                         ("sub-i32", 1580), ("max-both", 4960), ("expand-squeeze", 1000))
}
