"""The explicit-sharding table: ops x operand shardings on a 2 x 4 mesh of Explicit axes X and Y.

Each case is ``(name, build, operands)``: ``build(jax, jnp, lax, P)`` returns the function to
trace under ``jax.jit``, and ``operands`` are ``(shape, spec entries)`` placed with
``device_put``. ``explicit_types.json`` holds what JAX 0.10.2 gives for each (the result types as
``str(jax.typeof(...))``, or the exception's type and message), made once by
``generate_explicit_types.py``; ``test_explicit_types.py`` checks meshjit against it. The
module imports neither JAX nor meshjit, so both run the same cases.
"""

from __future__ import annotations

A = ((8, 4), ("X", None))
B = ((8, 4), (None, "Y"))
C = ((8, 4), ("X", "Y"))
D = ((8, 4), ("Y", None))
E = ((8, 4), (("X", "Y"), None))
F = ((8, 4), (("Y", "X"), None))
R = ((8, 4), ())
T = ((8, 4), (None, "X"))
ROW_X = ((8,), ("X",))
ROW_Y = ((4,), ("Y",))
ROW_XQ = ((4,), ("X",))
ROW = ((4,), ())


def _binary(op):
    return lambda jax, jnp, lax, P: op


CASES = [
    # elementwise: operands agree dim by dim, unsplit agrees with anything
    ("add A B", _binary(lambda a, b: a + b), [A, B]),
    ("add A R", _binary(lambda a, b: a + b), [A, R]),
    ("add A D", _binary(lambda a, b: a + b), [A, D]),
    ("add A C", _binary(lambda a, b: a + b), [A, C]),
    ("add E A", _binary(lambda a, b: a + b), [E, A]),
    ("add E F", _binary(lambda a, b: a + b), [E, F]),
    ("add A T", _binary(lambda a, b: a + b), [A, T]),
    ("mul C C", _binary(lambda a, b: a * b), [C, C]),
    ("sub B R", _binary(lambda a, b: a - b), [B, R]),
    ("max A B", lambda jax, jnp, lax, P: jnp.maximum, [A, B]),
    ("pow C scalar", lambda jax, jnp, lax, P: lambda a: a ** 2, [C]),
    ("div scalar C", lambda jax, jnp, lax, P: lambda a: 1.0 / a, [C]),
    ("lt A B", _binary(lambda a, b: a < b), [A, B]),
    ("sin C", lambda jax, jnp, lax, P: jnp.sin, [C]),
    ("exp E", lambda jax, jnp, lax, P: jnp.exp, [E]),
    ("convert C", lambda jax, jnp, lax, P: lambda a: a.astype(jnp.int32), [C]),
    ("abs neg T", lambda jax, jnp, lax, P: lambda a: jnp.abs(-a), [T]),
    ("broadcast row X+Y", _binary(lambda a, b: a + b), [A, ROW_Y]),
    ("broadcast row X+X", _binary(lambda a, b: a + b), [A, ROW_XQ]),
    ("broadcast row B+R", _binary(lambda a, b: a + b), [B, ROW]),
    ("broadcast col", _binary(lambda a, b: a + b), [((8, 1), ("X", None)), ((1, 4), (None, "Y"))]),
    ("where A A", lambda jax, jnp, lax, P: lambda a, b: jnp.where(a > 2, a, b), [A, A]),
    ("where A B", lambda jax, jnp, lax, P: lambda a, b: jnp.where(a > 2, a, b), [A, B]),
    ("where scalar", lambda jax, jnp, lax, P: lambda a: jnp.where(a > 2, a, 0.0), [C]),
    ("clip C", lambda jax, jnp, lax, P: lambda a: jnp.clip(a, 0.0, 3.0), [C]),
    ("outer X Y", lambda jax, jnp, lax, P: jnp.outer, [ROW_X, ROW_Y]),
    ("outer X X", lambda jax, jnp, lax, P: jnp.outer, [ROW_X, ROW_X]),
    # reductions drop the reduced dims' axes; scans and sort need their dim unsplit
    ("sum 0 C", lambda jax, jnp, lax, P: lambda a: a.sum(0), [C]),
    ("sum 1 C", lambda jax, jnp, lax, P: lambda a: a.sum(1), [C]),
    ("sum all C", lambda jax, jnp, lax, P: lambda a: a.sum(), [C]),
    ("sum keepdims C", lambda jax, jnp, lax, P: lambda a: a.sum(0, keepdims=True), [C]),
    ("max 0 E", lambda jax, jnp, lax, P: lambda a: a.max(0), [E]),
    ("min 1 C", lambda jax, jnp, lax, P: lambda a: a.min(1), [C]),
    ("prod 0 A", lambda jax, jnp, lax, P: lambda a: jnp.prod(a, 0), [A]),
    ("mean 0 C", lambda jax, jnp, lax, P: lambda a: a.mean(0), [C]),
    ("argmax 0 C", lambda jax, jnp, lax, P: lambda a: a.argmax(0), [C]),
    ("argmin 1 C", lambda jax, jnp, lax, P: lambda a: a.argmin(1), [C]),
    ("cumsum 0 C", lambda jax, jnp, lax, P: lambda a: jnp.cumsum(a, 0), [C]),
    ("cumsum 1 A", lambda jax, jnp, lax, P: lambda a: jnp.cumsum(a, 1), [A]),
    ("cumprod 0 B", lambda jax, jnp, lax, P: lambda a: jnp.cumprod(a, 0), [B]),
    ("sort 0 C", lambda jax, jnp, lax, P: lambda a: jnp.sort(a, 0), [C]),
    ("sort 1 A", lambda jax, jnp, lax, P: lambda a: jnp.sort(a, 1), [A]),
    ("argsort 1 A", lambda jax, jnp, lax, P: lambda a: jnp.argsort(a, 1), [A]),
    # layout
    ("transpose C", lambda jax, jnp, lax, P: lambda a: a.T, [C]),
    ("transpose 3d", lambda jax, jnp, lax, P: lambda a: jnp.transpose(a, (2, 0, 1)),
     [((2, 8, 4), ("X", None, "Y"))]),
    ("swapaxes E", lambda jax, jnp, lax, P: lambda a: jnp.swapaxes(a, 0, 1), [E]),
    ("reshape merge C", lambda jax, jnp, lax, P: lambda a: a.reshape(32), [C]),
    ("reshape merge A", lambda jax, jnp, lax, P: lambda a: a.reshape(32), [A]),
    ("reshape merge B", lambda jax, jnp, lax, P: lambda a: a.reshape(32), [B]),
    ("reshape split A", lambda jax, jnp, lax, P: lambda a: a.reshape(2, 4, 4), [A]),
    ("reshape split minor A", lambda jax, jnp, lax, P: lambda a: a.reshape(8, 2, 2), [A]),
    ("reshape split B", lambda jax, jnp, lax, P: lambda a: a.reshape(8, 2, 2), [B]),
    ("reshape split E", lambda jax, jnp, lax, P: lambda a: a.reshape(2, 4, 4), [E]),
    ("reshape split E bad", lambda jax, jnp, lax, P: lambda a: a.reshape(4, 2, 4), [E]),
    ("reshape split 4 A", lambda jax, jnp, lax, P: lambda a: a.reshape(4, 2, 4), [A]),
    ("reshape other A", lambda jax, jnp, lax, P: lambda a: a.reshape(4, 8), [A]),
    ("reshape other R", lambda jax, jnp, lax, P: lambda a: a.reshape(4, 8), [R]),
    ("reshape 3 to 2", lambda jax, jnp, lax, P: lambda a: a.reshape(8, 4), [((2, 4, 4), ("X", None, None))]),
    ("reshape 3 to 2 trailing", lambda jax, jnp, lax, P: lambda a: a.reshape(2, 16),
     [((2, 4, 4), ("X", None, None))]),
    ("reshape 3 to 2 XY", lambda jax, jnp, lax, P: lambda a: a.reshape(8, 4), [((2, 4, 4), ("X", "Y", None))]),
    ("reshape 3 to 2 XY minor", lambda jax, jnp, lax, P: lambda a: a.reshape(2, 16),
     [((2, 4, 4), ("X", "Y", None))]),
    ("reshape unit dims", lambda jax, jnp, lax, P: lambda a: a.reshape(8, 1, 4, 1), [C]),
    ("ravel C", lambda jax, jnp, lax, P: jnp.ravel, [C]),
    ("expand_dims C", lambda jax, jnp, lax, P: lambda a: a[None], [C]),
    ("squeeze", lambda jax, jnp, lax, P: lambda a: jnp.squeeze(a, 1), [((8, 1, 4), ("X", None, "Y"))]),
    ("broadcast_to C", lambda jax, jnp, lax, P: lambda a: jnp.broadcast_to(a, (3, 8, 4)), [C]),
    ("concatenate 0 C C", lambda jax, jnp, lax, P: lambda a, b: jnp.concatenate([a, b], 0), [C, C]),
    ("concatenate 1 C C", lambda jax, jnp, lax, P: lambda a, b: jnp.concatenate([a, b], 1), [C, C]),
    ("concatenate A R", lambda jax, jnp, lax, P: lambda a, b: jnp.concatenate([a, b], 1), [A, R]),
    ("stack C C", lambda jax, jnp, lax, P: lambda a, b: jnp.stack([a, b]), [C, C]),
    ("flip 0 C", lambda jax, jnp, lax, P: lambda a: jnp.flip(a, 0), [C]),
    ("lax.slice divisible", lambda jax, jnp, lax, P: lambda a: lax.slice(a, (0, 0), (4, 4)), [C]),
    ("lax.slice indivisible", lambda jax, jnp, lax, P: lambda a: lax.slice(a, (0, 0), (8, 2)), [C]),
    ("lax.slice strided", lambda jax, jnp, lax, P: lambda a: lax.slice(a, (0, 0), (8, 4), (2, 1)), [C]),
    ("lax.pad", lambda jax, jnp, lax, P: lambda a: lax.pad(a, 0.0, ((1, 1, 0), (0, 0, 0))), [C]),
    ("lax.pad indivisible", lambda jax, jnp, lax, P: lambda a: lax.pad(a, 0.0, ((0, 0, 0), (1, 1, 0))), [C]),
    ("dynamic_slice", lambda jax, jnp, lax, P: lambda a: lax.dynamic_slice(a, (1, 0), (4, 4)), [C]),
    ("dynamic_slice indivisible", lambda jax, jnp, lax, P: lambda a: lax.dynamic_slice(a, (0, 0), (8, 2)), [C]),
    ("dynamic_update_slice same", lambda jax, jnp, lax, P: lambda a, b: lax.dynamic_update_slice(a, b, (0, 0)),
     [C, C]),
    ("dynamic_update_slice other", lambda jax, jnp, lax, P: lambda a, b: lax.dynamic_update_slice(a, b, (0, 0)),
     [C, ((2, 4), ())]),
    ("take unsplit axis", lambda jax, jnp, lax, P: lambda a: jnp.take(a, jnp.array([1, 2]), axis=0), [B]),
    ("take split axis", lambda jax, jnp, lax, P: lambda a: jnp.take(a, jnp.array([1, 2]), axis=0), [C]),
    # contractions
    ("dot free dims", lambda jax, jnp, lax, P: jnp.dot, [((8, 4), ("X", None)), ((4, 16), (None, "Y"))]),
    ("dot contracting both", lambda jax, jnp, lax, P: jnp.dot, [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("dot contracting rhs", lambda jax, jnp, lax, P: jnp.dot, [((8, 4), ()), ((4, 16), ("X", None))]),
    ("dot contracting lhs", lambda jax, jnp, lax, P: jnp.dot, [((8, 4), ("Y", "X")), ((4, 16), ())]),
    ("dot contracting differ", lambda jax, jnp, lax, P: jnp.dot, [((8, 4), (None, "Y")), ((4, 16), ("X", None))]),
    ("dot duplicate", lambda jax, jnp, lax, P: jnp.dot, [((8, 4), ("X", None)), ((4, 16), (None, "X"))]),
    ("matmul out_sharding", lambda jax, jnp, lax, P: lambda a, b: jnp.matmul(a, b, out_sharding=P("X", None)),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("dot out_sharding cols", lambda jax, jnp, lax, P: lambda a, b: jnp.dot(a, b, out_sharding=P(None, "X")),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("einsum out_sharding", lambda jax, jnp, lax, P: lambda a, b: jnp.einsum("ij,jk->ik", a, b,
                                                                             out_sharding=P("X")),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("einsum batch", lambda jax, jnp, lax, P: lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
     [((2, 8, 4), ("X", None, None)), ((2, 4, 16), (None, None, "Y"))]),
    ("einsum batch duplicate", lambda jax, jnp, lax, P: lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
     [((2, 8, 4), ("X", None, None)), ((2, 4, 16), (None, None, "X"))]),
    ("einsum batch rhs", lambda jax, jnp, lax, P: lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
     [((2, 8, 4), ()), ((2, 4, 16), ("X", None, None))]),
    ("matvec", lambda jax, jnp, lax, P: lambda a, b: a @ b, [C, ROW]),
    ("matvec contracting", lambda jax, jnp, lax, P: lambda a, b: a @ b, [C, ROW_Y]),
    ("vector dot", lambda jax, jnp, lax, P: jnp.dot, [ROW_X, ((8,), ())]),
    ("tensordot outer", lambda jax, jnp, lax, P: lambda a, b: jnp.tensordot(a, b, axes=0), [ROW_X, ROW_Y]),
    ("reshape out_sharding", lambda jax, jnp, lax, P: lambda a: jnp.reshape(a, (32,), out_sharding=P("X")), [B]),
    # results typed by out_sharding, and resharding
    ("zeros out_sharding", lambda jax, jnp, lax, P: lambda a: a + jnp.zeros((8, 4), out_sharding=P("X")), [A]),
    ("ones_like", lambda jax, jnp, lax, P: lambda a: jnp.ones_like(a), [C]),
    ("full_like out_sharding", lambda jax, jnp, lax, P: lambda a: jnp.full_like(a, 2.0, out_sharding=P("Y")), [C]),
    ("arange out_sharding", lambda jax, jnp, lax, P: lambda a: a + jnp.arange(4.0, out_sharding=P("Y")), [B]),
    ("reshard", lambda jax, jnp, lax, P: lambda a: jax.reshard(a, P(None, ("X", "Y"))), [C]),
    ("reshard then add", lambda jax, jnp, lax, P: lambda a, b: jax.reshard(a, P(None, "Y")) + b, [A, B]),
    ("out_sharding on Auto axis", lambda jax, jnp, lax, P: lambda a: jnp.zeros((8, 4), out_sharding=P("Z")), [A]),
    ("nn.softmax", lambda jax, jnp, lax, P: lambda a: jax.nn.softmax(a, -1), [C]),
    ("nn.relu", lambda jax, jnp, lax, P: jax.nn.relu, [C]),
    # pending sums (unreduced axes)
    ("unreduced dot", lambda jax, jnp, lax, P: lambda a, b: jnp.dot(a, b, out_sharding=P(None, None,
                                                                                         unreduced={"X"})),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced dot wrong axis", lambda jax, jnp, lax, P: lambda a, b: jnp.dot(
        a, b, out_sharding=P(None, None, unreduced={"Y"})), [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced add", lambda jax, jnp, lax, P: lambda a, b: _pending(jnp, P, a, b) + _pending(jnp, P, a, b),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced add plain", lambda jax, jnp, lax, P: lambda a, b: _pending(jnp, P, a, b) + 1.0,
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced sum", lambda jax, jnp, lax, P: lambda a, b: _pending(jnp, P, a, b).sum(0),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced transpose", lambda jax, jnp, lax, P: lambda a, b: _pending(jnp, P, a, b).T,
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced sin", lambda jax, jnp, lax, P: lambda a, b: jnp.sin(_pending(jnp, P, a, b)),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced mul scalar", lambda jax, jnp, lax, P: lambda a, b: _pending(jnp, P, a, b) * 2.0,
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced times unreduced", lambda jax, jnp, lax, P: lambda a, b: (_pending(jnp, P, a, b)
                                                                          * _pending(jnp, P, a, b)),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced dot input", lambda jax, jnp, lax, P: lambda a, b: _pending(jnp, P, a, b) @ jnp.ones((16, 2)),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced resharded", lambda jax, jnp, lax, P: lambda a, b: jax.reshard(_pending(jnp, P, a, b), P("X")),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("unreduced times reduced", lambda jax, jnp, lax, P: lambda a, b: (
        _pending(jnp, P, a, b) * jax.reshard(jnp.ones((8, 16)), P(None, None, reduced={"X"}))),
     [((8, 4), (None, "X")), ((4, 16), ("X", None))]),
    ("reduced plus replicated", lambda jax, jnp, lax, P: lambda a: (
        jax.reshard(jnp.ones((8, 4)), P(None, None, reduced={"X"})) + a), [R]),
]


def _pending(jnp, P, a, b):
    """``a @ b`` with the sum over the X-split contracting dim left pending."""
    return jnp.dot(a, b, out_sharding=P(None, None, unreduced={"X"}))


def run_case(jax, jnp, lax, P, mesh, case) -> dict:
    """Trace one case under ``jax.jit`` (JAX's or meshjit's modules) on ``mesh``: the result
    types, or the exception's type name and message."""
    import numpy as np

    name, build, operands = case
    arrays = []
    for shape, entries in operands:
        value = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        arrays.append(jax.device_put(value, jax.sharding.NamedSharding(mesh, P(*entries))))
    with jax.set_mesh(mesh):
        try:
            function = build(jax, jnp, lax, P)
            traced = jax.jit(function).trace(*arrays)
        except Exception as error:  # noqa: BLE001 - the table records whatever JAX raises
            return {"error": type(error).__name__, "message": str(error).split("\n")[0]}
    leaves = jax.tree_util.tree_leaves(traced.out_info)
    return {"types": [_type_text(jax, leaf) for leaf in leaves]}


def _type_text(jax, leaf) -> str:
    spec = leaf.sharding.spec if leaf.sharding is not None else None
    return f"{leaf.dtype}{list(leaf.shape)} {spec!r}"
