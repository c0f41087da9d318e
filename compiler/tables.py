"""The compiler's per-op tables, keyed by op name: the bottom layer every stage imports, filled
by the op families in ``compiler/rules/<family>.py`` (which the assembler, compiler/pipeline.py,
imports once; no stage imports ``rules``):

- ``sharding_rules[name](op) -> FactorRule``: the einsum-like factor mapping propagation and
  partitioning read (per-device ops have none: propagation never sees them);
- ``kernel_rules[name](op, lead) -> function``: how the op runs on plan buffers whose ``lead``
  leading dims are the mesh's axes; the named default runs the reference implementation once
  per distinct leading position. The function returns a tuple of outputs; one whose single
  output is a plain call may carry that callable as ``function.single_output``, which the plan
  function then calls directly (runtime/plan_function.py);
- ``batching_rules[name]``: vmap's rule per op (the slot the vmap transformation fills);
- ``sharding_type_rules[name](op, operands, mesh) -> [ShardingType]``: the results' sharding
  types in explicit mode, from the operands' (``meshjit.compiler.sharding.sharding_types``); the
  named default evaluates the op's factor rule on them (``compiler/factor_types.py``).

- autodiff's ``jvp_rules``, ``transpose_rules``, ``partial_eval_rules`` and ``dependence_rules``
  (their shared helpers are in ``compiler/frontend/autodiff/registries.py``);
- ``data_flow_rules[name](op) -> [Tie]``: the data-flow ties propagation follows through an op's
  regions;
- ``kernel_math[name] -> KernelMath``: what Numba codegen needs of an elementwise op besides its
  expression (its exact math helper, whether it is expensive, whether it runs as a kernel alone);
- ``collective_steps`` and ``varying_over_axes``: which per-device collectives lowering turns
  into runtime collective steps, and which make their results vary along their ``axes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from meshjit.ir import Op, Value
from meshjit.ir.ops import COLLECTIVE_OPS
from meshjit.ir.reference import reference_impls
from meshjit.ir.registry import Registry

from .sharding.factor_rules import FactorRule, rule_from_spec
from .sharding.factor_types import operand_type_text, result_dims
from .sharding.sharding_types import ShardingType, ShardingTypeError

sharding_rules = Registry("sharding rule")

# Ops that exist only in per-device programs: propagation never sees them, so no sharding rule.
PER_DEVICE_OPS = frozenset(COLLECTIVE_OPS)

# NOTE: the per-device collectives of a partial-manual shard_map body act on each shard along
# the body's free (automatic) axes; these rules say how, for propagating and partitioning the
# body over those axes (compiler/manual_free_axes.py). Only rule_of reads them.
manual_body_rules = Registry("manual-body sharding rule")


def rule_of(op: Op) -> FactorRule:
    """The op's factor rule: its sharding rule, or for a per-device collective inside a
    partial-manual body, how it acts along the free axes. Rules depend only on the op (its
    shapes and attributes), so the last few thousand are remembered: propagation, the
    partitioner and the automatic sharding search ask for the same op's rule many times."""
    cached = _RULES.get(id(op))
    if cached is not None and cached[0] is op:
        return cached[1]
    if op.name in PER_DEVICE_OPS and op.name in manual_body_rules:
        rule = manual_body_rules[op.name](op)
    else:
        rule = sharding_rules[op.name](op)
    if len(_RULES) >= _RULES_KEPT:
        _RULES.clear()
    _RULES[id(op)] = (op, rule)
    return rule


# NOTE: keyed by id(op), holding the op so that its id is not reused while the entry lives
_RULES: dict[int, tuple[Op, FactorRule]] = {}
_RULES_KEPT = 4096


def factor_rule(op: Op, spec: str, kinds=None, sizes=None) -> FactorRule:
    """The FactorRule of ``op`` from an einsum-like ``spec`` such as ``"i k, k j -> i j"``."""
    operand_shapes = [value.type.shape for value in op.operands]
    result_shapes = [value.type.shape for value in op.results]
    return rule_from_spec(spec, operand_shapes, result_shapes, kinds, sizes)


