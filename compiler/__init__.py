"""meshjit.compiler: tracing, sharding propagation, partitioning and lowering."""
