"""The front end: tracing Python functions into IR (``trace``), the functions users call
(``numpy_api``, ``lax_ops``, ``lax_collectives``, ``nn``), shard_map bodies, and autodiff as
transformations of traced IR. The compiler proper (passes and rules) never imports it, except
the rules' JVP and transpose entries, which emit IR through ``lax_ops``."""
