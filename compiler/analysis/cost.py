"""Static cost estimates of a module: floating-point operations and bytes touched, the bytes
collectives send under ring algorithms, and the alpha-beta time model (CostModel) with its
calibration file."""

from __future__ import annotations

import json
import math
import os
import warnings
from dataclasses import dataclass

from meshjit.ir.config import cache_directory
from meshjit.ir import Module, Op
from meshjit.ir.dtypes import to_numpy

_FREE = {"constant", "iota", "reshape", "sharding_constraint", "squeeze", "expand_dims",
         "axis_index", "partition_id", "pvary"}


def op_flops(op: Op) -> int:
    """Arithmetic operations one op performs (a multiply-add counts two)."""
    if op.name in _FREE:
        return 0
    if op.name == "dot_general":
        lhs = op.operands[0].type.shape
        contracting = op.attrs["contracting_dims"][0]
        return 2 * op.result.type.size * math.prod(lhs[dim] for dim in contracting)
    if op.name.startswith("reduce_") or op.name.startswith("cum") or op.name in ("argmax", "argmin"):
        return op.operands[0].type.size
    if op.name == "sort":
        size = op.operands[0].type.size
        length = op.operands[0].type.shape[op.attrs["dimension"]] if op.operands[0].type.shape else 1
        return size * max(1, math.ceil(math.log2(max(length, 2))))
    return sum(result.type.size for result in op.results)


def _bytes(value) -> int:
    return value.type.size * to_numpy(value.type.dtype).itemsize


def cost_analysis(module: Module) -> dict[str, float]:
    """``flops`` and ``bytes accessed`` (operands read plus results written) of the entry function."""
    flops = 0
    bytes_accessed = 0
    for op in module.main.body.walk():
        flops += op_flops(op)
        if op.name not in _FREE:
            bytes_accessed += sum(_bytes(value) for value in op.operands + op.results)
    return {"flops": float(flops), "bytes accessed": float(bytes_accessed)}


# -- collectives: bytes each device sends under ring algorithms, and an alpha-beta time ---------
def value_bytes(value) -> int:
    return _bytes(value)


def all_reduce_bytes(local_bytes: float, group: int) -> float:
    """Ring all-reduce: a reduce-scatter then an all-gather, 2 (n-1)/n of the buffer."""
    return 2.0 * (group - 1) / group * local_bytes if group > 1 else 0.0


def all_gather_bytes(gathered_bytes: float, group: int) -> float:
    """Ring all-gather: each device forwards the (n-1) shards it does not own."""
    return (group - 1) / group * gathered_bytes if group > 1 else 0.0


def reduce_scatter_bytes(input_bytes: float, group: int) -> float:
    return (group - 1) / group * input_bytes if group > 1 else 0.0


def all_to_all_bytes(local_bytes: float, group: int) -> float:
    return (group - 1) / group * local_bytes if group > 1 else 0.0


def collective_bytes(kind: str, operand_bytes: float, result_bytes: float, group: int) -> float:
    """What each device sends for one collective of ``kind`` over a group of ``group`` devices."""
    if kind == "all_reduce":
        return all_reduce_bytes(operand_bytes, group)
    if kind == "all_gather":
        return all_gather_bytes(result_bytes, group)
    if kind == "reduce_scatter":
        return reduce_scatter_bytes(operand_bytes, group)
    if kind == "all_to_all":
        return all_to_all_bytes(operand_bytes, group)
    return float(operand_bytes) if kind == "collective_permute" else 0.0


def ring_steps(kind: str, group: int) -> int:
    """Messages in a row that one collective takes on a ring: an all-reduce is a reduce-scatter
    and an all-gather (n-1 each); a permute is one exchange."""
    if group <= 1:
        return 0
    if kind == "all_reduce":
        return 2 * (group - 1)
    return 1 if kind == "collective_permute" else group - 1


# NOTE: link parameters; a simulated CPU mesh has no real links, so these are the
# defaults of a typical accelerator interconnect and only rank strategies against each other.
# ``meshjit calibrate`` measures them (cost_model.json in the cache directory).
DEFAULT_LATENCY_SECONDS = 5e-6
DEFAULT_BANDWIDTH_BYTES_PER_SECOND = 50e9
DEFAULT_FLOPS_PER_SECOND = 50e9
CALIBRATION_FILE = "cost_model.json"


@dataclass(frozen=True)
class CostModel:
    """The alpha-beta link model and a compute rate: ``latency`` (alpha, seconds per message),
    ``bandwidth`` (1/beta, bytes per second) and ``flops_per_second`` of one device.
    ``source`` says where the numbers came from (``default`` or the calibration that measured
    them)."""

    latency: float = DEFAULT_LATENCY_SECONDS
    bandwidth: float = DEFAULT_BANDWIDTH_BYTES_PER_SECOND
    flops_per_second: float = DEFAULT_FLOPS_PER_SECOND
    source: str = "default"

    def collective_seconds(self, bytes_sent: float, steps: int) -> float:
        return steps * self.latency + bytes_sent / self.bandwidth

    def compute_seconds(self, flops: float) -> float:
        return flops / self.flops_per_second

    def to_json(self) -> dict:
        return {"latency_seconds": self.latency, "bandwidth_bytes_per_second": self.bandwidth,
                "flops_per_second": self.flops_per_second, "source": self.source}

    @staticmethod
    def from_json(data: dict) -> CostModel:
        values = (data["latency_seconds"], data["bandwidth_bytes_per_second"], data["flops_per_second"])
        if not all(isinstance(value, (int, float)) and value > 0 for value in values):
            raise ValueError(f"a cost model needs positive numbers, got {data!r}")
        return CostModel(float(values[0]), float(values[1]), float(values[2]), str(data.get("source", "calibrated")))


def calibration_path() -> str:
    return os.path.join(cache_directory(), CALIBRATION_FILE)


def save_cost_model(model: CostModel, path: str | None = None) -> str:
    path = path or calibration_path()
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as handle:
        json.dump(model.to_json(), handle, indent=2)
        handle.write("\n")
    return path


def load_cost_model() -> CostModel:
    """The calibrated model from the cache directory, or the defaults when there is none (a
    file that cannot be read is reported, not silently ignored)."""
    path = calibration_path()
    if not os.path.exists(path):
        return CostModel()
    try:
        with open(path) as handle:
            return CostModel.from_json(json.load(handle))
    except (OSError, ValueError, KeyError, TypeError) as error:
        warnings.warn(f"ignoring the cost model calibration {path}: {error}; run `meshjit calibrate` again",
                      stacklevel=2)
        return CostModel()


def alpha_beta_seconds(bytes_sent: float, steps: int, *, latency: float = DEFAULT_LATENCY_SECONDS,
                       bandwidth: float = DEFAULT_BANDWIDTH_BYTES_PER_SECOND) -> float:
    """Time for ``steps`` messages in a row carrying ``bytes_sent`` in all: alpha per message
    plus bytes over bandwidth."""
    return steps * latency + bytes_sent / bandwidth
