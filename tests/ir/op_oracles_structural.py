"""Independent oracles of the structural ops (layout, contraction, reductions, scans, sort,
gather), computed element by element from each op's definition."""

from __future__ import annotations

import math

import numpy as np
from op_oracles import NUMPY_DTYPES, build, kind, maximum, minimum, to_array

INFINITY = math.inf


# --- structural ops --------------------------------------------------------------------------


def element_of(array: np.ndarray, index):
    return array[tuple(index)].item()


def reshape_to(shape_of):
    """reshape/squeeze/expand_dims: the row-major elements under the shape ``shape_of`` gives."""

    def oracle(attrs, x):
        return (to_array(x.ravel(order="C").tolist(), shape_of(attrs, x), x.dtype),)

    return oracle


def broadcast_in_dim(attrs, x):
    dims = attrs["broadcast_dimensions"]

    def element(index):
        return element_of(x, [0 if x.shape[i] == 1 else index[dim] for i, dim in enumerate(dims)])

    return (build(attrs["shape"], x.dtype, element),)


def transpose(attrs, x):
    permutation = attrs["permutation"]

    def element(index):
        source = [0] * x.ndim
        for position, dim in enumerate(permutation):
            source[dim] = index[position]
        return element_of(x, source)

    return (build([x.shape[dim] for dim in permutation], x.dtype, element),)


def slice_(attrs, x):
    starts, limits, strides = attrs["start_indices"], attrs["limit_indices"], attrs["strides"]
    shape = [
        len(range(start, limit, stride)) for start, limit, stride in zip(starts, limits, strides)
    ]
    return (
        build(
            shape,
            x.dtype,
            lambda i: element_of(x, [s + k * t for s, k, t in zip(starts, i, strides)]),
        ),
    )


def clamp_start(start, size, length):
    return min(max(int(start), 0), size - length)


def dynamic_slice(attrs, x, *starts):
    sizes = attrs["slice_sizes"]
    origin = [
        clamp_start(start, size, length) for start, size, length in zip(starts, x.shape, sizes)
    ]
    return (build(sizes, x.dtype, lambda i: element_of(x, [o + k for o, k in zip(origin, i)])),)


def dynamic_update_slice(attrs, x, update, *starts):
    origin = [
        clamp_start(start, size, length)
        for start, size, length in zip(starts, x.shape, update.shape)
    ]

    def element(index):
        offset = [k - o for k, o in zip(index, origin)]
        if all(0 <= k < length for k, length in zip(offset, update.shape)):
            return element_of(update, offset)
        return element_of(x, index)

    return (build(x.shape, x.dtype, element),)


def pad(attrs, x, padding_value):
    config = attrs["padding_config"]
    shape = [
        low + high + size + max(size - 1, 0) * interior
        for size, (low, high, interior) in zip(x.shape, config)
    ]

    def element(index):
        source = []
        for k, size, (low, _, interior) in zip(index, x.shape, config):
            position, offset = divmod(k - low, interior + 1)
            if k - low < 0 or offset or position >= size:
                return padding_value.item()
            source.append(position)
        return element_of(x, source)

    return (build(shape, x.dtype, element),)


def concatenate(attrs, *arrays):
    dimension = attrs["dimension"]
    shape = list(arrays[0].shape)
    shape[dimension] = sum(array.shape[dimension] for array in arrays)

    def element(index):
        position = index[dimension]
        for array in arrays:
            if position < array.shape[dimension]:
                return element_of(array, index[:dimension] + (position,) + index[dimension + 1 :])
            position -= array.shape[dimension]
        raise AssertionError("index beyond the concatenation")

    return (build(shape, arrays[0].dtype, element),)


def rev(attrs, x):
    dims = attrs["dimensions"]
    return (
        build(
            x.shape,
            x.dtype,
            lambda i: element_of(
                x, [x.shape[d] - 1 - k if d in dims else k for d, k in enumerate(i)]
            ),
        ),
    )


def dot_general(attrs, lhs, rhs):
    (lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch) = (
        attrs["contracting_dims"],
        attrs["batch_dims"],
    )
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    lhs_letters = [next(letters) for _ in range(lhs.ndim)]
    rhs_letters = [next(letters) for _ in range(rhs.ndim)]
    for lhs_dim, rhs_dim in zip(lhs_contracting + lhs_batch, rhs_contracting + rhs_batch):
        rhs_letters[rhs_dim] = lhs_letters[lhs_dim]
    lhs_free = [lhs_letters[d] for d in range(lhs.ndim) if d not in lhs_contracting + lhs_batch]
    rhs_free = [rhs_letters[d] for d in range(rhs.ndim) if d not in rhs_contracting + rhs_batch]
    output = [lhs_letters[d] for d in lhs_batch] + lhs_free + rhs_free
    result_dtype = NUMPY_DTYPES.get(attrs.get("preferred_element_type"), lhs.dtype)
    work = np.float64 if kind(result_dtype) == "f" else np.int64
    subscripts = f"{''.join(lhs_letters)},{''.join(rhs_letters)}->{''.join(output)}"
    with np.errstate(all="ignore"):
        product = np.einsum(subscripts, lhs.astype(work), rhs.astype(work))
    return (to_array(product.ravel().tolist(), product.shape, result_dtype),)


