"""``merge_dataset`` (row-level upsert) on the eager engine: the result equals a pandas
reference merge on random data, keys follow Delta's rules, only candidate files are read
and only files with a match are rewritten, the concurrency rule, idempotent retries,
failures leave the dataset as it was.

Stores are real (memory://, a local folder); files are real Parquet.
"""

from __future__ import annotations

import dataclasses
import uuid

import numpy as np
import pandas as pd
import pytest
from daily_appends import append_daily
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    DuplicateKeyError,
    InvalidInputError,
    InvalidTypeError,
    NullPartitionValueError,
    SchemaError,
)
from kartoframe.execution.merge import load_merge, run_merge
from kartoframe.plan.merge import merge_options
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store_arg import ensure_store

UUID = "t"
COLS = ["p", "k", "v"]


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    """Order-independent view of a frame's rows (keys as nullable ints)."""
    out = df[COLS].copy()
    out["p"] = out["p"].astype("int64")
    out["k"] = out["k"].astype("Int64")
    out["v"] = out["v"].astype("float64")
    return out.sort_values(COLS, na_position="last").reset_index(drop=True)


def reference(
    target: pd.DataFrame,
    source: pd.DataFrame,
    on: list[str],
    when_matched: str,
    when_not_matched: str,
    when_not_matched_by_source: str,
    scope: pd.Series | None = None,
) -> tuple[pd.DataFrame, int, int]:
    """Delta's MERGE in pandas: null keys never match; rows out of ``scope`` neither.
    Returns the rows, the source rows matched and the matched (target, source) pairs."""
    t = target.reset_index(drop=True).assign(_tid=lambda d: np.arange(len(d)))
    s = source.reset_index(drop=True).assign(_sid=lambda d: np.arange(len(d)))
    in_scope = np.ones(len(t), bool) if scope is None else scope.to_numpy(bool)
    t_ok = t[t[on].notna().all(axis=1) & in_scope]
    s_ok = s[s[on].notna().all(axis=1)]
    pairs = t_ok[[*on, "_tid"]].merge(s_ok[[*on, "_sid"]], on=on, how="inner")
    match = dict(zip(pairs["_tid"], pairs["_sid"], strict=True))
    out = []
    for i in range(len(t)):
        if i in match:
            if when_matched == "update":
                out.append(s.loc[match[i], COLS])
            elif when_matched == "ignore":
                out.append(t.loc[i, COLS])
        elif not (when_not_matched_by_source == "delete" and in_scope[i]):
            out.append(t.loc[i, COLS])
    if when_not_matched == "insert":
        for j in sorted(set(range(len(s))) - set(pairs["_sid"])):
            out.append(s.loc[j, COLS])
    frame = pd.DataFrame(out, columns=COLS) if out else pd.DataFrame(columns=COLS)
    return _rows(frame), len(set(pairs["_sid"])), len(pairs)


def _store() -> kf.Store:
    return kf.Store(f"memory://kf-merge-{uuid.uuid4().hex}")


def _build(store: kf.Store, frames: list[pd.DataFrame], **kwargs) -> None:
    for i, df in enumerate(frames):
        kf.update_dataset_from_dataframes(
            [df], store=store, dataset_uuid=UUID, partition_on=["p"], **(kwargs if i == 0 else {})
        )


def _frame(p, k, v) -> pd.DataFrame:
    return pd.DataFrame(
        {"p": pd.array(p, "int64"), "k": pd.array(k, "Int64"), "v": pd.array(v, "float64")}
    )


KEYS = st.one_of(st.none(), st.integers(0, 12))


