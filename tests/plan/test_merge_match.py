"""The merge's row matching (``plan.merge._match``) against a pandas inner join.

The match is a lookup of the target's keys among the source's unique keys, column by
column through shared codes: keys of several columns and types, nulls and NaNs (which
never match), rows out of scope, and keys of one side absent from the other.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from kartoframe.plan.merge import _match

VALUES = {
    "i": (pa.int64(), st.one_of(st.none(), st.integers(-3, 3))),
    "s": (pa.string(), st.one_of(st.none(), st.sampled_from(["a", "b", "", "é"]))),
    "f": (pa.float64(), st.one_of(st.none(), st.sampled_from([0.0, -1.5, 2.25, float("nan")]))),
    "d": (
        pa.date32(),
        st.one_of(st.none(), st.sampled_from([dt.date(2024, 1, 1), dt.date(1970, 1, 2)])),
    ),
    "u": (pa.uint8(), st.one_of(st.none(), st.integers(0, 255))),
}


@st.composite
def tables(draw: st.DrawFn, on: list[str], unique: bool) -> pa.Table:
    n = draw(st.integers(0, 25))
    cols = {c: draw(st.lists(VALUES[c][1], min_size=n, max_size=n)) for c in on}
    table = pa.table({c: pa.array(v, type=VALUES[c][0]) for c, v in cols.items()})
    if unique and n:  # the source's keys are unique (prepare_source refuses others)
        frame = table.to_pandas().reset_index()
        first = frame.astype(str).drop_duplicates(subset=on).index.to_numpy()
        table = table.take(pa.array(np.sort(first)))
    return table


def _reference(target: pa.Table, source: pa.Table, on: list[str], scope: np.ndarray):
    def ok(t: pa.Table) -> np.ndarray:  # pandas counts NaN as missing too
        return t.to_pandas()[on].notna().all(axis=1).to_numpy(dtype=bool)

    t = target.to_pandas().astype(object).assign(_t=np.arange(target.num_rows))
    s = source.to_pandas().astype(object).assign(_s=np.arange(source.num_rows))
    t = t[ok(target) & scope]
    s = s[ok(source)]
    pairs = t.merge(s, on=on, how="inner").sort_values("_t")
    return pairs["_t"].to_numpy(np.int64), pairs["_s"].to_numpy(np.int64)


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    on=st.lists(st.sampled_from(sorted(VALUES)), min_size=1, max_size=3, unique=True),
)
def test_match_equals_an_inner_join(data: st.DataObject, on: list[str]) -> None:
    target = data.draw(tables(on, unique=False))
    source = data.draw(tables(on, unique=True))
    scope = np.asarray(
        data.draw(st.lists(st.booleans(), min_size=target.num_rows, max_size=target.num_rows)),
        dtype=bool,
    )

    t_pos, s_idx = _match(target, source, on, scope)

    want_t, want_s = _reference(target, source, on, scope)
    np.testing.assert_array_equal(t_pos, want_t)
    np.testing.assert_array_equal(s_idx, want_s)


def test_many_distinct_keys_over_several_columns() -> None:
    rng = np.random.default_rng(0)
    n = 50_000
    source = pa.table({"a": rng.permutation(n), "b": pa.array([f"x{i % 7}" for i in range(n)])})
    picks = rng.integers(0, n, 20_000)
    target = pa.table(
        {
            "a": np.concatenate([source["a"].to_numpy()[picks], rng.integers(n, 2 * n, 100)]),
            "b": pa.array([f"x{i % 7}" for i in picks] + ["x0"] * 100),
        }
    )
    t_pos, s_idx = _match(target, source, ["a", "b"], np.ones(target.num_rows, bool))
    np.testing.assert_array_equal(t_pos, np.arange(20_000))
    np.testing.assert_array_equal(s_idx, picks)
