"""Stage 5, lowering: the per-device module becomes a runtime Plan; elementwise chains fuse into
generated Numba kernels, matmuls into BLAS calls, indexing and random ops into their kernels."""
