"""meshjit.runtime: devices, meshes, shardings, arrays, transfers and the executor."""
