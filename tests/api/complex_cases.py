"""The complex programs compared with JAX 0.10.2 (data/jax_complex_values.npz): each case is a
function of (jax, jnp) applied to fixed inputs, run by meshjit in the tests and by JAX in
data/make_complex_table.py, so both sides run the same source. ``TOLERANCE_ULPS`` states how
far meshjit may be from JAX, in units of the result type's epsilon times the result's magnitude.
"""

from __future__ import annotations

import numpy as np

_RNG = np.random.default_rng(31)


def _complex(shape, scale=1.0):
    return _RNG.normal(0, scale, shape) + 1j * _RNG.normal(0, scale, shape)


# Inputs: random values, plus zeros, pure reals and imaginaries of both signs, and large parts.
_SPECIAL = np.array([0, 1, -1, 1j, -1j, -4 + 0j, 3 - 0j, 0.5 + 30j, -20 + 0.25j, 1e-3 + 1e-3j, 2 - 3j, -7.5 - 0.1j])
Z = np.concatenate([_complex(36, 2.0), _SPECIAL]).reshape(6, 8)
W = np.concatenate([_complex(36, 1.5), _SPECIAL[::-1] + 0.5]).reshape(6, 8)
R = _RNG.normal(0, 2.0, (6, 8))
SIGNAL = _complex((4, 6, 5))
REAL_SIGNAL = _RNG.normal(0, 1, (4, 6, 5))

# Elementwise cases: name -> (function of jnp, operands)
UNARY = {
    "neg": lambda jnp: jnp.negative, "abs": lambda jnp: jnp.abs, "sign": lambda jnp: jnp.sign,
    "square": lambda jnp: jnp.square, "conj": lambda jnp: jnp.conj, "real": lambda jnp: jnp.real,
    "imag": lambda jnp: jnp.imag, "angle": lambda jnp: jnp.angle, "exp": lambda jnp: jnp.exp,
    "log": lambda jnp: jnp.log, "sqrt": lambda jnp: jnp.sqrt, "sin": lambda jnp: jnp.sin,
    "cos": lambda jnp: jnp.cos, "tanh": lambda jnp: jnp.tanh, "expm1": lambda jnp: jnp.expm1,
    "log1p": lambda jnp: jnp.log1p, "cube": lambda jnp: (lambda z: z ** 3),
    "reciprocal": lambda jnp: (lambda z: 1 / z), "isfinite": lambda jnp: jnp.isfinite,
}
BINARY = {
    "add": lambda jnp: jnp.add, "sub": lambda jnp: jnp.subtract, "mul": lambda jnp: jnp.multiply,
    "div": lambda jnp: jnp.divide, "pow": lambda jnp: jnp.power, "eq": lambda jnp: jnp.equal,
    "ne": lambda jnp: jnp.not_equal,
}
# In ulps of the result's magnitude: the field's operations round like XLA's up to the order of
# their multiplies; the transcendental functions are built from meshjit's real ones.
TOLERANCE_ULPS = {"neg": 0, "conj": 0, "real": 0, "imag": 0, "add": 0, "sub": 0, "eq": 0, "ne": 0,
                  "isfinite": 0, "mul": 2, "square": 2, "abs": 2, "sign": 4, "div": 4,
                  "reciprocal": 4, "cube": 4, "angle": 4}
DEFAULT_ULPS = 16


def complex_type(jnp, x64: bool):
    return jnp.complex128 if x64 else jnp.complex64


def elementwise_cases(jax, jnp, x64: bool) -> dict:
    dtype = complex_type(jnp, x64)
    z, w = jnp.asarray(Z, dtype), jnp.asarray(W, dtype)
    results = {f"unary/{name}": make(jnp)(z) for name, make in UNARY.items()}
    results.update({f"binary/{name}": make(jnp)(z, w) for name, make in BINARY.items()})
    real = jnp.asarray(R, jnp.float64 if x64 else jnp.float32)
    results["scalar/1j_times_real"] = 1j * real
    results["scalar/real_plus_complex"] = real + (2 - 1j)
    results["scalar/complex_power_float"] = z ** 2.5
    results["scalar/where"] = jnp.where(jnp.real(z) > 0, z, w)
    return results


def reduction_cases(jax, jnp, x64: bool) -> dict:
    z = jnp.asarray(Z, complex_type(jnp, x64))
    w = jnp.asarray(W, complex_type(jnp, x64))
    return {
        "reduce/sum": jnp.sum(z, axis=0), "reduce/mean": jnp.mean(z, axis=1),
        "reduce/prod": jnp.prod(z[:, :4] / 2, axis=1), "reduce/sum_all": jnp.sum(z),
        "dot/matmul": z @ w.T, "dot/einsum": jnp.einsum("ij,kj->ik", z, w), "dot/vdot": jnp.dot(z[0], w[0]),
    }


