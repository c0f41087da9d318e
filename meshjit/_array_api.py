"""The Python Array API standard's (2024.12) namespace pieces that are not functions of arrays:
``__array_api_version__``, ``__array_namespace_info__`` (capabilities, devices, dtypes) and the
``__array_namespace__``/``to_device`` methods of Arrays and traced values."""

from __future__ import annotations

import sys

import numpy as np

from meshjit.compiler.frontend.trace import Tracer
from meshjit.ir.config import config
from meshjit.runtime.array import Array
from meshjit.runtime.devices import devices
from meshjit.runtime.transfer import device_put

__array_api_version__ = "2024.12"

_SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

# The standard's dtype kinds, each with the dtypes meshjit has in it (64-bit ones need x64).
_KIND_NAMES = {
    "bool": ("bool",),
    "signed integer": ("int8", "int16", "int32", "int64"),
    "unsigned integer": ("uint8", "uint16", "uint32", "uint64"),
    "real floating": ("float32", "float64"),
    "complex floating": ("complex64", "complex128"),
}
_KIND_NAMES["integral"] = _KIND_NAMES["signed integer"] + _KIND_NAMES["unsigned integer"]
_KIND_NAMES["numeric"] = _KIND_NAMES["integral"] + _KIND_NAMES["real floating"] + _KIND_NAMES["complex floating"]
# The types JAX holds in their 32-bit siblings without x64.
_NEEDS_X64 = ("int64", "uint64", "float64", "complex128")


class ArrayNamespaceInfo:
    """What ``meshjit.numpy`` supports, as the standard's inspection API asks."""

    def capabilities(self) -> dict:
        # NOTE: boolean masks and unique/nonzero need concrete values (as in jax.jit), so the
        # standard's capabilities that need data-dependent shapes are off, as JAX reports them.
        return {"boolean indexing": False, "data-dependent shapes": False, "max dimensions": 64}

    def default_device(self):
        return devices()[0]

    def devices(self) -> list:
        return list(devices())

    def default_dtypes(self, *, device=None) -> dict:
        x64 = config.read("jax_enable_x64")
        integer = np.dtype(np.int64 if x64 else np.int32)
        return {"real floating": np.dtype(np.float64 if x64 else np.float32),
                "complex floating": np.dtype(np.complex128 if x64 else np.complex64),
                "integral": integer, "indexing": integer}

    def dtypes(self, *, device=None, kind=None) -> dict:
        names = _names_of_kind(kind)
        if not config.read("jax_enable_x64"):
            names = [name for name in names if name not in _NEEDS_X64]
        return {name: np.dtype(name) for name in names}


def _names_of_kind(kind) -> list[str]:
    if kind is None:
        return list(dict.fromkeys(_KIND_NAMES["bool"] + _KIND_NAMES["numeric"]))
    if isinstance(kind, tuple):
        return list(dict.fromkeys(name for entry in kind for name in _names_of_kind(entry)))
    if kind not in _KIND_NAMES:
        raise ValueError(f"dtypes: unknown kind {kind!r}; expected None, one of {', '.join(_KIND_NAMES)} "
                         f"or a tuple of them")
    return list(_KIND_NAMES[kind])


def __array_namespace_info__() -> ArrayNamespaceInfo:
    """The standard's inspection namespace of meshjit.numpy."""
    return ArrayNamespaceInfo()


def _array_namespace(self, /, *, api_version: str | None = None):
    """meshjit.numpy, the namespace of this array's functions."""
    if api_version is not None and api_version not in _SUPPORTED_VERSIONS:
        raise ValueError(f"__array_namespace__: api_version {api_version!r} is not supported; meshjit.numpy "
                         f"implements {', '.join(_SUPPORTED_VERSIONS)}")
    return sys.modules["meshjit.numpy"]


def _to_device(self, device, /, *, stream=None):
    """This array on ``device`` (a device or a Sharding), as ``meshjit.device_put``."""
    if stream is not None:
        raise ValueError(f"to_device: stream must be None on CPU devices, got {stream!r}")
    return device_put(self, device)


def _setitem(self, key, value, /):
    """Arrays are immutable, as JAX's: item assignment raises and names ``.at[...].set``."""
    raise TypeError(f"{type(self).__name__} objects are immutable and do not support item assignment; "
                    f"instead of x[idx] = y, use x = x.at[idx].set(y)")


def install() -> None:
    """Give Arrays (and traced values) the standard's ``__array_namespace__`` and
    ``__setitem__`` (which raises, as JAX's), and Arrays ``to_device`` (meshjit/__init__
    calls this once)."""
    for cls in (Array, Tracer):
        cls.__array_namespace__ = _array_namespace
        cls.__setitem__ = _setitem
    Array.to_device = _to_device
