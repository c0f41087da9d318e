"""Stage 3, partitioning: turn the propagated global module into one per-device module, op by op,
with reshards lowered to collectives (the generic factor partitioner and the per-op plans)."""