def autodiff_cases(jax, jnp, x64: bool) -> dict:
    z = jnp.asarray(Z[0, :4], complex_type(jnp, x64))
    results = {
        "grad/abs_squared": jax.grad(lambda v: jnp.sum(jnp.abs(v) ** 2))(z),
        "grad/real_of_exp_conj": jax.grad(lambda v: jnp.sum(jnp.real(jnp.exp(v) * jnp.conj(v))))(z),
        "grad/holomorphic": jax.grad(lambda v: jnp.sum(jnp.sin(v) * v / (v + 3)), holomorphic=True)(z),
        "grad/of_real_input": jax.grad(lambda x: jnp.abs(x * (1 + 2j)) + jnp.real(jnp.exp(1j * x)))(1.5),
        "grad/angle_and_imag": jax.grad(lambda v: jnp.sum(jnp.angle(v) + jnp.imag(jnp.tanh(v / 4))))(z),
        "grad/sqrt_log": jax.grad(lambda v: jnp.sum(jnp.real(jnp.sqrt(v) * jnp.log(v))))(z),
    }
    results["vjp/mul"] = jax.vjp(lambda v: v * (2 - 1j), z)[1](z)[0]
    results["jvp/log_times"] = jax.jvp(lambda v: jnp.log(v) * v, (z,), (z[::-1],))[1]
    return results


FFT_NORMS = (None, "ortho", "forward")


def fft_cases(jax, jnp, x64: bool) -> dict:
    signal = jnp.asarray(SIGNAL, complex_type(jnp, x64))
    real = jnp.asarray(REAL_SIGNAL, jnp.float64 if x64 else jnp.float32)
    results = {}
    for norm in FFT_NORMS:
        tag = norm or "backward"
        fft = jnp.fft
        results.update({
            f"fft/fft/{tag}": fft.fft(signal, norm=norm), f"fft/ifft/{tag}": fft.ifft(signal, n=7, axis=1, norm=norm),
            f"fft/rfft/{tag}": fft.rfft(real, norm=norm), f"fft/irfft/{tag}": fft.irfft(signal, norm=norm),
            f"fft/irfft_odd/{tag}": fft.irfft(signal, n=9, norm=norm),
            f"fft/fft2/{tag}": fft.fft2(signal, norm=norm), f"fft/ifft2/{tag}": fft.ifft2(signal, s=(3, 8), norm=norm),
            f"fft/fftn/{tag}": fft.fftn(signal, norm=norm), f"fft/ifftn/{tag}": fft.ifftn(signal, axes=(0, 2), norm=norm),
            f"fft/rfftn/{tag}": fft.rfftn(real, norm=norm), f"fft/irfftn/{tag}": fft.irfftn(signal, s=(5, 6), norm=norm),
            f"fft/rfft2/{tag}": fft.rfft2(real, norm=norm), f"fft/irfft2/{tag}": fft.irfft2(signal, norm=norm),
            f"fft/hfft/{tag}": fft.hfft(signal, norm=norm), f"fft/ihfft/{tag}": fft.ihfft(real, norm=norm),
        })
    results["fft/fftfreq"] = jnp.fft.fftfreq(7, 0.3)
    results["fft/rfftfreq"] = jnp.fft.rfftfreq(8, 0.1)
    results["fft/fftshift"] = jnp.fft.fftshift(real)
    results["fft/ifftshift"] = jnp.fft.ifftshift(real, axes=1)
    results["fft/of_ints"] = jnp.fft.fft(jnp.arange(6))
    results["fft/grad_fft"] = jax.grad(lambda v: jnp.sum(jnp.abs(jnp.fft.fft(v * (1 + 0.5j))) ** 2))(real[0, 0])
    results["fft/grad_rfft"] = jax.grad(lambda v: jnp.sum(jnp.real(jnp.fft.rfft(v) * jnp.arange(1, 4))))(real[0, 0])
    results["fft/grad_irfft"] = jax.grad(lambda v: jnp.sum(jnp.fft.irfft(v) * jnp.arange(8.0)))(signal[0, 0])
    results["fft/grad_irfft_odd"] = jax.grad(lambda v: jnp.sum(jnp.fft.irfft(v, n=9) * jnp.arange(9.0)))(signal[0, 0])
    results["fft/grad_rfft2"] = jax.grad(lambda v: jnp.sum(jnp.imag(jnp.fft.rfft2(v)) ** 2))(real[0])
    results["fft/grad_ifft2_ortho"] = jax.grad(
        lambda v: jnp.sum(jnp.abs(jnp.fft.ifft2(v, norm="ortho")) ** 2))(signal[0])
    results["fft/vjp_ifft"] = jax.vjp(jnp.fft.ifft, signal[0])[1](signal[1])[0]
    results["fft/jvp_fftn"] = jax.jvp(jnp.fft.fftn, (signal[0],), (signal[1],))[1]
    results["fft/vmap_rfft"] = jax.vmap(jnp.fft.rfft)(real[:, 0])
    return results


def run_all(jax, jnp, x64: bool) -> dict:
    results = {}
    for cases in (elementwise_cases, reduction_cases, autodiff_cases, fft_cases):
        results.update(cases(jax, jnp, x64))
    return results
