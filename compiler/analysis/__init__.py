"""Shared analyses of a module that every stage may use: static cost (flops, bytes, the alpha-beta
time model), peak per-device memory, and the collectives a per-device module sends."""
