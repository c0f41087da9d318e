"""Op sharding rules as factor mappings, in Shardy's style.

A rule maps every dim of every operand and result to factors (einsum-like): ``"i k, k j -> i j"``
says a matmul's operands share factor k, which the result lacks. A factor's kind decides how
propagation treats it: ``pass`` flows between all tensors that have it; ``reduction`` flows
between operands only (sharding it leaves the result partial); ``replication`` never takes
propagated axes (the op needs the whole dim); ``permutation`` flows like pass, but sharding it
makes the partitioner move data across shard boundaries (slice, pad, rev, concatenate). A dim
made of several factors (major to minor) is how reshape splits and merges dims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("pass", "reduction", "replication", "permutation")


@dataclass(frozen=True)
class FactorRule:
    """The factor mapping of one op instance (sizes depend on its shapes)."""

    sizes: tuple[int, ...]
    kinds: tuple[str, ...]
    operands: tuple[tuple[tuple[int, ...], ...], ...]
    results: tuple[tuple[tuple[int, ...], ...], ...]

    @property
    def tensors(self) -> tuple[tuple[tuple[int, ...], ...], ...]:
        """Operands then results, the order propagation numbers tensors in."""
        return self.operands + self.results

    def __str__(self) -> str:
        """``i k, k j -> i j  {i=8 j=16 k=32} [k:reduction]``: factors are named in order of
        first appearance, compound dims are parenthesised, pass-through kinds are not listed."""
        order = [factor for dims in self.tensors for factors in dims for factor in factors]
        order = list(dict.fromkeys(order + list(range(len(self.sizes)))))
        names = {factor: _factor_name(position) for position, factor in enumerate(order)}

        def tensor(dims) -> str:
            parts = []
            for factors in dims:
                inner = " ".join(names[factor] for factor in factors)
                parts.append(inner if len(factors) == 1 else f"({inner})")
            return " ".join(parts) if parts else "[]"

        text = ", ".join(tensor(dims) for dims in self.operands) + " -> "
        text += ", ".join(tensor(dims) for dims in self.results)
        sizes = " ".join(f"{names[factor]}={self.sizes[factor]}" for factor in order)
        special = [f"{names[factor]}:{self.kinds[factor]}" for factor in order
                   if self.kinds[factor] != "pass"]
        return f"{text}  {{{sizes}}}" + (f" [{', '.join(special)}]" if special else "")


def _factor_name(index: int) -> str:
    letters = "ijklmnopqrstuvwxyzabcdefgh"
    return letters[index] if index < len(letters) else f"f{index}"


_TOKEN = re.compile(r"\(|\)|[A-Za-z_][A-Za-z_0-9]*|\S")


def _parse_tensor(text: str) -> list[list[str]]:
    """``"i (j k) l"`` -> ``[["i"], ["j", "k"], ["l"]]``; ``"[]"`` or empty is a scalar."""
    text = text.strip()
    if text in ("", "[]"):
        return []
    dims, group = [], None
    for token in _TOKEN.findall(text):
        if token == "(":
            group = []
        elif token == ")":
            dims.append(group)
            group = None
        elif group is not None:
            group.append(token)
        else:
            dims.append([token])
    return dims


def rule_from_spec(spec: str, operand_shapes, result_shapes, kinds: dict[str, str] | None = None,
                   sizes: dict[str, int] | None = None) -> FactorRule:
    """Build a FactorRule from ``"i k, k j -> i j"`` and the op's shapes.

    A factor's size comes from a dim where it stands alone; factors only found in compound dims
    need ``sizes``. Factors not in ``kinds`` are pass-through.
    """
    left, right = spec.split("->")
    operand_specs = [_parse_tensor(part) for part in left.split(",")] if left.strip() else []
    result_specs = [_parse_tensor(part) for part in right.split(",")]
    known = dict(sizes or {})
    names: list[str] = []
    shapes = list(operand_shapes) + list(result_shapes)
    for tensor_spec, shape in zip(operand_specs + result_specs, shapes):
        if len(tensor_spec) != len(shape):
            raise ValueError(f"sharding rule {spec!r}: tensor spec {tensor_spec} does not match "
                             f"shape {shape}")
        for factors, size in zip(tensor_spec, shape):
            for factor in factors:
                if factor not in names:
                    names.append(factor)
            if len(factors) == 1:
                known.setdefault(factors[0], size)
    missing = [name for name in names if name not in known]
    if missing:
        raise ValueError(f"sharding rule {spec!r}: no size for factors {missing}")
    index = {name: position for position, name in enumerate(names)}

    def encode(tensor_spec):
        return tuple(tuple(index[factor] for factor in factors) for factors in tensor_spec)

    return FactorRule(
        sizes=tuple(known[name] for name in names),
        kinds=tuple((kinds or {}).get(name, "pass") for name in names),
        operands=tuple(encode(tensor_spec) for tensor_spec in operand_specs),
        results=tuple(encode(tensor_spec) for tensor_spec in result_specs),
    )


def letters(count: int, start: int = 0) -> list[str]:
    """Factor names for spec strings built in code: ``d0 d1 ...``."""
    return [f"d{index}" for index in range(start, start + count)]


def joined(names) -> str:
    return " ".join(names) if names else "[]"
