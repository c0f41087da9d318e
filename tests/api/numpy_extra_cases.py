"""jax.numpy functions beyond the core (issue 32): cases whose values and error types JAX 0.10.2
gave are in data/jax_numpy_extra_values.npz and data/jax_numpy_extra_errors.json;
test_numpy_extras.py computes them with meshjit, eagerly and under jit.

Run with JAX installed: python tests/api/numpy_extra_cases.py (writes the data files).
"""

import json
from pathlib import Path

import numpy as np

F = np.float32
M = np.array([[3.0, 1, 4, 1, 5], [9, 2, 6, 5, 3], [5, 8, 9, 7, 9.5]], F)
N = np.array([[3.0, np.nan, 4, 1, 5], [9, 2, 6, 5, 3], [np.nan] * 5], F)
# NOTE: no subnormal inputs or results: XLA on CPU flushes them to zero, meshjit keeps them (IEEE)
SPECIAL = np.array([1.0, -2.5, np.nan, np.inf, -np.inf, 0.0, -0.0, 3e-30, 6.5e4, 1e-7], F)
INTS = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], np.int32)
XS = np.array([0.0, 1, 1.5, 3, 4, 6], F)
YS = np.array([1.0, 4, 9, 16, 25, 36], F)


def _elementwise(jnp):
    a, b = SPECIAL, SPECIAL[::-1].copy()
    return {
        "nan_to_num": jnp.nan_to_num(a), "nan_to_num_args": jnp.nan_to_num(a, nan=1.5, posinf=9.0, neginf=-9.0),
        "deg2rad": jnp.deg2rad(np.arange(-4, 5, dtype=np.int32) * 45), "rad2deg": jnp.rad2deg(XS),
        "radians": jnp.radians(YS), "degrees": jnp.degrees(YS), "fabs": jnp.fabs(np.arange(-3, 3, dtype=np.int32)),
        "fmax": jnp.fmax(a, b), "fmin": jnp.fmin(a, b), "heaviside": jnp.heaviside(a, F(0.5)),
        "sinc": jnp.sinc(XS - 2), "logaddexp2": jnp.logaddexp2(XS, YS / 7),
        "ldexp": jnp.ldexp(F(3.0), np.array([1, 20, -100, -127, 127, 200, -300], np.int32)),
        "ldexp_arr": jnp.ldexp(a, np.int32(3)), "frexp": jnp.frexp(a), "modf": jnp.modf(a),
        "spacing": jnp.spacing(a), "float_power": jnp.float_power(np.arange(5, dtype=np.int32), 2),
        "gcd": jnp.gcd(INTS * 6, np.array([18, 0, -8, 3, 10, 27, 0, 4, 5, 6, 7], np.int32)),
        "lcm": jnp.lcm(INTS, np.array([6, 0, -8, 3, 10, 27, 1, 4, 5, 6, 7], np.int32)),
    }


def _structure(jnp):
    m = np.arange(20.0, dtype=F).reshape(4, 5)
    cube = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    return {
        "trace": jnp.trace(m, 1), "diagonal": jnp.diagonal(cube, -1, 2, 1), "diag1": jnp.diag(YS, -2),
        "diag2": jnp.diag(m, 2), "diagflat": jnp.diagflat(np.arange(4.0, dtype=F).reshape(2, 2), 1),
        "fill_diagonal": jnp.fill_diagonal(np.zeros((5, 3), F), np.array([1.0, 2], F), inplace=False),
        "tril_indices": jnp.tril_indices(4, -1, 5), "triu_indices_from": jnp.triu_indices_from(m, 1),
        "diag_indices_from": jnp.diag_indices_from(np.zeros((3, 3, 3))), "indices": jnp.indices((2, 3)),
        "ix_": jnp.ix_(np.array([0, 2]), np.array([1, 3, 4])),
        "unravel": jnp.unravel_index(np.array([0, 7, 19, -1], np.int32), (4, 5)),
        "ravel_multi": jnp.ravel_multi_index((np.array([1, 3]), np.array([4, 7])), (4, 5), mode="clip"),
        "ravel_multi_wrap": jnp.ravel_multi_index((np.array([1, 5]), np.array([4, 7])), (4, 5), mode="wrap", order="F"),
        "rot90": jnp.rot90(cube, 1, (1, 2)), "rot90_3": jnp.rot90(m, -1), "rot90_2": jnp.rot90(m, 2),
        "fliplr": jnp.fliplr(m), "flipud": jnp.flipud(m), "rollaxis": jnp.rollaxis(cube, 2, 1),
        "select": jnp.select([m > 12, m > 4], [m, -m], 7.0),
        "piecewise": jnp.piecewise(XS, [XS < 1, XS > 3], [lambda v: -v, 0.5, lambda v: v * 2]),
        "choose": jnp.choose(np.array([0, 1, 2, 3], np.int32), [m[0, :4], m[1, :4], m[2, :4], m[3, :4]]),
        "choose_clip": jnp.choose(np.array([[0, 5], [-1, 1]], np.int32), [np.zeros(2, F), np.ones(2, F)], mode="clip"),
        "compress": jnp.compress(np.array([True, False, True]), m, axis=1),
        "extract": jnp.extract(m > 14, m), "place": jnp.place(m, m > 14, np.array([1.0, 2], F), inplace=False),
        "put": jnp.put(m, np.array([0, -1, 7]), np.array([50.0, 60], F), inplace=False),
        "put_wrap": jnp.put(m, np.array([23, -22]), np.array([50.0, 60], F), mode="wrap", inplace=False),
        "insert_scalar": jnp.insert(m, 2, np.array([9.0, 8, 7, 6], F), axis=1),
        "insert_many": jnp.insert(np.arange(6, dtype=np.int32), np.array([1, 5, 1]), np.array([70, 80, 90], np.int32)),
        "insert_flat": jnp.insert(m, 3, F(-1)), "delete": jnp.delete(m, np.array([0, 3, -1]), axis=1),
        "delete_slice": jnp.delete(m, slice(1, None, 2), axis=0), "append": jnp.append(m, m[:1], axis=0),
        "append_flat": jnp.append(YS, F(1)), "resize": jnp.resize(np.arange(7, dtype=np.int32), (3, 4)),
        "trim_zeros": jnp.trim_zeros(np.array([0, 0, 3, 0, 2, 0], np.int32), "b"),
        "block": jnp.block([[np.ones((2, 2), F), np.zeros((2, 1), F)], [np.full((1, 3), 2.0, F)]]),
    }


