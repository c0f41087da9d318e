"""numpy's floating-point warnings stay off while a plan runs, as XLA never warns: one switch
per call around the whole plan, not one ``np.errstate`` per op (which cost ~1.5 µs each).

``quiet_float_errors() -> token`` switches them off for this thread (and context);
``restore_float_errors(token)`` switches back. On numpy 2 this sets numpy's error-state context
variable to a state made once (all errors ignored, the buffer size and error callback as at
import); numpy 1 has no such variable, and pays ``np.seterr`` twice a call instead.
"""

from __future__ import annotations

import functools

import numpy as np

try:
    # NOTE: numpy 2's np.errstate sets this context variable to an object _make_extobj builds;
    # building it once makes the switch two C calls.
    from numpy._core._ufunc_config import _extobj_contextvar
    from numpy._core.umath import _make_extobj
except ImportError:  # numpy 1
    _extobj_contextvar = None


def _seterr_quiet() -> dict:
    return np.seterr(all="ignore")


def _seterr_restore(previous: dict) -> None:
    np.seterr(**previous)


if _extobj_contextvar is not None:
    quiet_float_errors = functools.partial(_extobj_contextvar.set, _make_extobj(all="ignore"))
    restore_float_errors = _extobj_contextvar.reset
else:
    quiet_float_errors = _seterr_quiet
    restore_float_errors = _seterr_restore
