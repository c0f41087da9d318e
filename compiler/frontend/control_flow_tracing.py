"""What lax's control flow functions share: pytrees, tracing a Python function into a region
body over abstract values, the values a body captures, and JAX's type-mismatch messages.

A body is isolated from above: what it uses from outside (Tracers of the enclosing trace,
concrete arrays) becomes extra block arguments after the explicit ones (``trace_region``);
control flow ops pass those as leading ``consts`` operands.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import optree
from meshjit.ir import Block, TensorType, Value
from meshjit.ir.dtypes import to_numpy

from ..sharding.sharding_types import format_type
from .lax_ops import convert_element_type
from .operands import as_operand, dtype_of, is_array_like, x64
from .promotion import DType, promote
from .trace import Tracer, current_trace, run_as_program
from .trace_functions import trace_region

# NOTE: the facade's pytree namespace (meshjit.tree_util.NAMESPACE).
TREE_NAMESPACE = "meshjit"


def flatten(tree):
    return optree.tree_flatten(tree, namespace=TREE_NAMESPACE)


def unflatten(treedef, leaves):
    return optree.tree_unflatten(treedef, list(leaves))


def tree_paths(tree) -> list[str]:
    """Each leaf's path as JAX's ``keystr`` spells it: ``[0]``, ``['a']``, ``.field``."""
    return ["".join(f"[{key!r}]" for key in path) for path in optree.tree_paths(tree, namespace=TREE_NAMESPACE)]


def operand_leaf(leaf, what: str):
    """A pytree leaf as an operand (Tracer, device array or canonical numpy array)."""
    if not is_array_like(leaf) and not isinstance(leaf, (list, tuple)):
        raise TypeError(f"Argument '{leaf}' of type {type(leaf)} is not a valid JAX type")
    return as_operand(leaf)


def type_of(operand) -> TensorType:
    if isinstance(operand, Tracer):
        return operand.value.type
    from meshjit.ir.dtypes import from_numpy

    return TensorType(tuple(operand.shape), from_numpy(np.dtype(operand.dtype)))


def weak_of(leaf) -> bool:
    return bool(dtype_of(leaf).weak) if is_array_like(leaf) else False


def short_type(value_type: TensorType) -> str:
    """A type as JAX prints it: ``float32[3]``."""
    return f"{to_numpy(value_type.dtype).name}[{','.join(str(size) for size in value_type.shape)}]"


def explicit_dims(sharding_type, rank: int) -> tuple:
    """The axes a value's type splits each dim over (none where it has no Explicit axes)."""
    if sharding_type is None or not sharding_type.mesh.explicit_axes:
        return ((),) * rank
    return tuple(sharding_type.dims)


def typed_text(value_type: TensorType, sharding_type) -> str:
    """A type with its sharding as JAX prints it: ``float32[8@x,8@y]``."""
    return format_type(value_type.shape, to_numpy(value_type.dtype), sharding_type)


def shaped_array(value_type: TensorType, weak: bool) -> str:
    return f"ShapedArray({short_type(value_type)}{', weak_type=True' if weak else ''})"


def is_eager(leaves) -> bool:
    """No trace is running, so the control flow runs as one program of its own."""
    return current_trace() is None and not any(isinstance(leaf, Tracer) for leaf in leaves)


def run_eagerly(name: str, function: Callable, tree_args) -> object:
    """``function(*tree_args)`` (which binds control flow ops) run as one program on concrete
    values; pytrees in and out."""
    leaves, treedef = flatten(tuple(tree_args))
    trees = {}

    def flat(*values):
        outputs = function(*unflatten(treedef, values))
        output_leaves, trees["out"] = flatten(outputs)
        return output_leaves

    results = run_as_program(name, flat, leaves)
    return unflatten(trees["out"], results)


@dataclass
class TracedBody:
    """A traced region body: ``block`` takes the explicit arguments then one per captured
    value; ``captured`` are the outside objects those stand for; the output pytree, its leaves'
    types and weak flags."""

    block: Block
    captured: list
    out_tree: object
    out_types: list[TensorType]
    out_weak: list[bool]
    out_sharding_types: list = None  # per output, its sharding type where tracing gave one


def trace_body(fun: Callable, arg_types: Sequence[TensorType], arg_weak: Sequence[bool], *,
               name: str, arg_sharding_types=None) -> TracedBody:
    """Trace ``fun`` (flat Tracers in, a pytree out) into a region body of the current trace;
    ``arg_sharding_types`` type its arguments (a cond's branches see their operands' types)."""
    out = {}

    def flat(*tracers):
        outputs = fun(*tracers)
        leaves, out["tree"] = flatten(outputs)
        out["weak"] = [weak_of(leaf) for leaf in leaves]
        return [operand_leaf(leaf, "output") for leaf in leaves]

    region = trace_region(flat, list(arg_types), list(arg_weak), name=name, arg_sharding_types=arg_sharding_types)
    types = [value.type for value in region.block.returns]
    known = current_trace().types
    sharding_types = [known.get(value.id) for value in region.block.returns]
    return TracedBody(region.block, region.captured, out["tree"], types, out["weak"], sharding_types)


def with_consts_first(block: Block, explicit: int) -> Block:
    """``block`` with its captured arguments (after the first ``explicit``) moved to the front,
    where the control flow ops expect their consts."""
    args = block.args
    return Block(args[explicit:] + args[:explicit], block.ops, block.returns)