# --- reductions, scans, sort, gather ---------------------------------------------------------


def lines(x: np.ndarray, axes):
    """(index over the kept dims, the Python list of elements over ``axes``) for every index."""
    kept = [dim for dim in range(x.ndim) if dim not in axes]
    moved = np.transpose(x, kept + list(axes))
    kept_shape = [x.shape[dim] for dim in kept]
    for index in np.ndindex(*kept_shape):
        yield index, moved[index].ravel().tolist()


def has_nan(values) -> bool:
    return any(isinstance(value, float) and math.isnan(value) for value in values)


def float_sum(values):
    try:
        return math.fsum(values)
    except ValueError:  # inf + -inf
        return math.nan


def extreme(pick, integer_identity, float_identity):
    def combine(values, dtype):
        if has_nan(values):
            return math.nan
        identity = float_identity if kind(dtype) == "f" else integer_identity(np.iinfo(dtype))
        return pick(values, default=identity)

    return combine


def bitwise(operator, identity):
    def combine(values, dtype):
        result = identity
        for value in values:
            result = operator(result, value)
        return bool(result) if dtype.kind == "b" else result

    return combine


REDUCTIONS = {
    "reduce_sum": lambda values, dtype: float_sum(values) if kind(dtype) == "f" else sum(values),
    "reduce_prod": lambda values, dtype: math.prod(values, start=1.0 if kind(dtype) == "f" else 1),
    "reduce_max": extreme(max, lambda info: info.min, -INFINITY),
    "reduce_min": extreme(min, lambda info: info.max, INFINITY),
    "reduce_and": bitwise(lambda a, b: a & b, -1),
    "reduce_or": bitwise(lambda a, b: a | b, 0),
}


def reduction(name):
    def oracle(attrs, x):
        axes = attrs["axes"]
        shape = [size for dim, size in enumerate(x.shape) if dim not in axes]
        values = [REDUCTIONS[name](values, x.dtype) for _, values in lines(x, axes)]
        return (to_array(values, shape, x.dtype),)

    return oracle


def arg_reduction(pick):
    def oracle(attrs, x):
        axis = attrs["axis"]
        shape = [size for dim, size in enumerate(x.shape) if dim != axis]
        indices = []
        for _, values in lines(x, (axis,)):
            nans = [
                i
                for i, value in enumerate(values)
                if isinstance(value, float) and math.isnan(value)
            ]
            indices.append(nans[0] if nans else values.index(pick(values)))
        return (to_array(indices, shape, NUMPY_DTYPES[attrs["index_dtype"]]),)

    return oracle


def scan(step):
    def oracle(attrs, x):
        axis, reverse = attrs["axis"], attrs["reverse"]
        result = np.empty_like(x)
        moved_result = np.moveaxis(result, axis, -1)
        for index, values in lines(x, (axis,)):
            ordered = values[::-1] if reverse else values
            running, accumulated = None, []
            for value in ordered:
                running = value if running is None else step(running, value)
                accumulated.append(running)
            accumulated = accumulated[::-1] if reverse else accumulated
            moved_result[index] = to_array(accumulated, (len(accumulated),), x.dtype)
        return (result,)

    return oracle


SCAN_STEPS = {
    "cumsum": lambda a, b: a + b,
    "cumprod": lambda a, b: a * b,
    "cummax": maximum,
    "cummin": minimum,
}


def sort(attrs, *arrays):
    dimension, keys = attrs["dimension"], arrays[: attrs["num_keys"]]

    def sort_key(value):
        # NaNs sort last; -0.0 == 0.0 in Python, so they tie and keep their order.
        return (1, 0.0) if isinstance(value, float) and math.isnan(value) else (0, value)

    results = [np.empty_like(array) for array in arrays]
    key_lines = [dict(lines(key, (dimension,))) for key in keys]
    for index, _ in lines(arrays[0], (dimension,)):
        columns = [key_line[index] for key_line in key_lines]
        order = sorted(range(len(columns[0])), key=lambda i: tuple(sort_key(c[i]) for c in columns))
        for array, result in zip(arrays, results):
            line = np.moveaxis(array, dimension, -1)[index]
            np.moveaxis(result, dimension, -1)[index] = line[order]
    return tuple(results)


