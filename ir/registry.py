"""One small class for every per-op table: shape rules, reference implementations, and the
compiler's sharding, partition and kernel rules all register through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator


class MissingRuleError(LookupError):
    """An op has no entry in a registry that needs one."""


class Registry:
    """A table from op name to a rule, filled with ``@registry.register("add", "sub")``.

    Lookups of a missing op raise MissingRuleError naming the op and the registry, unless the
    registry was built with a named ``default``.
    """

    def __init__(self, name: str, default: Callable | None = None):
        self.name = name
        self.default = default
        self._rules: dict[str, Callable] = {}

    def register(self, *op_names: str) -> Callable[[Callable], Callable]:
        if not op_names:
            raise ValueError(f"{self.name}: register() needs at least one op name")

        def decorate(rule: Callable) -> Callable:
            for op_name in op_names:
                if op_name in self._rules:
                    raise ValueError(f"{self.name}: op {op_name!r} is registered twice")
                self._rules[op_name] = rule
            return rule

        return decorate

    def wrap(self, wrapper: Callable, *op_names: str) -> None:
        """Replace each listed op's rule by ``wrapper(rule)``: a concern layered over several
        families' rules (the 16-bit floats computing in f32, ir/narrow_floats.py)."""
        for op_name in op_names:
            self._rules[op_name] = wrapper(self[op_name])

    def __getitem__(self, op_name: str) -> Callable:
        rule = self._rules.get(op_name)
        if rule is not None:
            return rule
        if self.default is not None:
            return self.default
        raise MissingRuleError(f"op {op_name!r} has no entry in the {self.name} registry")

    def __contains__(self, op_name: str) -> bool:
        return op_name in self._rules

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._rules))

    def __len__(self) -> int:
        return len(self._rules)
