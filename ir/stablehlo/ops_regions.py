"""The op table's ops with regions: reduce, sort, gather and scatter (whose regions are a
reduction or comparator read by pattern), while and case (whose regions become meshjit
regions, outer values they read passed in as operands), and Shardy's manual_computation."""

from __future__ import annotations

from ..core import Value
from .builder import Builder
from .ops_collectives import COLLECTIVE_TABLE
from .ops_linalg import LINALG_TABLE
from .ops_table import Context, broadcast, identity_of
from .ops_windows import reduce_window
from .statements import TERMINATORS, collect_entries, read_op, split_commas
from .syntax import Group, Region, is_token
from .values import int_list, sdy_sharding, single_int

# the binary op of a reduction region -> meshjit's reduction kind
REDUCERS = {"stablehlo.add": "sum", "stablehlo.maximum": "max", "stablehlo.minimum": "min",
            "stablehlo.multiply": "prod", "stablehlo.and": "and", "stablehlo.or": "or"}
COMBINE = {"sum": "add", "max": "max", "min": "min", "prod": "mul", "and": "and", "or": "or"}


def region_kind(region: Region, op) -> str:
    """A reduction region's kind: one binary op of its two arguments (``sum``, ``max``, ...),
    or ``assign`` when it returns its second argument (a scatter that overwrites)."""
    stmts = [read_op(stmt) for stmt in region.stmts if not is_token(stmt.items[0], "BLOCK_LABEL")]
    # a sharding constraint on the scalar (a partially manual shard_map's body has them) is the identity
    aliases = {stmt.result_names[0]: str(stmt.operand_tokens()[0]) for stmt in stmts
               if stmt.name == "sdy.sharding_constraint"}
    body = [stmt for stmt in stmts if stmt.name not in TERMINATORS and stmt.name != "sdy.sharding_constraint"]
    returned = [aliases.get(str(token), str(token)) for stmt in stmts if stmt.name in TERMINATORS
                for token in stmt.operand_tokens()]
    args = [str(part[0]) for part in _label_args(region)]
    if not body and len(args) == 2 and returned == [args[1]]:
        return "assign"
    if len(body) == 1 and body[0].name in REDUCERS and returned == body[0].result_names:
        return REDUCERS[body[0].name]
    names = ", ".join(stmt.name for stmt in body) or "nothing"
    op.fail(f"its region computes {names}; only a single add, maximum, minimum, multiply, and or or "
            f"(or returning the update, for scatter) is mapped")


def _label_args(region: Region) -> list:
    if region.stmts and is_token(region.stmts[0].items[0], "BLOCK_LABEL"):
        return split_commas(region.stmts[0].items[1].items)
    return []


def combine_init(b: Builder, value: Value, init: Value, kind: str) -> Value:
    """``kind(value, init)`` unless ``init`` is the reduction's identity."""
    if identity_of(b, init, kind):
        return value
    return b.emit1(COMBINE[kind], [value, broadcast(b, init, value.type.shape, ())])


def _reduce(c: Context):
    values = c.operands()
    count = len(values) // 2
    inputs, inits = values[0::2], values[1::2]
    dims = c.ints("dimensions")
    applies = next((c.op.body[index + 1] for index, item in enumerate(c.op.body) if is_token(item, "WORD", "applies")),
                   None)
    if count == 2:
        return _arg_reduce(c, inputs, inits, dims)
    if count != 1:
        c.op.fail(f"reduces {count} operands together; only one (or JAX's argmax/argmin pair) is mapped")
    if applies is not None:
        kind = REDUCERS.get(str(applies))
        if kind is None:
            c.op.fail(f"reduces with {applies}; only {', '.join(REDUCERS)} are mapped")
    else:
        kind = region_kind(c.op.regions[0], c.op)
    reduced = c.b.emit1(f"reduce_{kind}", [inputs[0]], {"axes": dims})
    return (combine_init(c.b, reduced, inits[0], kind),)


def _arg_reduce(c: Context, inputs, inits, dims):
    """JAX's argmax/argmin: (values, iota) reduced together by a comparator."""
    region = c.op.regions[0] if c.op.regions else None
    compare = _first_compare(region) if region is not None else None
    if len(dims) != 1 or c.b.facts.iotas.get(inputs[1].id) != dims[0] or compare not in ("GT", "LT"):
        c.op.fail("reduces two operands together in a way other than JAX's argmax/argmin")
    name, kind = ("argmax", "max") if compare == "GT" else ("argmin", "min")
    index = c.b.emit1(name, [inputs[0]], {"axis": dims[0], "index_dtype": inputs[1].type.dtype})
    value = c.b.emit1(f"reduce_{kind}", [inputs[0]], {"axes": dims})
    return combine_init(c.b, value, inits[0], kind), index


