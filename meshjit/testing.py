"""meshjit.testing: pin the communication of your own programs in your tests.

``assert_collectives(fn, *args, expect=[...], max_bytes=..., forbid=[...])`` compiles ``fn`` for
``args`` and checks the collectives of its per-device program; a failure lists every actual
collective with the reason it exists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from meshjit.compiler.analysis.collectives import COLLECTIVES, CollectiveRecord

__all__ = ["assert_collectives"]


def _check_kind(kind, argument: str) -> str:
    if kind not in COLLECTIVES:
        raise ValueError(f"assert_collectives {argument}: {kind!r} is not a collective; "
                         f"expected one of {', '.join(COLLECTIVES)}")
    return kind


def _normalise_expectation(entry, position: int):
    """A kind, or a (kind, axes) pair with axes as a tuple of mesh axis names."""
    if isinstance(entry, str):
        return _check_kind(entry, f"expect[{position}]")
    if isinstance(entry, tuple) and len(entry) == 2:
        kind, axes = entry
        axes = (axes,) if isinstance(axes, str) else tuple(axes)
        return _check_kind(kind, f"expect[{position}]"), axes
    raise TypeError(f"assert_collectives expect[{position}] must be a collective kind such as 'all_reduce' "
                    f"or a (kind, axes) pair such as ('all_gather', 'x'), got {entry!r}")


def _expected_entries(expect) -> list:
    """``expect`` as a flat list of normalised entries (a mapping gives each entry its count)."""
    if isinstance(expect, Mapping):
        items = [entry for entry, count in expect.items() for _ in range(count)]
    else:
        items = [expect] if isinstance(expect, str) else list(expect)
    return [_normalise_expectation(entry, position) for position, entry in enumerate(items)]


def _expectation_problems(records: list[CollectiveRecord], expected: list) -> list[str]:
    """Per kind the counts must match; each (kind, axes) pair must be there as often as asked."""
    problems = []
    actual_kinds = Counter(record.kind for record in records)
    expected_kinds = Counter(entry if isinstance(entry, str) else entry[0] for entry in expected)
    for kind in sorted(set(actual_kinds) | set(expected_kinds)):
        if actual_kinds[kind] != expected_kinds[kind]:
            problems.append(f"expected {expected_kinds[kind]} {kind}, found {actual_kinds[kind]}")
    actual_pairs = Counter((record.kind, record.axes) for record in records)
    for pair, count in sorted(Counter(entry for entry in expected if isinstance(entry, tuple)).items()):
        if actual_pairs[pair] < count:
            problems.append(f"expected {count} {pair[0]} over {','.join(pair[1])}, found {actual_pairs[pair]}")
    return problems


def _failure_message(name: str, problems: list[str], records: list[CollectiveRecord]) -> str:
    total = sum(record.total_bytes for record in records)
    lines = [f"collectives of {name} do not match:"] + [f"  - {problem}" for problem in problems]
    lines.append(f"actual collectives ({len(records)}, {total} bytes per device in total):")
    lines += [f"  {index}. {record}" for index, record in enumerate(records)] or ["  (none)"]
    return "\n".join(lines)


def _compiled_collectives(fn, args) -> list[CollectiveRecord]:
    from .jit_api import Jitted

    jitted = fn if isinstance(fn, Jitted) else Jitted(fn)
    return jitted.lower(*args).compile().collectives()


def assert_collectives(fn, *args, expect=None, max_bytes: int | None = None,
                       forbid: Iterable[str] = ()) -> list[CollectiveRecord]:
    """Compile ``fn`` (jitted, or a plain function jitted here) for ``args`` and check its
    collectives; returns them.

    ``expect``: a list or Counter of kinds (``"all_reduce"``) or ``(kind, axes)`` pairs
    (``("all_gather", "x")``): the count of every kind must match exactly, and each pair must
    occur as often as listed. ``max_bytes``: the most bytes per device all collectives may send.
    ``forbid``: kinds that must not occur. Raises AssertionError listing the actual collectives
    with their reasons.
    """
    forbidden = [_check_kind(kind, "forbid") for kind in ([forbid] if isinstance(forbid, str) else forbid)]
    expected = None if expect is None else _expected_entries(expect)
    records = _compiled_collectives(fn, args)
    problems = [] if expected is None else _expectation_problems(records, expected)
    for kind in forbidden:
        count = sum(record.kind == kind for record in records)
        if count:
            problems.append(f"{kind} is forbidden, found {count}")
    total = sum(record.total_bytes for record in records)
    if max_bytes is not None and total > max_bytes:
        problems.append(f"{total} bytes per device exceed max_bytes={max_bytes}")
    if problems:
        raise AssertionError(_failure_message(getattr(fn, "__name__", "the function"), problems, records))
    return records
