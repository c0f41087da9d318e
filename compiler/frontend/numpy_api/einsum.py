"""``einsum``: parsing numpy's subscripts, and contracting labelled operands pairwise (left to
right) with ``dot_general``, ``reduce_sum`` and ``transpose``. ``contract`` is also the engine
of ``matmul``, ``dot`` and ``tensordot`` in ``linalg``.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Hashable, Sequence

from ..precision import check_precision
from . import einsum_forms
from .. import lax_ops as lax
from .. import sharding_ops
from ..operands import dtype_of, shape_of
from ...sharding.sharding_types import resolve_sharding
from .arguments import (
    as_array_argument,
    convert_operand,
    dtype_argument,
    result_dtype,
    with_weak_type,
)

# NOTE: the public names, re-exported by the facade (``meshjit.numpy``, ``meshjit.lax``, ...).
__all__ = (
    "einsum",
)

Labels = Sequence[Hashable]
_LETTERS = set(string.ascii_letters)


def _drop_dims(operand, labels: list, dropped: set[int]):
    """Remove size-1 dims ``dropped`` (broadcast against a larger size) by a reshape."""
    if not dropped:
        return operand, labels
    shape = shape_of(operand)
    kept = [dim for dim in range(len(shape)) if dim not in dropped]
    return lax.reshape(operand, tuple(shape[dim] for dim in kept)), [labels[dim] for dim in kept]


def _sum_out(operand, labels: list, needed: set):
    """Sum away the dims whose labels nothing later needs."""
    summed = tuple(dim for dim, label in enumerate(labels) if label not in needed)
    if not summed:
        return operand, labels
    return lax.reduce_sum(operand, summed), [label for label in labels if label in needed]


def _broadcast_ones(lhs, lhs_labels, rhs, rhs_labels, function: str):
    """Labels shared with sizes 1 and n: drop the size-1 dim (numpy broadcasting)."""
    lhs_labels, rhs_labels = list(lhs_labels), list(rhs_labels)
    lhs_shape, rhs_shape = shape_of(lhs), shape_of(rhs)
    lhs_dropped, rhs_dropped = set(), set()
    for lhs_dim, label in enumerate(lhs_labels):
        if label not in rhs_labels:
            continue
        rhs_dim = rhs_labels.index(label)
        left, right = lhs_shape[lhs_dim], rhs_shape[rhs_dim]
        if left == right:
            continue
        if left != 1 and right != 1:
            raise ValueError(
                f"{function}: dimension {label!r} has size {left} in one operand and "
                f"{right} in the other (shapes {lhs_shape} and {rhs_shape})"
            )
        if left == 1:
            lhs_dropped.add(lhs_dim)
        else:
            rhs_dropped.add(rhs_dim)
    lhs, lhs_labels = _drop_dims(lhs, lhs_labels, lhs_dropped)
    rhs, rhs_labels = _drop_dims(rhs, rhs_labels, rhs_dropped)
    return lhs, lhs_labels, rhs, rhs_labels


def _contract_unordered(lhs, lhs_labels, rhs, rhs_labels, needed: set, function: str, preferred,
                        out_axes: dict | None = None):
    """The product of two operands summed over the labels not ``needed``, in dot_general's
    natural order (batch, lhs free, rhs free); returns the result and its labels. ``out_axes``
    (label -> mesh axes, with the ShardingType it came from under ``None``) gives the product's
    sharding type."""
    lhs, lhs_labels, rhs, rhs_labels = _broadcast_ones(lhs, lhs_labels, rhs, rhs_labels, function)
    lhs, lhs_labels = _sum_out(lhs, lhs_labels, needed | set(rhs_labels))
    rhs, rhs_labels = _sum_out(rhs, rhs_labels, needed | set(lhs_labels))
    shared = [label for label in lhs_labels if label in rhs_labels]
    batch = [label for label in shared if label in needed]
    contracting = [label for label in shared if label not in needed]
    dimension_numbers = (
        (
            tuple(lhs_labels.index(label) for label in contracting),
            tuple(rhs_labels.index(label) for label in contracting),
        ),
        (
            tuple(lhs_labels.index(label) for label in batch),
            tuple(rhs_labels.index(label) for label in batch),
        ),
    )
    result_labels = batch + [label for label in lhs_labels if label not in shared]
    result_labels += [label for label in rhs_labels if label not in shared]
    out_sharding = None
    if out_axes is not None:
        out_sharding = out_axes[None].with_dims([out_axes[label] for label in result_labels])
    result = lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=preferred, out_sharding=out_sharding)
    return result, result_labels


def labelled_axes(out_sharding, out_labels: Labels, function: str) -> dict | None:
    """A user's out_sharding for a result with dims ``out_labels``, as label -> mesh axes (the
    ShardingType under ``None``), or None."""
    sharding = resolve_sharding(out_sharding, len(out_labels), function)
    if sharding is None:
        return None
    axes: dict = dict(zip(out_labels, sharding.dims))
    axes[None] = sharding
    return axes


def contract(
    lhs,
    lhs_labels: Labels,
    rhs,
    rhs_labels: Labels,
    out_labels: Labels,
    function: str = "einsum",
    preferred_element_type=None,
    out_sharding=None,
):
    """The product of two operands of one dtype, summed over the labels not in ``out_labels``,
    with dims ordered as ``out_labels`` (every label there must come from an operand) and laid
    out as ``out_sharding`` when given."""
    result, labels = _contract_unordered(
        lhs, lhs_labels, rhs, rhs_labels, set(out_labels), function, preferred_element_type,
        labelled_axes(out_sharding, out_labels, "dot_general"),
    )
    return _arrange(result, labels, out_labels)


def _arrange(operand, labels: list, out_labels: Labels):
    """Transpose ``operand`` (dims named by ``labels``) into ``out_labels`` order."""
    permutation = tuple(labels.index(label) for label in out_labels)
    if permutation == tuple(range(len(labels))):
        return operand
    return lax.transpose(operand, permutation)


# -- subscripts -----------------------------------------------------------------------------------
def _parse_term(term: str, rank: int | None, subscripts: str) -> list:
    """A term's labels; an ellipsis stands for the dims no letter names, labelled ("...", i)
    counted from the right so that ellipsis dims of different operands align as in numpy."""
    if term.count("...") > 1 or "." in term.replace("...", ""):
        raise ValueError(
            f"einsum: subscripts {subscripts!r}: term {term!r} has a malformed ellipsis"
        )
    bad = [char for char in term.replace("...", "") if char not in _LETTERS]
    if bad:
        raise ValueError(
            f"einsum: subscripts {subscripts!r}: invalid character {bad[0]!r} in term {term!r}"
        )
    before, has_ellipsis, after = term.partition("...")
    if rank is None:
        return list(before) + ([("...",)] if has_ellipsis else []) + list(after)
    letters = len(before) + len(after)
    if rank < letters or (rank != letters and not has_ellipsis):
        raise ValueError(
            f"einsum: subscripts {subscripts!r}: term {term!r} names {letters} dims "
            f"but its operand has {rank}"
        )
    ellipsis = [("...", index) for index in range(rank - letters, 0, -1)] if has_ellipsis else []
    return list(before) + ellipsis + list(after)


def _output_labels(output: str | None, inputs: list[list], subscripts: str) -> list:
    ellipsis = sorted(
        {label for labels in inputs for label in labels if isinstance(label, tuple)},
        key=lambda label: -label[1],
    )
    if output is None:
        counts = Counter(label for labels in inputs for label in labels if isinstance(label, str))
        return ellipsis + sorted(label for label, count in counts.items() if count == 1)
    parsed = _parse_term(output, None, subscripts)
    if len(set(map(str, parsed))) != len(parsed):
        raise ValueError(f"einsum: subscripts {subscripts!r}: output {output!r} repeats a label")
    known = {label for labels in inputs for label in labels}
    for label in parsed:
        if isinstance(label, str) and label not in known:
            raise ValueError(
                f"einsum: subscripts {subscripts!r}: output label {label!r} appears in no input"
            )
    result = []
    for label in parsed:
        result.extend(ellipsis if isinstance(label, tuple) else [label])
    return result


def parse_subscripts(subscripts: str, shapes) -> tuple[list[list], list]:
    """The labels of every operand and of the output, from numpy's subscripts string."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    text = subscripts.replace(" ", "")
    if text.count("->") > 1:
        raise ValueError(f"einsum: subscripts {subscripts!r} have more than one '->'")
    inputs_text, arrow, output = text.partition("->")
    terms = inputs_text.split(",")
    if len(terms) != len(shapes):
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(terms)} operands, "
            f"but {len(shapes)} were given"
        )
    inputs = [_parse_term(term, len(shape), subscripts) for term, shape in zip(terms, shapes)]
    for term, labels in zip(terms, inputs):
        repeated = [label for label, count in Counter(labels).items() if count > 1]
        if repeated:
            raise ValueError(
                f"einsum: subscripts {subscripts!r}: label {repeated[0]!r} repeats within "
                f"term {term!r}; traces and diagonals are not supported"
            )
    return inputs, _output_labels(output if arrow else None, inputs, subscripts)


