"""The ``meshjit`` command line: ``meshjit demo`` and the tools built on the compiler."""

from __future__ import annotations

import argparse

import numpy as np
from rich.console import Console


def run_demo(console: Console) -> int:
    """List the devices, then lay an array out over a 2 x 4 mesh and show the shards."""
    import meshjit as jax
    from meshjit.runtime.visualize import sharding_table
    from meshjit.sharding import Mesh, NamedSharding, PartitionSpec as P

    devices = jax.devices()
    console.print(f"[bold]meshjit {jax.__version__}[/bold]: {len(devices)} simulated CPU devices in "
                  f"process {jax.process_index()} of {jax.process_count()}")
    console.print("devices:", ", ".join(repr(device) for device in devices))
    if len(devices) % 2:
        console.print("an even device count is needed for the 2 x N mesh of the demo")
        return 1
    mesh = Mesh(np.array(devices).reshape(2, len(devices) // 2), ("x", "y"))
    console.print(f"\nmesh: {mesh!r}")
    for spec in (P("x", "y"), P("x", None), P(None, "y"), P()):
        sharding = NamedSharding(mesh, spec)
        array = jax.device_put(np.arange(64, dtype=np.float32).reshape(8, 8), sharding)
        console.print(f"\n[bold]{spec}[/bold]: shard shape {sharding.shard_shape(array.shape)}, "
                      f"{len({str(shard.index) for shard in array.addressable_shards})} distinct shards")
        console.print(sharding_table(array.shape, sharding))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="meshjit", description="meshjit: sharded jit over a device mesh")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="show the devices and a sharded array's layout")
    arguments = parser.parse_args(argv)
    console = Console()
    if arguments.command == "demo":
        return run_demo(console)
    parser.error(f"unknown command {arguments.command!r}")
    return 2
