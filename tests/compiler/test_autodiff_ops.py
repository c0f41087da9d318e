"""Every differentiable op's JVP and transpose rules, checked in float64 against central
differences (forward mode, reverse mode, forward-over-reverse and reverse-over-reverse) and
against a closed-form gradient where the case gives one; and the registries' coverage."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from autodiff_cases import CASES
from meshjit.compiler.tables import MARKER_OPS, jvp_rules, transpose_rules
from meshjit.compiler.frontend.autodiff.registries import linear_ops, non_differentiable_ops
from meshjit.ir.ops import ALL_OPS

import meshjit as jax
import meshjit.numpy as jnp
from meshjit.ad_api import grad, jvp

pytestmark = pytest.mark.usefixtures("x64")

# Ops whose rules are checked through shard_map and with_sharding_constraint in
# test_autodiff_sharded.py rather than by a row here.
SHARDED_OPS = (
    "sharding_constraint",
    "manual_computation",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "collective_permute",
    "pvary",
)


def test_every_op_has_a_jvp_rule():
    assert not set(ALL_OPS) - set(jvp_rules), "ops without a JVP rule"
    assert {"compare", "argmax", "iota", "axis_index"} <= non_differentiable_ops()
    assert not {"add", "floor", "dot_general"} & non_differentiable_ops()


def test_linear_ops_are_ops_with_transpose_rules():
    assert linear_ops() <= set(ALL_OPS)
    assert linear_ops() | {"custom_vjp_linear", "vmap_collective", "checkpoint"} == set(transpose_rules)
    assert {"add", "dot_general", "reduce_sum", "all_gather"} <= linear_ops()


def test_markers_have_their_rules():
    assert set(MARKER_OPS) - {"custom_vjp_linear"} <= set(jvp_rules)
    assert not set(MARKER_OPS) & set(ALL_OPS)


# Ops with forward-mode rules only (reverse mode raises), checked in test_control_flow_autodiff.py.
FORWARD_ONLY_OPS = ("while",)
# Ops without derivatives, as in JAX (NotImplementedError; tests/api/linalg_complex_cases.py).
UNDIFFERENTIABLE_OPS = ("hessenberg", "schur")

# Ops without a derivative: their JVP rules raise JAX's errors (tests/api/test_callbacks.py).
NO_DERIVATIVE_OPS = ("pure_callback", "io_callback")


def test_every_differentiable_op_has_a_case():
    covered = ({op for case in CASES for op in case.ops} | set(SHARDED_OPS) | set(FORWARD_ONLY_OPS)
               | set(UNDIFFERENTIABLE_OPS) | set(NO_DERIVATIVE_OPS))
    assert set(ALL_OPS) - non_differentiable_ops() - covered == set()


def _rng(case):
    return np.random.default_rng(zlib.crc32(case.name.encode()))


def _central(function, args, direction, step):
    plus = function(*(arg + step * d for arg, d in zip(args, direction)))
    minus = function(*(arg - step * d for arg, d in zip(args, direction)))
    return jax.tree_util.tree_map(
        lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * step), plus, minus
    )


def _close(actual, expected, tolerance):
    for got, want in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(want), rtol=tolerance, atol=tolerance
        )


def _setup(case):
    rng = _rng(case)
    args = case.draw(rng)
    output = np.asarray(jax.jit(case.function)(*args))
    weights = rng.standard_normal(output.shape)
    direction = tuple(rng.standard_normal(np.shape(arg)) for arg in args)
    argnums = tuple(range(len(args)))

    def loss(*values):
        return jnp.sum(case.function(*values) * weights)

    return args, direction, argnums, loss


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_first_order(case):
    args, direction, argnums, loss = _setup(case)
    gradients = grad(loss, argnums)(*args)
    analytic = sum(np.vdot(np.asarray(gradient), d) for gradient, d in zip(gradients, direction))
    numerical = _central(jax.jit(loss), args, direction, case.step)
    _close(analytic, numerical, case.tolerance)
    _, tangent = jvp(case.function, args, direction)
    _close(tangent, _central(jax.jit(case.function), args, direction, case.step), case.tolerance)
    if case.formula is not None:
        total = grad(lambda *values: jnp.sum(case.function(*values)))(*args)
        _close(total, case.formula(*args), case.tolerance)


@pytest.mark.parametrize(
    "case", [case for case in CASES if case.second_order], ids=lambda case: case.name
)
def test_second_order(case):
    args, direction, argnums, loss = _setup(case)
    gradient_function = grad(loss, argnums)
    _, forward_over_reverse = jvp(gradient_function, args, direction)
    numerical = _central(jax.jit(gradient_function), args, direction, max(case.step, 1e-4))
    _close(forward_over_reverse, numerical, max(case.tolerance, 1e-4))

    def along(*values):
        return sum(
            jnp.sum(gradient * d) for gradient, d in zip(gradient_function(*values), direction)
        )

    # The Hessian is symmetric, so reverse-over-reverse along ``direction`` gives the same vector.
    _close(grad(along, argnums)(*args), forward_over_reverse, 1e-6)
