"""Exception types with JAX's names, for code that catches them."""


class DuplicateSpecError(Exception):
    """A mesh axis appears more than once in a PartitionSpec."""


class IndivisibleError(ValueError):
    """An array dim does not divide evenly by the number of shards its sharding asks for."""
