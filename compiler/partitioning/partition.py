"""SPMD partitioning: the propagated global program becomes one per-device program.

Each op chooses, per factor of its sharding rule, the mesh axes it is computed over: the
result's axes for factors the result has, and for reduction factors the operands' axes when
computing partial results is cheaper than gathering the operands (factor_choice.py). Operands
are resharded to what that needs (reshard.py), the padding of unevenly sharded reduced dims is
masked with the reduction's identity, the op runs on local shards, and its result keeps whatever
layout it came out in. Partial results stay unreduced until a consumer needs them: an op the
partial-sum algebra allows (partial_sums.py) runs on the partial terms when that costs no more.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, replace

from meshjit.ir import Block, DimSharding, Func, Module, Op, SymbolRef, TensorSharding, Value
from meshjit.ir.config import config

from .factor_choice import Decision, FactorChooser
from ..sharding.factor_rules import FactorRule
from ..sharding.partial_sums import PassThrough, pass_through
from .reshard import reshard
from ..tables import local_attr_rules, partition_rules
from ..tables import partial_reduction, rule_of
from .spmd_builder import Local, SpmdBuilder, describe, local_type, reduction_identity, replicated


class FullRematerializationError(ValueError):
    """A reshard would gather a whole dim and split it again, and ``full_remat`` is "error"."""


class FullRematerializationWarning(UserWarning):
    """A reshard gathered a dim whole only to split it again over other axes (GSPMD's
    "involuntary full rematerialization"); turn it into an error with
    ``warnings.simplefilter("error", FullRematerializationWarning)``."""




class _Partitioner:
    def __init__(self, module: Module, poison_padding: bool):
        self.module = module
        self.func = module.main
        self.mesh_name = self._mesh_name()
        self.mesh = module.mesh(self.mesh_name)
        self.builder = SpmdBuilder(self.mesh_name, self.mesh, poison_padding=poison_padding)
        self.chooser = FactorChooser(self.mesh_name, self.mesh)
        self.locals: dict[int, Local] = {}
        self.consumers = _consumers(self.func)
        # NOTE: the global op that defines each value, for rules that look through an operand
        self.producers = {result.id: op for op in self.func.body.ops for result in op.results}

    @property
    def decisions(self) -> list[Decision]:
        return self.chooser.decisions

    def _mesh_name(self) -> str:
        names = {s.mesh_name for s in self.func.arg_shardings if s is not None}
        names |= {s.mesh_name for op in self.func.body.ops for s in op.shardings if s is not None}
        if len(names) != 1:
            raise ValueError(f"partition needs a program sharded over exactly one mesh, found {sorted(names)}")
        return names.pop()

    def sharding_of(self, value: Value, given: TensorSharding | None) -> TensorSharding:
        return given if given is not None else replicated(self.mesh_name, value.type.rank)

    def result_shardings(self, op: Op) -> list[TensorSharding]:
        """The layouts propagation chose for ``op``'s results, closed; pending reductions only
        where the sharding asks for them (explicit mode's unreduced axes: the sum waits)."""
        return [_closed(self.sharding_of(result, op.sharding_of(index))) for index, result in enumerate(op.results)]

    # -- emitting one op --------------------------------------------------------------------
    def partition_generic(self, op: Op, strategy=None) -> list[Local]:
        """Reshard the operands to the chosen strategy (the cost model's, unless a partition
        rule gives one) and run the op on local shards."""
        rule = rule_of(op)
        operands = [self.locals[value.id] for value in op.operands]
        if strategy is None:
            strategy = self.chooser.choose(op, rule, operands, self.result_shardings(op), self._passing(op, operands))
        targets = self.chooser.operand_targets(rule, operands, strategy)
        resharded = [reshard(self.builder, local, target, describe(op, index))
                     for index, (local, target) in enumerate(zip(operands, targets))]
        resharded = self._mask_partial_padding(op, rule, strategy.factor_axes, resharded)
        result_shardings = self.chooser.result_targets(op, rule, strategy)
        local_shapes = [s.local_shape(r.type.shape, self.mesh) for s, r in zip(result_shardings, op.results)]
        values = self.builder.emit(op.name, [local.value for local in resharded], local_attr_rules[op.name](op, local_shapes),
                                   location=op.location)
        return [Local(value, sharding, result.type.shape)
                for value, sharding, result in zip(values, result_shardings, op.results)]

    def _passing(self, op: Op, operands: list[Local]) -> PassThrough | None:
        """The pending reduction ``op`` may pass on (partial_sums.py), if any."""
        single_use = [self.consumers[value.id] == 1 for value in op.operands]
        return pass_through(op, [local.sharding for local in operands], single_use)

    def _mask_partial_padding(self, op: Op, rule: FactorRule, factor_axes, operands: list[Local],
                              builder: SpmdBuilder | None = None) -> list[Local]:
        """Uneven shards of a reduced dim carry padding: fill it with the reduction's identity
        (on both operands of a dot, since padding times zero need not be zero)."""
        builder = builder or self.builder
        reduction = partial_reduction(op)
        if reduction is None:
            return operands
        masked = []
        for local, dims in zip(operands, rule.operands):
            value = local.value
            fill = reduction_identity(reduction, value.type.dtype)
            for dim, factors in enumerate(dims):
                if any(rule.kinds[factor] == "reduction" and factor_axes[factor] for factor in factors):
                    axes = local.sharding.dims[dim].axes
                    value = builder.mask_padding(value, dim, local.global_shape[dim], axes, fill)
            masked.append(Local(value, local.sharding, local.global_shape))
        return masked

    # -- driver -----------------------------------------------------------------------------
    def run(self) -> Module:
        func = self.func
        args = []
        for arg, sharding in zip(func.args, func.arg_shardings):
            sharding = self.sharding_of(arg, sharding)
            local_value = Value.fresh(local_type(arg.type, sharding, self.mesh), arg.hint)
            self.locals[arg.id] = Local(local_value, _closed(sharding), arg.type.shape)
            args.append(local_value)
        for op in func.body.ops:
            results = partition_rules[op.name](self, op)
            for value, local in zip(op.results, results):
                self.locals[value.id] = local
        returns = []
        result_shardings = []
        for index, (value, sharding) in enumerate(zip(func.returns, func.result_shardings)):
            target = _closed(self.sharding_of(value, sharding))
            local = reshard(self.builder, self.locals[value.id], target, f"output {index}")
            returns.append(local.value)
            result_shardings.append(target)
        attrs = func.attrs.updated(spmd_mesh=SymbolRef(self.mesh_name))
        body = Block(tuple(args), tuple(self.builder.ops), tuple(returns))
        arg_shardings = tuple(_closed(self.sharding_of(arg, sharding))
                              for arg, sharding in zip(func.args, func.arg_shardings))
        new_func = Func(func.name, body, arg_shardings, tuple(result_shardings), attrs)
        return replace(self.module, funcs=(new_func,))


def _consumers(func: Func) -> Counter:
    """How many ops (each counted once) and function and region results use each value."""
    counts = Counter()
    for op in func.body.walk():
        counts.update({operand.id for operand in op.operands})
        for region in op.regions:
            counts.update(value.id for value in region.returns)
    counts.update(value.id for value in func.returns)
    return counts


def _closed(sharding: TensorSharding) -> TensorSharding:
    """Closed dims, pending reductions kept: the layout a boundary value is exchanged in (an
    unreduced argument or result holds partial sums, runtime/unreduced.py)."""
    return TensorSharding(sharding.mesh_name, tuple(DimSharding(dim.axes) for dim in sharding.dims),
                          sharding.replicated, sharding.unreduced, sharding.reduction)


@dataclass
class PartitionResult:
    """The per-device module, why each collective exists, the cost-model decisions, and
    ``value_map``: every global value id of the entry function's body to its per-device form
    (the local value and the layout it is in, pending reductions included)."""

    module: Module
    collective_reasons: dict[int, str]
    decisions: list[Decision]
    value_map: dict[int, Local]


def partition_with_report(module: Module, *, poison_padding: bool = False) -> PartitionResult:
    """Partition ``module`` and report why each collective exists and which strategies won.

    ``poison_padding`` fills the padding of uneven shards with NaN instead of zeros (see
    SpmdBuilder); results are the same, and tests use it to catch padding that leaks.
    """
    partitioner = _Partitioner(module, poison_padding)
    partitioned = partitioner.run()
    for description in partitioner.builder.rematerializations:
        if config.read("full_remat") == "error":
            raise FullRematerializationError(f"involuntary full rematerialization: {description} (set "
                                             f"meshjit.config.update('full_remat', 'warn') to allow it)")
        warnings.warn(f"involuntary full rematerialization: {description}", FullRematerializationWarning,
                      stacklevel=2)
    return PartitionResult(partitioned, partitioner.builder.collective_reasons, partitioner.decisions,
                           dict(partitioner.locals))


def partition(module: Module, *, poison_padding: bool = False) -> Module:
    """The pass: a propagated module becomes its per-device module (``spmd_mesh`` set)."""
    return partition_with_report(module, poison_padding=poison_padding).module
