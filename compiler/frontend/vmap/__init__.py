"""vmap as a transformation of traced IR blocks, driven by each op family's batching rule
(``compiler/rules/<family>.py``); the facade (``meshjit/vmap_api.py``) handles pytrees,
in_axes and out_axes."""

from .batching import at_front as at_front
from .batching import move_dim as move_dim
from .named_axes import stage_collective as stage_collective
from .transform import BatchAxis as BatchAxis
from .transform import named_axis as named_axis
from .transform import vmap_flat as vmap_flat
