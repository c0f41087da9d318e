"""The compiler's rules for ``fft``: the batch dims (all but the trailing transform dims) pass
through, sharded or not; every transform dim needs the whole dim, so a sharded one is gathered
before the op (the partitioner's all_gather) and never otherwise. Kernels call numpy.fft over
the trailing dims of the stacked device buffers. The transform is linear: its JVP is itself,
and its transposes are transforms again (FFT's is FFT, IFFT's is IFFT, RFFT's and IRFFT's are
worked out below from the DFT's symmetry).
"""

from __future__ import annotations

import math

import numpy as np
from meshjit.ir import Op
from meshjit.ir.dtypes import to_numpy
from meshjit.ir.ops.fft import transform

from ..frontend import lax_complex
from ..frontend import lax_ops as lax
from ..frontend.autodiff.jvp import linear_jvp
from ..frontend.autodiff.registries import single, type_of
from ..frontend.vmap.batching import at_front
from ..sharding.factor_rules import FactorRule, joined, letters
from ..tables import (
    batching_rules,
    factor_rule,
    jvp_rules,
    kernel_rules,
    sharding_rules,
    sharding_type_rules,
    transpose_rules,
    typed,
    unreduced_not_implemented,
)

# --- sharding ------------------------------------------------------------------------------------


@sharding_rules.register("fft")
def _fft(op: Op) -> FactorRule:
    # batch dims share factors with the result; each transform dim is a replication factor,
    # the last one on each side apart (RFFT and IRFFT change its size)
    rank, count = op.operands[0].type.rank, len(op.attrs["fft_lengths"])
    names = letters(rank + 1)
    operand = names[:rank]
    result = names[:rank - 1] + [names[rank]]
    kinds = {name: "replication" for name in names[rank - count:]}
    return factor_rule(op, f"{joined(operand)} -> {joined(result)}", kinds)


@sharding_type_rules.register("fft")
def _fft_type(op: Op, operands, mesh) -> list:
    """As JAX, the result keeps the operand's sharding type, transform dims included (the
    partitioner gathers a split transform dim and slices the result back)."""
    unreduced_not_implemented(op, operands)
    (operand,) = operands
    shape = op.result.type.shape
    last = operand.dims[-1] if operand.dims else ()
    count = math.prod(mesh.shape[axis] for axis in last)
    if last and shape[-1] % count:
        raise ValueError(
            f"Sharding spec {last!r} implies that array axis {len(shape) - 1} is partitioned {count} times, but "
            f"does not evenly divide the dimension size {shape[-1]}. Got shape: {shape}")
    return typed(mesh, [operand.dims], reduced=operand.reduced)


# --- kernel --------------------------------------------------------------------------------------


@kernel_rules.register("fft")
def _fft_kernel(op: Op, lead: int):
    # the leading mesh dims of the buffers are batch dims to numpy.fft, like the op's own
    fft_type, lengths = op.attrs["fft_type"], tuple(op.attrs["fft_lengths"])
    dtype = to_numpy(op.result.type.dtype)
    return lambda operand: (transform(fft_type, lengths, operand, dtype),)


# --- autodiff ------------------------------------------------------------------------------------

jvp_rules.register("fft")(linear_jvp)


def _fft(operand, fft_type: str, lengths) -> object:
    return single("fft", [operand], {"fft_type": fft_type, "fft_lengths": tuple(lengths)})


@transpose_rules.register("fft")
def _fft_transpose(op, cotangents, operands):
    fft_type, lengths = op.attrs["fft_type"], tuple(op.attrs["fft_lengths"])
    cotangent = cotangents[0]
    if fft_type in ("FFT", "IFFT"):
        # the DFT matrix is symmetric, so the transform is its own transpose
        return [_fft(cotangent, fft_type, lengths)]
    if fft_type == "RFFT":
        return [_rfft_transpose(cotangent, lengths)]
    return [_irfft_transpose(cotangent, lengths, type_of(operands[0]).dtype)]


def _rfft_transpose(cotangent, lengths):
    # RFFT is FFT of the real input, cut to its first n // 2 + 1 frequencies: the transpose pads
    # the cotangent back to n frequencies with zeros, transforms it (FFT is symmetric) and takes
    # the real part (the transpose of making a real number complex)
    value_type = type_of(cotangent)
    padding = [(0, 0, 0)] * (value_type.rank - 1) + [(0, lengths[-1] - value_type.shape[-1], 0)]
    padded = lax.pad(cotangent, np.zeros((), to_numpy(value_type.dtype)), padding)
    return lax_complex.real(_fft(padded, "FFT", lengths))


def _irfft_transpose(cotangent, lengths, complex_dtype: str):
    # IRFFT(y) = (1/N) Re(sum over the full spectrum), in which every frequency of y strictly
    # between 0 and the Nyquist one also stands for its conjugate mirror image: the transpose is
    # the RFFT of the cotangent, those frequencies counted twice, scaled by 1/N and conjugated
    # (JAX's convention: transposes never conjugate, so the conjugation here is the map's own)
    spectrum = _fft(cotangent, "RFFT", lengths)
    spectrum_type = type_of(spectrum)
    size = spectrum_type.shape[-1]
    mirrored = size - 1 if lengths[-1] % 2 else size - 2
    weights = np.array([1.0] + [2.0] * mirrored + [1.0] * (size - 1 - mirrored)) / math.prod(lengths)
    weights = lax.broadcast_in_dim(weights.astype(to_numpy(complex_dtype)), spectrum_type.shape,
                                   (spectrum_type.rank - 1,))
    return lax_complex.conj(lax.mul(spectrum, weights))


# --- vmap ----------------------------------------------------------------------------------------


@batching_rules.register("fft")
def _fft_batch(op: Op, operands, dims, size):
    # the transform dims are the trailing ones, so a batch dim in front is one more batch dim
    operand = at_front(operands[0], dims[0], size)
    return [_fft(operand, op.attrs["fft_type"], op.attrs["fft_lengths"])], [0]
