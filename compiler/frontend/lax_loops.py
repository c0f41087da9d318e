"""lax's loops: ``scan``, ``fori_loop``, ``while_loop`` and ``map``, traced into the ``scan`` and
``while`` region ops (ir/ops/regions.py) with JAX's semantics, pytrees and errors.

A ``fori_loop`` whose bounds are known while tracing is a scan of ``upper - lower`` steps, so
reverse-mode differentiation works through it; with traced bounds it is a while loop. ``map``
is a scan without a carry.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

from .control_flow_tracing import (
    TracedBody,
    check_carry_structure,
    check_carry_types,
    flatten,
    is_eager,
    operand_leaf,
    pad_arguments,
    promote_weak_carry,
    run_eagerly,
    shaped_array,
    trace_body,
    type_of,
    unflatten,
    weak_of,
    with_consts_first,
)
from .lax_ops import add, convert_element_type, lt
from .operands import dtype_of, is_python_scalar, shape_of
from ..sharding.sharding_types import spec_repr
from .refs import bound_refs, ref_scope, threading_refs
from .trace import Tracer, bind, operand_sharding_type

__all__ = ["fori_loop", "map", "scan", "while_loop"]


def _check_callable(fun, what: str) -> None:
    if not callable(fun):
        raise TypeError(f"{what} argument should be callable.")


# --- scan ------------------------------------------------------------------------------------


def _scan_length(xs_leaves, length) -> int:
    sizes = []
    for leaf in xs_leaves:
        shape = tuple(shape_of(leaf))
        if not shape:
            raise ValueError(f"scan got value with no leading axis to scan over: {type_of(leaf)}")
        sizes.append(shape[0])
    if length is not None:
        if isinstance(length, bool) or not isinstance(length, int) and not hasattr(length, "__index__"):
            raise TypeError(f"scan got a `length` argument of type {type(length).__name__}, expected an int")
        length = int(length)
        if length < 0:
            raise ValueError(f"scan got a negative `length` argument {length}")
        if any(size != length for size in sizes):
            raise ValueError(f"scan got `length` argument of {length} which disagrees with leading axis "
                             f"sizes {sizes}.")
        return length
    if not sizes:
        raise ValueError("scan got no values to scan over and `length` not provided.")
    if len(set(sizes)) > 1:
        raise ValueError(f"scan got values with different leading axis sizes: {', '.join(str(size) for size in sizes)}.")
    return sizes[0]


def _unroll_factor(unroll, length: int) -> int:
    if isinstance(unroll, bool):
        return max(length, 1) if unroll else 1
    if not isinstance(unroll, int) or unroll < 0:
        raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
    return max(unroll, 1)


def _check_scanned_dims_unsplit(xs_leaves) -> None:
    """JAX's ValueError for xs whose type splits the scanned (leading) dim over Explicit axes."""
    for leaf in xs_leaves:
        sharding = operand_sharding_type(leaf)
        if sharding.mesh.explicit_axes and sharding.dims and sharding.dims[0]:
            raise ValueError(f"0th dimension of all xs should be replicated. Got {spec_repr(sharding)}")


def scan(f: Callable, init, xs=None, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False):
    """Loop ``f(carry, x) -> (carry, y)`` over the leading axis of ``xs``, as ``jax.lax.scan``:
    returns the final carry and the ys stacked along a new leading axis. Array references the
    body uses (compiler/frontend/refs.py) ride in the carry."""
    _check_callable(f, "scan: f")
    return threading_refs(lambda refs: _scan_with_refs(f, init, xs, length, reverse, unroll, refs), [])


def _scan_with_refs(f: Callable, init, xs, length, reverse, unroll, refs: list):
    if not refs:
        return _scan(f, init, xs, length, reverse, unroll)

    def body(carry, x):
        inner, values = carry
        with bound_refs(refs, values):
            inner, y = _pair(f(inner, x))
            return (inner, [ref._value for ref in refs]), y

    (carry, values), ys = _scan(body, (init, [ref._get_value() for ref in refs]), xs, length, reverse, unroll)
    for ref, value in zip(refs, values):
        ref._set_value(value)
    return carry, ys


def _pair(output):
    if not isinstance(output, (tuple, list)) or len(output) != 2:
        raise TypeError(f"scan body output must be a pair, got {_describe(output)}.")
    return output


