"""A numpy model of shard_map collectives, per device, for random collective programs.

A program is a list of collective steps over random mesh axes (any subset, listed in any order,
repeated steps included) applied to the block each device gets from ``in_specs``; the model runs
it on a dict from mesh coordinates to that device's array, with JAX 0.10's semantics: a group is
the devices that agree on every axis not named; all_gather, psum_scatter, all_to_all and
axis_index number the group's members by the named axes in the listed order (first major), and
ppermute numbers them in mesh order whatever the listed order.

``random_program(rng, mesh_shape, axis_names)`` draws a program; ``run_model`` and
``run_library`` run it with the model or with a jax-like library (meshjit, or JAX to check the
model itself), and both return the output laid out as ``P(all mesh axes)`` on dim 0.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def _member_index(coordinates: dict, axes, sizes: dict) -> int:
    index = 0
    for axis in axes:
        index = index * sizes[axis] + coordinates[axis]
    return index


class Model:
    def __init__(self, mesh_shape, axis_names):
        self.names = tuple(axis_names)
        self.sizes = dict(zip(axis_names, mesh_shape))
        self.devices = [dict(zip(axis_names, position)) for position in itertools.product(*map(range, mesh_shape))]

    def key(self, coordinates: dict) -> tuple:
        return tuple(coordinates[name] for name in self.names)

    def group(self, coordinates: dict, axes) -> list[dict]:
        """The members of ``coordinates``'s group over ``axes``, ordered by their index along ``axes``."""
        members = [other for other in self.devices
                   if all(other[name] == coordinates[name] for name in self.names if name not in axes)]
        return sorted(members, key=lambda other: _member_index(other, axes, self.sizes))

    def count(self, axes) -> int:
        return math.prod(self.sizes[axis] for axis in axes)

    def split(self, global_value: np.ndarray, axes) -> dict:
        """Each device's block of dim 0 split over ``axes`` (listed order, first major)."""
        blocks = np.split(global_value, self.count(axes), axis=0)
        return {self.key(device): blocks[_member_index(device, axes, self.sizes)] for device in self.devices}

    def gather_output(self, values: dict) -> np.ndarray:
        """The output of ``out_specs=P(all mesh axes)``: blocks concatenated in mesh order."""
        return np.concatenate([values[self.key(device)] for device in self.devices], axis=0)

    def step(self, values: dict, step) -> dict:
        kind, axes = step[0], step[1]
        result = {}
        for device in self.devices:
            members = [values[self.key(member)] for member in self.group(device, axes)]
            mine = _member_index(device, axes, self.sizes)
            count = len(members)
            if kind == "psum":
                result[self.key(device)] = np.sum(members, axis=0)
            elif kind == "pmax":
                result[self.key(device)] = np.max(members, axis=0)
            elif kind == "all_gather":
                result[self.key(device)] = (np.concatenate(members, 0) if step[2] else np.stack(members, 0))
            elif kind == "psum_scatter":
                result[self.key(device)] = np.split(np.sum(members, axis=0), count, axis=0)[mine]
            elif kind == "all_to_all":
                result[self.key(device)] = np.concatenate([np.split(member, count, 0)[mine] for member in members], 0)
            elif kind == "axis_index":
                result[self.key(device)] = values[self.key(device)] + mine
            elif kind == "ppermute":
                ordered = sorted(axes, key=self.names.index)
                position = _member_index(device, ordered, self.sizes)
                sources = [source for source, target in step[2] if target == position]
                by_position = {_member_index(member, ordered, self.sizes): member
                               for member in self.group(device, ordered)}
                own = values[self.key(device)]
                result[self.key(device)] = (values[self.key(by_position[sources[0]])] if sources
                                            else np.zeros_like(own))
        return result


def random_program(rng, mesh_shape, axis_names, rows: int):
    """Steps for a block of ``rows`` rows per device: (kind, axes, parameter)."""
    model = Model(mesh_shape, axis_names)
    steps = []
    for _ in range(rng.integers(1, 5)):
        count = rng.integers(1, len(axis_names) + 1)
        axes = tuple(rng.permutation(axis_names)[:count].tolist())
        group = model.count(axes)
        kinds = ["psum", "pmax", "all_gather", "axis_index", "ppermute"]
        if rows % group == 0 and rows:
            kinds += ["psum_scatter", "all_to_all"]
        kind = kinds[rng.integers(len(kinds))]
        if kind == "all_gather":
            # NOTE: a stacked (untiled) gather's new dim is summed away by the runners
            tiled = bool(rng.integers(2))
            steps.append((kind, axes, tiled))
            rows *= group if tiled else 1
        elif kind == "ppermute":
            shift = int(rng.integers(group))
            pairs = [(source, (source + shift) % group) for source in range(group) if rng.random() < 0.8]
            steps.append((kind, axes, tuple(pairs)))
        else:
            steps.append((kind, axes))
            rows //= group if kind == "psum_scatter" else 1
    return steps


def run_model(steps, mesh_shape, axis_names, in_axes, global_value):
    model = Model(mesh_shape, axis_names)
    values = model.split(global_value, in_axes)
    for step in steps:
        values = model.step(values, step)
        if step[0] == "all_gather" and not step[2]:
            values = {key: value.sum(0) for key, value in values.items()}
    return model.gather_output(values)


def body_for(lax, steps):
    """The shard_map body of ``steps`` in a jax-like ``lax``."""
    def body(block):
        for step in steps:
            kind, axes = step[0], step[1]
            if kind == "psum":
                block = lax.psum(block, axes)
            elif kind == "pmax":
                block = lax.pmax(block, axes)
            elif kind == "all_gather":
                block = lax.all_gather(block, axes, tiled=step[2])
                if not step[2]:
                    block = block.sum(0)
            elif kind == "psum_scatter":
                block = lax.psum_scatter(block, axes, scatter_dimension=0, tiled=True)
            elif kind == "all_to_all":
                block = lax.all_to_all(block, axes, 0, 0, tiled=True)
            elif kind == "axis_index":
                block = block + lax.axis_index(axes).astype(block.dtype)
            elif kind == "ppermute":
                block = lax.ppermute(block, axes, list(step[2]))
        return block
    return body
