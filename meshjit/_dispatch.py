"""Eager dispatch: ops on concrete Arrays run as cached programs through jit's Executables.

Two layers below the facade need it and cannot import it, so each gets it through one explicit
registration, both made by ``install()`` (``meshjit/__init__`` calls it once), which also tells
the compiler which mesh ``set_mesh`` made current (the abstract mesh sharding types live on):

- the runtime's Array forwards numpy's operators, methods and properties (``a + b``,
  ``a.sum()``, ``a.T``) to ``apply_array_method``
  (``meshjit.runtime.array.register_array_dispatcher``);
- the compiler's ``bind`` hands an op on concrete values, outside any trace, to ``run_op``
  (``meshjit.compiler.frontend.trace.set_eager_executor``), which is how ``jnp.sin(x)`` runs
  eagerly; control flow on concrete values runs as one program through ``run_program``
  (``set_program_runner``).

Calls then only go down: the runtime calls up through its one registered dispatcher, the facade
looks up (or traces and compiles, through the compiler) a Jitted program, and its Executable
runs in the runtime. Arithmetic operators run their jax.numpy function as one jitted program
per operator, so ``a + b`` costs one jit dispatch; the rest goes through ``bind`` and runs as
cached one-op programs. Both share jit's caches and commitment rules.
"""

from __future__ import annotations

from meshjit.compiler.frontend.numpy_api.operators import METHODS, OPERATORS, PROPERTIES
from meshjit.compiler.frontend.operands import is_array_like
from meshjit.compiler.sharding.sharding_types import set_ambient_mesh_provider
from meshjit.compiler.frontend.trace import (
    Tracer,
    bind,
    current_trace,
    set_eager_executor,
    set_program_runner,
)
from meshjit.ir import Attrs
from meshjit.runtime import array as runtime_array
from meshjit.runtime.array import Array
from meshjit.runtime.mesh import global_mesh

from .jit_api import Jitted

_TABLE = {**OPERATORS, **METHODS, **PROPERTIES}

# NOTE: operators whose operands are all arrays or scalars (no static arguments such as an axis
# or an index), so the whole operator can be one jitted program over its operands.
_ARITHMETIC = frozenset(name for name in OPERATORS if name != "__getitem__")

_OPERATOR_PROGRAMS: dict[str, Jitted] = {}
_OP_PROGRAMS: dict = {}


def apply_array_method(name: str, array, *args, **kwargs):
    """What ``array.<name>(*args, **kwargs)`` (or the operator ``name``) computes."""
    if name in _ARITHMETIC and current_trace() is None and _all_concrete(args):
        program = _OPERATOR_PROGRAMS.get(name)
        if program is None:
            program = _OPERATOR_PROGRAMS[name] = _operator_program(name)
        return program(array, *args)
    return _TABLE[name](array, *args, **kwargs)


def _all_concrete(operands) -> bool:
    """Every operand an array or scalar (so the operator applies) and none traced."""
    for operand in operands:
        # NOTE: an Array, the common operand, is answered without the general checks
        if type(operand) is not Array and (isinstance(operand, Tracer) or not is_array_like(operand)):
            return False
    return True


_UNARY = frozenset({"__neg__", "__pos__", "__abs__", "__invert__"})


def _operator_program(name: str) -> Jitted:
    function = _TABLE[name]
    # NOTE: the parameters are named as jax.numpy's (errors say "argument x of add").
    if name in _UNARY:
        def operator(x):
            return function(x)
    else:
        def operator(x, y):
            return function(x, y)

    # NOTE: the program's name in dumps and errors: add, radd, neg, ...
    operator.__name__ = operator.__qualname__ = name.strip("_")
    return Jitted(operator)


def run_op(name: str, operands, attrs: dict, weak_type: bool, out_sharding=None) -> list:
    """Run one op on concrete values as a cached one-op jitted program; returns Arrays."""
    out_sharding = None if out_sharding is None else tuple(out_sharding)
    key = (name, Attrs(attrs), weak_type, out_sharding)
    program = _OP_PROGRAMS.get(key)
    if program is None:
        def one_op(*values):
            return bind(name, values, attrs, weak_type=weak_type, out_sharding=out_sharding)

        one_op.__name__ = one_op.__qualname__ = name
        program = _OP_PROGRAMS[key] = Jitted(one_op)
    return list(program(*operands))


def run_program(name: str, fun, operands) -> list:
    """Run ``fun`` (flat operands to a flat list, binding ops) on concrete values as one jitted
    program: what control flow (``lax.scan`` and friends) does outside jit."""
    def program(*values):
        return list(fun(*values))

    program.__name__ = program.__qualname__ = name
    return list(Jitted(program)(*operands))


def set_mesh_abstract_mesh():
    """The abstract mesh of the mesh ``set_mesh`` made current (None when none is)."""
    mesh = global_mesh()
    return None if mesh is None or mesh.empty else mesh.abstract_mesh


def install() -> None:
    """Register the dispatchers with the runtime and the compiler (once, at import), and tell
    the compiler where the abstract mesh in context comes from (``set_mesh``)."""
    runtime_array.register_array_dispatcher(apply_array_method, tuple(METHODS), tuple(PROPERTIES))
    set_eager_executor(run_op)
    set_program_runner(run_program)
    set_ambient_mesh_provider(set_mesh_abstract_mesh)