def _first_compare(region: Region) -> str | None:
    for stmt in region.stmts:
        if is_token(stmt.items[0], "BLOCK_LABEL"):
            continue
        op = read_op(stmt)
        if op.name == "stablehlo.compare":
            return next((str(item) for item in op.body if is_token(item, "WORD")), None)
    return None


def _sort(c: Context):
    region = c.op.regions[0]
    stmts = [read_op(stmt) for stmt in region.stmts if not is_token(stmt.items[0], "BLOCK_LABEL")]
    returned = [str(token) for stmt in stmts if stmt.name in TERMINATORS for token in stmt.operand_tokens()]
    final = next((stmt for stmt in stmts if stmt.result_names == returned), None)
    direction = None if final is None or final.name != "stablehlo.compare" else next(
        (str(item) for item in final.body if is_token(item, "WORD")), None)
    if direction != "LT":
        c.op.fail("its comparator is not an ascending one (JAX's sorts end in compare LT); descending "
                  "or custom comparators are not mapped")
    args = [str(part[0]) for part in _label_args(region)]
    used = {str(token) for stmt in stmts for token in stmt.operand_tokens()}
    keys = max((index // 2 for index, name in enumerate(args) if name in used), default=0) + 1
    attrs = c.op.attrs()
    stable = any(is_token(item, "WORD", "true") for item in attrs.get("is_stable", ()))
    return c.b.emit("sort", c.operands(), {"dimension": single_int(attrs["dimension"], c.op),
                                           "is_stable": stable, "num_keys": keys})


def _dimension_numbers(c: Context, name: str) -> dict:
    value = c.op.require(name)
    group = next((item for item in value if isinstance(item, Group) and item.kind == "angle"), None)
    found: dict = {}
    collect_entries(group.items if group else (), found)
    return {key: int_list(entry, c.op) if key != "index_vector_dim" else single_int(entry, c.op)
            for key, entry in found.items()}


def _indices_last(c: Context, indices: Value, index_vector_dim: int) -> Value:
    """meshjit's index vector is the indices' last dim; JAX's is too, or absent (one past)."""
    if index_vector_dim == indices.type.rank - 1:
        return indices
    if index_vector_dim == indices.type.rank:
        return c.b.emit1("reshape", [indices], {"new_sizes": indices.type.shape + (1,)})
    c.op.fail(f"index_vector_dim {index_vector_dim} is not the indices' last dim")


def _gather(c: Context):
    operand, indices = c.operands()
    numbers = _dimension_numbers(c, "dimension_numbers")
    # NOTE: StableHLO prints index_vector_dim only when it is not 0
    indices = _indices_last(c, indices, numbers.get("index_vector_dim", 0))
    attrs = {"offset_dims": numbers.get("offset_dims", ()),
             "collapsed_slice_dims": numbers.get("collapsed_slice_dims", ()),
             "start_index_map": numbers.get("start_index_map", ()),
             "operand_batching_dims": numbers.get("operand_batching_dims", ()),
             "start_indices_batching_dims": numbers.get("start_indices_batching_dims", ()),
             "slice_sizes": c.ints("slice_sizes"), "mode": "clip"}
    return c.b.emit("gather", [operand, indices], attrs)


_SCATTERS = {"assign": "scatter", "sum": "scatter_add", "prod": "scatter_mul", "min": "scatter_min",
             "max": "scatter_max"}


def _scatter(c: Context):
    values = c.operands()
    if len(values) != 3:
        c.op.fail("scatters several operands at once; only one operand is mapped")
    operand, indices, updates = values
    numbers = _dimension_numbers(c, "scatter_dimension_numbers")
    indices = _indices_last(c, indices, numbers.get("index_vector_dim", 0))
    kind = region_kind(c.op.regions[0], c.op)
    if kind not in _SCATTERS:
        c.op.fail(f"scatters with {kind}, which meshjit has no scatter for")
    attrs = c.op.attrs()
    flags = {name: any(is_token(item, "WORD", "true") for item in attrs.get(name, ()))
             for name in ("indices_are_sorted", "unique_indices")}
    new = {"update_window_dims": numbers.get("update_window_dims", ()),
           "inserted_window_dims": numbers.get("inserted_window_dims", ()),
           "scatter_dims_to_operand_dims": numbers.get("scatter_dims_to_operand_dims", ()),
           "operand_batching_dims": numbers.get("input_batching_dims", ()),
           "scatter_indices_batching_dims": numbers.get("scatter_indices_batching_dims", ()),
           "mode": "fill", **flags}
    return c.b.emit(_SCATTERS[kind], [operand, indices, updates], new)


def _aligned(outer: list[Value], captures: list[tuple[Value, Value]]) -> list[Value]:
    """A region's arguments for the captured values ``outer``: its own where it read the value,
    else a fresh unused one."""
    mine = {outside.id: inside for outside, inside in captures}
    return [mine.get(value.id) or Value.fresh(value.type) for value in outer]


def _union(*capture_lists) -> list[Value]:
    seen, union = set(), []
    for captures in capture_lists:
        for outer, _ in captures:
            if outer.id not in seen:
                seen.add(outer.id)
                union.append(outer)
    return union


def _while(c: Context):
    bindings = next(item for item in c.op.body if isinstance(item, Group) and item.kind == "paren")
    names, inits = [], []
    for part in split_commas(bindings.items):
        names.append(str(part[0]))
        inits.append(c.scope.lookup(part[2]))
    types = [value.type for value in inits]
    cond_region, body_region = c.op.regions
    cond = c.importer.region(cond_region, c.scope, c.b, list(zip(names, types)))
    body = c.importer.region(body_region, c.scope, c.b, list(zip(names, types)))
    consts = _union(cond[3], body[3])
    blocks = [builder.block(_aligned(consts, captures) + args, returns)
              for args, builder, returns, captures in (cond, body)]
    return c.b.emit("while", consts + inits, {"num_consts": len(consts)}, blocks)


def _case(c: Context):
    (index,) = c.operands()
    branches = [c.importer.region(region, c.scope, c.b, []) for region in c.op.regions]
    operands = _union(*(branch[3] for branch in branches))
    blocks = [builder.block(_aligned(operands, captures), returns) for _, builder, returns, captures in branches]
    return c.b.emit("cond", [index] + operands, {}, blocks)


def _shardings_list(value, c: Context):
    group = value[0] if value else None
    if not isinstance(group, Group) or group.kind != "bracket":
        c.op.fail("expected a list of shardings [<@mesh, ...>, ...]")
    return tuple(sdy_sharding(item) for item in group.items if isinstance(item, Group))


def _manual_computation(c: Context):
    from .importer import declared_args

    attrs = c.op.attrs()
    in_shardings = _shardings_list(attrs.get("in_shardings"), c)
    out_shardings = _shardings_list(attrs.get("out_shardings"), c)
    axes_group = attrs.get("manual_axes", (None,))[0]
    manual_axes = tuple(str(item)[1:-1] for item in getattr(axes_group, "items", ()) if is_token(item, "STRING"))
    declared = [item for item in c.op.body if isinstance(item, Group) and item.kind == "paren"]
    args = declared_args(declared[-1]) if len(declared) > 1 else []
    mesh_name = (in_shardings + out_shardings)[0].mesh_name if in_shardings + out_shardings else "mesh"
    c.importer.manual.append((mesh_name, manual_axes))
    try:
        values, builder, returns, _ = c.importer.region(c.op.regions[0], c.scope, c.b, args, isolated=True)
    finally:
        c.importer.manual.pop()
    operands = [c.scope.lookup(token) for token in declared[0].items if is_token(token, "VALUE")]
    new = {"in_shardings": in_shardings, "out_shardings": out_shardings, "manual_axes": manual_axes}
    return c.b.emit("manual_computation", operands, new, [builder.block(values, returns)])


REGION_TABLE = {
    "stablehlo.reduce": _reduce, "stablehlo.reduce_window": reduce_window, "stablehlo.sort": _sort,
    "stablehlo.gather": _gather, "stablehlo.scatter": _scatter, "stablehlo.while": _while,
    "stablehlo.case": _case, "sdy.manual_computation": _manual_computation, **COLLECTIVE_TABLE,
    **LINALG_TABLE,
}
