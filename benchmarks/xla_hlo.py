"""XLA's collectives read from a compiled module's HLO text (``jit(f).lower(...).compile()
.as_text()``) and counted with meshjit's ring model (compiler/analysis/cost.py: an all-reduce
sends 2 (n-1)/n of its buffer, an all-gather or all-to-all (n-1)/n of its result, a
reduce-scatter (n-1)/n of its operand, a collective-permute its operand), so the bytes compare
with ``Compiled.collectives()``. It imports nothing of meshjit: the scripts that use it
(benchmarks/xla_collectives.py, tools/xla_parity_bytes.py, tools/make_stablehlo_corpus.py) run
under a Python that has JAX.
"""

from __future__ import annotations

import re

import numpy as np

ITEM_BYTES = {"f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u64": 8, "pred": 1, "bf16": 2,
              "f16": 2, "s8": 1, "u8": 1, "s16": 2, "u16": 2}
_SHAPE = re.compile(r"\b(" + "|".join(ITEM_BYTES) + r")\[([\d,]*)\]")
_COLLECTIVE = re.compile(
    r"= (.*?) (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(-start)?\(")


def shape_sizes(text: str) -> list[int]:
    """The bytes of each array type in ``text`` (a result type, maybe a tuple)."""
    return [int(np.prod([int(size) for size in dims.split(",") if size])) * ITEM_BYTES[dtype]
            for dtype, dims in _SHAPE.findall(text)]


def group_size(line: str, devices: int) -> int:
    """How many devices one replica group of the collective on ``line`` holds."""
    iota = re.search(r"replica_groups=\[([\d,]+)\]<=", line)
    if iota:
        return int(iota.group(1).split(",")[-1])
    listed = re.search(r"replica_groups=\{\{([\d,]*)\}", line)
    if listed and listed.group(1):
        return len(listed.group(1).split(","))
    return devices


def ring_bytes(kind: str, result_bytes: float, group: int) -> float:
    """What one device sends for a collective of ``kind`` whose result has ``result_bytes``."""
    share = (group - 1) / group
    if kind == "all_reduce":
        return 2 * share * result_bytes
    if kind == "reduce_scatter":
        return share * result_bytes * group
    if kind == "collective_permute":
        return result_bytes
    return share * result_bytes


def collectives(hlo_text: str, devices: int = 8) -> list[dict]:
    """Each collective of XLA's compiled text: its kind, group size, result type and bytes, and
    the bytes a device sends. An async ``-start`` returns (operand, result): the result counts."""
    found = []
    for line in hlo_text.splitlines():
        match = _COLLECTIVE.search(line)
        if not match:
            continue
        result_type = match.group(1).strip()
        sizes = shape_sizes(result_type)
        result = sizes[-1] if match.group(3) and result_type.startswith("(") else sum(sizes)
        kind = match.group(2).replace("-", "_")
        group = devices if kind == "collective_permute" else group_size(line, devices)
        found.append({"kind": kind, "group": group, "type": result_type, "result_bytes": result,
                      "bytes": ring_bytes(kind, result, group)})
    return found