@st.composite
def frames(draw: st.DrawFn, min_size: int = 0, max_size: int = 12) -> pd.DataFrame:
    n = draw(st.integers(min_size, max_size))
    p = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    k = draw(st.lists(KEYS, min_size=n, max_size=n))
    v = draw(st.lists(st.floats(-100, 100, allow_nan=False), min_size=n, max_size=n))
    return _frame(p, k, v)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    appends=st.lists(frames(min_size=1), min_size=1, max_size=3),
    source=frames(),
    on=st.sampled_from([["k"], ["p", "k"]]),
    when_matched=st.sampled_from(["update", "delete", "ignore"]),
    when_not_matched=st.sampled_from(["insert", "ignore"]),
    by_source=st.sampled_from(["ignore", "delete"]),
    scoped=st.booleans(),
    bloom=st.booleans(),
)
def test_merge_equals_the_pandas_reference(
    appends, source, on, when_matched, when_not_matched, by_source, scoped, bloom
) -> None:
    source = source.drop_duplicates(subset=on)  # unique keys (nulls too: they never match)
    nulls = source[source[on].isna().any(axis=1)]
    source = pd.concat([source.dropna(subset=on), nulls], ignore_index=True)
    store = _store()
    _build(store, appends)
    if bloom:
        kf.build_dataset_statistics(store, UUID, bloom_filter_columns=["k"])
    target = pd.concat(appends, ignore_index=True)
    predicates = [[("p", "!=", 1)]] if scoped else None
    scope = (target["p"] != 1) if scoped else None

    result = kf.merge_dataset(
        source,
        store,
        UUID,
        on=on,
        when_matched=when_matched,
        when_not_matched=when_not_matched,
        when_not_matched_by_source=by_source,
        predicates=predicates,
    )

    want, sources_matched, pairs = reference(
        target, source, on, when_matched, when_not_matched, by_source, scope
    )
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), want)
    assert result.source_rows == len(source)
    assert result.rows_matched == pairs
    assert result.rows_not_matched == len(source) - sources_matched


# --------------------------------------------------------------------------------- keys
def test_duplicate_source_keys_are_an_error_naming_the_key() -> None:
    store = _store()
    _build(store, [_frame([0], [1], [1.0])])
    src = _frame([0, 0, 1], [5, 5, 6], [1.0, 2.0, 3.0])
    with pytest.raises(DuplicateKeyError, match=r"\{'k': 5\} \(2 rows\)"):
        kf.merge_dataset(src, store, UUID, on="k")
    # nulls are not duplicates of each other: they never match, so both are inserted
    src = _frame([0, 0], [None, None], [1.0, 2.0])
    assert kf.merge_dataset(src, store, UUID, on="k").rows_inserted == 2


def test_null_keys_never_match() -> None:
    store = _store()
    _build(store, [_frame([0, 0], [None, 1], [1.0, 2.0])])
    result = kf.merge_dataset(_frame([0], [None], [9.0]), store, UUID, on=["p", "k"])
    assert (result.rows_matched, result.rows_inserted) == (0, 1)
    assert len(kf.read_table(UUID, store)) == 3


def test_an_update_that_changes_the_partition_moves_the_row() -> None:
    store = _store()
    _build(store, [_frame([0, 0, 1], [1, 2, 3], [1.0, 2.0, 3.0])])
    result = kf.merge_dataset(_frame([2], [2], [-2.0]), store, UUID, on="k")
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    got = kf.read_table(UUID, store, predicates=[[("k", "==", 2)]])
    assert got[["p", "k", "v"]].values.tolist() == [[2, 2, -2.0]]
    assert len(kf.read_table(UUID, store)) == 3


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"on": []}, InvalidInputError),
        ({"on": ["k", "k"]}, InvalidInputError),
        ({"on": ["nope"]}, ColumnNotFoundError),
        ({"on": "k", "when_matched": "upsert"}, InvalidInputError),
        ({"on": "k", "when_not_matched": "delete"}, InvalidInputError),
        ({"on": "k", "when_not_matched_by_source": "update"}, InvalidInputError),
        ({"on": "k", "schema_evolution": "drop"}, InvalidInputError),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(kwargs, error) -> None:
    store = _store()
    _build(store, [_frame([0], [1], [1.0])])
    keys = set(store.iter_keys(""))
    with pytest.raises(error):
        kf.merge_dataset(_frame([0], [1], [2.0]), store, UUID, **kwargs)
    assert set(store.iter_keys("")) == keys