def pad_arguments(block: Block, before: Sequence[TensorType], after: Sequence[TensorType]) -> Block:
    """``block`` with unused arguments of the given types added in front and behind (so that
    several regions can take one shared list of consts)."""
    front = tuple(Value.fresh(value_type) for value_type in before)
    back = tuple(Value.fresh(value_type) for value_type in after)
    return Block(front + block.args + back, block.ops, block.returns)


def promote_weak_carry(init: list, init_weak: list[bool], out_types: Sequence[TensorType],
                       out_weak: Sequence[bool]) -> tuple[list, list[bool], bool]:
    """JAX's weak-type promotion of loop carries: a weakly typed initial value (a Python scalar)
    whose type the body changes is converted to the type both promote to, and the body traced
    again. Returns the new initial values, their weak flags and whether any changed."""
    changed = False
    new_init, new_weak = [], []
    for value, weak, out_type, out_is_weak in zip(init, init_weak, out_types, out_weak):
        if weak and type_of(value) != out_type:
            target = promote(DType(type_of(value).dtype, True), DType(out_type.dtype, out_is_weak), x64())
            value = convert_element_type(value, to_numpy(target.name))
            weak, changed = False, True
        new_init.append(value)
        new_weak.append(weak)
    return new_init, new_weak, changed


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _listed(differences: list[str]) -> str:
    if len(differences) == 1:
        return f"{_capitalized(differences[0])}.\n"
    return "\n".join(f"  * {item};\n" for item in differences[:-1]) + f"  * {differences[-1]}.\n"


def mismatch_extra(first: TensorType, second: TensorType) -> str:
    problems = []
    if first.dtype != second.dtype:
        problems.append("the dtypes do not match")
    if first.shape != second.shape:
        problems.append("the shapes do not match")
    if len(problems) == 1:
        return ", so " + problems[0]
    return ", so " + ", ".join(problems[:-1]) + ", and " + problems[-1]


def carry_name(fun: Callable) -> str | None:
    try:
        parameters = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return None
    return parameters[0] if parameters else None


def _component(name: str | None, path: str) -> str:
    if name:
        return f"the input carry component {name}{path}" if path else f"the input carry {name}"
    return f"the input carry at path {path}" if path else "the input carry"


def check_carry_structure(what: str, fun: Callable, in_tree, out_tree) -> None:
    """TypeError when the body's carry output is not of the carry input's pytree structure."""
    if in_tree == out_tree:
        return
    component = _component(carry_name(fun), "")
    raise TypeError(
        f"{what} function carry input and carry output must have the same pytree structure, but "
        f"they differ:\n\n{_capitalized(component)} has structure {in_tree} but the carry output "
        f"has structure {out_tree}.\n\nRevise the function so that the carry output has the same "
        f"pytree structure as the carry input.")


def check_carry_types(what: str, fun: Callable, in_tree, in_types, out_types) -> None:
    """TypeError (JAX's message) when a carry's output type differs from its input type."""
    name = carry_name(fun)
    paths = tree_paths(unflatten(in_tree, [0] * len(in_types)))
    differences = [
        f"{_component(name, path)} has type {short_type(before)} but the corresponding output "
        f"carry component has type {short_type(after)}{mismatch_extra(before, after)}"
        for path, before, after in zip(paths, in_types, out_types) if before != after]
    if differences:
        raise TypeError(
            f"{what} function carry input and carry output must have equal types, but they "
            f"differ:\n\n{_listed(differences)}\nRevise the function so that all output types "
            f"match the corresponding input types.")


def describe_function(fun: Callable) -> str:
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def check_branch_outputs(names: Sequence[str], funs: Sequence[Callable], bodies: Sequence[TracedBody],
                         what: str) -> None:
    """TypeError (JAX's messages) unless every branch returns the first one's pytree and types."""
    first = bodies[0]
    header = "".join(f"{name} is {describe_function(fun)}\n" for name, fun in zip(names, funs))
    for name, body in zip(names[1:], bodies[1:]):
        if body.out_tree != first.out_tree:
            raise TypeError(
                f"{what} branch outputs must have the same pytree structure, but they differ:\n\n"
                f"{header}\n{names[0]} output has structure {first.out_tree} but {name} output has "
                f"structure {body.out_tree}.\n\nRevise {' and/or '.join(names)} so that they have "
                f"the same pytree structure.")
        paths = tree_paths(unflatten(first.out_tree, [0] * len(first.out_types)))
        differences = [
            f"the output of {names[0]}{path} has type {short_type(before)} but the corresponding "
            f"output of {name} has type {short_type(after)}{mismatch_extra(before, after)}"
            for path, before, after in zip(paths, first.out_types, body.out_types) if before != after]
        differences = differences or [
            f"the output of {names[0]}{path} has type {typed_text(value_type, before)} but the corresponding "
            f"output of {name} has type {typed_text(value_type, after)}"
            for path, value_type, before, after in zip(paths, first.out_types, first.out_sharding_types,
                                                       body.out_sharding_types)
            if explicit_dims(before, value_type.rank) != explicit_dims(after, value_type.rank)]
        if differences:
            raise TypeError(
                f"{what} branches must have equal output types but they differ.\n\n{header}\n"
                f"{_listed(differences)}\nRevise {' and/or '.join(names)} so that all output "
                f"types match.")