def per_leading_position(one, lead: int):
    """A kernel over plan buffers whose ``lead`` leading dims are mesh axes: ``one`` (a function
    of the local pieces returning a result or a tuple of them) run once per distinct broadcast
    leading position."""
    def run(*operands):
        shape = (np.broadcast_shapes(*(operand.shape[:lead] for operand in operands))
                 if operands else (1,) * lead)
        outputs = None
        for position in np.ndindex(shape):
            pieces = [operand[tuple(p if size > 1 else 0
                                    for p, size in zip(position, operand.shape[:lead]))]
                      for operand in operands]
            result = one(*pieces)
            results = result if isinstance(result, tuple) else (result,)
            if outputs is None:
                outputs = [np.empty(shape + item.shape, item.dtype) for item in results]
            for output, item in zip(outputs, results):
                output[position] = item
        return tuple(outputs)

    return run


def run_per_leading_position(op: Op, lead: int):
    """The named default kernel: the op's reference implementation per leading position."""
    impl, attrs = reference_impls[op.name], op.attrs
    return per_leading_position(lambda *pieces: impl(attrs, *pieces), lead)


def shifted_axes(axes, lead: int) -> tuple[int, ...]:
    """Local dims ``axes`` as dims of a plan buffer with ``lead`` leading (mesh) dims."""
    return tuple(lead + axis for axis in axes)



kernel_rules = Registry("kernel rule", default=run_per_leading_position)

def partition_by_factors(partitioner, op: Op) -> list:
    """The named default partition rule: reshard the operands to the factor axes the cost model
    picks and run the op unchanged on local shards (``_Partitioner.partition_generic``)."""
    return partitioner.partition_generic(op)


# NOTE: a partition rule takes the partitioner (its ``locals``, ``builder``, ``mesh`` and
# ``partition_generic``) and the global op, and returns the op's results as ``Local`` values.
partition_rules = Registry("partition rule", default=partition_by_factors)

def no_partial_results(op: Op) -> None:
    """The named default: a sharded reduction factor of this op is gathered before it runs."""
    return None


# NOTE: ``partial_result_rules[name](op)`` is the all_reduce reduction ("sum", "max" or "min")
# that combines results the op computed over a sharded reduction factor (a dot's contracting
# dim, a reduce's axes), or None when such a factor must be whole.
partial_result_rules = Registry("partial-result rule", default=no_partial_results)


def partial_reduction(op: Op) -> str | None:
    """How partial results of ``op`` over a sharded reduction factor combine (None: they don't)."""
    return partial_result_rules[op.name](op)


def keep_attrs(op: Op, local_result_shapes) -> dict:
    """The named default: an op's attributes do not depend on its (local) shapes."""
    return dict(op.attrs)


# NOTE: ``local_attr_rules[name](op, local_result_shapes)`` rewrites attributes that spell out
# shapes (broadcast_in_dim's shape, a slice's limits) for the op's per-device form.
local_attr_rules = Registry("local attribute rule", default=keep_attrs)

batching_rules = Registry("batching rule")


def unreduced_not_implemented(op: Op, operands) -> None:
    """JAX's answer for an op without an unreduced rule given an unreduced operand."""
    if any(operand.unreduced for operand in operands):
        raise NotImplementedError(f"unreduced rule for {op.name} is not implemented (as in JAX): reshard "
                                  f"the operand with meshjit.reshard to finish its pending sum first")


def common_reduced(op: Op, operands) -> frozenset[str]:
    """The reduced axes of the result: those of its operands, which must agree; an operand of
    rank > 0 that is merely replicated over them is an error (JAX's nary reduced rule)."""
    reduced = {operand.reduced for operand in operands if operand.reduced}
    if len(reduced) > 1:
        raise ShardingTypeError(f"All inputs should be reduced across the same mesh axes. Got specs: "
                                        f"{reduced}")
    if not reduced:
        return frozenset()
    (axes,) = reduced
    for index, operand in enumerate(operands):
        if operand.rank and not operand.reduced and not (set(operand.used_axes) & axes):
            raise ShardingTypeError(
                f"Inputs cannot be replicated on the same axes that another input is reduced on. Got input type: "
                f"{operand_type_text(op, index, operand)} and reduced spec: {axes}")
    return axes


def factor_result_dims(op: Op, operands, mesh) -> list:
    """Each result's dims: the op's factor rule evaluated on its operands' dims."""
    rule = sharding_rules[op.name](op)
    return result_dims(rule, [operand.dims for operand in operands], [value.type.shape for value in op.operands],
                       [value.type.shape for value in op.results], mesh, op.name)


def typed(mesh, dims_list, unreduced=frozenset(), reduced=frozenset()) -> list:
    return [ShardingType(mesh, tuple(dims), frozenset(unreduced), frozenset(reduced)) for dims in dims_list]


