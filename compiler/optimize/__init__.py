"""Stage 4, optimisation of the per-device module: common subexpressions, dead code, chained
collectives."""