def _statistics(jnp):
    out = {}
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        out[f"quantile_{method}"] = jnp.quantile(M, np.array([0.0, 0.1, 0.5, 0.77, 1.0], F), axis=1, method=method)
    out.update({
        "median": jnp.median(M), "median_axis": jnp.median(M, axis=0, keepdims=True),
        "percentile": jnp.percentile(M, F(30.0), axis=(0, 1)), "quantile_nan": jnp.quantile(N, F(0.5), axis=1),
        "nanmedian": jnp.nanmedian(N, axis=1), "nanpercentile": jnp.nanpercentile(N, np.array([25.0, 75], F), axis=1),
        "nanquantile_keep": jnp.nanquantile(N, F(0.3), axis=1, keepdims=True),
        "average": jnp.average(M, axis=1, weights=np.array([1.0, 2, 3, 4, 5], F), returned=True),
        "average_plain": jnp.average(M), "ptp": jnp.ptp(M, axis=1), "cov": jnp.cov(M),
        "cov_weights": jnp.cov(M, fweights=np.array([1, 2, 1, 3, 1]), aweights=np.array([0.5, 1, 2, 1, 1], F)),
        "cov_y": jnp.cov(M[0], M[1], ddof=0), "corrcoef": jnp.corrcoef(M, rowvar=False),
    })
    for name in ("nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd", "nanargmax", "nanargmin",
                 "nancumsum", "nancumprod"):
        out[name] = getattr(jnp, name)(N, axis=1)
    out["nanvar_ddof"] = jnp.nanvar(N[:2], ddof=1)
    return out


def _numerical(jnp):
    # NOTE: no value on an inner bin edge: meshjit's linspace rounds edges differently from JAX's
    data = np.array([0.1, 0.55, 0.3, 0.9, 1.0, 0.2, 0.75, 0.5], F)
    q = np.array([-1.0, 0.5, 2.2, 3.0, 10.0], F)
    return {
        "gradient": jnp.gradient(YS), "gradient_x": jnp.gradient(YS, XS), "gradient_2d": jnp.gradient(M, F(2.0)),
        "ediff1d": jnp.ediff1d(M, to_begin=np.array([0.5], F)), "trapezoid": jnp.trapezoid(YS, XS),
        "trapezoid_dx": jnp.trapezoid(M, dx=0.5, axis=0), "interp": jnp.interp(q, XS, YS),
        "interp_lr": jnp.interp(q, XS, YS, left=F(-1), right=F(-2)), "interp_period": jnp.interp(q, XS, YS, period=4),
        "digitize": jnp.digitize(q, XS), "digitize_dec": jnp.digitize(q, XS[::-1].copy(), right=True),
        "bincount": jnp.bincount(INTS), "bincount_w": jnp.bincount(INTS, weights=INTS * F(0.5), minlength=12),
        "bincount_len": jnp.bincount(INTS, length=4), "histogram": jnp.histogram(data, 4),
        "histogram_density": jnp.histogram(data, np.array([0.0, 0.25, 0.5, 1.0], F), density=True),
        "histogram_range": jnp.histogram(data, 3, range=(0.2, 0.8)),
        "histogram_bin_edges": jnp.histogram_bin_edges(data, 5), "histogram2d": jnp.histogram2d(data, data[::-1], bins=3),
        "cross": jnp.cross(M[:, :3], M[:, 2:]), "cross_2": jnp.cross(M[:, :2], M[:, 3:]),
        "cross_axis": jnp.cross(M[:, :3].T, M[:, 2:].T, axisa=0, axisb=0),
        "kron": jnp.kron(np.eye(2, dtype=F), M[:2, :3]), "vander": jnp.vander(XS[:4]),
        "vander_inc": jnp.vander(np.arange(1, 4, dtype=np.int32), 5, increasing=True),
    }