def _window_start(attrs, index_map, batching, indices, batch, operand_shape, window):
    """The clamped start of the window batch position ``batch`` picks, and whether it fits."""
    start = [0] * len(operand_shape)
    for component, dim in enumerate(index_map):
        start[dim] = int(indices[tuple(batch) + (component,)])
    for operand_dim, index_dim in batching:
        start[operand_dim] = batch[index_dim]
    fits = all(0 <= s <= size - w for s, size, w in zip(start, operand_shape, window))
    clamped = [min(max(s, 0), size - w) for s, size, w in zip(start, operand_shape, window)]
    return clamped, fits


def gather(attrs, x, indices):
    """Element by element from XLA's definition: a result index splits into batch dims (an
    index vector's position) and offset dims (a position inside the window)."""
    sizes, offset_dims = attrs["slice_sizes"], attrs["offset_dims"]
    dropped = set(attrs["collapsed_slice_dims"]) | set(attrs["operand_batching_dims"])
    kept = [dim for dim in range(x.ndim) if dim not in dropped]
    rank = len(offset_dims) + indices.ndim - 1
    batch_dims = [dim for dim in range(rank) if dim not in offset_dims]
    shape = [0] * rank
    for position, size in zip(batch_dims, indices.shape[:-1]):
        shape[position] = size
    for position, dim in zip(offset_dims, kept):
        shape[position] = sizes[dim]
    batching = list(zip(attrs["operand_batching_dims"], attrs["start_indices_batching_dims"]))
    # NaN, True, the most negative signed value, the largest unsigned value (as JAX)
    bits = x.dtype.itemsize * 8
    fill = attrs.get("fill_value", {"f": math.nan, "b": True, "u": 2**bits - 1}.get(kind(x.dtype), -(2 ** (bits - 1))))

    def element(index):
        batch = [index[dim] for dim in batch_dims]
        start, fits = _window_start(attrs, attrs["start_index_map"], batching, indices, batch, x.shape, sizes)
        if attrs["mode"] == "fill" and not fits:
            return fill
        position = list(start)
        for dim, result_dim in zip(kept, offset_dims):
            position[dim] += index[result_dim]
        return element_of(x, position)

    return (build(tuple(shape), x.dtype, element),)


def scatter(combine):
    """A scatter oracle: walk the updates in row-major order, writing each element into the
    operand position it names, combined by ``combine(old, new)``."""

    def oracle(attrs, x, indices, updates):
        window_dims = attrs["update_window_dims"]
        dropped = set(attrs["inserted_window_dims"]) | set(attrs["operand_batching_dims"])
        kept = [dim for dim in range(x.ndim) if dim not in dropped]
        scatter_dims = [dim for dim in range(updates.ndim) if dim not in window_dims]
        window = [1] * x.ndim
        for dim, update_dim in zip(kept, window_dims):
            window[dim] = updates.shape[update_dim]
        batching = list(zip(attrs["operand_batching_dims"], attrs["scatter_indices_batching_dims"]))
        result = x.copy()
        for index in np.ndindex(updates.shape):
            batch = [index[dim] for dim in scatter_dims]
            start, fits = _window_start(attrs, attrs["scatter_dims_to_operand_dims"], batching, indices, batch,
                                        x.shape, window)
            if attrs["mode"] == "fill" and not fits:
                continue
            position = list(start)
            for dim, update_dim in zip(kept, window_dims):
                position[dim] += index[update_dim]
            with np.errstate(all="ignore"):
                result[tuple(position)] = combine(result[tuple(position)], updates[index])
        return (result,)

    return oracle


SCATTER_COMBINE = {
    # numpy scalars in, so that int sums wrap as the op's do; min and max see Python numbers
    "scatter": lambda old, new: new,
    "scatter_add": lambda old, new: old | new if isinstance(old, np.bool_) else old + new,
    "scatter_mul": lambda old, new: old & new if isinstance(old, np.bool_) else old * new,
    "scatter_min": lambda old, new: minimum(old.item(), new.item()),
    "scatter_max": lambda old, new: maximum(old.item(), new.item()),
}


def _dilated_value(x, position, dims, dilation, padding, fill):
    """The element at ``position`` of ``x`` dilated and padded along ``dims`` (fill elsewhere)."""
    index = list(position)
    for dim, step, (low, _) in zip(dims, dilation, padding):
        offset = position[dim] - low
        if offset < 0 or offset % step or offset // step >= x.shape[dim]:
            return fill
        index[dim] = offset // step
    return x[tuple(index)]


