"""Output shapes of convolutions, transposed convolutions and window reductions (what stax's
``init_fun``s report), and the transposed convolution itself as a dilated convolution."""

from __future__ import annotations

import math

from .. import lax


def _strided(size, window, stride):
    """Number of windows of ``window`` placed every ``stride`` in ``size`` (0 if none fits)."""
    return 0 if size < window else (size - window) // stride + 1


def _spatial_chars(spec, pair):
    return [c for c in spec if c not in pair]


def _by_char(lhs_shape, rhs_shape, dimension_numbers):
    """(batch, in-channels, out-channels, lhs spatial sizes, rhs spatial sizes, spatial chars)."""
    lhs_spec, rhs_spec, _ = dimension_numbers
    chars = _spatial_chars(lhs_spec, "NC")
    lhs_sp = [lhs_shape[lhs_spec.index(c)] for c in chars]
    rhs_sp = [rhs_shape[rhs_spec.index(c)] for c in chars]
    return (lhs_shape[lhs_spec.index("N")], rhs_shape[rhs_spec.index("O")], lhs_sp, rhs_sp, chars)


def _assemble(out_spec, batch, channels, spatial, chars):
    sizes = dict(zip(chars, spatial, strict=True), N=batch, C=channels)
    return tuple(int(sizes[c]) for c in out_spec)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_general_dilated`` (no dilation) in ``dimension_numbers``."""
    batch, out_ch, lhs_sp, rhs_sp, chars = _by_char(lhs_shape, rhs_shape, dimension_numbers)
    if isinstance(padding, str):
        padding = lax.padtype_to_pads(lhs_sp, rhs_sp, window_strides, padding)
    spatial = [_strided(n + lo + hi, k, s)
               for n, (lo, hi), k, s in zip(lhs_sp, padding, rhs_sp, window_strides, strict=True)]
    return _assemble(dimension_numbers[2], batch, out_ch, spatial, chars)


def transpose_padding(k, s, padding):
    """(before, after) padding of the dilated convolution that transposes a forward convolution
    with kernel size ``k``, stride ``s`` and ``padding`` ('SAME', 'VALID' or a (lo, hi) pair)."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else math.ceil(total / 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        before, after = (k - p - 1 for p in padding)
        total = before + after
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return before, total - before


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_transpose`` in ``dimension_numbers``."""
    batch, out_ch, lhs_sp, rhs_sp, chars = _by_char(lhs_shape, rhs_shape, dimension_numbers)
    if isinstance(padding, str):
        padding = [transpose_padding(k, s, padding) for k, s in zip(rhs_sp, window_strides)]
    spatial = [(n - 1) * s - k + 2 + sum(p)
               for n, k, s, p in zip(lhs_sp, rhs_sp, window_strides, padding, strict=True)]
    return _assemble(dimension_numbers[2], batch, out_ch, spatial, chars)


def conv_transpose(lhs, rhs, strides, padding, dimension_numbers):
    """The transposed convolution (no kernel flip): a unit-stride convolution of ``lhs`` dilated
    by ``strides``, padded as ``transpose_padding`` says."""
    _, _, _, rhs_sp, _ = _by_char(lhs.shape, rhs.shape, dimension_numbers)
    paddings = [padding] * len(strides) if isinstance(padding, str) else padding
    pads = [transpose_padding(k, s, p) for k, s, p in zip(rhs_sp, strides, paddings, strict=True)]
    return lax.conv_general_dilated(lhs, rhs, (1,) * len(strides), pads, lhs_dilation=strides,
                                    dimension_numbers=dimension_numbers)


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding):
    """The output shape of ``reduce_window`` with explicit ``(lo, hi)`` ``padding``."""
    return tuple(_strided(n + lo + hi, w, s) for n, w, s, (lo, hi)
                 in zip(operand_shape, window_dimensions, window_strides, padding, strict=True))
