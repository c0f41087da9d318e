"""meshjit.debug: print values and call back into Python from inside jitted programs, look at
how arrays are laid out over devices, inside and outside jit, and compare propagation
strategies on one program."""

from __future__ import annotations

from meshjit.runtime.array import Array
from meshjit.runtime.visualize import visualize_sharding as visualize_sharding

from ._debug_callbacks import callback as callback
from ._debug_callbacks import debug_print as print  # noqa: A001, F401 - JAX's name
from ._inspection import inspect_array_sharding as inspect_array_sharding
from ._strategy_comparison import StrategyReport as StrategyReport
from ._strategy_comparison import compare_propagation as compare_propagation


def visualize_array_sharding(arr: Array, *, use_color: bool = True, scale: float = 1.0,
                             min_width: int = 9, max_width: int = 80) -> None:
    """Print a table of which devices hold which part of the 1-d or 2-d array ``arr``."""
    if not isinstance(arr, Array):
        raise TypeError(f"visualize_array_sharding expects a meshjit.Array, got {type(arr).__name__}")
    visualize_sharding(arr.shape, arr.sharding, use_color=use_color, scale=scale,
                       min_width=min_width, max_width=max_width)
