"""The op table's window ops: convolution (``dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]``)
and reduce_window, which becomes a cumulative op (cumsum, cummax, ...) when it is the window JAX
writes for one, else reduce_window_sum/max/min."""

from __future__ import annotations

from .ops_table import Context, identity_of
from .statements import collect_entries
from .syntax import Group, is_token
from .values import dense_array, int_list, single_int


def _spec(group: Group, batch: str, feature: str) -> tuple[int, ...]:
    """One operand's layout, e.g. ``[b, 0, 1, f]``, as meshjit's spec: the positions of the
    batch (or output feature) dim, the feature dim, then each spatial dim in order."""
    labels = [str(item) for item in group.items if not is_token(item, "PUNCT", ",")]
    spatial = sorted((int(label), index) for index, label in enumerate(labels) if label.isdigit())
    return (labels.index(batch), labels.index(feature)) + tuple(index for _, index in spatial)


def convolution(c: Context):
    attrs = c.op.attrs()
    numbers = [item for item in attrs.get("dim_numbers", ()) if isinstance(item, Group) and item.kind == "bracket"]
    if len(numbers) != 3:
        c.op.fail("expected dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f]")
    window: dict = {}
    for item in attrs.get("window", ()):
        if isinstance(item, Group) and item.kind == "brace":
            collect_entries(item.items, window)
    spatial = sum(1 for item in numbers[0].items if is_token(item, "INT"))
    ones = (1,) * spatial
    if any(is_token(item, "WORD", "true") for item in _flat(window.get("reverse", ()))):
        c.op.fail("reversed windows are not mapped")
    padding = window.get("pad")
    pairs = [int_list((row,), c.op) for row in padding[0].items if isinstance(row, Group)] if padding else []
    new = {"lhs_spec": _spec(numbers[0], "b", "f"), "rhs_spec": _spec(numbers[1], "o", "i"),
           "out_spec": _spec(numbers[2], "b", "f"),
           "window_strides": int_list(window["stride"], c.op) if "stride" in window else ones,
           "padding": tuple(tuple(pair) for pair in pairs) or ((0, 0),) * spatial,
           "lhs_dilation": int_list(window["lhs_dilate"], c.op) if "lhs_dilate" in window else ones,
           "rhs_dilation": int_list(window["rhs_dilate"], c.op) if "rhs_dilate" in window else ones,
           "feature_group_count": single_int(attrs.get("feature_group_count", ()), c.op)
           if "feature_group_count" in attrs else 1,
           "batch_group_count": single_int(attrs.get("batch_group_count", ()), c.op)
           if "batch_group_count" in attrs else 1}
    return c.b.emit("conv_general_dilated", c.operands(), new)


def _flat(items):
    for item in items:
        if isinstance(item, Group):
            yield from _flat(item.items)
        else:
            yield item


_CUMULATIVE = {"sum": "cumsum", "max": "cummax", "min": "cummin", "prod": "cumprod"}


def reduce_window(c: Context):
    from .ops_regions import region_kind

    values = c.operands()
    if len(values) != 2:
        c.op.fail("reduces several operands in one window; only one is mapped")
    operand, init = values
    rank = operand.type.rank
    attrs = c.op.attrs()

    def ints(name):
        return int_list(attrs[name], c.op) if name in attrs else (1,) * rank

    window = ints("window_dimensions")
    padding = tuple(tuple(int(x) for x in row) for row in dense_array(attrs["padding"], c.op)) \
        if "padding" in attrs else ((0, 0),) * rank
    kind = region_kind(c.op.regions[0], c.op)
    strides, base, dilation = ints("window_strides"), ints("base_dilations"), ints("window_dilations")
    axis = _cumulative_axis(operand.type.shape, window, strides, base, dilation, padding)
    if axis is not None and kind in _CUMULATIVE and identity_of(c.b, init, kind):
        axis, reverse = axis
        return c.b.emit(_CUMULATIVE[kind], [operand], {"axis": axis, "reverse": reverse})
    if kind not in ("sum", "max", "min"):
        c.op.fail(f"reduces windows with {kind}; meshjit has reduce_window_sum, _max and _min")
    new = {"window_dimensions": window, "window_strides": strides, "padding": padding,
           "base_dilation": base, "window_dilation": dilation}
    return c.b.emit(f"reduce_window_{kind}", [operand, init], new)


def _cumulative_axis(shape, window, strides, base, dilation, padding):
    """(axis, reverse) when the window is a prefix (or suffix) scan along one axis, else None."""
    if any(value != 1 for value in tuple(strides) + tuple(base) + tuple(dilation)):
        return None
    long = [axis for axis, size in enumerate(window) if size != 1]
    if len(long) != 1:
        return None
    axis = long[0]
    size = shape[axis]
    if window[axis] != size or any(pad != (0, 0) for index, pad in enumerate(padding) if index != axis):
        return None
    if padding[axis] == (size - 1, 0):
        return axis, False
    if padding[axis] == (0, size - 1):
        return axis, True
    return None
