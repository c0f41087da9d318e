"""Shardings over a second mesh of the same devices, rewritten onto the program's first mesh.

Two meshes that order the same devices the same way (row-major) number every device by one flat
index; an axis of either mesh is a run of that index's digits (its stride up to stride x size).
An axis of the second mesh is then the run of (sub-)axes of the first that covers the same
digits, major to minor: ``A=8`` over ``X=4, Y=2`` is ``(X, Y)``. A program using both meshes
(``use_abstract_mesh`` of another shape inside jit, as JAX allows) is so partitioned over one
mesh. Axes that would need sub-axes of the first mesh (``B=2`` over ``X=4``) are not rewritten:
a program's boundary layouts are whole axes, and such a program stays an error.
"""

from __future__ import annotations

from meshjit.ir.sharding import AxisRef, DimSharding, MeshAttr, TensorSharding


def _spans(mesh: MeshAttr) -> dict[str, tuple[int, int]]:
    """Each axis's (stride, stride * size) in the flat row-major device index."""
    spans, stride = {}, 1
    for name, size in reversed(mesh.axes):
        spans[name] = (stride, stride * size)
        stride *= size
    return spans


def _pieces(span: tuple[int, int], target: MeshAttr) -> tuple[AxisRef, ...] | None:
    """The (sub-)axes of ``target`` covering ``span``, major to minor; None when the span
    does not fall on boundaries the target's axes can be split at."""
    low, high = span
    pieces = []
    for name, (axis_low, axis_high) in _spans(target).items():
        start, stop = max(low, axis_low), min(high, axis_high)
        if start >= stop:
            continue
        if start % axis_low or axis_high % stop or stop % start:
            return None
        size = stop // start
        if size == 1:
            continue
        if (start, stop) != (axis_low, axis_high):
            # NOTE: a sub-axis would do here, but a program's boundary shardings are whole axes
            return None
        pieces.append(AxisRef(name))
    covered = 1
    for piece in pieces:
        covered *= piece.resolved_size(target)
    return tuple(reversed(pieces)) if covered == high // low else None


def translated(sharding: TensorSharding, source: MeshAttr, target: MeshAttr, target_name: str) -> TensorSharding | None:
    """``sharding`` (over ``source``) as a sharding over ``target``, or None when the meshes do
    not hold the same devices in the same order or an axis does not split onto the target's."""
    if source.size != target.size or source.devices != target.devices:
        return None
    source_spans = _spans(source)
    mapping: dict[AxisRef, tuple[AxisRef, ...]] = {}

    def axes_of(axes) -> tuple[AxisRef, ...] | None:
        result = []
        for axis in axes:
            if axis.is_sub_axis:
                return None
            if axis not in mapping:
                pieces = _pieces(source_spans[axis.name], target)
                if pieces is None:
                    return None
                mapping[axis] = pieces
            result += mapping[axis]
        return tuple(result)

    dims = []
    for dim in sharding.dims:
        axes = axes_of(dim.axes)
        if axes is None:
            return None
        dims.append(DimSharding(axes, dim.is_closed, dim.priority))
    replicated, unreduced = axes_of(sharding.replicated), axes_of(sharding.unreduced)
    if replicated is None or unreduced is None:
        return None
    return TensorSharding(target_name, tuple(dims), replicated, unreduced, sharding.reduction)