def conv_general_dilated(attrs, lhs, rhs):
    """Element by element: each output sums input times kernel over its window, per group
    (the 16-bit floats in float64, rounded once)."""
    if lhs.dtype in (NUMPY_DTYPES["f16"], NUMPY_DTYPES["bf16"]):
        (wide,) = conv_general_dilated(attrs, lhs.astype(np.float64), rhs.astype(np.float64))
        return (wide.astype(lhs.dtype),)
    lhs_spec, rhs_spec, out_spec = attrs["lhs_spec"], attrs["rhs_spec"], attrs["out_spec"]
    spatial = len(lhs_spec) - 2
    groups, batch_groups = attrs["feature_group_count"], attrs["batch_group_count"]
    out_features, in_features = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    sizes = []
    for index in range(spatial):
        size = (lhs.shape[lhs_spec[2 + index]] - 1) * attrs["lhs_dilation"][index] + 1 + sum(attrs["padding"][index])
        kernel = (rhs.shape[rhs_spec[2 + index]] - 1) * attrs["rhs_dilation"][index] + 1
        sizes.append(max((size - kernel) // attrs["window_strides"][index] + 1, 0) if size >= kernel else 0)
    shape = [0] * len(lhs_spec)
    shape[out_spec[0]], shape[out_spec[1]] = lhs.shape[lhs_spec[0]] // batch_groups, out_features
    for index, size in enumerate(sizes):
        shape[out_spec[2 + index]] = size
    lhs_dims = list(lhs_spec[2:])

    def element(index):
        batch, feature = index[out_spec[0]], index[out_spec[1]]
        group_size = out_features // max(groups, batch_groups)
        group = feature // group_size
        total = 0
        for kernel_index in np.ndindex(*(rhs.shape[dim] for dim in rhs_spec[2:])):
            for channel in range(in_features):
                position = [0] * lhs.ndim
                position[lhs_spec[0]] = batch + (group * shape[out_spec[0]] if batch_groups > 1 else 0)
                position[lhs_spec[1]] = channel + (group * in_features if groups > 1 else 0)
                for s in range(spatial):
                    position[lhs_spec[2 + s]] = (index[out_spec[2 + s]] * attrs["window_strides"][s]
                                                 + kernel_index[s] * attrs["rhs_dilation"][s])
                value = _dilated_value(lhs, position, lhs_dims, attrs["lhs_dilation"], attrs["padding"], 0)
                weight = [0] * rhs.ndim
                weight[rhs_spec[0]], weight[rhs_spec[1]] = feature, channel
                for s in range(spatial):
                    weight[rhs_spec[2 + s]] = kernel_index[s]
                with np.errstate(all="ignore"):
                    total = total + value * rhs[tuple(weight)]
        return total

    return (build(tuple(shape), lhs.dtype, element),)


def reduce_window(combine):
    def oracle(attrs, x, init):
        dims = list(range(x.ndim))
        sizes = []
        for dim in dims:
            size = (x.shape[dim] - 1) * attrs["base_dilation"][dim] + 1 + sum(attrs["padding"][dim]) if x.shape[dim] \
                else sum(attrs["padding"][dim])
            window = (attrs["window_dimensions"][dim] - 1) * attrs["window_dilation"][dim] + 1
            sizes.append(max((size - window) // attrs["window_strides"][dim] + 1, 0) if size >= window else 0)

        def element(index):
            result = init.item()
            for offsets in np.ndindex(*attrs["window_dimensions"]):
                position = [index[dim] * attrs["window_strides"][dim] + offsets[dim] * attrs["window_dilation"][dim]
                            for dim in dims]
                value = _dilated_value(x, position, dims, attrs["base_dilation"], attrs["padding"], init)
                result = combine(result, value.item())
            return result

        return (build(tuple(sizes), x.dtype, element),)

    return oracle


def top_k(attrs, x):
    """Per row of the last dim: positions ranked by value (NaN largest), ties by position."""
    k = attrs["k"]
    values = np.empty(x.shape[:-1] + (k,), x.dtype)
    indices = np.empty(x.shape[:-1] + (k,), np.int32)
    for row in np.ndindex(*x.shape[:-1]):
        line = [element.item() for element in x[row]]
        ranked = sorted(range(len(line)), key=lambda i: (0 if math.isnan(line[i]) else 1, -line[i]
                                                        if not math.isnan(line[i]) else 0, i))
        for position, index in enumerate(ranked[:k]):
            values[row + (position,)] = line[index]
            indices[row + (position,)] = index
    return values, indices
