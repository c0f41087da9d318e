"""JVP and transpose rules of the complex part ops (complex, real, imag, conj) and of abs, whose
derivative on complex numbers is ``Re(conj(z) dz) / |z|``. As in JAX, transposition never
conjugates: the transpose of ``real`` is ``ct + 0i`` and that of ``imag`` is ``0 - ct i``, so the
gradient of a real-valued function of ``z`` is the conjugate of its Wirtinger derivative
times two (``grad(abs(z)**2)(z) == 2 conj(z)``)."""

from __future__ import annotations

from ..frontend import lax_complex
from ..frontend import lax_ops as lax
from ..frontend.autodiff.evaluate import emit
from ..frontend.autodiff.jvp import linear_jvp
from ..frontend.autodiff.registries import LinearInput, full, type_of, zeros
from ..tables import jvp_rules, transpose_rules

jvp_rules.register("complex", "real", "imag", "conj")(linear_jvp)


@transpose_rules.register("real")
def _real_transpose(op, cotangents, operands):
    cotangent = cotangents[0]
    return [lax_complex.complex(cotangent, zeros(type_of(cotangent)))]


@transpose_rules.register("imag")
def _imag_transpose(op, cotangents, operands):
    cotangent = cotangents[0]
    return [lax_complex.complex(zeros(type_of(cotangent)), lax.neg(cotangent))]


@transpose_rules.register("conj")
def _conj_transpose(op, cotangents, operands):
    return [lax_complex.conj(cotangents[0])]


@transpose_rules.register("complex")
def _complex_transpose(op, cotangents, operands):
    cotangent = cotangents[0]
    real, imaginary = lax_complex.real(cotangent), lax.neg(lax_complex.imag(cotangent))
    return [real if isinstance(operands[0], LinearInput) else None,
            imaginary if isinstance(operands[1], LinearInput) else None]


@jvp_rules.register("abs")
def _abs(op, primals, tangents):
    (x,), (tangent,) = primals, tangents
    outputs = emit(op, primals)
    if not lax_complex.is_complex_operand(x):
        # 1 where x >= 0, else -1: +1 at zero, as JAX takes it
        x_type = type_of(x)
        return outputs, [lax.mul(tangent, lax.select(lax.ge(x, 0.0), full(x_type, 1), full(x_type, -1)))]
    magnitude = outputs[0]
    safe = lax.select(lax.eq(magnitude, 0.0), full(type_of(magnitude), 1), magnitude)
    projected = lax_complex.real(lax.mul(lax_complex.conj(x), tangent))
    return outputs, [lax.div(projected, safe)]
