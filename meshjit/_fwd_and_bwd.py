"""``jax.fwd_and_bwd``: a function's forward pass (its value and the residuals, the vjp
function) and backward pass (residuals and an output cotangent to the cotangents of the
arguments ``argnums``) as two separate functions."""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

from .ad_api import vjp


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """``(fwd, bwd)``: ``fwd(*args)`` is ``(y, residuals)`` (``(y, residuals, aux)`` with
    ``has_aux``), ``bwd(residuals, cotangent)`` the cotangents of ``args[argnums]`` (one value
    when ``argnums`` is an int). ``jitted`` is accepted for JAX's signature: meshjit's vjp
    compiles ``fun`` as it traces it."""
    single = isinstance(argnums, int)
    positions = (operator.index(argnums),) if single else tuple(operator.index(a) for a in argnums)

    def fwd(*args):
        def restricted(*chosen):
            full = list(args)
            for position, value in zip(positions, chosen):
                full[position] = value
            return fun(*full)

        result = vjp(restricted, *(args[position] for position in positions), has_aux=has_aux)
        return result if has_aux else tuple(result)

    def bwd(residuals, cotangent):
        cotangents = residuals(cotangent)
        return cotangents[0] if single else cotangents

    return fwd, bwd
