"""shard_map programs whose ``make_jaxpr`` text meshjit prints as JAX 0.10.2 prints it (typed
variables ``f32[6@i]``, ``{V:i}``, JAX's pvary casts and collective names). ``cases(jax)``
gives (name, mesh shape, axis names, function, arguments) with ``jax`` JAX or meshjit;
``generate_shard_map.py`` runs them under JAX (8 host devices) into ``expected_shard_map.json``."""

import numpy as np


def cases(jax):
    jnp, lax, P = jax.numpy, jax.lax, jax.sharding.PartitionSpec

    def on(spec, shape=(6,)):
        return lambda: (jax.device_put(jnp.arange(float(np.prod(shape))).reshape(shape), P(*spec)),)

    return [
        ("mul_pvary", (2,), ("i",), jax.shard_map(lambda x, y: x * y, in_specs=(P("i"), P()), out_specs=P("i")),
         lambda: (jax.device_put(jnp.arange(6.0), P("i")), jnp.arange(3.0))),
        ("psum_invariant", (2,), ("i",),
         jax.shard_map(lambda a: lax.psum(a.sum(), "i"), in_specs=P("i"), out_specs=P()), on(("i",))),
        ("literal_pvary", (2, 4), ("a", "b"),
         jax.shard_map(lambda a: a + 1.0, in_specs=P("a", "b"), out_specs=P("a", "b")), on(("a", "b"), (4, 8))),
        ("pmax", (2, 4), ("a", "b"),
         jax.shard_map(lambda a: lax.pmax(a, ("a", "b")), in_specs=P("a", "b"), out_specs=P()),
         on(("a", "b"), (4, 8))),
        ("all_gather_no_vma", (2, 4), ("a", "b"),
         jax.shard_map(lambda a: lax.all_gather(a, "b", axis=1, tiled=True), in_specs=P("a", "b"),
                       out_specs=P("a"), check_vma=False), on(("a", "b"), (4, 8))),
        ("explicit_types", (2,), ("i",), lambda x: jnp.sin(x) * 2, on(("i",))),
        ("psum_out_spec_length", (2, 4), ("a", "b"),
         jax.shard_map(lambda a: lax.psum(a, "b"), in_specs=P("a", "b"), out_specs=P("a", None)),
         on(("a", "b"), (4, 8))),
        ("axis_index_cast", (2, 4), ("a", "b"),
         jax.shard_map(lambda a: a * 2 + lax.axis_index("a"), in_specs=P("a", "b"), out_specs=P("a", "b")),
         on(("a", "b"), (4, 8))),
        # a line that fits up to the parameters' closing bracket stays whole (82 columns)
        ("line_width", (2, 4), ("a", "b"),
         jax.shard_map(lambda a: lax.convert_element_type(a, jnp.bfloat16).astype(jnp.float32),
                       in_specs=P("a", "b"), out_specs=P("a", "b"), check_vma=False), on(("a", "b"), (4, 8))),
    ]
