"""Property tests: kartoframe's answer equals pandas filtering of the full frame.

Random frames (ints, floats with NaN, strings with nulls, bools, dates), random
partitioning and secondary indices, random DNF predicates with every operator. The
reference semantics (``reference_mask``) are the documented null semantics.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.execution.kernel import read_task_frame

OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in", "is distinct from"]

INTS = st.integers(-3, 3)
STRS = st.sampled_from(["a", "b", "c", "ü/x", ""])
DATES = st.sampled_from([dt.date(2020, 1, d) for d in (1, 2, 3)])


@st.composite
def frames(draw):
    n = draw(st.integers(0, 30))
    k = draw(st.lists(INTS, min_size=n, max_size=n))
    p = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=n, max_size=n))
    f = draw(
        st.lists(st.one_of(st.none(), st.sampled_from([-1.5, 0.0, 2.5])), min_size=n, max_size=n)
    )
    s = draw(st.lists(st.one_of(st.none(), STRS), min_size=n, max_size=n))
    b = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    d = draw(st.lists(DATES, min_size=n, max_size=n))
    i = draw(st.lists(st.one_of(st.none(), INTS), min_size=n, max_size=n))
    return pd.DataFrame(
        {
            "k": pd.array(k, dtype="int64"),
            "p": pd.array(p, dtype="str"),
            "f": pd.array([np.nan if v is None else v for v in f], dtype="float64"),
            "s": pd.array(s, dtype="str"),
            "b": pd.array(b, dtype="bool"),
            "d": pd.Series(d, dtype=object),
            "i": pd.array(i, dtype="Int64"),
            "rid": np.arange(n),
        }
    )


VALUES = {
    "k": INTS,
    "p": st.sampled_from(["x", "y", "w"]),
    "f": st.sampled_from([-1.5, 0.0, 1.0, 2.5]),
    "s": STRS,
    "b": st.booleans(),
    "d": DATES,
    "i": INTS,
}
NULLABLE_OPS = ["==", "!=", "is distinct from"]


@st.composite
def literals(draw):
    col = draw(st.sampled_from(sorted(VALUES)))
    op = draw(st.sampled_from(OPS))
    if col == "b" and op in ("<", "<=", ">", ">="):
        op = "=="
    if op in ("in", "not in"):
        vals = draw(st.lists(st.one_of(st.none(), VALUES[col]), max_size=3))
        return (col, op, vals)
    if op in NULLABLE_OPS and draw(st.integers(0, 5)) == 0:
        return (col, op, None)
    return (col, op, draw(VALUES[col]))


PREDICATES = st.lists(st.lists(literals(), min_size=1, max_size=3), min_size=1, max_size=3)


def _isnull(s: pd.Series) -> pd.Series:
    return s.isna().to_numpy(dtype=bool)


def literal_mask(df: pd.DataFrame, col: str, op: str, value) -> np.ndarray:
    s = df[col]
    null = _isnull(s)
    obj = s.astype(object)
    if op in ("in", "not in"):
        vals = [v for v in value if v is not None]
        hit = np.array([(not n) and (x in vals) for x, n in zip(obj, null)], dtype=bool)
        if op == "in":
            return hit | (null if any(v is None for v in value) else False)
        return ~hit & ~null
    if value is None:
        return null if op == "==" else ~null

    def cmp(x):
        return {
            "==": x == value,
            "!=": x != value,
            "<": x < value,
            "<=": x <= value,
            ">": x > value,
            ">=": x >= value,
            "is distinct from": x != value,
        }[op]

    base = np.array([(not n) and bool(cmp(x)) for x, n in zip(obj, null)], dtype=bool)
    return base | null if op == "is distinct from" else base


def reference_mask(df: pd.DataFrame, predicates) -> np.ndarray:
    out = np.zeros(len(df), dtype=bool)
    for conj in predicates:
        m = np.ones(len(df), dtype=bool)
        for col, op, value in conj:
            m &= literal_mask(df, col, op, value)
        out |= m
    return out


LAYOUTS = st.sampled_from(
    [([], []), (["p"], ["s"]), (["p", "k"], ["i", "d"]), (["b"], ["k", "f"]), (["d"], ["s", "b"])]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=frames(), layout=LAYOUTS, predicates=PREDICATES, chunks=st.integers(1, 3))
def test_read_equals_pandas_filter(df, layout, predicates, chunks) -> None:
    partition_on, indices = layout
    store = kf.Store(f"memory://prop-{uuid.uuid4().hex}")
    bounds = np.linspace(0, len(df), chunks + 1).astype(int)
    parts = [df.iloc[a:b] for a, b in itertools.pairwise(bounds)]
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=parts,
        partition_on=partition_on,
        secondary_indices=indices,
    )
    got = kf.read_table("ds", store, predicates=predicates)
    want = df[reference_mask(df, predicates)]
    assert sorted(got["rid"].tolist()) == sorted(want["rid"].tolist()), predicates

    # pruning never drops a partition that holds a matching row
    plan, _ = plan_read("ds", store, predicates=predicates)
    kept = {f.label for t in plan.tasks for f in t.files}
    full, _ = plan_read("ds", store)
    for task in full.tasks:
        part = read_task_frame(full, task, store)
        if reference_mask(part, predicates).any():
            assert task.files[0].label in kept
    store.fs.rm(store.path("ds.by-dataset-metadata.json").rsplit("/", 1)[0], recursive=True)


@pytest.mark.parametrize("op", OPS)
def test_each_operator_on_indexed_column_keeps_nulls_correct(op) -> None:
    df = pd.DataFrame(
        {
            "p": ["a", "a", "b", "b"],
            "i": pd.array([1, None, 2, None], dtype="Int64"),
            "rid": range(4),
        }
    )
    store = kf.Store(f"memory://ops-{uuid.uuid4().hex}")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["i"]
    )
    for value in [1, 2, None]:
        if value is None and op not in NULLABLE_OPS and op not in ("in", "not in"):
            continue
        pred = [[("i", op, value if op not in ("in", "not in") else [value])]]
        got = sorted(kf.read_table("ds", store, predicates=pred)["rid"].tolist())
        assert got == sorted(df[reference_mask(df, pred)]["rid"].tolist()), pred
