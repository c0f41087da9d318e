"""meshjit.scipy: the jax.scipy subset (``import meshjit.scipy as jsp``): ``special`` and
``stats``, written with meshjit.numpy so they trace, shard and differentiate like it."""

from . import linalg as linalg
from . import special as special
from . import stats as stats
from . import signal as signal
