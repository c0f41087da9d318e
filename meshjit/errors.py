"""``jax.errors``: the exceptions meshjit raises for misuse of traced values, under JAX's names
and bases, so that ``except jax.errors.ConcretizationTypeError`` works unchanged."""

from meshjit.compiler.frontend.numpy_api.indexing import NonConcreteBooleanIndexError
from meshjit.ir.ops.callbacks import JaxRuntimeError as JaxRuntimeError
from meshjit.compiler.frontend.trace import (
    ConcretizationTypeError,
    JAXIndexError,
    JAXTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)

__all__ = (
    "ConcretizationTypeError",
    "InconclusiveDimensionOperation",
    "JAXIndexError",
    "JAXTypeError",
    "JaxRuntimeError",
    "JaxprTypeError",
    "KeyReuseError",
    "NonConcreteBooleanIndexError",
    "TracerArrayConversionError",
    "TracerBoolConversionError",
    "TracerIntegerConversionError",
    "UnexpectedTracerError",
)

# NOTE: the names below are errors that meshjit's programs do not raise (no key-reuse checker, no
# symbolic shapes, no jaxpr type checker), so that code catching them runs unchanged.


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice (JAX's optional key-reuse checker)."""


class InconclusiveDimensionOperation(Exception):
    """A comparison of symbolic dimensions that has no answer."""


class JaxprTypeError(TypeError):
    """An ill-typed jaxpr."""
