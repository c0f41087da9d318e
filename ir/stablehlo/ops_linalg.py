"""The linear algebra JAX prints for CPU: LAPACK custom calls (potrf, syevd, gesdd, getrf, trsm)
and the StableHLO cholesky and triangular_solve ops, mapped onto meshjit's linalg ops. A LAPACK
call's ``info`` result becomes zeros (meshjit's ops put the NaNs JAX derives from it in their
results already); getrf's pivots are 1-based, as LAPACK's. QR (geqrf, then orgqr on the
Householder vectors) has no counterpart: meshjit's qr op gives Q and R, not the reflectors."""

from __future__ import annotations

import numpy as np

from ..core import DenseAttr
from ..dtypes import to_numpy
from .ops_table import Context
from .statements import collect_entries
from .values import single_int

_CHARACTERS = {"L": 76, "U": 85, "N": 78, "T": 84, "C": 67, "R": 82, "A": 65, "S": 83, "V": 86}


def _flag(c: Context, name: str, default: str) -> str:
    """A LAPACK character argument of the backend config (``uplo = 76 : ui8``), as a letter."""
    config: dict = {}
    collect_entries(c.op.attrs().get("mhlo.backend_config", ()), config)
    value = config.get(name)
    code = single_int(value[:1], c.op) if value else _CHARACTERS[default]
    letters = {number: letter for letter, number in _CHARACTERS.items()}
    if code not in letters:
        c.op.fail(f"has {name} = {code}, not a LAPACK character meshjit knows")
    return letters[code]


def _zeros(c: Context, type_):
    zero = c.b.emit1("constant", [], {"value": DenseAttr.from_array(np.zeros((), to_numpy(type_.dtype)))})
    return c.b.emit1("broadcast_in_dim", [zero], {"shape": type_.shape, "broadcast_dimensions": ()})


def _swap(c: Context, value):
    rank = value.type.rank
    return c.b.emit1("transpose", [value], {"permutation": tuple(range(rank - 2)) + (rank - 1, rank - 2)})


def _checked(c: Context, values):
    """The values, checked against the custom call's declared result types."""
    for value, declared in zip(values, c.result_types()):
        if value.type != declared:
            c.op.fail(f"gives {value.type} where JAX declares {declared}")
    return tuple(values)


def _potrf(c: Context):
    (operand,) = c.operands()
    if _flag(c, "uplo", "L") == "L":
        factor = c.b.emit1("cholesky", [operand])
    else:
        factor = _swap(c, c.b.emit1("cholesky", [_swap(c, operand)]))
    return _checked(c, (factor, _zeros(c, c.result_types()[1])))


def _syevd(c: Context):
    (operand,) = c.operands()
    vectors, values = c.b.emit("eigh", [operand], {"lower": _flag(c, "uplo", "L") == "L"})
    return _checked(c, (vectors, values, _zeros(c, c.result_types()[2])))


def _gesdd(c: Context):
    (operand,) = c.operands()
    mode = _flag(c, "mode", "A")
    types = c.result_types()
    if mode == "N":
        (values,) = c.b.emit("svd", [operand], {"full_matrices": False, "compute_uv": False})
        return _checked(c, (operand, values, _zeros(c, types[2]), _zeros(c, types[3]), _zeros(c, types[4])))
    values, u, vh = c.b.emit("svd", [operand], {"full_matrices": mode == "A", "compute_uv": True})
    return _checked(c, (operand, values, u, vh, _zeros(c, types[4])))


def _getrf(c: Context):
    (operand,) = c.operands()
    packed, pivots, _ = c.b.emit("lu", [operand])
    one = c.b.emit1("constant", [], {"value": DenseAttr.from_array(np.ones((), np.int32))})
    ones = c.b.emit1("broadcast_in_dim", [one], {"shape": pivots.type.shape, "broadcast_dimensions": ()})
    return _checked(c, (packed, c.b.emit1("add", [pivots, ones]), _zeros(c, c.result_types()[2])))


def _trsm(c: Context):
    a, b = c.operands()[:2]
    attrs = {"left_side": _flag(c, "side", "L") == "L", "lower": _flag(c, "uplo", "L") == "L",
             "transpose_a": _flag(c, "trans_x", "N") != "N", "unit_diagonal": _flag(c, "diag", "N") == "U"}
    return _checked(c, (c.b.emit1("triangular_solve", [a, b], attrs),))


def _bool(c: Context, name: str) -> bool:
    value = c.op.attrs().get(name)
    return value is not None and "true" in " ".join(str(item) for item in value)


def _cholesky(c: Context):
    (operand,) = c.operands()
    if _bool(c, "lower"):
        return _checked(c, (c.b.emit1("cholesky", [operand]),))
    return _checked(c, (_swap(c, c.b.emit1("cholesky", [_swap(c, operand)])),))


def _triangular_solve(c: Context):
    a, b = c.operands()
    transpose = " ".join(str(item) for item in c.op.attrs().get("transpose_a", ()))
    attrs = {"left_side": _bool(c, "left_side"), "lower": _bool(c, "lower"),
             "transpose_a": "NO_TRANSPOSE" not in transpose, "unit_diagonal": _bool(c, "unit_diagonal")}
    return _checked(c, (c.b.emit1("triangular_solve", [a, b], attrs),))


LAPACK_CALLS = {f"lapack_{kind}{name}_ffi": rule for kind in "sd" for name, rule in
                (("potrf", _potrf), ("syevd", _syevd), ("gesdd", _gesdd), ("getrf", _getrf), ("trsm", _trsm))}
LINALG_TABLE = {"stablehlo.cholesky": _cholesky, "stablehlo.triangular_solve": _triangular_solve}