def _scan(f: Callable, init, xs, length, reverse, unroll):
    xs_leaves, xs_tree = flatten(xs)
    xs_leaves = [operand_leaf(leaf, "xs") for leaf in xs_leaves]
    length = _scan_length(xs_leaves, length)
    unroll = _unroll_factor(unroll, length)
    init_leaves, init_tree = flatten(init)
    if is_eager(init_leaves + xs_leaves):
        return run_eagerly("scan", lambda init, xs: scan(f, init, xs, length, reverse, unroll), (init, xs))
    init_leaves = [operand_leaf(leaf, "init") for leaf in init_leaves]
    init_weak = [weak_of(leaf) for leaf in flatten(init)[0]]
    _check_scanned_dims_unsplit(xs_leaves)
    slice_types = [type_of(leaf).with_shape(type_of(leaf).shape[1:]) for leaf in xs_leaves]
    xs_weak = [weak_of(leaf) for leaf in xs_leaves]

    def trace(carry_weak):
        def body(*tracers):
            carry = unflatten(init_tree, tracers[:len(init_leaves)])
            x = unflatten(xs_tree, tracers[len(init_leaves):])
            with ref_scope():
                output = f(carry, x)
            if not isinstance(output, (tuple, list)) or len(output) != 2:
                raise TypeError(f"scan body output must be a pair, got {_describe(output)}.")
            return tuple(output)

        types = [type_of(leaf) for leaf in init_leaves] + slice_types
        return trace_body(body, types, list(carry_weak) + xs_weak, name="scan_body")

    traced = trace(init_weak)
    carry_tree, ys_tree = _split_pair(traced, init_tree, f)
    carry_types = traced.out_types[:len(init_leaves)]
    init_leaves, init_weak, changed = promote_weak_carry(init_leaves, init_weak, carry_types,
                                                         traced.out_weak[:len(init_leaves)])
    if changed:
        traced = trace(init_weak)
        carry_tree, ys_tree = _split_pair(traced, init_tree, f)
    check_carry_types("scan body", f, init_tree, [type_of(leaf) for leaf in init_leaves],
                      traced.out_types[:len(init_leaves)])
    block = with_consts_first(traced.block, len(init_leaves) + len(xs_leaves))
    attrs = {"length": length, "num_consts": len(traced.captured), "num_carry": len(init_leaves),
             "reverse": bool(reverse), "unroll": unroll}
    results = bind("scan", traced.captured + init_leaves + xs_leaves, attrs, regions=(block,))
    results = _weakened(results, traced.out_weak)
    carry = unflatten(carry_tree, results[:len(init_leaves)])
    return carry, unflatten(ys_tree, results[len(init_leaves):])


def _describe(output) -> str:
    leaves, _ = flatten(output)
    return ", ".join(f"~{type_of(operand_leaf(leaf, 'output'))}" for leaf in leaves) or repr(output)


def _split_pair(traced: TracedBody, init_tree, f: Callable):
    """The carry and ys pytrees of a scan body's ``(carry, y)`` output."""
    pair = unflatten(traced.out_tree, list(range(traced.out_tree.num_leaves)))
    carry_tree, ys_tree = flatten(pair[0])[1], flatten(pair[1])[1]
    check_carry_structure("scan body", f, init_tree, carry_tree)
    return carry_tree, ys_tree


def _weakened(results, weak_flags) -> list:
    return [Tracer(result.trace, result.value, weak) for result, weak in zip(results, weak_flags)]


# --- while_loop ------------------------------------------------------------------------------


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """``while cond_fun(val): val = body_fun(val)``, as ``jax.lax.while_loop``."""
    _check_callable(cond_fun, "while_loop: cond_fun")
    _check_callable(body_fun, "while_loop: body_fun")
    leaves, tree = flatten(init_val)
    if is_eager(leaves):
        return run_eagerly("while_loop", lambda value: while_loop(cond_fun, body_fun, value), (init_val,))
    weak = [weak_of(leaf) for leaf in leaves]
    leaves = [operand_leaf(leaf, "init_val") for leaf in leaves]

    def trace(function, carry_weak, name):
        return trace_body(lambda *tracers: function(unflatten(tree, tracers)),
                          [type_of(leaf) for leaf in leaves], carry_weak, name=name)

    body = trace(body_fun, weak, "while_body")
    check_carry_structure("while_loop body", body_fun, tree, body.out_tree)
    leaves, weak, changed = promote_weak_carry(leaves, weak, body.out_types, body.out_weak)
    if changed:
        body = trace(body_fun, weak, "while_body")
        check_carry_structure("while_loop body", body_fun, tree, body.out_tree)
    check_carry_types("while_loop body", body_fun, tree, [type_of(leaf) for leaf in leaves], body.out_types)
    cond = trace(cond_fun, weak, "while_cond")
    if len(cond.out_types) != 1 or cond.out_types[0].shape != () or cond.out_types[0].dtype != "bool":
        found = ", ".join(shaped_array(value_type, flag) for value_type, flag in zip(cond.out_types, cond.out_weak))
        raise TypeError(f"cond_fun must return a boolean scalar, but got output type(s) [{found}].")
    cond_consts = [type_of(value) for value in cond.captured]
    body_consts = [type_of(value) for value in body.captured]
    count = len(leaves)
    cond_block = pad_arguments(with_consts_first(cond.block, count), (), body_consts)
    cond_block = _move_carry_last(cond_block, len(cond_consts), len(body_consts), count)
    body_block = pad_arguments(with_consts_first(body.block, count), cond_consts, ())
    attrs = {"num_consts": len(cond.captured) + len(body.captured)}
    results = bind("while", cond.captured + body.captured + leaves, attrs, regions=(cond_block, body_block))
    return unflatten(tree, _weakened(results, weak))