def test_the_source_must_have_the_dataset_columns_and_castable_types() -> None:
    store = _store()
    _build(store, [_frame([0], [1], [1.0])])
    with pytest.raises(ColumnNotFoundError, match=r"lacks columns of the dataset: \['v'\]"):
        kf.merge_dataset(pd.DataFrame({"p": [0], "k": [1]}), store, UUID, on="k")
    extra = _frame([0], [1], [2.0]).assign(w=["x"])
    with pytest.raises(SchemaError, match="schema_evolution='add_columns'"):
        kf.merge_dataset(extra, store, UUID, on="k")
    with pytest.raises(SchemaError, match="'v'"):
        kf.merge_dataset(_frame([0], [1], [2.0]).assign(v=["x"]), store, UUID, on="k")
    result = kf.merge_dataset(extra, store, UUID, on="k", schema_evolution="add_columns")
    assert result.rows_updated == 1
    assert kf.read_table(UUID, store)["w"].tolist() == ["x"]


def test_a_failed_insert_leaves_the_dataset_as_it_was() -> None:
    store = _store()
    _build(store, [_frame([0, 1], [1, 2], [1.0, 2.0])])
    keys = {k: store.get(k) for k in store.iter_keys("")}
    bad = pd.DataFrame({"p": pd.array([0, None], "Int64"), "k": [1, 9], "v": [5.0, 6.0]})
    with pytest.raises(NullPartitionValueError):
        kf.merge_dataset(bad, store, UUID, on="k")
    assert {k: store.get(k) for k in store.iter_keys("")} == keys


# ---------------------------------------------------------------------- what is read
def _many_days(store: kf.Store, days: int = 8, rows: int = 50) -> pd.DataFrame:
    def day(d: int) -> pd.DataFrame:
        ids = np.arange(d * rows, (d + 1) * rows)
        return _frame(np.full(rows, d % 4), ids, ids / 10)

    return append_daily(store, UUID, (day(d) for d in range(days)))


def test_only_candidate_files_are_opened_and_only_matched_ones_rewritten(file_store) -> None:
    """Files the keys rule out are never opened: deleting them by hand does not disturb
    the merge (reading them would fail)."""
    expected = _many_days(file_store)
    before = dict(kf.read_dataset_metadata(UUID, file_store).partitions)
    # keys of days 1 and 6 (partitions 1 and 2) and one new key
    src = _frame([1, 2, 3], [60, 310, 10_000], [-1.0, -2.0, -3.0])
    plan = load_merge(ensure_store(file_store), UUID, _arrow(src), _options(file_store, "k"))
    assert len(plan.candidates) == 2  # statistics and blooms leave one file per key
    untouched = [k for lb, k in before.items() if lb not in {c.label for c in plan.candidates}]
    saved = {key: file_store.get(key) for key in untouched}
    for key in untouched:
        file_store.delete(key)
    result = run_merge(ensure_store(file_store), plan)
    for key, data in saved.items():  # put them back to read the whole result
        file_store.put(key, data)
    assert (result.rows_updated, result.rows_inserted, result.files_rewritten) == (2, 1, 2)
    after = dict(kf.read_dataset_metadata(UUID, file_store).partitions)
    assert set(before) - set(after) == {c.label for c in plan.candidates}
    assert len(after) == len(before) - 2 + 3  # two files rewritten, one inserted
    want = pd.concat([expected[~expected.k.isin([60, 310])], src], ignore_index=True)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, file_store)), _rows(want))


def _arrow(df: pd.DataFrame):
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False)


def _options(store: kf.Store, on):
    return merge_options(load_dataset(ensure_store(store), UUID).schema, on=on)


