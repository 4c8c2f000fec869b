"""The condition language: construction, rules, DNF conversion, parsing, type checks."""

from __future__ import annotations

import datetime as dt
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe import C, Condition, Conjunction
from kartoframe.plan.conditions import (
    InIntervalCondition,
    IsInCondition,
    SimpleCondition,
    check_condition_types,
)


def test_operators_build_conditions():
    assert (C("x") == 1) == SimpleCondition("x", "==", 1)
    assert [(op, c.op) for op, c in [("!=", C("x") != 1), ("<", C("x") < 1)]] == [
        ("!=", "!="),
        ("<", "<"),
    ]
    assert (C("x") <= 1).predicate_part == [("x", "<=", 1)]
    assert (C("x") > 1).predicate_part == [("x", ">", 1)]
    assert (C("x") >= 1).predicate_part == [("x", ">=", 1)]
    reflected = 1 < C("x")  # noqa: SIM300
    assert reflected == (C("x") > 1)
    assert C("x").isin([1, 2]) == IsInCondition("x", (1, 2))
    assert C("x").in_interval(1, 3).predicate_part == [("x", ">=", 1), ("x", "<", 3)]
    assert C("x").in_interval(stop=3).predicate_part == [("x", "<", 3)]
    assert not C("x").in_interval().active


def test_conjunction():
    conj = (C("x") > 1) & (C("y") == "a") & C("x").isin([2, 3])
    assert isinstance(conj, Conjunction)
    assert len(conj) == 3
    assert conj.columns == {"x", "y"}
    assert conj.predicate == [("x", ">", 1), ("y", "==", "a"), ("x", "in", [2, 3])]
    assert conj.to_predicates() == [conj.predicate]
    split = conj.split_by_column()
    assert split["x"] == Conjunction([C("x") > 1, C("x").isin([2, 3])])
    assert Conjunction(None).to_predicates() is None
    assert Conjunction([conj, C("z") < 0]).columns == {"x", "y", "z"}
    assert Conjunction(C("x") == 1) == Conjunction([C("x") == 1])
    assert (conj & InIntervalCondition("q")).columns == {"x", "y"}
    assert str(conj) == "(x > 1) & (y == a) & (x in (2, 3))"
    assert pickle.loads(pickle.dumps(conj)) == conj
    assert hash(conj) == hash(pickle.loads(pickle.dumps(conj)))
    with pytest.raises(AttributeError):
        conj.conditions = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    ("build", "exc", "message"),
    [
        (lambda: C("x") == None, kf.InvalidInputError, 'NULL-value to compare w/ column "x"'),  # noqa: E711
        (lambda: C("x") == np.nan, kf.InvalidInputError, "NULL-value"),
        (lambda: C("x").isin([1, None]), kf.InvalidInputError, "NULL-value"),
        (lambda: C("x").in_interval(pd.NaT, 1), kf.InvalidInputError, "NULL-value"),
        (lambda: C("x") == C("y"), kf.InvalidTypeError, "Cannot compare two columns."),
        (lambda: C("x") == (C("y") == 1), kf.InvalidTypeError, "Cannot use nested conditions."),
        (lambda: C("x") == [1, 2], kf.InvalidTypeError, "use .isin"),
        (lambda: C("x").isin(1), kf.InvalidTypeError, "needs a list"),
        (lambda: bool(C("x") == 1), kf.InvalidTypeError, "Cannot check if a condition"),
        (lambda: 1 < C("x") < 3, kf.InvalidTypeError, "A <= column < B"),
        (lambda: Conjunction([1]), kf.InvalidTypeError, "Can only build conjunction"),
        (lambda: (C("x") == 1) & 2, kf.InvalidTypeError, "Can only build conjunction"),
        (lambda: C(1), kf.InvalidTypeError, "is not a string"),
    ],
)
def test_invalid_conditions(build, exc, message):
    with pytest.raises(exc, match=message.replace("(", r"\(").replace(".", r"\.")):
        build()


def test_filter_df_uses_sql_null_semantics():
    df = pd.DataFrame({"x": [1.0, np.nan, 3.0], "s": ["a", None, "c"]})
    assert (C("x") != 1.0).filter_df(df).x.tolist() == [3.0]
    assert ((C("x") >= 1.0) & (C("s") != "z")).filter_df(df).x.tolist() == [1.0, 3.0]
    assert C("s").isin(["c"]).filter_df(df).x.tolist() == [3.0]


def test_from_string():
    types = {
        "x": pa.int64(),
        "f": pa.float64(),
        "s": pa.string(),
        "b": pa.bool_(),
        "d": pa.date32(),
        "t": pa.timestamp("us"),
    }
    assert Condition.from_string("x > 1", types) == (C("x") > 1)
    assert Condition.from_string(" (x=2) ", types) == (C("x") == 2)
    assert Condition.from_string("f<=1.5", types) == (C("f") <= 1.5)
    assert Condition.from_string("s != 'a b'", types) == (C("s") != "a b")
    assert Condition.from_string('s == "x"', types) == (C("s") == "x")
    assert Condition.from_string("b == yes", types) == (C("b") == True)  # noqa: E712
    assert Condition.from_string("d >= 2024-01-31", types) == (C("d") >= dt.date(2024, 1, 31))
    assert Condition.from_string("t < 2024-01-31 10:00", types) == (
        C("t") < dt.datetime(2024, 1, 31, 10)
    )
    with pytest.raises(kf.InvalidInputError, match='Cannot parse condition "x ~ 1"'):
        Condition.from_string("x ~ 1", types)
    with pytest.raises(kf.InvalidInputError, match='Unknown column "zz" in condition'):
        Condition.from_string("zz == 1", types)
    with pytest.raises(kf.InvalidInputError, match="Cannot parse value"):
        Condition.from_string("x == abc", types)


def test_type_checks_against_every_dataset():
    schemas = {
        "seed": pa.schema([("x", pa.int64()), ("s", pa.string())]),
        "enrich": pa.schema([("x", pa.int64()), ("n", pa.null()), ("u", pa.uint64())]),
    }
    check_condition_types(Conjunction([C("x") == 1, C("s").isin(["a"]), C("n") == 1.5]), schemas)
    check_condition_types(Conjunction(C("u") == np.uint64(3)), schemas)
    with pytest.raises(
        kf.InvalidTypeError,
        match=r"Condition `x > 1.5` has wrong type. Expected `int64 \(int64\)` but got "
        r"`1.5 \(float\)`",
    ):
        check_condition_types(Conjunction(C("x") > 1.5), schemas)
    with pytest.raises(kf.InvalidTypeError, match="has wrong type"):
        check_condition_types(Conjunction(C("s").isin(["a", 1])), schemas)
    with pytest.raises(kf.InvalidTypeError, match=r"got `3 \(uint64\)`"):
        check_condition_types(Conjunction(C("x") == np.uint64(3)), schemas)
    with pytest.raises(kf.InvalidTypeError, match=r"got `-3 \(int64\)`"):
        check_condition_types(Conjunction(C("u") == np.int64(-3)), schemas)
