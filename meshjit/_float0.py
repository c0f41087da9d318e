"""float0 at the autodiff API's boundary: integer and boolean values have no tangent space.

Inside a trace an integer value's tangent is a zero of its own dtype (the IR has no float0); at
the API's boundary, as in JAX, such tangents and cotangents are numpy arrays of ``float0`` (no
data), and ``jvp``/``linearize`` take float0 tangents for integer primals.
"""

from __future__ import annotations

import numpy as np

from meshjit.compiler.frontend.operands import dtype_of, is_array_like, shape_of
from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir.dtypes import kind_of, to_numpy

from .dtypes import float0


def has_tangent_space(ir_dtype: str) -> bool:
    """Floating and complex values have tangents; integers and bools have float0."""
    return kind_of(to_numpy(ir_dtype)) in "fc"


def _is_float0(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype == float0


def as_float0(leaves: list) -> list:
    """Concrete tangent or cotangent leaves with the float0 dtype where their dtype is integral
    (traced ones stay zeros of their dtype: a program's values cannot be float0)."""
    return [
        np.zeros(shape_of(leaf), float0)
        if not isinstance(leaf, Tracer) and not has_tangent_space(dtype_of(leaf).name)
        else leaf
        for leaf in leaves
    ]


def from_float0(given: list, expected: list, what: str, function: str) -> list:
    """``given`` tangents for the ``expected`` primals, float0 ones replaced by zeros of the
    primal's dtype. As in JAX, an integer primal needs a float0 tangent (``jvp``, ``linearize``);
    with ``what == "cotangent"`` an integer output's cotangent may also have its own dtype."""
    leaves = []
    for leaf, reference in zip(given, expected):
        name = dtype_of(reference).name
        if _is_float0(leaf) and not has_tangent_space(name):
            leaves.append(np.zeros(shape_of(reference), to_numpy(name)))
            continue
        if what == "tangent" and is_array_like(leaf) and not has_tangent_space(name):
            raise TypeError(
                f"primal and tangent arguments to {function} do not match; dtypes must be equal, "
                f"or in case of int/bool primal dtype the tangent dtype must be float0."
                f"Got primal dtype {to_numpy(name).name} and so expected tangent dtype {float0}, "
                f"but got tangent dtype {to_numpy(dtype_of(leaf).name).name} instead."
            )
        leaves.append(leaf)
    return leaves