def test_indices_and_statistics_describe_the_merged_files() -> None:
    store = _store()
    expected = _many_days(store)
    src = _frame([1, 0], [60, 5_000], [-1.0, -5.0])
    kf.merge_dataset(src, store, UUID, on="k")
    want = pd.concat([expected[expected.k != 60], src], ignore_index=True)
    for value in (60, 61, 5_000, 399, 123_456):
        got = kf.read_table(UUID, store, predicates=[[("k", "==", value)]])
        pd.testing.assert_frame_equal(_rows(got), _rows(want[want.k == value]))
    stats = kf.dataset_statistics(UUID, store)
    assert sorted(stats["label"]) == sorted(kf.read_dataset_metadata(UUID, store).partitions)
    assert stats["rows"].sum() == len(want)
    assert kf.dataset_history(UUID, store)[0].operation == "MERGE"


def test_dry_run_counts_and_writes_nothing() -> None:
    store = _store()
    _many_days(store)
    keys = set(store.iter_keys(""))
    src = _frame([1, 2, 3], [60, 310, 10_000], [-1.0, -2.0, -3.0])
    result = kf.merge_dataset(src, store, UUID, on=["p", "k"], dry_run=True)
    assert result.dry_run and result.version is None
    assert (result.rows_matched, result.rows_not_matched, result.rows_inserted) == (2, 1, 1)
    assert (result.candidate_partitions, result.candidate_files) == (2, 2)
    assert len(result.candidates) == 2 and result.files_added == 0
    assert set(store.iter_keys("")) == keys


# ---------------------------------------------------------------------- concurrency
def test_an_append_racing_a_merge_both_land() -> None:
    store = _store()
    expected = _many_days(store)
    st_ = ensure_store(store)
    src = _frame([1], [60], [-1.0])
    plan = load_merge(st_, UUID, _arrow(src), _options(store, "k"))
    late = _frame([1], [99_999], [7.0])  # into a partition the merge rewrites
    kf.update_dataset_from_dataframes([late], store=store, dataset_uuid=UUID)
    run_merge(st_, plan)
    want = pd.concat([expected[expected.k != 60], src, late], ignore_index=True)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(want))


def test_a_replace_racing_a_merge_one_wins() -> None:
    store = _store()
    expected = _many_days(store)
    st_ = ensure_store(store)
    plan = load_merge(st_, UUID, _arrow(_frame([1], [60], [-1.0])), _options(store, "k"))
    replacement = _frame([1], [7], [7.0])
    kf.update_dataset_from_dataframes(
        [replacement], store=store, dataset_uuid=UUID, delete_scope=[{"p": 1}]
    )
    keys = set(store.iter_keys(""))
    with pytest.raises(CommitConflictError, match="removed or replaced"):
        run_merge(st_, plan)
    assert set(store.iter_keys("")) == keys  # the merge's files are gone again
    want = pd.concat([expected[expected.p != 1], replacement], ignore_index=True)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(want))


def test_a_retried_merge_with_the_same_app_version_writes_nothing() -> None:
    store = _store()
    _many_days(store)
    src = _frame([1, 3], [60, 10_000], [-1.0, -3.0])
    first = kf.merge_dataset(src, store, UUID, on="k", app_id="job", app_version=7)
    assert first.version is not None and first.rows_inserted == 1
    keys = set(store.iter_keys(""))
    again = kf.merge_dataset(src, store, UUID, on="k", app_id="job", app_version=7)
    assert again.version is None and again.files_added == 0
    assert set(store.iter_keys("")) == keys
    assert (kf.read_table(UUID, store)["k"] == 10_000).sum() == 1