def einsum(subscripts: str, *operands, optimize=None, precision=None, preferred_element_type=None,
           out_sharding=None):
    """numpy's einsum, contracted pairwise from left to right (``optimize`` is accepted and
    ignored), the last product laid out as ``out_sharding`` when given. Repeated labels within
    one operand are its diagonal (a trace when summed); the interleaved form
    ``einsum(x, [0, 1], y, [1, 2])`` is accepted (einsum_forms.py)."""
    check_precision(precision)
    if not isinstance(subscripts, str):
        subscripts, operands = einsum_forms.sublist_subscripts(subscripts, operands)
    values = [as_array_argument(operand, "einsum") for operand in operands]
    subscripts, values = einsum_forms.take_diagonals(subscripts, values)
    if not values:
        raise ValueError("einsum: needs at least one operand")
    inputs, output = parse_subscripts(subscripts, [shape_of(value) for value in values])
    dtype = result_dtype(*values)
    # dot_general has no bool form: contract bools as ints, then compare with zero.
    compute = "i32" if dtype.name == "bool" else dtype.name
    preferred = (
        dtype_argument(preferred_element_type, "einsum")
        if preferred_element_type is not None
        else None
    )
    result = convert_operand(values[0], compute)
    labels = inputs[0]
    out_axes = labelled_axes(out_sharding, output, "einsum")
    for index in range(1, len(values)):
        # Intermediates stay in dot_general's order; one transpose at the end gives the output's.
        later = {label for term in inputs[index + 1 :] for label in term} | set(output)
        operand = convert_operand(values[index], compute)
        last = index == len(values) - 1
        result, labels = _contract_unordered(
            result, labels, operand, inputs[index], later, "einsum", preferred, out_axes if last else None
        )
    result, labels = _sum_out(result, list(labels), set(output))
    result = _arrange(result, labels, output)
    if out_axes is not None and len(values) == 1:
        result = sharding_ops.reshard_to(result, out_axes[None])
    if dtype.name == "bool":
        return lax.ne(result, 0)
    return with_weak_type(result, dtype.weak and dtype_of(result).name == dtype.name)