def _sets(jnp):
    floats = np.array([2.0, np.nan, 1.0, 2.0, np.nan], F)
    other = np.array([5, 7, 1, 8], np.int32)
    return {
        "unique": jnp.unique(INTS), "unique_all": jnp.unique(INTS, return_index=True, return_inverse=True, return_counts=True),
        "unique_size": jnp.unique(INTS, size=9, return_index=True, return_counts=True),
        "unique_fill": jnp.unique(INTS, size=9, fill_value=-1), "unique_nan": jnp.unique(floats),
        "unique_axis": jnp.unique(np.array([[1, 2], [1, 2], [0, 1]], np.int32), axis=0),
        "isin": jnp.isin(INTS, other), "isin_invert": jnp.isin(INTS.reshape(1, -1), other, invert=True),
        "union1d": jnp.union1d(INTS, other), "intersect1d": jnp.intersect1d(INTS, other),
        "intersect1d_idx": jnp.intersect1d(INTS, other, return_indices=True),
        "setdiff1d": jnp.setdiff1d(INTS, other), "setxor1d": jnp.setxor1d(INTS, other),
        "setdiff1d_size": jnp.setdiff1d(INTS, other, size=8), "setxor1d_size": jnp.setxor1d(INTS, other, size=9),
        "union1d_size": jnp.union1d(INTS, other, size=12), "intersect1d_size": jnp.intersect1d(INTS, other, size=4),
        "argwhere": jnp.argwhere(M > 5), "argwhere_size": jnp.argwhere(M > 5, size=8, fill_value=-1),
        "partition": jnp.partition(M, 2, axis=1), "argpartition": jnp.argpartition(M[0] + np.arange(5, dtype=F) / 10, 1),
        "lexsort": jnp.lexsort((np.array([1, 5, 1, 4, 3]), np.array([9, 4, 0, 4, 0]))),
        "lexsort_2d": jnp.lexsort((M, M[::-1]), axis=0),
    }


def _creation(jnp):
    bits = np.array([[1, 0, 1, 1, 0, 0, 1, 1, 1], [0, 1, 1, 0, 0, 0, 0, 0, 1]], bool)
    return {
        "logspace": jnp.logspace(0.0, 3.0, 7), "logspace_base": jnp.logspace(1.0, 4.0, 4, base=2.0, endpoint=False),
        "geomspace": jnp.geomspace(1.0, 1000.0, 4), "geomspace_neg": jnp.geomspace(-2.0, -64.0, 6),
        "mgrid": jnp.mgrid[0:3, 1:5:2], "mgrid_complex": jnp.mgrid[0:1:5j], "ogrid": jnp.ogrid[0:2, 0:3],
        "r_": jnp.r_[1:4, 0, np.array([7, 8])], "r_dir": jnp.r_["0,2,0", np.array([1, 2]), np.array([3, 4])],
        "c_": jnp.c_[np.array([1, 2]), np.array([3, 4])],
        "fromfunction": jnp.fromfunction(lambda i, k: i * 10 + k, (3, 4)),
        "packbits": jnp.packbits(bits), "packbits_axis": jnp.packbits(bits, axis=1, bitorder="little"),
        "unpackbits": jnp.unpackbits(np.array([5, 255, 128], np.uint8)),
        "unpackbits_axis": jnp.unpackbits(np.array([[5], [3]], np.uint8), axis=1, count=4, bitorder="little"),
        "bitwise_count": jnp.bitwise_count(np.array([0, 1, -1, 7, -128, 2**30], np.int32)),
        "array_equiv": jnp.array_equiv(np.ones(3), np.ones((2, 3))),
        "polyval": jnp.polyval(np.array([1.0, -2, 3], F), XS), "polyadd": jnp.polyadd(np.array([1, 2]), np.array([1.0, 2, 3], F)),
        "polysub": jnp.polysub(np.array([1.0, 2], F), np.array([1.0, 2, 3], F)),
        "polymul": jnp.polymul(np.array([1.0, 2], F), np.array([1.0, 3, -1], F)),
        "polyder": jnp.polyder(np.array([1.0, 2, 3, 4, 5], F), 2),
        "polyint": jnp.polyint(np.array([1.0, 2, 3], F), 2, k=np.array([1.0, 2], F)),
        "hamming": jnp.hamming(7), "hanning": jnp.hanning(6), "blackman": jnp.blackman(5), "bartlett": jnp.bartlett(6),
        "unwrap": jnp.unwrap(np.array([0, 3, 6.5, 0.2, 3.5, 7, 0.1], F)),
        "unwrap_period": jnp.unwrap(np.array([0, 3, 6.5, 0.2, 3.5, 7, 0.1], F), period=4),
        "vectorize": jnp.vectorize(lambda a, b: a * 2 + b)(XS, np.ones((2, 1), F)),
        "vectorize_sig": jnp.vectorize(jnp.dot, signature="(n),(n)->()")(M, M[0]),
        "apply_along_axis": jnp.apply_along_axis(lambda row: row[::-1] * 2, 0, M),
        "apply_over_axes": jnp.apply_over_axes(jnp.sum, M.reshape(3, 5, 1), [0, 2]),
    }


