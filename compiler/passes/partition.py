"""SPMD partitioning: the propagated global program becomes one per-device program.

Each op chooses, per factor of its sharding rule, the mesh axes it is computed over: the
result's axes for factors the result has, and for reduction factors the operands' axes when
computing partial results is cheaper than gathering the operands (cost.py). Operands are
resharded to what that needs (reshard.py), the op runs on local shards, and its result keeps
whatever layout it came out in (partial results stay unreduced until a consumer needs them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from meshjit.ir import Block, DimSharding, Func, Module, Op, SymbolRef, TensorSharding, Value

from .. import cost
from ..factor_projection import project_dim, unproject_dim
from ..factor_rules import FactorRule
from ..partition_rules import IDENTITY, PARTIAL_REDUCTION, UNEVEN_OK, local_attrs
from ..reshard import reshard
from ..sharding_rules import sharding_rules
from ..spmd_builder import Local, SpmdBuilder, local_type


@dataclass
class Decision:
    """A choice the partitioner made between valid strategies, kept for explain()."""

    op: str
    location: str | None
    chosen: str
    alternatives: dict[str, float] = field(default_factory=dict)


def _replicated(mesh_name: str, rank: int) -> TensorSharding:
    return TensorSharding.replicated_over(mesh_name, rank)


def _describe(op: Op, operand: int | None = None) -> str:
    where = f" at {op.location}" if op.location else ""
    return f"operand {operand} of {op.name}{where}" if operand is not None else f"{op.name}{where}"


class _Partitioner:
    def __init__(self, module: Module):
        self.module = module
        self.func = module.main
        self.mesh_name = self._mesh_name()
        self.mesh = module.mesh(self.mesh_name)
        self.builder = SpmdBuilder(self.mesh_name, self.mesh)
        self.locals: dict[int, Local] = {}
        self.decisions: list[Decision] = []

    def _mesh_name(self) -> str:
        names = {s.mesh_name for s in self.func.arg_shardings if s is not None}
        names |= {s.mesh_name for op in self.func.body.ops for s in op.shardings if s is not None}
        if len(names) != 1:
            raise ValueError(f"partition needs a program sharded over exactly one mesh, found {sorted(names)}")
        return names.pop()

    def sharding_of(self, value: Value, given: TensorSharding | None) -> TensorSharding:
        return given if given is not None else _replicated(self.mesh_name, value.type.rank)

    # -- factor choice ----------------------------------------------------------------------
    def _project(self, sharding: TensorSharding, dims_factors, rule: FactorRule) -> dict[int, list]:
        projected = {}
        for dim, factors in zip(sharding.dims, dims_factors):
            projected.update(project_dim(dim.axes, factors, rule.sizes, self.mesh))
        return projected

    def _consistent(self, factor_axes: dict[int, list], rule: FactorRule) -> dict[int, list]:
        """Shrink factor axes until every tensor can express them on its dims."""
        changed = True
        while changed:
            changed = False
            for dims in rule.tensors:
                for factors in dims:
                    axes = unproject_dim(factor_axes, factors, rule.sizes, self.mesh)
                    back = project_dim(axes, factors, rule.sizes, self.mesh)
                    for factor in factors:
                        if back[factor] != factor_axes.get(factor, []):
                            factor_axes[factor] = back[factor][:len(factor_axes.get(factor, []))]
                            changed = True
        return factor_axes

    def choose_factors(self, op: Op, rule: FactorRule, operand_locals: list[Local]) -> dict[int, list]:
        factor_axes = {factor: [] for factor in range(len(rule.sizes))}
        for index, result in enumerate(op.results):
            target = self.sharding_of(result, op.sharding_of(index))
            for factor, axes in self._project(target, rule.results[index], rule).items():
                if rule.kinds[factor] == "pass" and not factor_axes[factor]:
                    factor_axes[factor] = list(axes)
        if op.name in PARTIAL_REDUCTION:
            self._choose_reduction_axes(op, rule, operand_locals, factor_axes)
        if op.name not in UNEVEN_OK:
            for factor, axes in factor_axes.items():
                if rule.sizes[factor] % math.prod(a.resolved_size(self.mesh) for a in axes):
                    factor_axes[factor] = []
        return self._consistent(factor_axes, rule)

    def _choose_reduction_axes(self, op: Op, rule: FactorRule, operand_locals, factor_axes) -> None:
        used = {axis for axes in factor_axes.values() for axis in axes}
        for factor, kind in enumerate(rule.kinds):
            if kind != "reduction":
                continue
            candidates = []
            for local, dims in zip(operand_locals, rule.operands):
                axes = self._project(local.sharding, dims, rule).get(factor, [])
                candidates.append([axis for axis in axes if axis not in used])
            best = max(candidates, key=len)
            if not best:
                continue
            keep_cost, gather_cost = self._reduction_costs(op, rule, operand_locals, factor, best)
            chosen = "partial results over " + ",".join(a.name for a in best)
            if keep_cost <= gather_cost:
                factor_axes[factor] = list(best)
                used.update(best)
            else:
                chosen = "gather the contracted operands"
            self.decisions.append(Decision(op.name, op.location, chosen, {
                "partial results + all_reduce (bytes/device)": keep_cost,
                "all_gather operands (bytes/device)": gather_cost}))

    def _reduction_costs(self, op, rule, operand_locals, factor, axes) -> tuple[float, float]:
        """Bytes each device sends to keep ``factor`` sharded on ``axes`` (all_reduce of the local
        result) versus to gather every operand sharded on it."""
        count = math.prod(axis.resolved_size(self.mesh) for axis in axes)
        target = self.sharding_of(op.result, op.sharding_of(0))
        local_result = cost.value_bytes(op.result) / math.prod(target.dim_shards(self.mesh))
        keep = cost.all_reduce_bytes(local_result, count)
        gather = 0.0
        for local, dims in zip(operand_locals, rule.operands):
            if self._project(local.sharding, dims, rule).get(factor):
                gather += cost.all_gather_bytes(cost.value_bytes(local.value) * count, count)
        return keep, gather

    # -- emitting one op --------------------------------------------------------------------
    def required_sharding(self, rule: FactorRule, dims_factors, factor_axes) -> TensorSharding:
        dims = tuple(DimSharding(tuple(unproject_dim(factor_axes, factors, rule.sizes, self.mesh)))
                     for factors in dims_factors)
        return TensorSharding(self.mesh_name, dims)

    def partition_generic(self, op: Op) -> list[Local]:
        rule = sharding_rules[op.name](op)
        operands = [self.locals[value.id] for value in op.operands]
        factor_axes = self.choose_factors(op, rule, operands)
        resharded = []
        for index, (local, dims) in enumerate(zip(operands, rule.operands)):
            target = self.required_sharding(rule, dims, factor_axes)
            resharded.append(reshard(self.builder, local, target, _describe(op, index)))
        resharded = self._mask_partial_padding(op, rule, factor_axes, resharded)
        result_shardings = [self.required_sharding(rule, dims, factor_axes) for dims in rule.results]
        unreduced = self._unreduced_axes(op, rule, factor_axes)
        local_shapes = [s.local_shape(r.type.shape, self.mesh) for s, r in zip(result_shardings, op.results)]
        values = self.builder.emit(op.name, [local.value for local in resharded], local_attrs(op, local_shapes),
                                   location=op.location)
        reduction = PARTIAL_REDUCTION.get(op.name, "sum")
        return [Local(value, replace(sharding, unreduced=tuple(unreduced), reduction=reduction), result.type.shape)
                for value, sharding, result in zip(values, result_shardings, op.results)]

    def _unreduced_axes(self, op: Op, rule: FactorRule, factor_axes) -> list:
        if op.name not in PARTIAL_REDUCTION:
            return []
        return [axis for factor, kind in enumerate(rule.kinds) if kind == "reduction" for axis in factor_axes[factor]]

    def _mask_partial_padding(self, op: Op, rule: FactorRule, factor_axes, operands: list[Local]) -> list[Local]:
        """Uneven shards of a reduced dim carry padding: fill it with the reduction's identity."""
        if op.name not in PARTIAL_REDUCTION:
            return operands
        identity = IDENTITY[PARTIAL_REDUCTION[op.name]]
        masked = []
        for position, (local, dims) in enumerate(zip(operands, rule.operands)):
            value = local.value
            if op.name != "dot_general" or position == 0:
                for dim, factors in enumerate(dims):
                    reduced = [f for f in factors if rule.kinds[f] == "reduction" and factor_axes[f]]
                    if reduced:
                        axes = local.sharding.dims[dim].axes
                        value = self.builder.mask_padding(value, dim, local.global_shape[dim], axes, identity)
            masked.append(Local(value, local.sharding, local.global_shape))
        return masked

    def partition_constraint(self, op: Op) -> list[Local]:
        local = self.locals[op.operands[0].id]
        return [reshard(self.builder, local, op.attrs["sharding"], _describe(op))]

    def partition_creation(self, op: Op) -> list[Local]:
        """iota and constant: build the whole value, or this device's shard of it directly."""
        target = self.sharding_of(op.result, op.sharding_of(0))
        if any(target.local_shape(op.result.type.shape, self.mesh)[d] * shards != size
               for d, (size, shards) in enumerate(zip(op.result.type.shape, target.dim_shards(self.mesh)))):
            target = _replicated(self.mesh_name, op.result.type.rank)
        local_shape = target.local_shape(op.result.type.shape, self.mesh)
        if op.name == "iota" and not target.is_fully_replicated():
            return [self._sharded_iota(op, target, local_shape)]
        value = self.builder.emit1(op.name, [], dict(op.attrs), location=op.location)
        whole = Local(value, _replicated(self.mesh_name, op.result.type.rank), op.result.type.shape)
        return [reshard(self.builder, whole, target, _describe(op))]

    def _sharded_iota(self, op: Op, target: TensorSharding, local_shape) -> Local:
        dimension = op.attrs["dimension"]
        value = self.builder.emit1("iota", [], {**op.attrs, "shape": tuple(local_shape)}, location=op.location)
        axes = target.dims[dimension].axes
        if axes:
            offset = self.builder.shard_offset(axes, local_shape[dimension])
            if op.attrs["dtype"] != "i32":
                offset = self.builder.emit1("convert", [offset], {"new_dtype": op.attrs["dtype"]})
            value = self.builder.emit1("add", [value, self.builder.broadcast_scalar(offset, local_shape)])
        return Local(value, target, op.result.type.shape)

    def partition_manual(self, op: Op) -> list[Local]:
        """Inline a manual computation's body; its operands are first laid out as it asks."""
        body = op.regions[0]
        mapping = {}
        for index, (arg, value, sharding) in enumerate(zip(body.args, op.operands, op.attrs["in_shardings"])):
            local = reshard(self.builder, self.locals[value.id], sharding, _describe(op, index))
            mapping[arg.id] = local.value
        for inner in body.ops:
            operands = [mapping[value.id] for value in inner.operands]
            results = self.builder.emit(inner.name, operands, dict(inner.attrs), location=inner.location)
            mapping.update({old.id: new for old, new in zip(inner.results, results)})
        return [Local(mapping[value.id], sharding, result.type.shape)
                for value, sharding, result in zip(body.returns, op.attrs["out_shardings"], op.results)]

    # -- driver -----------------------------------------------------------------------------
    def run(self) -> Module:
        func = self.func
        args = []
        for arg, sharding in zip(func.args, func.arg_shardings):
            sharding = self.sharding_of(arg, sharding)
            local_value = Value.fresh(local_type(arg.type, sharding, self.mesh), arg.hint)
            self.locals[arg.id] = Local(local_value, _clean(sharding), arg.type.shape)
            args.append(local_value)
        handlers = {"sharding_constraint": self.partition_constraint, "iota": self.partition_creation,
                    "constant": self.partition_creation, "manual_computation": self.partition_manual}
        for op in func.body.ops:
            results = handlers.get(op.name, self.partition_generic)(op)
            for value, local in zip(op.results, results):
                self.locals[value.id] = local
        returns = []
        result_shardings = []
        for index, (value, sharding) in enumerate(zip(func.returns, func.result_shardings)):
            target = _clean(self.sharding_of(value, sharding))
            local = reshard(self.builder, self.locals[value.id], target, f"output {index}")
            returns.append(local.value)
            result_shardings.append(target)
        attrs = func.attrs.updated(spmd_mesh=SymbolRef(self.mesh_name))
        body = Block(tuple(args), tuple(self.builder.ops), tuple(returns))
        new_func = Func(func.name, body, tuple(_clean(self.sharding_of(a, s)) for a, s in zip(func.args, func.arg_shardings)),
                        tuple(result_shardings), attrs)
        return replace(self.module, funcs=(new_func,))


def _clean(sharding: TensorSharding) -> TensorSharding:
    """Closed dims, no pending reductions: the layout a boundary value is exchanged in."""
    return TensorSharding(sharding.mesh_name, tuple(DimSharding(dim.axes) for dim in sharding.dims),
                          sharding.replicated)


@dataclass
class PartitionResult:
    module: Module
    collective_reasons: dict[int, str]
    decisions: list[Decision]


def partition_with_report(module: Module) -> PartitionResult:
    partitioner = _Partitioner(module)
    partitioned = partitioner.run()
    return PartitionResult(partitioned, partitioner.builder.collective_reasons, partitioner.decisions)


def partition(module: Module) -> Module:
    """The pass: a propagated module becomes its per-device module (``spmd_mesh`` set)."""
    return partition_with_report(module).module
