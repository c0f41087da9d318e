"""Rewrites that bring numpy's other einsum forms to the plain subscripts string
``einsum`` contracts: the interleaved form ``einsum(x, [0, 1], y, [1, 2], [0, 2])`` and
repeated labels within one operand (``"ii->i"`` a diagonal, ``"ii"`` a trace), taken as
diagonals first."""

from __future__ import annotations

import string
from collections import Counter

from ..operands import shape_of

_LETTERS = string.ascii_letters


def _term(sublist, function: str) -> str:
    text = []
    for label in sublist:
        if label is Ellipsis:
            text.append("...")
        elif isinstance(label, int) and not isinstance(label, bool) and 0 <= label < len(_LETTERS):
            text.append(_LETTERS[label])
        else:
            raise TypeError(f"{function}: a sublist holds ints in [0, 52) and Ellipsis, got {label!r}")
    return "".join(text)


def sublist_subscripts(first, rest: tuple):
    """``(subscripts, operands)`` of the interleaved form ``op0, sublist0, op1, sublist1, ...
    [, output_sublist]``."""
    items = (first, *rest)
    operands, terms = list(items[0::2][: len(items) // 2]), [_term(s, "einsum") for s in items[1::2]]
    output = "->" + _term(items[-1], "einsum") if len(items) % 2 else ""
    return ",".join(terms) + output, operands


def _labels(term: str, rank: int) -> list:
    """The term's label per dim, ellipsis dims as ``None``."""
    before, dots, after = term.partition("...")
    return list(before) + [None] * (rank - len(before) - len(after)) * bool(dots) + list(after)


def _text(labels: list) -> str:
    text, in_ellipsis = [], False
    for label in labels:
        if label is None and not in_ellipsis:
            text.append("...")
        elif label is not None:
            text.append(label)
        in_ellipsis = label is None
    return "".join(text)


def take_diagonals(subscripts: str, operands: list):
    """``(subscripts, operands)`` with no label repeated within a term: each repeat becomes
    the operand's diagonal over those dims (the implicit output, which sums repeated labels
    away, is made explicit first)."""
    from .diagonals import diagonal

    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands) or all(len(set(t.replace(".", ""))) == len(t.replace(".", "")) for t in terms):
        return subscripts, operands
    if not arrow:
        counts = Counter(char for char in inputs if char in _LETTERS)
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    operands = list(operands)
    for index, term in enumerate(terms):
        labels = _labels(term, len(shape_of(operands[index])))
        while repeated := [label for label, n in Counter(labels).items() if label is not None and n > 1]:
            first = labels.index(repeated[0])
            second = labels.index(repeated[0], first + 1)
            operands[index] = diagonal(operands[index], axis1=first, axis2=second)
            labels = [label for position, label in enumerate(labels) if position not in (first, second)]
            labels.append(repeated[0])
        terms[index] = _text(labels)
    return ",".join(terms) + "->" + output, operands
