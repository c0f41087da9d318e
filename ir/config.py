"""Process-wide settings read by every layer, JAX-style: ``config.update(name, value)`` or env vars."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected a boolean such as true/false/1/0, got {text!r}")


def _parse_positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(f"expected a positive integer, got {text!r}")
    return value


def _parse_full_remat(text: str) -> str:
    value = text.strip().lower()
    if value not in ("warn", "error"):
        raise ValueError(f"expected 'warn' or 'error', got {text!r}")
    return value


_PLATFORM = "cpu"


def _parse_platforms(text: str) -> str:
    """jax_platforms: a comma-separated priority list of backends ('' chooses one); only cpu runs."""
    unknown = [name.strip() for name in text.split(",") if name.strip() and name.strip() != _PLATFORM]
    if unknown:
        # NOTE: JAX raises RuntimeError when it fails to initialise a listed backend.
        raise RuntimeError(f"Unable to initialize backend {unknown[0]!r}: meshjit runs on simulated CPU "
                           f"devices only, so jax_platforms may list only {_PLATFORM!r}, got {text!r}")
    return text


def _parse_platform_name(text: str) -> str:
    if text != _PLATFORM:
        raise RuntimeError(f"Unknown backend {text!r}: meshjit runs on simulated CPU devices only; available "
                           f"backends are [{_PLATFORM!r}]")
    return text


def _parse_positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise ValueError(f"expected a positive number of seconds, got {text!r}")
    return value


@dataclass(frozen=True)
class _Option:
    name: str
    env_var: str
    default: Any
    parse: Callable[[str], Any]
    kind: type
    doc: str
    # NOTE: options whose values are not one plain type validate update() values here instead.
    check: Callable[[str, Any], Any] | None = None


def _check_platforms(name: str, value):
    if value is None:
        return None
    if not isinstance(value, str):
        # NOTE: JAX raises ValueError here ("new string config value must be None or of type str").
        raise ValueError(  # noqa: TRY004
            f"config option {name!r} expects a string or None, got {value!r} of type {type(value).__name__}")
    return _naming_option(name, _parse_platforms, value)


def _check_platform_name(name: str, value):
    return None if value is None else _naming_option(name, _parse_platform_name, value)


def _naming_option(name: str, parse: Callable[[str], Any], value):
    try:
        return parse(value)
    except RuntimeError as error:
        raise RuntimeError(f"config option {name!r}: {error}") from None


_OPTIONS = {
    option.name: option
    for option in (
        _Option("jax_enable_x64", "JAX_ENABLE_X64", False, _parse_bool, bool,
                "keep 64-bit dtypes instead of narrowing them to 32 bits"),
        _Option("jax_disable_jit", "JAX_DISABLE_JIT", False, _parse_bool, bool,
                "run jitted functions' Python op by op instead of compiling them (for debugging)"),
        _Option("jax_threefry_partitionable", "JAX_THREEFRY_PARTITIONABLE", True, _parse_bool, bool,
                "random bits count each element's flat index (sharded draws need no communication); "
                "False gives the older layout, one iota over the flat array, and its different numbers"),
        _Option("num_cpu_devices", "MESHJIT_NUM_DEVICES", 8, _parse_positive_int, int,
                "how many simulated CPU devices this process owns; fixed at first device use"),
        _Option("jax_parallel_functions_output_gda", "JAX_PARALLEL_FUNCTIONS_OUTPUT_GDA", False,
                _parse_bool, bool, "pjit returns GlobalDeviceArrays instead of Arrays"),
        _Option("check_partitioning", "MESHJIT_CHECK_PARTITIONING", False, _parse_bool, bool,
                "check every jitted call against the unsharded reference interpreter"),
        _Option("full_remat", "MESHJIT_FULL_REMAT", "warn", _parse_full_remat, str,
                "what an involuntary full rematerialization does: 'warn' or 'error'"),
        _Option("collective_timeout", "MESHJIT_COLLECTIVE_TIMEOUT", 300.0, _parse_positive_float, float,
                "seconds a multi-process collective waits for the other processes before it raises"),
        _Option("jax_platforms", "JAX_PLATFORMS", None, _parse_platforms, str,
                "the backends to use, comma-separated; only 'cpu' (or '' or None: choose) is accepted",
                _check_platforms),
        _Option("jax_platform_name", "JAX_PLATFORM_NAME", None, _parse_platform_name, str,
                "the default backend; only 'cpu' (or None) is accepted", _check_platform_name),
    )
}

# JAX's names for meshjit's own options: both names read and update the same setting.
_ALIASES = {"jax_num_cpu_devices": "num_cpu_devices"}


def _unknown(name: str) -> AttributeError:
    known = sorted([*_OPTIONS, *_ALIASES])
    return AttributeError(f"unknown config option {name!r}; known options: {known}")


def _check_kind(option: _Option, name: str, value):
    """``value`` checked against (and converted to) ``option``'s type; ``name`` as the user typed it."""
    if option.check is not None:
        return option.check(name, value)
    if option.kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"config option {name!r} expects a positive int, got {value!r}")
    if option.kind is bool and not isinstance(value, bool):
        raise ValueError(f"config option {name!r} expects a bool, got {value!r}")
    if option.kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"config option {name!r} expects a positive number, got {value!r}")
        value = float(value)
    if option.kind is str:
        if not isinstance(value, str):
            raise ValueError(f"config option {name!r} expects a string, got {value!r}")
        value = option.parse(value)
    return value


class Config:
    """Settings read from the environment at first use and changed with ``update``."""

    def __init__(self):
        self._values: dict[str, Any] = {}
        self._locked: dict[str, str] = {}
        # NOTE: counts updates; jit's dispatch fast path keys on it instead of reading options.
        self.version = 0

    def _value(self, name: str):
        if name not in self._values:
            option = _OPTIONS[name]
            raw = os.environ.get(option.env_var)
            try:
                self._values[name] = option.default if raw is None else option.parse(raw)
            except (ValueError, RuntimeError) as error:
                raise type(error)(f"environment variable {option.env_var}: {error}") from None
        return self._values[name]

    def update(self, name: str, value) -> None:
        option = _OPTIONS.get(_ALIASES.get(name, name))
        if option is None:
            raise _unknown(name)
        value = _check_kind(option, name, value)
        if option.name in self._locked and value != self._value(option.name):
            raise RuntimeError(f"config option {name!r} cannot change after {self._locked[option.name]}")
        self._values[option.name] = value
        self.version += 1

    def lock(self, name: str, reason: str) -> None:
        """Forbid later changes of ``name`` (the device count once devices exist)."""
        self._value(name)
        self._locked.setdefault(name, reason)

    def __getattr__(self, name: str):
        if name.startswith("_") or _ALIASES.get(name, name) not in _OPTIONS:
            raise _unknown(name)
        return self._value(_ALIASES.get(name, name))

    def read(self, name: str):
        return self._value(_ALIASES.get(name, name))


config = Config()


def cache_directory() -> str:
    """Where meshjit keeps files across processes (generated kernels, the cost model's
    calibration): ``MESHJIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/meshjit`` or ``~/.cache/meshjit``."""
    configured = os.environ.get("MESHJIT_CACHE_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "meshjit")
