"""The change data feed (``kf.read_changes`` and its iterator and dask variants): the
exact rows after appends, partition replacements, overwrites, merges and compaction;
the feed of every commit turns the version before into the version after (property test
over random commit sequences); cursor tailing; vacuum (a vacuumed start is a clear error,
change files of retained versions are kept, orphans are collected); change files of a
rebased merge and of an idempotent retry.

Stores are real (memory://, a local folder); files are real Parquet.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.errors import (
    ChangesUnavailableError,
    ColumnNotFoundError,
    DatasetNotFoundError,
    InvalidInputError,
    InvalidTypeError,
)
from kartoframe.execution.merge import load_merge, run_merge
from kartoframe.format import changes as fc
from kartoframe.plan.merge import merge_options
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store_arg import ensure_store

UUID = "ds"
COLS = ["p", "k", "v"]
FEED = ["_change_type", "_commit_version"]


def _sorted(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    out = df[cols].copy()
    for c in ("p", "k"):
        if c in out:
            out[c] = out[c].astype("int64")
    if "v" in out:
        out["v"] = out["v"].astype("float64")
    return out.sort_values(cols).reset_index(drop=True)


def _frame(p: list[int], k: list[int], v: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "p": np.asarray(p, dtype="int64"),
            "k": np.asarray(k, dtype="int64"),
            "v": np.asarray(v, dtype="float64"),
        }
    )


def _change_files(store: kf.Store) -> set[str]:
    return set(store.iter_keys(f"{UUID}/{fc.CHANGES_DIR}/"))


@pytest.fixture
def url(tmp_path) -> str:
    return tmp_path.as_uri()


def test_every_kind_of_commit_gives_its_exact_rows(url: str) -> None:
    v0 = _frame([1, 1, 2], [1, 2, 3], [1.0, 2.0, 3.0])
    kf.store_dataframes_as_dataset(url, UUID, [v0], partition_on=["p"])  # version 0
    kf.update_dataset_from_dataframes([_frame([3], [4], [4.0])], url, UUID)  # 1: append
    kf.update_dataset_from_dataframes(  # 2: replace partition p=1
        [_frame([1], [5], [5.0])], url, UUID, delete_scope=[{"p": 1}]
    )
    src = _frame([2, 3, 2], [3, 4, 9], [30.0, 40.0, 90.0])
    kf.merge_dataset(src, url, UUID, on=["k"], when_matched="update")  # 3: merge
    kf.merge_dataset(  # 4: delete matched
        _frame([1], [5], [0.0]),
        url,
        UUID,
        on=["k"],
        when_matched="delete",
        when_not_matched="ignore",
    )
    kf.store_dataframes_as_dataset(  # 5: overwrite
        url, UUID, [_frame([7], [7], [7.0])], partition_on=["p"], overwrite=True
    )
    rows, cursor = kf.read_changes(UUID, url, start_version=0)
    assert cursor == 6
    got = rows[[*COLS, *FEED]].astype({"p": "int64", "k": "int64"})
    got = got.sort_values(["_commit_version", "_change_type", "k"]).reset_index(drop=True)
    expected = pd.DataFrame(
        [
            (1, 1, 1.0, "insert", 0),
            (1, 2, 2.0, "insert", 0),
            (2, 3, 3.0, "insert", 0),
            (3, 4, 4.0, "insert", 1),
            (1, 1, 1.0, "delete", 2),
            (1, 2, 2.0, "delete", 2),
            (1, 5, 5.0, "insert", 2),
            (2, 9, 90.0, "insert", 3),
            (2, 3, 30.0, "update_postimage", 3),
            (3, 4, 40.0, "update_postimage", 3),
            (2, 3, 3.0, "update_preimage", 3),
            (3, 4, 4.0, "update_preimage", 3),
            (1, 5, 5.0, "delete", 4),
            (2, 3, 30.0, "delete", 5),
            (2, 9, 90.0, "delete", 5),
            (3, 4, 40.0, "delete", 5),
            (7, 7, 7.0, "insert", 5),
        ],
        columns=[*COLS, *FEED],
    )
    expected = expected.sort_values(["_commit_version", "_change_type", "k"])
    pd.testing.assert_frame_equal(got, expected.reset_index(drop=True), check_dtype=False)
    # each preimage is directly followed by its postimage
    merge_rows = rows[rows["_commit_version"] == 3].reset_index(drop=True)
    kinds = list(merge_rows["_change_type"])
    for i, kind in enumerate(kinds):
        if kind == "update_preimage":
            assert kinds[i + 1] == "update_postimage"
            assert merge_rows["k"][i] == merge_rows["k"][i + 1]
    # commit timestamps are the log's
    history = {r.version: r.timestamp for r in kf.dataset_history(UUID, url)}
    for version, ts in rows.groupby("_commit_version")["_commit_timestamp"].first().items():
        assert ts == pd.Timestamp(history[version])


def test_compaction_and_index_builds_change_no_row(url: str) -> None:
    for i in range(3):
        df = _frame([1, 1], [2 * i, 2 * i + 1], [float(i), float(i)])
        kf.update_dataset_from_dataframes([df], url, UUID, partition_on=["p"])
    before = kf.read_changes(UUID, url, start_version=0).rows
    result = kf.optimize_dataset(UUID, url)
    assert result.version == 3
    kf.build_dataset_indices(url, UUID, columns=["k"])
    rows, cursor = kf.read_changes(UUID, url, start_version=3)
    assert rows.empty and cursor == 5
    assert len(before) == 6 and set(before["_change_type"]) == {"insert"}


def _apply(state: pd.DataFrame, feed: pd.DataFrame) -> pd.DataFrame:
    """The state after a commit: remove the deleted and preimage rows (one each), add the
    inserted and postimage rows."""
    out = _sorted(state, COLS).assign(_n=lambda d: d.groupby(COLS).cumcount())
    gone = feed[feed["_change_type"].isin(["delete", "update_preimage"])]
    gone = _sorted(gone, COLS).assign(_n=lambda d: d.groupby(COLS).cumcount())
    merged = out.merge(gone, on=[*COLS, "_n"], how="left", indicator=True)
    assert (gone.merge(out, on=[*COLS, "_n"], how="left", indicator=True)["_merge"] == "both").all()
    kept = merged[merged["_merge"] == "left_only"][COLS]
    new = feed[feed["_change_type"].isin(["insert", "update_postimage"])][COLS]
    return _sorted(pd.concat([kept, new]), COLS)


commits = st.lists(
    st.tuples(
        st.sampled_from(["append", "replace", "merge", "merge_delete", "optimize", "overwrite"]),
        st.lists(
            st.tuples(st.integers(0, 3), st.integers(0, 12), st.integers(0, 9)),
            min_size=1,
            max_size=6,
            unique_by=lambda t: t[1],
        ),
    ),
    min_size=1,
    max_size=5,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=commits)
def test_each_commits_feed_turns_the_version_before_into_the_one_after(
    commits: list[tuple[str, list[tuple[int, int, int]]]],
) -> None:
    url = f"memory://changes-{uuid.uuid4().hex}"
    kf.store_dataframes_as_dataset(url, UUID, [_frame([0], [100], [0.0])], partition_on=["p"])
    for kind, rows in commits:
        p, k, v = (list(x) for x in zip(*rows, strict=True))
        df = _frame(p, k, [float(x) for x in v])
        if kind == "append":
            kf.update_dataset_from_dataframes([df], url, UUID)
        elif kind == "replace":
            scope = [{"p": int(x)} for x in sorted(set(p))]
            kf.update_dataset_from_dataframes([df], url, UUID, delete_scope=scope)
        elif kind == "merge":
            kf.merge_dataset(df, url, UUID, on=["k"])
        elif kind == "merge_delete":
            kf.merge_dataset(df, url, UUID, on=["k"], when_matched="delete")
        elif kind == "optimize":
            kf.optimize_dataset(UUID, url, min_files=1)
        else:
            kf.store_dataframes_as_dataset(url, UUID, [df], partition_on=["p"], overwrite=True)
    history = sorted(r.version for r in kf.dataset_history(UUID, url))
    state = _sorted(kf.read_table(UUID, url, version=0), COLS)
    for version in history[1:]:
        feed, cursor = kf.read_changes(UUID, url, start_version=version, end_version=version)
        assert cursor == version + 1
        state = _apply(state, feed)
        after = _sorted(kf.read_table(UUID, url, version=version), COLS)
        pd.testing.assert_frame_equal(state, after, check_dtype=False)
    # one read of the whole range is the concatenation of the per-version reads
    whole = kf.read_changes(UUID, url, start_version=1).rows
    assert len(whole) == sum(
        len(kf.read_changes(UUID, url, start_version=v, end_version=v).rows) for v in history[1:]
    )


def test_a_tailing_job_sees_every_change_exactly_once(store: kf.Store) -> None:
    cursor = 0
    seen: list[pd.DataFrame] = []
    expected_keys: list[int] = []
    for i in range(4):
        df = _frame([i % 2], [i], [float(i)])
        kf.update_dataset_from_dataframes([df], store, UUID, partition_on=["p"])
        expected_keys.append(i)
        rows, cursor = kf.read_changes(UUID, store, start_version=cursor)
        seen.append(rows)
        rows, same = kf.read_changes(UUID, store, start_version=cursor)  # nothing new
        assert rows.empty and same == cursor
    kf.merge_dataset(_frame([0], [0], [9.0]), store, UUID, on=["k"])
    rows, cursor = kf.read_changes(UUID, store, start_version=cursor)
    seen.append(rows)
    assert cursor == 5
    feed = pd.concat(seen)
    inserts = feed[feed["_change_type"] == "insert"]
    assert sorted(inserts["k"]) == expected_keys
    assert list(feed["_commit_version"]) == sorted(feed["_commit_version"])
    assert set(feed[feed["_commit_version"] == 4]["_change_type"]) == {
        "update_preimage",
        "update_postimage",
    }


def test_iterator_and_dask_variants_give_the_same_rows(store: kf.Store, compute: Callable) -> None:
    kf.store_dataframes_as_dataset(
        store, UUID, [_frame([1, 2], [1, 2], [1.0, 2.0])], partition_on=["p"]
    )
    kf.merge_dataset(_frame([1, 3], [1, 3], [10.0, 3.0]), store, UUID, on=["k"])
    kf.update_dataset_from_dataframes(
        [_frame([2], [4], [4.0])], store, UUID, delete_scope=[{"p": 2}]
    )
    eager, cursor = kf.read_changes(UUID, store, start_version=0)
    frames, c2 = kf.read_changes__iterator(UUID, store, start_version=0)
    chunks = list(frames)
    assert c2 == cursor == 3
    assert len(chunks) == 4  # create, merge (change files), replace: delete + insert
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), eager)
    ddf, c3 = kf.read_changes_as_ddf(UUID, store, start_version=0)
    assert c3 == cursor and ddf.npartitions == 4
    got = compute(ddf)
    pd.testing.assert_frame_equal(got.reset_index(drop=True), eager, check_dtype=False)
    assert list(got.columns) == list(eager.columns)
    empty, c4 = kf.read_changes_as_ddf(UUID, store, start_version=3)
    assert c4 == 3 and len(compute(empty)) == 0


def test_columns_and_predicates(url: str) -> None:
    kf.store_dataframes_as_dataset(
        url, UUID, [_frame([1, 2, 2], [1, 2, 3], [1.0, 2.0, 3.0])], partition_on=["p"]
    )
    kf.merge_dataset(_frame([2, 2], [2, 3], [20.0, 30.0]), url, UUID, on=["k"])
    rows, _ = kf.read_changes(
        UUID, url, start_version=0, columns=["k"], predicates=[[("k", ">=", 3)]]
    )
    assert list(rows.columns) == ["k", "_change_type", "_commit_version", "_commit_timestamp"]
    assert sorted(zip(rows["k"], rows["_change_type"], strict=True)) == [
        (3, "insert"),
        (3, "update_postimage"),
        (3, "update_preimage"),
    ]
    with pytest.raises(ColumnNotFoundError, match="nope"):
        kf.read_changes(UUID, url, start_version=0, columns=["nope"])


def test_bad_versions_are_clear_errors(url: str) -> None:
    with pytest.raises(DatasetNotFoundError):
        kf.read_changes(UUID, url, start_version=0)
    kf.store_dataframes_as_dataset(url, UUID, [_frame([1], [1], [1.0])])
    with pytest.raises(InvalidInputError, match="start_version 3 is after"):
        kf.read_changes(UUID, url, start_version=3)
    with pytest.raises(InvalidInputError, match="end_version 4 is beyond the current version 0"):
        kf.read_changes(UUID, url, start_version=0, end_version=4)
    with pytest.raises(InvalidInputError, match="start_version must be >= 0"):
        kf.read_changes(UUID, url, start_version=-1)
    with pytest.raises(InvalidTypeError, match="start_version must be an int"):
        kf.read_changes(UUID, url, start_version=True)  # type: ignore[arg-type]


def test_a_vacuumed_start_version_is_a_clear_error_and_retained_changes_stay(url: str) -> None:
    store = ensure_store(url)
    kf.store_dataframes_as_dataset(
        url, UUID, [_frame([1, 2], [1, 2], [1.0, 2.0])], partition_on=["p"]
    )
    kf.merge_dataset(_frame([1], [1], [10.0]), url, UUID, on=["k"])  # 1: change files
    old_changes = _change_files(store)
    assert old_changes
    kf.store_dataframes_as_dataset(  # 2: overwrite
        url, UUID, [_frame([3], [3], [3.0])], partition_on=["p"], overwrite=True
    )
    kf.merge_dataset(_frame([3], [3], [30.0]), url, UUID, on=["k"])  # 3: change files
    kept_changes = _change_files(store) - old_changes
    # the default window keeps everything
    assert kf.vacuum_dataset(UUID, url) == []
    assert kf.read_changes(UUID, url, start_version=1).next_version == 4
    gone = kf.vacuum_dataset(UUID, url, retention_hours=0, force=True)
    assert old_changes <= set(gone)
    assert _change_files(store) == kept_changes
    with pytest.raises(
        ChangesUnavailableError, match="oldest version whose changes can be read is 4"
    ):
        kf.read_changes(UUID, url, start_version=1)
    with pytest.raises(ChangesUnavailableError):
        kf.read_changes(UUID, url, start_version=3)
    rows, cursor = kf.read_changes(UUID, url, start_version=4)
    assert rows.empty and cursor == 4


def test_vacuum_keeps_the_changes_inside_the_window(url: str) -> None:
    store = ensure_store(url)
    kf.store_dataframes_as_dataset(url, UUID, [_frame([1], [1], [1.0])])
    kf.merge_dataset(_frame([1], [1], [2.0]), url, UUID, on=["k"])
    kf.merge_dataset(_frame([1], [1], [3.0]), url, UUID, on=["k"])
    files = _change_files(store)
    assert len(files) == 2
    # a short window that still covers every version (all committed seconds ago)
    assert kf.vacuum_dataset(UUID, url, retention_hours=1, force=True) == []
    assert _change_files(store) == files
    rows = kf.read_changes(UUID, url, start_version=1).rows
    assert list(rows["v"]) == [1.0, 2.0, 2.0, 3.0]


def test_garbage_collection_removes_change_files_no_commit_records(url: str) -> None:
    store = ensure_store(url)
    kf.store_dataframes_as_dataset(url, UUID, [_frame([1], [1], [1.0])])
    kf.merge_dataset(_frame([1], [1], [2.0]), url, UUID, on=["k"])
    live = _change_files(store)
    orphan = fc.change_file_key(UUID, uuid.uuid4().hex)
    store.put(orphan, next(iter(store.get(k) for k in live)))
    foreign = f"{UUID}/{fc.CHANGES_DIR}/notes.txt"  # not a name a write generates
    store.put(foreign, b"keep me")
    deleted = kf.garbage_collect_dataset(UUID, url, grace_hours=0, force=True)
    assert deleted == [orphan]
    assert _change_files(store) == live | {foreign}
    assert len(kf.read_changes(UUID, url, start_version=1).rows) == 2


def test_a_rebased_merge_records_its_changes_and_a_retry_leaves_no_change_file(url: str) -> None:
    store = ensure_store(url)
    kf.store_dataframes_as_dataset(
        url, UUID, [_frame([1, 2], [1, 2], [1.0, 2.0])], partition_on=["p"]
    )
    source = pa_table(_frame([1], [1], [10.0]))
    loaded = load_dataset(store, UUID)
    plan = load_merge(store, UUID, source, merge_options(loaded.schema, on=["k"]))
    # another writer appends between planning and committing: the merge rebases
    kf.update_dataset_from_dataframes([_frame([2], [5], [5.0])], url, UUID)
    result = run_merge(store, plan)
    assert result.version == 2
    rows = kf.read_changes(UUID, url, start_version=1).rows
    assert sorted(zip(rows["_commit_version"], rows["_change_type"], strict=True)) == [
        (1, "insert"),
        (2, "update_postimage"),
        (2, "update_preimage"),
    ]
    # an idempotent retry writes nothing: no new change file
    files = _change_files(store)
    for _ in range(2):
        kf.merge_dataset(_frame([2], [2], [20.0]), url, UUID, on=["k"], app_id="job", app_version=1)
    after = _change_files(store)
    assert len(after) == len(files) + 1
    assert kf.read_changes(UUID, url, start_version=3).rows["v"].tolist() == [2.0, 20.0]
    assert kf.read_changes(UUID, url, start_version=4).rows.empty


def pa_table(df: pd.DataFrame) -> Any:
    import pyarrow as pa

    return pa.Table.from_pandas(df, preserve_index=False)


def test_the_log_entry_names_the_change_files(url: str) -> None:
    store = ensure_store(url)
    kf.store_dataframes_as_dataset(
        url, UUID, [_frame([1, 2], [1, 2], [1.0, 2.0])], partition_on=["p"]
    )
    kf.merge_dataset(_frame([1, 9], [1, 9], [10.0, 9.0]), url, UUID, on=["k"])
    from kartoframe.storage.log import read_entry

    entry = read_entry(store, UUID, 1)
    assert entry is not None and entry.changes is not None
    assert set(entry.changes) == _change_files(store)
    assert len(entry.changes) == 2  # the rewritten file's updates, the inserts
    assert read_entry(store, UUID, 0).changes is None  # type: ignore[union-attr]


def test_a_dask_merge_records_the_same_changes_as_an_eager_one(tmp_path, compute: Callable) -> None:
    import dask.dataframe as dd

    urls = [(tmp_path / name).as_uri() for name in ("eager", "dask")]
    base = _frame([1, 1, 2, 2], [1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0])
    src = _frame([1, 2, 3], [2, 4, 9], [20.0, 40.0, 90.0])
    for url in urls:
        kf.store_dataframes_as_dataset(url, UUID, [base], partition_on=["p"])
    kf.merge_dataset(src, urls[0], UUID, on=["k"])
    job = kf.merge_dataset_from_ddf(dd.from_pandas(src, npartitions=2), urls[1], UUID, on="k")
    assert compute(job).version == 1
    eager, dask_feed = (
        _sorted(kf.read_changes(UUID, u, start_version=1).rows, [*COLS, "_change_type"])
        for u in urls
    )
    pd.testing.assert_frame_equal(eager, dask_feed)
    assert sorted(dask_feed["_change_type"]) == [
        "insert",
        *["update_postimage"] * 2,
        *["update_preimage"] * 2,
    ]
