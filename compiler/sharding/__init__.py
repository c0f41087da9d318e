"""Shared sharding vocabulary every stage may use: factor rules and their projection onto mesh
axes, explicit-mode sharding types, the partial-sum algebra and sharding provenance."""