def factor_sharding_types(op: Op, operands, mesh) -> list:
    """The named default: the op's factor rule evaluated on its operands' sharding types; no
    operand may be unreduced, and the reduced axes of the operands carry over."""
    unreduced_not_implemented(op, operands)
    if op.name not in sharding_rules:
        # NOTE: per-device ops (a shard_map body's collectives) have no factor rule
        return typed(mesh, [((),) * result.type.rank for result in op.results])
    return typed(mesh, factor_result_dims(op, operands, mesh), reduced=common_reduced(op, operands))


sharding_type_rules = Registry("sharding type rule", default=factor_sharding_types)


# -- autodiff ----------------------------------------------------------------------------------
# ``jvp_rules[name](op, primals, tangents) -> (outputs, output_tangents)``: emit ``op`` on the
# primal values and the tangents of its results; a tangent of ``None`` is a symbolic zero.
# ``transpose_rules[name](op, cotangents, operands) -> operand_cotangents``: for an op linear in
# the operands given as ``LinearInput``, emit their cotangents from the results' (None is zero).
jvp_rules = Registry("JVP rule")
transpose_rules = Registry("transpose rule")

# Ops with regions whose JVP mixes primal and tangent values in one op (scan, while, cond):
# ``partial_eval_rules[name](op, linear) -> (known_op, linear_op)`` splits such an op, given
# which operands are linear, into an op computing its known results (plus the residuals the
# linear part needs) and an op computing its linear results (either may be None); see
# frontend/autodiff/partial_eval.py. ``dependence_rules[name](op, linear) -> flags`` says which
# results depend on the linear operands (the named default: all of them, if any operand is).
partial_eval_rules = Registry("partial evaluation rule")


def any_operand_dependence(op, linear) -> list[bool]:
    """The named default dependence rule: every result depends on every operand."""
    return [any(linear)] * len(op.results)


dependence_rules = Registry("dependence rule", default=any_operand_dependence)

# Ops that exist only inside autodiff's own traces (see ``frontend/autodiff/markers.py``); never
# in a compiled module.
MARKER_OPS = ("stop_gradient", "custom_jvp_call", "custom_vjp_call", "custom_vjp_linear", "checkpoint")

# Ops another transformation records in its traces and rewrites before compiling (vmap's
# collectives over a mapped axis); autodiff re-emits them as they are, through their rules.
TRANSFORMATION_OPS = ("vmap_collective",)


# -- propagation through regions ---------------------------------------------------------------
@dataclass(frozen=True)
class Tie:
    """``outer`` and ``inner`` carry one sharding; ``stacked``: ``outer`` has an extra leading
    loop dim that ``inner`` lacks (a scanned operand and its slice, stacked ys and one y)."""

    outer: Value
    inner: Value
    stacked: bool = False


def no_data_flow(op: Op) -> list[Tie]:
    """The named default: an op without regions ties nothing."""
    return []


data_flow_rules = Registry("data-flow rule", default=no_data_flow)


def data_flow_ties(op: Op) -> list[Tie]:
    """The data-flow ties of ``op`` (Shardy's data-flow edges), from its family's rule."""
    return data_flow_rules[op.name](op)


# -- codegen facts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelMath:
    """What Numba codegen needs of an elementwise op besides its expression. ``helpers``: result
    dtype -> the exact, vectorisable math helper of ``lowering/codegen_math.py``'s prelude that
    computes the op (fused as a call); ``expression``: the op's Numba expression over its
    operands ``{0}, {1}, ...`` for float and signed int results (cast to the result type); ``expensive``: a fused multi-pass reduction stores the
    value once instead of recomputing it per pass; ``alone``: a large lone instance is a kernel
    of its own (numpy's loop for it is scalar and on one thread)."""

    helpers: Mapping[str, str] = field(default_factory=dict)
    expression: str | None = None
    expensive: bool = False
    alone: bool = False


PLAIN_MATH = KernelMath()
kernel_math = Registry("kernel math", default=None)


def math_of(name: str) -> KernelMath:
    """The op's KernelMath, or the named default ``PLAIN_MATH`` (cheap, no helper, fused only)."""
    return kernel_math[name] if name in kernel_math else PLAIN_MATH


# -- collectives ---------------------------------------------------------------------------------
# Per-device collectives lowering emits as runtime collective steps of the same kind, and those
# whose results vary along their ``axes`` (explicit mode's and shard_map's varying axes); the
# collectives family fills both.
collective_steps: set[str] = set()
varying_over_axes: set[str] = set()
