"""Fusing chains of elementwise ops into single kernels (placeholder-free: no fusion yet means
every op is its own step; the Numba fusion pass replaces this function)."""

from __future__ import annotations


def fuse_elementwise(ops, lead: int):
    return list(ops)