def _move_carry_last(block, cond_consts: int, body_consts: int, carry: int):
    """Arguments ordered (cond consts, carry, body consts) become (cond consts, body consts,
    carry)."""
    args = block.args
    carries = args[cond_consts:cond_consts + carry]
    reordered = args[:cond_consts] + args[cond_consts + carry:] + carries
    return type(block)(reordered, block.ops, block.returns)


# --- fori_loop -------------------------------------------------------------------------------


def _bound_dtype(lower, upper) -> str:
    """The loop index dtype (JAX: equal bound dtypes, or a weak integer bound takes the other's)."""
    first, second = dtype_of(lower), dtype_of(upper)
    if first.name == second.name:
        return first.name
    if first.name.startswith("i") and second.name.startswith("i"):
        if first.weak and not second.weak:
            return second.name
        if second.weak and not first.weak:
            return first.name
    from meshjit.ir.dtypes import to_numpy

    raise TypeError(f"lower and upper arguments to fori_loop must have equal types, got "
                    f"{to_numpy(first.name).name} and {to_numpy(second.name).name}")


def _is_static(bound) -> bool:
    return not isinstance(bound, Tracer)


def fori_loop(lower, upper, body_fun: Callable, init_val, *, unroll: int | bool | None = None):
    """``for i in range(lower, upper): val = body_fun(i, val)``, as ``jax.lax.fori_loop``: a scan
    when both bounds are known while tracing (differentiable in reverse mode), else a while."""
    _check_callable(body_fun, "lax.fori_loop: body_fun")
    dtype = _bound_dtype(lower, upper)
    if _is_static(lower) and _is_static(upper):
        lower_value, upper_value = int(lower), int(upper)
        start = lower_value if is_python_scalar(lower) else convert_element_type(lower, dtype)

        def scanned(carry, _):
            index, value = carry
            return (index + 1, body_fun(index, value)), None

        length = max(upper_value - lower_value, 0)
        (_, result), _ = scan(scanned, (start, init_val), None, length=length,
                              unroll=False if unroll is None else unroll)
        return result
    if unroll is not None and unroll is not False and unroll != 1:
        raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically known.")
    if dtype_of(lower).name != dtype:
        lower = convert_element_type(lower, dtype)
    if dtype_of(upper).name != dtype:
        upper = convert_element_type(upper, dtype)

    def body(carry):
        index, stop, value = carry
        return add(index, 1), stop, body_fun(index, value)

    _, _, result = while_loop(lambda carry: lt(carry[0], carry[1]), body, (lower, upper, init_val))
    return result


# --- map -------------------------------------------------------------------------------------


def map(f: Callable, xs, *, batch_size: int | None = None):  # noqa: A001 - jax.lax.map's name
    """``f`` applied to every slice of ``xs`` along its leading axis, results stacked, as
    ``jax.lax.map``; with ``batch_size``, ``batch_size`` slices per loop step."""
    _check_callable(f, "lax.map: f")
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"lax.map: batch_size must be a positive int, got {batch_size!r}")
    leaves, tree = flatten(xs)
    length = _scan_length([operand_leaf(leaf, "xs") for leaf in leaves], None)
    batches, remainder = divmod(length, batch_size)
    if batches == 0:
        return map(f, xs)
    whole = batches * batch_size
    batched = unflatten(tree, [_batched(leaf, whole, batches, batch_size) for leaf in leaves])
    stacked = scan(lambda _, batch: ((), map(f, batch)), (), batched)[1]
    ys = _apply(lambda y: y.reshape((whole,) + tuple(y.shape[2:])), stacked)
    if not remainder:
        return ys
    rest = map(f, unflatten(tree, [leaf[whole:] for leaf in leaves]))
    return _apply_pair(ys, rest)


def _batched(leaf, whole: int, batches: int, batch_size: int):
    from .numpy_api.shape_ops import reshape

    return reshape(leaf[:whole], (batches, batch_size) + tuple(shape_of(leaf)[1:]))


def _apply(function, tree):
    leaves, treedef = flatten(tree)
    return unflatten(treedef, [function(leaf) for leaf in leaves])


def _apply_pair(first, second):
    from .numpy_api.shape_ops import concatenate

    leaves, treedef = flatten(first)
    others, _ = flatten(second)
    return unflatten(treedef, [concatenate([one, two]) for one, two in builtins.zip(leaves, others)])
