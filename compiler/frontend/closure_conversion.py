"""``jax.closure_convert``'s tracing: a function traced on example arguments as a region body,
so the traced values it closes over become explicit arguments that can be passed (and
differentiated) as such, and the body can be replayed on new values in any later trace."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from meshjit.ir import Block, TensorType
from meshjit.ir.dtypes import is_complex, is_float

from .autodiff.evaluate import evaluate_block
from .trace import Tracer, current_trace
from .trace_functions import trace_region


@dataclass(frozen=True)
class ConvertedClosure:
    """A flat function as a block: its arguments, then the hoisted values (``hoisted[i]`` is the
    block argument at ``hoisted_positions[i]``), then the captured values kept as they are."""

    block: Block
    num_args: int
    captured: tuple
    hoisted_positions: tuple[int, ...]

    def __call__(self, flat_args: Sequence, hoisted: Sequence) -> list:
        captured = list(self.captured)
        for position, value in zip(self.hoisted_positions, hoisted, strict=True):
            captured[position] = value
        return evaluate_block(self.block, [*flat_args, *captured])


def convert_closure(flat_fun: Callable, arg_types: Sequence[TensorType], weak_types: Sequence[bool], *,
                    hoist_all: bool = False) -> tuple[ConvertedClosure, list]:
    """``flat_fun`` traced on arguments of ``arg_types``, and the values to pass for what it closes
    over: the traced values that may carry a derivative (float and complex ones, as JAX's
    ``closure_convert`` hoists; every traced value with ``hoist_all``)."""
    region = trace_region(flat_fun, arg_types, weak_types, name="closure_convert")
    positions = tuple(position for position, outside in enumerate(region.captured)
                      if isinstance(outside, Tracer) and (hoist_all or _differentiable(outside)))
    converted = ConvertedClosure(region.block, len(arg_types), tuple(region.captured), positions)
    return converted, [region.captured[position] for position in positions]


def _differentiable(tracer: Tracer) -> bool:
    dtype = tracer.value.type.dtype
    return is_float(dtype) or is_complex(dtype)


def tracing() -> bool:
    """Whether a trace is recording (closure conversion needs one to trace into)."""
    return current_trace() is not None
