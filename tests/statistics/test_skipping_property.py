"""Property tests: skipping files by statistics never drops a matching row.

Random frames (ints, nullable ints, floats with NaN, long strings sharing prefixes so
their statistics are truncated, bools, dates, tz-aware timestamps), cut into random files
(optionally sorted so that the statistics are selective), random DNF predicates with every
operator (including timestamps with sub-microsecond digits). The reference is pandas
filtering of the full frame with the documented null semantics (``reference_mask`` of
``tests/plan/test_predicates_property.py``).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import itertools
import pathlib
import uuid

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.format.convert import frame_to_table
from kartoframe.format.schema import normalize_schema
from kartoframe.format.statistics_compute import compute_statistics, with_files
from kartoframe.plan.predicates import bind
from kartoframe.plan.skipping import skip_by_statistics

_REF = pathlib.Path(__file__).parent.parent / "plan" / "test_predicates_property.py"
_spec = importlib.util.spec_from_file_location("_predicate_reference", _REF)
assert _spec is not None and _spec.loader is not None
_reference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reference)
reference_mask = _reference.reference_mask

OPS = ["==", "!=", "<", "<=", ">", ">=", "in", "not in", "is distinct from"]
LONG = "p" * 70
STRS = st.sampled_from(["a", "b", "ab", "", "ü/x", LONG + "a", LONG + "b", "p" * 64, LONG])
TZ = "Europe/Berlin"
BASE_TS = pd.Timestamp("2021-03-28 00:59:59", tz="UTC")
TS_VALUES = [BASE_TS + pd.Timedelta(microseconds=us) for us in (0, 1, 2, 3_600_000_000)]
TS_LITERALS = st.sampled_from(
    [t.tz_convert(TZ) for t in TS_VALUES]
    + [BASE_TS + pd.Timedelta(nanoseconds=ns) for ns in (-1, 500, 1500, 2001)]
)
DATES = st.sampled_from([dt.date(2020, 1, d) for d in (1, 2, 3, 4)])
INTS = st.integers(-4, 4)


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 40))

    def col(strategy: st.SearchStrategy, nullable: bool = True) -> list:
        inner = st.one_of(st.none(), strategy) if nullable else strategy
        return draw(st.lists(inner, min_size=n, max_size=n))

    ts = col(st.sampled_from(TS_VALUES))
    df = pd.DataFrame(
        {
            "k": pd.array(col(INTS, nullable=False), dtype="int64"),
            "i": pd.array(col(INTS), dtype="Int64"),
            "f": pd.array(
                [
                    np.nan if v is None else v
                    for v in col(st.sampled_from([-1.5, 0.0, 2.5, np.nan]))
                ],
                dtype="float64",
            ),
            "s": pd.array(col(STRS), dtype="str"),
            "b": pd.array(col(st.booleans(), nullable=False), dtype="bool"),
            "d": pd.Series(col(DATES), dtype=object),
            "t": pd.Series(
                pd.to_datetime(list(ts), utc=True).tz_convert(TZ).as_unit("us")
                if n
                else pd.DatetimeIndex([], dtype=f"datetime64[us, {TZ}]")
            ),
            "rid": np.arange(n),
        }
    )
    sort_by = draw(st.sampled_from([None, "k", "i", "s", "t", "f"]))
    if sort_by is not None and n:
        df = df.sort_values(sort_by, kind="stable", na_position="last").reset_index(drop=True)
        df["rid"] = np.arange(n)
    return df


VALUES = {
    "k": INTS,
    "i": INTS,
    "f": st.sampled_from([-1.5, 0.0, 1.0, 2.5, -np.inf]),
    "s": STRS,
    "b": st.booleans(),
    "d": DATES,
    "t": TS_LITERALS,
}
NULLABLE_OPS = ["==", "!=", "is distinct from"]


@st.composite
def literals(draw: st.DrawFn) -> tuple:
    col = draw(st.sampled_from(sorted(VALUES)))
    op = draw(st.sampled_from(OPS))
    if op in ("in", "not in"):
        return (col, op, draw(st.lists(st.one_of(st.none(), VALUES[col]), max_size=3)))
    if op in NULLABLE_OPS and draw(st.integers(0, 6)) == 0:
        return (col, op, None)
    return (col, op, draw(VALUES[col]))


PREDICATES = st.lists(st.lists(literals(), min_size=1, max_size=3), min_size=1, max_size=2)


def _files(df: pd.DataFrame, cuts: list[int]) -> list[pd.DataFrame]:
    bounds = [0, *sorted({min(c, len(df)) for c in cuts}), len(df)]
    return [df.iloc[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    df=frames(),
    cuts=st.lists(st.integers(0, 40), max_size=5),
    predicates=PREDICATES,
)
def test_skipping_never_drops_a_matching_file(df, cuts, predicates) -> None:
    files = _files(df, cuts)
    whole = frame_to_table(df)
    offsets = np.cumsum([0] + [len(f) for f in files])
    tables = [whole.slice(int(a), len(f)) for a, f in zip(offsets, files)]
    schema = normalize_schema(whole.schema)
    stats = compute_statistics(tables)
    labels = [f"f{i}" for i in range(len(files))]
    stats = with_files(
        stats, labels, [f"ds/table/{lb}.parquet" for lb in labels], [0] * len(labels)
    )
    partitions = {lb: f"ds/table/{lb}.parquet" for lb in labels}
    kept = set(skip_by_statistics(bind(predicates, schema), labels, partitions, stats))
    for lb, part in zip(labels, files):
        if reference_mask(part, predicates).any():
            assert lb in kept, (lb, predicates, part.to_dict("list"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    df=frames(),
    cuts=st.lists(st.integers(0, 40), max_size=4),
    predicates=PREDICATES,
    partition_on=st.sampled_from([[], ["b"], ["k"]]),
)
def test_read_with_statistics_equals_pandas_filter(df, cuts, predicates, partition_on) -> None:
    store = kf.Store(f"memory://skip-prop-{uuid.uuid4().hex}")
    files = [f for f in _files(df, cuts) if len(f)] or [df]
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=files, partition_on=partition_on
    )
    got = kf.read_table("ds", store, predicates=predicates)
    want = df[reference_mask(df, predicates)]
    assert sorted(got["rid"].tolist()) == sorted(want["rid"].tolist()), predicates


def test_statistics_actually_skip_for_every_type(memory_store) -> None:
    """Non-vacuity: on clustered data each column type lets the planner drop files."""
    n = 40
    df = pd.DataFrame(
        {
            "k": np.arange(n),
            "i": pd.array([None if v < 3 else v for v in range(n)], dtype="Int64"),
            "f": np.where(np.arange(n) % 7 == 0, np.nan, np.arange(n) / 2),
            # 71 bytes: the statistics are truncated after the distinguishing letter
            "s": ["p" * 60 + chr(ord("a") + v // 10) + "x" * 10 for v in range(n)],
            "d": [dt.date(2020, 1, 1) + dt.timedelta(days=v // 10) for v in range(n)],
            "t": pd.date_range("2021-01-01", periods=n, freq="h", tz=TZ).as_unit("us"),
            "c": [f"c{v // 10}" for v in range(n)],
        }
    )
    files = [df.iloc[a : a + 10] for a in range(0, n, 10)]
    kf.store_dataframes_as_dataset(store=memory_store, dataset_uuid="ds", dfs=files)
    cases = [
        [("k", ">=", 35)],
        [("i", "<", 5)],
        [("f", ">", 18.0)],
        [("s", "==", "p" * 60 + "bx" + "x" * 9)],
        [("s", ">", "p" * 60 + "d")],
        [("d", "==", dt.date(2020, 1, 3))],
        [("t", "<", pd.Timestamp("2021-01-01 05:00", tz="UTC"))],
        [("c", "in", ["c2"])],
        [("c", "!=", "c0"), ("k", "<", 10)],
        [("i", "==", None)],
    ]
    for conj in cases:
        plan, _ = plan_read("ds", memory_store, predicates=[conj])
        assert plan.stats.after_statistics < plan.stats.total, conj
        got = kf.read_table("ds", memory_store, predicates=[conj])
        want = df[reference_mask(df, [conj])]
        assert sorted(got["k"]) == sorted(want["k"]), conj


@pytest.mark.parametrize(
    ("conj", "opened"),
    [
        ([("i", "==", None)], 2),  # the files with nulls
        ([("i", "!=", None)], 2),  # the all-null file holds no non-null value
        ([("f", ">", 0.0)], 1),  # NaN is neither a bound nor a match
        ([("f", "==", None)], 2),  # NaN counts as null
        ([("s", "is distinct from", "x")], 2),
        ([("s", "!=", "x")], 1),
    ],
)
def test_null_and_nan_rules(memory_store, conj, opened) -> None:
    files = [
        pd.DataFrame({"i": pd.array([1, 2], "Int64"), "f": [1.0, np.nan], "s": ["x", "x"]}),
        pd.DataFrame(
            {"i": pd.array([None, None], "Int64"), "f": [np.nan, np.nan], "s": [None, "x"]}
        ),
        pd.DataFrame({"i": pd.array([3, None], "Int64"), "f": [-1.0, -2.0], "s": ["y", None]}),
    ]
    kf.store_dataframes_as_dataset(store=memory_store, dataset_uuid="ds", dfs=files)
    plan, _ = plan_read("ds", memory_store, predicates=[conj])
    assert plan.stats.after_statistics == opened
    full = pd.concat(files, ignore_index=True)
    got = kf.read_table("ds", memory_store, predicates=[conj])
    assert len(got) == int(reference_mask(full, [conj]).sum())
