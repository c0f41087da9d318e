"""A float sum over a row in an order fixed by construction, as helper source for the kernel
prelude (codegen_math.PRELUDE): ``_lane_sum(values, n)`` adds ``values[:n]`` (a contiguous
float32 or float64 row) in ``LANES`` lanes, element k of the first ``n - n mod LANES`` into lane
k mod LANES, each lane from +0 in column order. Then the lanes are folded by halves (lane j plus
lane j + width/2) down to one, and after each fold to ``width`` lanes, if ``width`` elements or
more are left, the next ``width`` elements are added to them lane by lane: the ``n mod LANES``
tail takes one vector add per set bit of its length, not one scalar add per element.

The lanes are one LLVM vector with no fastmath flags, so LLVM may split it into registers of any
width (eight ``ymm`` on AVX2, four ``zmm`` on AVX-512) but never regroup a sum: every CPU gives
the same bits, and ``tier_reductions.lane_sum`` repeats the order in numpy (the first tier). The
loop vectoriser's reassociated reduction it replaces kept as many partial sums as the vector
width and interleave LLVM picked, which no numpy step could repeat.
"""

from __future__ import annotations

# NOTE: 64 float32 or 32 float64 lanes are 2048 bits: four independent vector adds in flight on
# AVX-512 (eight on AVX2), as many as the reassociated loop it replaced interleaved; 32/16 lanes
# (two chains) measured 1.1-1.2x slower on 4096-column rows
LANES = {"f32": 64, "f64": 32}

LANE_SUM = '''
if numba.config.DISABLE_JIT:
    def _lane_sum(values, n):
        lanes = 64 if values.dtype == np.float32 else 32
        position = n - n % lanes
        acc = np.zeros(lanes, values.dtype)
        for k in range(0, position, lanes):
            acc = acc + values[k:k + lanes]
        width = lanes
        while width > 1:
            width //= 2
            acc = acc[:width] + acc[width:]
            if n - position >= width:
                acc = acc + values[position:position + width]
                position += width
        return acc[0]
else:
    @_intrinsic
    def _lane_sum(typingctx, values, n):
        if not (isinstance(values, numba.types.Array) and values.ndim == 1 and values.layout == "C"
                and values.dtype in (numba.types.float32, numba.types.float64)
                and isinstance(n, numba.types.Integer)):
            return None
        dtype = values.dtype
        lanes = 64 if dtype == numba.types.float32 else 32

        def codegen(context, builder, signature, arguments):
            i64, i32 = _llvm_ir.IntType(64), _llvm_ir.IntType(32)
            data = context.make_array(signature.args[0])(context, builder, arguments[0]).data
            n = context.cast(builder, arguments[1], signature.args[1], numba.types.int64)
            scalar = context.get_value_type(dtype)
            vector = _llvm_ir.VectorType(scalar, lanes)
            whole = builder.and_(n, _llvm_ir.Constant(i64, -lanes))
            entry = builder.block
            head, body, fold = (builder.function.append_basic_block(f"lanes.{name}") for name in ("head", "body", "fold"))
            builder.branch(head)
            builder.position_at_end(head)
            k, acc = builder.phi(i64), builder.phi(vector)
            k.add_incoming(_llvm_ir.Constant(i64, 0), entry)
            acc.add_incoming(_llvm_ir.Constant(vector, [0.0] * lanes), entry)
            builder.cbranch(builder.icmp_signed("<", k, whole), body, fold)
            builder.position_at_end(body)
            loaded = builder.load(builder.bitcast(builder.gep(data, [k]), vector.as_pointer()), align=1)
            k.add_incoming(builder.add(k, _llvm_ir.Constant(i64, lanes)), body)
            acc.add_incoming(builder.fadd(acc, loaded), body)
            builder.branch(head)
            builder.position_at_end(fold)
            current, position, width = acc, whole, lanes
            while width > 1:
                width //= 2
                halves = [builder.shuffle_vector(current, current, _llvm_ir.Constant(
                    _llvm_ir.VectorType(i32, width), list(range(start, start + width)))) for start in (0, width)]
                current = builder.fadd(*halves)
                step = _llvm_ir.Constant(i64, width)
                before = builder.block
                add, joined = (builder.function.append_basic_block(f"lanes.{name}{width}") for name in ("add", "join"))
                builder.cbranch(builder.icmp_signed(">=", builder.sub(n, position), step), add, joined)
                builder.position_at_end(add)
                block = _llvm_ir.VectorType(scalar, width)
                added = builder.fadd(current, builder.load(builder.bitcast(builder.gep(data, [position]),
                                                                           block.as_pointer()), align=1))
                advanced = builder.add(position, step)
                builder.branch(joined)
                builder.position_at_end(joined)
                merged, moved = builder.phi(block), builder.phi(i64)
                merged.add_incoming(current, before)
                merged.add_incoming(added, add)
                moved.add_incoming(position, before)
                moved.add_incoming(advanced, add)
                current, position = merged, moved
            return builder.extract_element(current, _llvm_ir.Constant(i32, 0))

        return dtype(values, n), codegen
'''

# an empty asm statement taking ``value``: what keeps a reduction LLVM would delete as unused
# (codegen_reductions: the interleaving hint); a definition of its own (no ``if`` at the top
# level), so only the kernels calling it have it in their digest (kernel_digest.py)
KEEP_ALIVE = '''

def _keep_alive_helper():
    if numba.config.DISABLE_JIT:
        return lambda value: None

    @_intrinsic
    def keep_alive(typingctx, value):
        if not isinstance(value, numba.types.Float):
            return None

        def codegen(context, builder, signature, arguments):
            builder.asm(_llvm_ir.FunctionType(_llvm_ir.VoidType(), [arguments[0].type]), "", "r", arguments,
                        side_effect=True)
            return context.get_dummy_value()

        return numba.types.void(value), codegen

    return keep_alive


_keep_alive = _keep_alive_helper()
'''
