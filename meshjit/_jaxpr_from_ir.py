"""meshjit's traced program (an IR function, docs/ir.md) as JAX's jaxpr objects (``_jaxpr``).

Most IR ops are JAX's primitives under the same name and parameters; the others map to JAX's
spelling here (``_jaxpr_params``). Scalar constants become literals, other constants constvars.
Two IR forms JAX does not write are folded away: the broadcast of a scalar constant that only
elementwise ops use (JAX's elementwise primitives take the scalar literal itself) and a
broadcast to the operand's own shape. Where meshjit traces differently from JAX (a nested
``jit`` is inlined, ``jnp.where`` and ``jnp.clip`` are not calls) the jaxpr shows meshjit's
program in JAX's notation.
"""

from __future__ import annotations

from meshjit.ir import Block, Func, Op, Value
from meshjit.ir.dtypes import to_numpy

from ._jaxpr import ClosedJaxpr, DropVar, Jaxpr, JaxprEqn, Literal, ShapedArray, Var
from ._jaxpr_params import jax_equation
from ._jaxpr_shard_map import collective_equation, pvary_casts, shard_map_body

# NOTE: the ops whose scalar operands JAX passes unbroadcast (its rank-polymorphic literals)
_TAKES_SCALARS = frozenset({"add", "sub", "mul", "div", "max", "min", "pow", "atan2", "rem", "and", "or",
                            "xor", "compare", "clamp", "nextafter"})


def aval_of(value: Value, weak_type: bool = False, sharding=None) -> ShapedArray:
    return ShapedArray(value.type.shape, to_numpy(value.type.dtype), weak_type, sharding)


def closed_jaxpr(func: Func, weak_types=(), types=None) -> ClosedJaxpr:
    """The ClosedJaxpr of ``func``: its non-scalar constants are the constvars and ``consts``.
    ``types``: the traced values' sharding types by value id (printed in the variables' types)."""
    builder = _Builder(types or {})
    weak = tuple(weak_types) + (False,) * len(func.body.args)
    invars = [builder.define(arg, weak[index]) for index, arg in enumerate(func.body.args)]
    eqns = builder.block_eqns(func.body)
    outvars = [builder.atom(value) for value in func.body.returns]
    return ClosedJaxpr(Jaxpr(builder.constvars, invars, outvars, eqns), builder.consts)


class _Builder:
    def __init__(self, types: dict):
        self.atoms: dict[int, Var | Literal] = {}
        self.constvars: list[Var] = []
        self.consts: list = []
        self.types = types
        # NOTE: inside a shard_map body with check_vma, JAX's pvary casts before ops mixing axes
        self.check_vma = False
        self.in_body = False

    def define(self, value: Value, weak_type: bool = False) -> Var:
        var = self.atoms[value.id] = Var(aval_of(value, weak_type, self.types.get(value.id)))
        return var

    def atom(self, value: Value):
        return self.atoms[value.id]

    def sub_jaxpr(self, block: Block) -> Jaxpr:
        invars = [self.define(arg) for arg in block.args]
        eqns = self.block_eqns(block)
        return Jaxpr((), invars, [self.atom(value) for value in block.returns], eqns)

    def block_eqns(self, block: Block) -> list[JaxprEqn]:
        used = _used_ids(block)
        eqns = []
        for op in block.ops:
            if self._folded(op, used):
                continue
            invars = [self.atom(operand) for operand in op.operands]
            if self.check_vma:
                invars = pvary_casts(op, invars, self.types, eqns)
            if op.name == "manual_computation":
                regions, params = shard_map_body(self, op)
            else:
                regions, params = [self.sub_jaxpr(region) for region in op.regions], None
            # NOTE: a result already in atoms is a broadcast's, given its rank-promoted shape
            outvars = [self.atoms.get(result.id) or self.define(result) if result.id in used
                       else DropVar(aval_of(result)) for result in op.results]
            collective = collective_equation(op, invars, self.types, self.check_vma) if self.in_body else None
            if params is not None:
                name, invars, params = "shard_map", invars, params
            else:
                name, invars, params = collective or jax_equation(op, invars, regions)
            eqns.append(JaxprEqn(name, invars, outvars, params))
        return eqns

    def _folded(self, op: Op, used) -> bool:
        """Whether ``op`` is written without an equation: a constant (a literal or a constvar)
        or a broadcast JAX does not write; its result's atom is recorded instead."""
        if op.name == "constant":
            array = op.attrs["value"].array
            if array.ndim == 0:
                self.atoms[op.result.id] = Literal(array[()], aval_of(op.result))
            else:
                self.constvars.append(self.define(op.result))
                self.consts.append(array)
            return True
        if op.name == "broadcast_in_dim":
            users = used.get(op.result.id, set())
            return self._broadcast_folded(op, bool(users) and users <= _TAKES_SCALARS)
        return False

    def _broadcast_folded(self, op: Op, only_elementwise: bool) -> bool:
        """A broadcast to the operand's own shape is the operand; one that only elementwise ops
        use is, as in JAX, the scalar itself or a broadcast to the rank only (sizes 1)."""
        (operand,), result = op.operands, op.result
        if operand.type.shape == result.type.shape:
            self.atoms[result.id] = self.atoms[operand.id]
            return True
        if not only_elementwise:
            return False
        promoted = _rank_promoted(op)
        if not operand.type.shape or promoted == operand.type.shape:
            self.atoms[result.id] = self.atoms[operand.id]
            return True
        self.atoms[result.id] = Var(ShapedArray(promoted, to_numpy(result.type.dtype)))
        return False


def _rank_promoted(op: Op) -> tuple[int, ...]:
    """The shape JAX broadcasts an operand to before an elementwise op: the result's rank, size
    1 in the new dimensions (the elementwise op broadcasts those)."""
    (operand,), dimensions = op.operands, tuple(op.attrs["broadcast_dimensions"])
    return tuple(operand.type.shape[dimensions.index(axis)] if axis in dimensions else 1
                 for axis in range(op.result.type.rank))


def _used_ids(block: Block) -> dict[int, set]:
    """The values ``block`` uses (in its ops, nested regions and returns): the op names using
    each, with ``"return"`` for a returned value."""
    used: dict[int, set] = {}
    for op in block.walk():
        for operand in op.operands:
            used.setdefault(operand.id, set()).add(op.name)
        for region in op.regions:
            for value in region.returns:
                used.setdefault(value.id, set()).add("return")
    for value in block.returns:
        used.setdefault(value.id, set()).add("return")
    return used
