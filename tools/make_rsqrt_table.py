"""Write ir/rsqrt_table.py: the x86 ``rsqrtss`` estimate XLA's CPU code
starts its float32 rsqrt from, read off this CPU (Intel's; AMD's differ). For a positive normal
float the estimate depends only on the parity of the exponent and the top 10 mantissa bits, and
scales with the exponent; the script checks that over every normal float before writing the
1024 estimates for [1, 2) and the 1024 for [2, 4). Run ``python tools/make_rsqrt_table.py``."""

from __future__ import annotations

import pathlib

import numba
import numpy as np
from llvmlite import ir as llvm_ir
from numba import types
from numba.extending import intrinsic

OUT = pathlib.Path(__file__).parents[1] / "ir" / "rsqrt_table.py"


@intrinsic
def _rsqrtss(typingctx, x):
    def codegen(context, builder, signature, arguments):
        vector = llvm_ir.VectorType(llvm_ir.FloatType(), 4)
        name = "llvm.x86.sse.rsqrt.ss"
        function = builder.module.globals.get(name) or llvm_ir.Function(
            builder.module, llvm_ir.FunctionType(vector, [vector]), name=name)
        packed = builder.insert_element(llvm_ir.Constant(vector, None), arguments[0],
                                        llvm_ir.Constant(llvm_ir.IntType(32), 0))
        return builder.extract_element(builder.call(function, [packed]), llvm_ir.Constant(llvm_ir.IntType(32), 0))
    return types.float32(types.float32), codegen


@numba.njit
def _estimates(x):
    out = np.empty_like(x)
    for index in range(x.size):
        out[index] = _rsqrtss(x[index])
    return out


def main() -> None:
    mantissas = np.arange(1 << 23, dtype=np.uint32)
    base = [_estimates(((np.uint32(127 + parity) << 23) | mantissas).view(np.float32)) for parity in (0, 1)]
    for parity in (0, 1):
        top = base[parity][mantissas & ~np.uint32((1 << 13) - 1)]
        assert np.array_equal(top.view(np.uint32), base[parity].view(np.uint32)), "depends on more than 10 bits"
    for biased in range(1, 255):
        exponent = biased - 127
        parity = exponent % 2
        estimates = _estimates(((np.uint32(biased) << 23) | mantissas).view(np.float32))
        expected = base[parity].astype(np.float64) * 2.0 ** (-(exponent - parity) // 2)
        assert np.array_equal(estimates.astype(np.float64), expected), f"exponent {exponent} does not scale"
    words = [base[parity][index << 13].view(np.uint32) for parity in (0, 1) for index in range(1024)]
    rows = [", ".join(f"0x{int(word):08X}" for word in words[start:start + 8]) for start in range(0, 2048, 8)]
    body = "\n".join(f"    {row}," for row in rows)
    OUT.write_text(f'''"""The x86 ``rsqrtss`` estimates (float32 bit patterns) XLA's CPU rsqrt starts from: entry
``1024 * p + i`` for x = 2^p * (1 + i / 1024 + ...), x in [1, 4); other exponents scale by powers
of two. Read off an Intel CPU by tools/make_rsqrt_table.py (AMD's estimates differ)."""

ESTIMATES = (
{body}
)
''')


if __name__ == "__main__":
    main()
