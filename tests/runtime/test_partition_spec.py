"""PartitionSpec: entries, sequence behaviour, repr, equality and hashing."""

from __future__ import annotations

import pickle

import pytest

from meshjit.sharding import P, PartitionSpec


def test_p_is_partition_spec():
    assert P is PartitionSpec
    assert PartitionSpec.UNCONSTRAINED is P.UNCONSTRAINED


@pytest.mark.parametrize("spec, entries", [
    (P(), ()),
    (P(None), (None,)),
    (P("x"), ("x",)),
    (P("x", None, "y"), ("x", None, "y")),
    (P(("x", "y")), (("x", "y"),)),
    (P(["x", "y"], None), (("x", "y"), None)),  # lists become tuples
    (P(None, P.UNCONSTRAINED), (None, P.UNCONSTRAINED)),
    # as JAX 0.10: the empty tuple is None and a one-name tuple is the name
    (P(()), (None,)),
    (P(("x",)), ("x",)),
    (P(["y"], ("x",)), ("y", "x")),
])
def test_entries_and_sequence_behaviour(spec, entries):
    assert tuple(spec) == entries
    assert len(spec) == len(entries)
    assert [spec[i] for i in range(len(spec))] == list(entries)
    assert spec[1:] == entries[1:]


def test_index_and_count():
    spec = P("x", None, "y", None)
    assert spec.index(None) == 1 and spec.index("y") == 2
    assert spec.count(None) == 2
    with pytest.raises(ValueError):
        spec.index("z")


# Goldens printed by JAX 0.10.
@pytest.mark.parametrize("spec, text", [
    (P(), "P()"),
    (P(None), "P(None,)"),
    (P("x"), "P('x',)"),
    (P("x", None, ("y", "z")), "P('x', None, ('y', 'z'))"),
    (P(P.UNCONSTRAINED), "P(UNCONSTRAINED,)"),
    (P(None, P.UNCONSTRAINED, "x"), "P(None, UNCONSTRAINED, 'x')"),
])
def test_repr_matches_jax(spec, text):
    assert repr(spec) == text
    assert str(spec) == text


@pytest.mark.parametrize("left, right, equal", [
    (P("x"), P("x"), True),
    (P("x", ("y", "z")), P("x", ["y", "z"]), True),
    (P(), P(), True),
    (P("x"), P("x", None), False),  # trailing None is not dropped (as JAX)
    (P("x", "y"), P("y", "x"), False),
    (P(("x", "y")), P(("y", "x")), False),
    (P(None), P(P.UNCONSTRAINED), False),
    (P("x"), ("x",), False),  # a spec is not a tuple
])
def test_equality_and_hash(left, right, equal):
    assert (left == right) is equal
    assert (left != right) is not equal
    if equal:
        assert hash(left) == hash(right)


def test_specs_work_as_dict_keys():
    table = {P("x"): 1, P("x", None): 2, P(): 3}
    assert table[P("x")] == 1 and table[P("x", None)] == 2 and table[P()] == 3


def test_pickle_round_trip():
    for spec in (P(), P("x", None, ("y", "z")), P(P.UNCONSTRAINED, "x")):
        copy = pickle.loads(pickle.dumps(spec))
        assert copy == spec
    assert pickle.loads(pickle.dumps(P.UNCONSTRAINED)) is P.UNCONSTRAINED


def test_used_axes():
    assert P("x", None, ("y", "z")).used_axes() == ["x", "y", "z"]
    assert P(P.UNCONSTRAINED, None).used_axes() == []


def test_a_one_name_tuple_equals_the_name():
    assert P(("x",)) == P("x") and hash(P(("x",))) == hash(P("x"))
    assert repr(P(("x",), ())) == "P('x', None)"
    assert P(("x",), None) != P("x")
