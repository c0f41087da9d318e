"""shard_map's compiler half: tracing a body over per-device values into a ``manual_computation``
op, and the check_vma analysis of which manual mesh axes each body value varies over.

The facade (meshjit/shard_map_api.py) handles pytrees, PartitionSpecs and meshes; here specs
are per-dim tuples of mesh axis names and the mesh is an IR ``MeshAttr``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from meshjit.ir import AxisRef, Block, MeshAttr, Op, TensorSharding, TensorType
from meshjit.ir.abstract_mesh import AbstractMesh
from meshjit.ir.dtypes import from_numpy, to_numpy

from .axis_environment import AxisEnvironment, bound_axes, in_body, innermost_environment
from .op_types import result_varying
from .shard_map_eager import EagerCall, printing_per_device
from ..sharding.sharding_types import ShardingType, format_type, use_abstract_mesh
from .trace import Tracer, bind, current_trace, operand_sharding_type
from .trace_functions import TracedRegion, trace_region

# One entry per tensor dim: the mesh axes that split it, major to minor.
DimAxes = tuple[tuple[str, ...], ...]

# Per-device ops whose result varies over the axes they communicate over (their input may not).


def local_type(global_type: TensorType, dims: DimAxes, mesh: MeshAttr) -> TensorType:
    """The per-device type of a ``global_type`` value split as ``dims`` (sizes must divide)."""
    shape = list(global_type.shape)
    for dim, axes in enumerate(dims):
        for name in axes:
            shape[dim] //= mesh.axis_size(name)
    return global_type.with_shape(shape)


@dataclass
class ManualBody:
    """A traced shard_map body, waiting for its out_specs to become a manual_computation op.

    ``operands`` are the explicit operands then the values the body captured from outside;
    ``in_dims`` has one entry per operand (captured ones replicated).
    """

    region: TracedRegion
    environment: AxisEnvironment
    operands: list
    in_dims: list[DimAxes]
    in_unreduced: list[frozenset[str]]

    @property
    def output_types(self) -> list[TensorType]:
        """The per-device type of each value the body returns."""
        return [value.type for value in self.region.block.returns]

    def varying_axes(self) -> dict[int, frozenset[str]]:
        """For every body value (by id), the manual axes it may differ along."""
        return varying_axes(self.region.block, self.environment.argument_axes, self.environment.invariant_results)

    def check_outputs(self, out_dims: Sequence[DimAxes], out_unreduced: Sequence[frozenset[str]],
                      report: Callable[[list], str]) -> None:
        """check_vma: an output may be replicated only over axes it does not vary along. Every
        output that breaks this is one (index, manual axes its out_spec leaves out, axes it may
        vary along) entry of the list ``report`` turns into the ValueError's message. An output
        unreduced over axes must vary along them (its devices' values are the partials)."""
        varying = self.varying_axes()
        for value, unreduced in zip(self.region.block.returns, out_unreduced):
            if not unreduced <= varying[value.id]:
                raise ValueError(f"vary_unreduced_cast only accepts inputs that are varying. Got {_short(value.type)}")
        failures = []
        for index, (value, dims, unreduced) in enumerate(zip(self.region.block.returns, out_dims, out_unreduced)):
            mentioned = {name for axes in dims for name in axes} | unreduced
            unmentioned = [name for name in self.environment.manual_axes if name not in mentioned]
            if any(name in varying[value.id] for name in unmentioned):
                failures.append((index, unmentioned, varying[value.id]))
        if failures:
            raise ValueError(report(failures))

    def finish(self, out_dims: Sequence[DimAxes], *, check_vma: bool, report: Callable[[list], str],
               out_unreduced: Sequence[frozenset[str]] | None = None) -> list:
        """Bind the manual_computation op in the enclosing trace; its results (global values).
        ``out_unreduced``: per output, the manual axes it stays unreduced over (its per-device
        values are partial sums, JAX's ``P(..., unreduced=...)`` out_specs)."""
        out_unreduced = list(out_unreduced or [frozenset()] * len(out_dims))
        if check_vma:
            self.check_outputs(out_dims, out_unreduced, report)
        if not out_dims:
            return []
        name, mesh = self.environment.mesh_name, self.environment.mesh

        def shardings(all_dims, all_unreduced):
            return tuple(_sharding(name, mesh, dims, unreduced) for dims, unreduced in zip(all_dims, all_unreduced))

        attrs = {"in_shardings": shardings(self.in_dims, self.in_unreduced),
                 "out_shardings": shardings(out_dims, out_unreduced),
                 "manual_axes": self.environment.manual_axes}
        if not check_vma:
            attrs["check_vma"] = False  # NOTE: only for make_jaxpr's text; True when absent
        weak = [bool(getattr(output, "weak_type", False)) for output in self.region.outputs]
        results = bind("manual_computation", self.operands, attrs, regions=(self.region.block,))
        return [Tracer(result.trace, result.value, weak_type) for result, weak_type in zip(results, weak)]


def trace_body(fun: Callable, operands: Sequence, in_dims: Sequence[DimAxes], mesh: MeshAttr,
               manual_axes: tuple[str, ...], *, name: str, check_vma: bool = True,
               abstract_mesh: AbstractMesh | None = None, eager_call: EagerCall | None = None,
               in_unreduced: Sequence[frozenset[str]] | None = None) -> ManualBody:
    """Trace ``fun`` over per-device values of ``operands`` split as ``in_dims`` over the
    ``manual_axes`` of ``mesh``, inside the current trace.

    ``operands`` are Tracers of the current trace, device arrays or numpy arrays; ``fun``
    returns a flat list. Values the body uses from outside become extra operands, replicated.
    ``check_vma`` is the shard_map's flag, which ``pcast`` reads while the body is traced.
    ``abstract_mesh`` (the mesh with its manual axes Manual) is the abstract mesh in context
    inside the body: its values' types vary along the manual axes their in_specs split.
    ``eager_call`` (a shard_map called outside jit) has the operands' values: a body value then
    prints per device. ``in_unreduced``: per operand, the manual axes it is unreduced over (the
    body gets each device's partial; psum over those axes finishes the sum).
    """
    in_unreduced = list(in_unreduced or [frozenset()] * len(operands))
    trace = current_trace()
    if trace is None:
        raise ValueError("shard_map traces its body inside a trace; run it under jit")
    if in_body(innermost_environment(), trace):
        raise ValueError("shard_map inside the body of another shard_map is not supported: give the outer "
                         "shard_map the union of both axis_names instead")
    # NOTE: partials differ between devices, so the vma analysis counts unreduced axes as varying
    argument_axes = tuple(frozenset(name for axes in dims for name in axes) | unreduced
                          for dims, unreduced in zip(in_dims, in_unreduced))
    environment = AxisEnvironment(None, trace.add_mesh(mesh), mesh, tuple(manual_axes),
                                  argument_axes=argument_axes, check_vma=check_vma)
    arg_types = [local_type(_type_of(operand), dims, mesh) for operand, dims in zip(operands, in_dims)]
    weak_types = [bool(getattr(operand, "weak_type", False)) for operand in operands]

    def body(*tracers):
        environment.trace = current_trace()
        with bound_axes(environment), printing_per_device(environment.trace, environment, eager_call, operands,
                                                          in_dims):
            if abstract_mesh is None:
                return fun(*tracers)
            with use_abstract_mesh(abstract_mesh):
                return fun(*tracers)

    sharding_types = None
    if abstract_mesh is not None:
        sharding_types = [_body_type(operand, abstract_mesh, axes - unreduced, unreduced)
                          for operand, axes, unreduced in zip(operands, argument_axes, in_unreduced)]
    region = trace_region(body, arg_types, weak_types, name=name, arg_sharding_types=sharding_types)
    captured_dims = [((),) * len(value.type.shape) for value in region.block.args[len(operands):]]
    return ManualBody(region, environment, list(operands) + region.captured, list(in_dims) + captured_dims,
                      in_unreduced + [frozenset()] * len(captured_dims))


def _sharding(mesh_name: str, mesh: MeshAttr, dims: DimAxes, unreduced: frozenset[str]) -> TensorSharding:
    sharding = TensorSharding.from_axis_names(mesh_name, dims)
    if not unreduced:
        return sharding
    ordered = tuple(AxisRef(axis) for axis in mesh.axis_names if axis in unreduced)
    return TensorSharding(mesh_name, sharding.dims, sharding.replicated, ordered)


def _short(value_type: TensorType) -> str:
    """JAX's short type text: ``f32[4]``."""
    return format_type(value_type.shape, to_numpy(value_type.dtype), None, short=True)


def _body_type(operand, abstract_mesh: AbstractMesh, varying: frozenset[str],
               unreduced: frozenset[str] = frozenset()) -> ShardingType:
    """A body argument's type: the operand's split over the axes still Explicit inside, varying
    along the manual axes its in_spec splits."""
    outer = operand_sharding_type(operand)
    keep = set(abstract_mesh.explicit_axes)
    dims = tuple(tuple(axis for axis in axes if axis in keep) for axes in outer.dims)
    return ShardingType(abstract_mesh, dims, unreduced=frozenset(unreduced), varying=frozenset(varying))


def _type_of(operand) -> TensorType:
    if isinstance(operand, Tracer):
        return operand.value.type
    return TensorType(tuple(operand.shape), from_numpy(operand.dtype))


def varying_axes(block: Block, argument_axes: Sequence[frozenset[str]],
                 invariant_results: set[int] = frozenset()) -> dict[int, frozenset[str]]:
    """The varying-axes analysis (JAX's vma) of a manual body: for each value id, the manual
    axes along which devices may hold different values.

    Arguments vary along the axes their in_spec splits them over; ``axis_index`` along its axis;
    ``all_reduce`` is invariant along the axes it reduces over; ``all_gather``,
    ``reduce_scatter``, ``all_to_all``, ``collective_permute`` and ``pvary`` vary along theirs
    (an ``all_gather`` listed in ``invariant_results`` is invariant there); every other op
    varies along the union of its operands' axes.
    """
    varying = {arg.id: frozenset() for arg in block.args}
    varying.update({arg.id: axes for arg, axes in zip(block.args, argument_axes)})
    for op in block.ops:
        if op.name in _CONTROL_FLOW:
            results, inner = _control_flow_varying(op, [varying[value.id] for value in op.operands],
                                                   invariant_results)
            varying.update(inner)
            varying.update({value.id: axes for value, axes in zip(op.results, results)})
            continue
        operands = [varying[value.id] for value in op.operands]
        result = result_varying(op, operands, invariant=op.results[0].id in invariant_results if op.results else False)
        varying.update({value.id: result for value in op.results})
    return varying


_CONTROL_FLOW = frozenset({"scan", "while", "cond"})


def _control_flow_varying(op: Op, operand_axes: list[frozenset[str]], invariant_results):
    """The axes each result of a scan, while or cond varies along, and the analysis of its
    regions: a loop carry varies along what its initial value and the body make it vary along
    (a fixpoint); a scan's ys along what the body gives them; a cond's results along what any
    branch gives them, and along the index's axes."""
    if op.name == "cond":
        inner = {}
        for branch in op.regions:
            inner.update(varying_axes(branch, operand_axes[1:], invariant_results))
        results = [frozenset(operand_axes[0]).union(*(inner[branch.returns[index].id] for branch in op.regions))
                   for index in range(len(op.results))]
        return results, inner
    num_consts = op.attrs["num_consts"]
    num_carry = op.attrs["num_carry"] if op.name == "scan" else len(op.results)
    body = op.regions[-1]
    consts = list(operand_axes[:num_consts])
    carry = list(operand_axes[num_consts:num_consts + num_carry])
    rest = list(operand_axes[num_consts + num_carry:])
    while True:
        inner = varying_axes(body, consts + carry + rest, invariant_results)
        grown = [axes | inner[value.id] for axes, value in zip(carry, body.returns)]
        if grown == carry:
            break
        carry = grown
    if op.name == "while":
        inner.update(varying_axes(op.regions[0], consts + carry, invariant_results))
    return carry + [inner[value.id] for value in body.returns[num_carry:]], inner