def compute(jnp) -> dict:
    """Every case's values under ``jnp`` (jax.numpy or meshjit.numpy)."""
    out = {}
    for group in (_elementwise, _structure, _statistics, _numerical, _sets, _creation):
        out.update(group(jnp))
    return out


ERROR_CASES = {
    "fill_diagonal_inplace": lambda jnp: jnp.fill_diagonal(np.zeros((2, 2)), 1.0),
    "place_inplace": lambda jnp: jnp.place(np.zeros(3), np.ones(3, bool), np.ones(1)),
    "put_inplace": lambda jnp: jnp.put(np.zeros(3), np.array([0]), np.ones(1)),
    "diag_3d": lambda jnp: jnp.diag(np.zeros((2, 2, 2))),
    "select_lengths": lambda jnp: jnp.select([np.ones(2, bool)], [np.ones(2), np.ones(2)]),
    "quantile_method": lambda jnp: jnp.quantile(M, 0.5, method="bogus"),
    "quantile_rank": lambda jnp: jnp.quantile(M, np.ones((2, 2), F)),
    "bincount_float": lambda jnp: jnp.bincount(np.ones(3, F)),
    "bincount_2d": lambda jnp: jnp.bincount(np.ones((2, 2), np.int32)),
    "ix_2d": lambda jnp: jnp.ix_(np.ones((2, 2), np.int32)),
    "cross_size": lambda jnp: jnp.cross(np.ones(4), np.ones(4)),
    "gradient_small": lambda jnp: jnp.gradient(np.ones(1, F)),
    "gradient_edge_order": lambda jnp: jnp.gradient(YS, edge_order=2),
    "fromiter": lambda jnp: jnp.fromiter(iter([1, 2]), dtype=float),
    "rot90_axes": lambda jnp: jnp.rot90(M, axes=(0, 0)),
    "fliplr_1d": lambda jnp: jnp.fliplr(YS),
    "vander_2d": lambda jnp: jnp.vander(M),
    "interp_lengths": lambda jnp: jnp.interp(YS, XS, YS[:3]),
    "unique_quantile_list": lambda jnp: jnp.percentile(M, [25, 75]),
    "packbits_float": lambda jnp: jnp.packbits(YS),
    "unpackbits_int": lambda jnp: jnp.unpackbits(INTS),
    "trim_zeros_2d": lambda jnp: jnp.trim_zeros(M),
    "histogram_bins": lambda jnp: jnp.histogram(YS, bins=0),
    "diag_indices_from_1d": lambda jnp: jnp.diag_indices_from(YS),
    "choose_out": lambda jnp: jnp.choose(np.zeros(2, np.int32), [YS[:2]], out=np.zeros(2)),
}


def error_types(jnp) -> dict:
    """The exception type each error case raises under ``jnp``."""
    raised = {}
    for name, case in ERROR_CASES.items():
        try:
            case(jnp)
        except Exception as error:  # noqa: BLE001 - recording the type is the point
            raised[name] = type(error).__name__
        else:
            raised[name] = "no error"
    return raised


def flatten(values: dict) -> dict:
    """Tuples and lists of arrays stored as ``name.0``, ``name.1``, ..."""
    flat = {}
    for name, value in values.items():
        if isinstance(value, (tuple, list)):
            for index, item in enumerate(value):
                flat[f"{name}.{index}"] = np.asarray(item)
        else:
            flat[name] = np.asarray(value)
    return flat


if __name__ == "__main__":
    import jax.numpy as jax_numpy

    data = Path(__file__).parent / "data"
    np.savez(data / "jax_numpy_extra_values.npz", **flatten(compute(jax_numpy)))
    (data / "jax_numpy_extra_errors.json").write_text(json.dumps(error_types(jax_numpy), indent=1, sort_keys=True) + "\n")
