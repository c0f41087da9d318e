"""The name and parameters JAX 0.10.2 prints for the equation of each IR op.

An op without an entry here prints under its IR name with its attributes as parameters
(lists as tuples, dtypes by numpy name). The entries write what JAX writes: the primitive's name
where it differs (``convert`` is ``convert_element_type``, ``compare`` is ``lt``, ``gt``, ...,
``select`` is ``select_n`` with the cases in JAX's order, ``expand_dims`` is a
``broadcast_in_dim``), JAX's parameters with its defaults (``sharding=None``,
``out_sharding=None``), and the parameters JAX leaves out of its text left out.
"""

from __future__ import annotations

from collections.abc import Callable

from meshjit.ir import Op
from meshjit.ir.dtypes import DTYPES, to_numpy

from ._jaxpr import ClosedJaxpr

_RULES: dict[str, Callable] = {}
_DTYPE_KEYS = ("dtype", "new_dtype", "index_dtype", "preferred_element_type")


def _rule(*names: str):
    def register(rule):
        for name in names:
            _RULES[name] = rule
        return rule
    return register


def jax_equation(op: Op, invars: list, regions: list) -> tuple[str, list, dict]:
    """(JAX's primitive name, its operands, its printed parameters) for ``op``."""
    rule = _RULES.get(op.name)
    if rule is not None:
        return rule(op, invars, regions)
    params = {key: _param(key, op.attrs[key]) for key in op.attrs}
    if regions:
        params["jaxprs"] = tuple(ClosedJaxpr(region, ()) for region in regions)
    return op.name, invars, params


def _param(key: str, value):
    if isinstance(value, tuple):
        return tuple(_param("", item) for item in value)
    if key in _DTYPE_KEYS and isinstance(value, str) and value in DTYPES:
        return to_numpy(value)
    return value


def _axes(op: Op, key: str = "axes") -> tuple:
    return tuple(int(axis) for axis in op.attrs[key])


@_rule("compare")
def _compare(op, invars, regions):
    return op.attrs["direction"], invars, {}


@_rule("select")
def _select(op, invars, regions):
    which, on_true, on_false = invars
    return "select_n", [which, on_false, on_true], {}


@_rule("convert")
def _convert(op, invars, regions):
    return "convert_element_type", invars, {"new_dtype": to_numpy(op.attrs["new_dtype"]), "weak_type": False}


@_rule("broadcast_in_dim")
def _broadcast(op, invars, regions):
    dimensions = _axes(op, "broadcast_dimensions")
    return "broadcast_in_dim", invars, {"broadcast_dimensions": dimensions} if dimensions else {}


@_rule("expand_dims")
def _expand_dims(op, invars, regions):
    inserted = {axis % op.result.type.rank for axis in _axes(op, "dimensions")}
    kept = tuple(axis for axis in range(op.result.type.rank) if axis not in inserted)
    return "broadcast_in_dim", invars, {"broadcast_dimensions": kept} if kept else {}


@_rule("reshape")
def _reshape(op, invars, regions):
    return "reshape", invars, {"dimensions": None, "new_sizes": _axes(op, "new_sizes"), "sharding": None}


@_rule("iota")
def _iota(op, invars, regions):
    return "iota", invars, {"dimension": int(op.attrs["dimension"]), "dtype": to_numpy(op.attrs["dtype"]),
                            "shape": _axes(op, "shape"), "sharding": None}


@_rule("reduce_sum")
def _reduce_sum(op, invars, regions):
    return op.name, invars, {"axes": _axes(op), "out_sharding": None}


@_rule("reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or")
def _reduce(op, invars, regions):
    return op.name, invars, {"axes": _axes(op)}


@_rule("argmax", "argmin")
def _argmax(op, invars, regions):
    axes = (int(op.attrs["axis"]),) if "axis" in op.attrs else _axes(op)
    return op.name, invars, {"axes": axes, "index_dtype": to_numpy(op.result.type.dtype)}


@_rule("dot_general")
def _dot_general(op, invars, regions):
    contracting, batch = op.attrs["contracting_dims"], op.attrs["batch_dims"]
    numbers = ((list(contracting[0]), list(contracting[1])), (list(batch[0]), list(batch[1])))
    return "dot_general", invars, {"dimension_numbers": numbers,
                                   "preferred_element_type": to_numpy(op.result.type.dtype)}


@_rule("slice")
def _slice(op, invars, regions):
    strides = op.attrs.get("strides")
    strides = None if strides is None or all(stride == 1 for stride in strides) else tuple(strides)
    return "slice", invars, {"limit_indices": _axes(op, "limit_indices"),
                             "start_indices": _axes(op, "start_indices"), "strides": strides}


@_rule("cond")
def _cond(op, invars, regions):
    return "cond", invars, {"branches": tuple(ClosedJaxpr(region, ()) for region in regions)}


@_rule("while")
def _while(op, invars, regions):
    condition, body = regions
    # NOTE: meshjit's cond and body share the constants; JAX passes each its own, so they print twice
    consts = int(op.attrs.get("num_consts", 0))
    return "while", invars[:consts] * 2 + invars[consts:], {"body_jaxpr": ClosedJaxpr(body, ()), "body_nconsts": consts,
                             "cond_jaxpr": ClosedJaxpr(condition, ()), "cond_nconsts": consts}


@_rule("scan")
def _scan(op, invars, regions):
    (body,) = regions
    params = {key: _param(key, op.attrs[key]) for key in ("length", "num_carry", "num_consts", "reverse", "unroll")
              if key in op.attrs}
    return "scan", invars, {"jaxpr": ClosedJaxpr(body, ()), **params}


@_rule("integer_pow")
def _integer_pow(op, invars, regions):
    return "integer_pow", invars, {"y": int(op.attrs["y"])}