# -------------------------------------------------------------------------------- dask
def test_dask_merge_equals_the_eager_one(file_store, tmp_path, compute) -> None:
    import dask.dataframe as dd

    expected = _many_days(file_store)
    eager = kf.Store(f"file://{tmp_path}/eager")
    _many_days(eager)
    src = _frame([1, 2, 3, 1], [60, 310, 10_000, 61], [-1.0, -2.0, -3.0, None])
    job = kf.merge_dataset_from_ddf(dd.from_pandas(src, npartitions=2), file_store, UUID, on="k")
    got = compute(job)
    want = kf.merge_dataset(src, eager, UUID, on="k")
    same = {"version": None, "candidates": ()}  # labels are fresh uuids in each store
    assert dataclasses.replace(got, **same) == dataclasses.replace(want, **same)
    assert (got.rows_updated, got.rows_inserted, got.files_rewritten) == (3, 1, 2)
    pd.testing.assert_frame_equal(
        _rows(kf.read_table(UUID, file_store)), _rows(kf.read_table(UUID, eager))
    )
    assert len(kf.read_table(UUID, file_store)) == len(expected) + 1


def test_merge_dataset_takes_a_dask_frame_and_runs_its_graph(file_store) -> None:
    import dask.dataframe as dd

    _many_days(file_store)
    src = dd.from_pandas(_frame([1], [60], [-1.0]), npartitions=1)
    result = kf.merge_dataset(src, file_store, UUID, on=["p", "k"])
    assert (result.rows_updated, result.files_rewritten) == (1, 1)
    with pytest.raises(InvalidTypeError, match="dask DataFrame"):
        kf.merge_dataset_from_ddf(_frame([1], [60], [-1.0]), file_store, UUID, on="k")


def test_a_failed_dask_task_commits_nothing_and_cleans_up(file_store, compute) -> None:
    import dask.dataframe as dd

    _many_days(file_store)
    changes = _frame([1, 2], [60, 310], [-1.0, -2.0])
    job = kf.merge_dataset_from_ddf(
        dd.from_pandas(changes, npartitions=1), file_store, UUID, on="k"
    )
    header = kf.read_dataset_metadata(UUID, file_store)
    candidates = kf.merge_dataset(changes, file_store, UUID, on="k", dry_run=True).candidates
    assert len(candidates) == 2
    lost = header.partitions[candidates[0]]
    file_store.delete(lost)  # one candidate is lost by hand: its task fails
    keys = set(file_store.iter_keys(""))
    with pytest.raises(Exception, match=lost.rsplit("/", 1)[1].split(".")[0]):
        compute(job)
    assert set(file_store.iter_keys("")) == keys  # the other task's file is gone again
    assert kf.read_dataset_metadata(UUID, file_store).partitions == header.partitions


def test_a_dask_dry_run_and_a_retried_dask_merge_write_nothing(file_store, compute) -> None:
    import dask.dataframe as dd

    _many_days(file_store)
    src = _frame([1, 2, 3], [60, 310, 10_000], [-1.0, -2.0, -3.0])
    keys = set(file_store.iter_keys(""))
    eager = kf.merge_dataset(src, file_store, UUID, on=["p", "k"], dry_run=True)
    ddf = dd.from_pandas(src, npartitions=2)
    dry = compute(kf.merge_dataset_from_ddf(ddf, file_store, UUID, on=["p", "k"], dry_run=True))
    assert dry == eager and dry.dry_run and dry.version is None
    assert set(file_store.iter_keys("")) == keys
    # the same application step twice: the second graph computes to a result and writes nothing
    first = kf.merge_dataset_from_ddf(ddf, file_store, UUID, on="k", app_id="job", app_version=3)
    assert compute(first).version is not None
    keys = set(file_store.iter_keys(""))
    again = kf.merge_dataset_from_ddf(ddf, file_store, UUID, on="k", app_id="job", app_version=3)
    result = compute(again)
    assert result.version is None and result.files_added == 0
    assert set(file_store.iter_keys("")) == keys
    assert (kf.read_table(UUID, file_store)["k"] == 10_000).sum() == 1
