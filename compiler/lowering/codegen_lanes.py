"""A float sum over a row in an order fixed by construction, as helper source for the kernel
prelude (codegen_math.PRELUDE): ``_lane_sum(values, n)`` adds ``values[:n]`` (a contiguous
float32 or float64 row) in ``LANES`` lanes, element k into lane k mod LANES, each lane from +0
in column order; then halves of the lanes are added (lane j + lane j + width/2) down to one
lane, and the ``n mod LANES`` tail elements are added to it one after another.

The lanes are one LLVM vector with no fastmath flags, so LLVM may split it into registers of any
width (two ``ymm`` on AVX2, one ``zmm`` on AVX-512) but never regroup a sum: every CPU gives the
same bits, and ``tier_reductions.lane_sum`` repeats the order in numpy (the first tier). The
loop vectoriser's reassociated reduction it replaces kept as many partial sums as the vector
width and interleave LLVM picked, which no numpy step could repeat.
"""

from __future__ import annotations

# NOTE: 32 float32 or 16 float64 lanes are 1024 bits: four independent vector adds in flight on
# AVX2, two on AVX-512, enough to hide the add latency on rows of a few hundred columns
LANES = {"f32": 32, "f64": 16}

LANE_SUM = '''
if numba.config.DISABLE_JIT:
    def _lane_sum(values, n):
        lanes = 32 if values.dtype == np.float32 else 16
        whole = n - n % lanes
        acc = np.zeros(lanes, values.dtype)
        for k in range(0, whole, lanes):
            acc = acc + values[k:k + lanes]
        width = lanes
        while width > 1:
            width //= 2
            acc = acc[:width] + acc[width:]
        total = acc[0]
        for j in range(whole, n):
            total = total + values[j]
        return total
else:
    @_intrinsic
    def _lane_sum(typingctx, values, n):
        if not (isinstance(values, numba.types.Array) and values.ndim == 1 and values.layout == "C"
                and values.dtype in (numba.types.float32, numba.types.float64)
                and isinstance(n, numba.types.Integer)):
            return None
        dtype = values.dtype
        lanes = 32 if dtype == numba.types.float32 else 16

        def codegen(context, builder, signature, arguments):
            i64, i32 = _llvm_ir.IntType(64), _llvm_ir.IntType(32)
            data = context.make_array(signature.args[0])(context, builder, arguments[0]).data
            n = context.cast(builder, arguments[1], signature.args[1], numba.types.int64)
            scalar = context.get_value_type(dtype)
            vector = _llvm_ir.VectorType(scalar, lanes)
            whole = builder.and_(n, _llvm_ir.Constant(i64, -lanes))
            entry = builder.block
            blocks = [builder.function.append_basic_block(f"lanes.{name}")
                      for name in ("head", "body", "fold", "tail_head", "tail_body", "done")]
            head, body, fold, tail_head, tail_body, done = blocks
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
            current, width = acc, lanes
            while width > 1:
                width //= 2
                halves = [builder.shuffle_vector(current, current, _llvm_ir.Constant(
                    _llvm_ir.VectorType(i32, width), list(range(start, start + width)))) for start in (0, width)]
                current = builder.fadd(*halves)
            folded = builder.extract_element(current, _llvm_ir.Constant(i32, 0))
            builder.branch(tail_head)
            builder.position_at_end(tail_head)
            j, total = builder.phi(i64), builder.phi(scalar)
            j.add_incoming(whole, fold)
            total.add_incoming(folded, fold)
            builder.cbranch(builder.icmp_signed("<", j, n), tail_body, done)
            builder.position_at_end(tail_body)
            j.add_incoming(builder.add(j, _llvm_ir.Constant(i64, 1)), tail_body)
            total.add_incoming(builder.fadd(total, builder.load(builder.gep(data, [j]))), tail_body)
            builder.branch(tail_head)
            builder.position_at_end(done)
            return total

        return dtype(values, n), codegen
'''
