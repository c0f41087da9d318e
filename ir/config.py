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


_OPTIONS = {
    option.name: option
    for option in (
        _Option("jax_enable_x64", "JAX_ENABLE_X64", False, _parse_bool, bool,
                "keep 64-bit dtypes instead of narrowing them to 32 bits"),
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
    )
}


class Config:
    """Settings read from the environment at first use and changed with ``update``."""

    def __init__(self):
        self._values: dict[str, Any] = {}
        self._locked: dict[str, str] = {}

    def _value(self, name: str):
        if name not in self._values:
            option = _OPTIONS[name]
            raw = os.environ.get(option.env_var)
            try:
                self._values[name] = option.default if raw is None else option.parse(raw)
            except ValueError as error:
                raise ValueError(f"environment variable {option.env_var}: {error}") from None
        return self._values[name]

    def update(self, name: str, value) -> None:
        option = _OPTIONS.get(name)
        if option is None:
            raise AttributeError(f"unknown config option {name!r}; known options: {sorted(_OPTIONS)}")
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
        if name in self._locked and value != self._value(name):
            raise RuntimeError(f"config option {name!r} cannot change after {self._locked[name]}")
        self._values[name] = value

    def lock(self, name: str, reason: str) -> None:
        """Forbid later changes of ``name`` (the device count once devices exist)."""
        self._value(name)
        self._locked.setdefault(name, reason)

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in _OPTIONS:
            raise AttributeError(f"unknown config option {name!r}; known options: {sorted(_OPTIONS)}")
        return self._value(name)

    def read(self, name: str):
        return self._value(name)


config = Config()
