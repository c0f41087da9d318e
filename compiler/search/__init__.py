"""The automatic sharding search (AUTO): candidate shardings scored by propagating, partitioning
and costing each one; it runs before propagation and is built on the stages after it."""
