"""``optimize_dataset`` end to end (eager and dask): content identity, fewer and sorted files,
incremental runs, indices/statistics/time travel, the concurrency rule, failures.

Stores are real (local folder, memory://); files are real Parquet; the dask runs use the
threaded scheduler and a ``distributed.LocalCluster``.
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from daily_appends import append_daily

import kartoframe as kf
from kartoframe.errors import CommitConflictError, InvalidInputError
from kartoframe.execution.optimize import commit_optimize, load_optimize, rewrite_unit
from kartoframe.storage.store_arg import ensure_store

UUID = "events"
DAYS = 12


def _day(day: int, rows: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(day)
    return pd.DataFrame(
        {
            "p": rng.integers(0, 3, rows),
            "k": rng.integers(0, 50, rows),
            "x": rng.normal(size=rows),
            "s": rng.choice(["a", "b", "c"], rows),
            "day": np.full(rows, day, dtype="int64"),
        }
    )


def _build(store: kf.Store, days: int = DAYS) -> pd.DataFrame:
    """One append per day (3 small files a day); index on ``k``, bloom filter on ``k``."""
    return append_daily(store, UUID, (_day(day) for day in range(days)))


def _rows(df: pd.DataFrame) -> pd.DataFrame:
    """Order-independent view of a frame's rows."""
    cols = ["p", "k", "x", "s", "day"]
    out = df[cols].copy()
    out["p"] = out["p"].astype("int64")
    return out.sort_values(cols).reset_index(drop=True)


def _files(store: kf.Store) -> dict[str, str]:
    return dict(kf.read_dataset_metadata(UUID, store).partitions)


def _data_keys(store: kf.Store) -> set[str]:
    return {k for k in store.iter_keys(f"{UUID}/table/") if k.endswith(".parquet")}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[kf.Store, pd.DataFrame]:
    """The dataset built once per module (12 appends); tests get a copy of its files."""
    store = kf.Store(f"file://{tmp_path_factory.mktemp('template')}/store")
    return store, _build(store)


def _copy(store: kf.Store, template) -> tuple[kf.Store, pd.DataFrame]:
    source, expected = template
    for key in source.iter_keys(""):
        store.put(key, source.get(key))
    return store, expected


@pytest.fixture
def built(file_store: kf.Store, template) -> tuple[kf.Store, pd.DataFrame]:
    """A copy of the dataset in a local folder."""
    return _copy(file_store, template)


@pytest.fixture
def built_anywhere(store: kf.Store, template) -> tuple[kf.Store, pd.DataFrame]:
    """A copy of the dataset in a local folder, then in memory:// (object-store paths)."""
    return _copy(store, template)


def test_content_is_identical_and_each_partition_gets_one_sorted_file(built_anywhere) -> None:
    store, expected = built_anywhere
    before_hashes = kf.hash_dataset(store, UUID, group_key=["p"]).compute()
    assert len(_files(store)) == 3 * DAYS

    result = kf.optimize_dataset(UUID, store, sort_by=["k", "x"], row_group_size=50)

    assert (result.files_removed, result.files_added) == (3 * DAYS, 3)
    assert result.partitions_optimized == ("p=0", "p=1", "p=2")
    assert result.bytes_removed > 0 and result.bytes_added > 0
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(expected))
    after_hashes = kf.hash_dataset(store, UUID, group_key=["p"]).compute()
    pd.testing.assert_series_equal(before_hashes.sort_index(), after_hashes.sort_index())
    files = _files(store)
    assert len(files) == 3
    for key in files.values():
        pf = pq.ParquetFile(store.open_input(key))
        table = pf.read()
        assert sorted(table.column_names) == ["day", "k", "s", "x"]  # no partition key
        pairs = list(zip(table["k"].to_pylist(), table["x"].to_pylist(), strict=True))
        assert pairs == sorted(pairs)
        assert pf.metadata.num_row_groups == -(-table.num_rows // 50)
    latest = kf.dataset_history(UUID, store)[0]  # newest first
    assert latest.operation == "OPTIMIZE" and latest.version == result.version
    assert latest.parameters["sort_by"] == ["k", "x"]


def test_index_statistics_and_blooms_describe_the_new_files(built) -> None:
    store, expected = built
    kf.optimize_dataset(UUID, store, sort_by=["k"])
    for value in (0, 7, 49, 1000):
        got = kf.read_table(UUID, store, predicates=[[("k", "==", value)]])
        pd.testing.assert_frame_equal(_rows(got), _rows(expected[expected.k == value]))
    stats = kf.dataset_statistics(UUID, store)
    assert sorted(stats["label"]) == sorted(_files(store))
    assert stats["rows"].sum() == len(expected)
    # the new files are sorted by k: their k ranges are the data's, per partition
    for _, row in stats.iterrows():
        part = expected[expected.p == int(row["label"].split("/")[0][2:])]
        assert (row["k.min"], row["k.max"]) == (part.k.min(), part.k.max())
    from kartoframe.storage.resolve import load_dataset, load_statistics

    table = load_statistics(store, load_dataset(store, UUID)).statistics
    assert table is not None and sorted(table["label"].to_pylist()) == sorted(_files(store))
    assert all(b["k"] for b in table["bloom"].to_pylist())  # bloom filters rebuilt
    header = kf.read_dataset_metadata(UUID, store)
    assert set(header.indices) == {"k"}
    report = kf.check_dataset(UUID, store)
    assert report.ok, report


def test_a_second_run_does_nothing_and_a_new_append_costs_its_partition(built) -> None:
    store, _ = built
    kf.optimize_dataset(UUID, store, sort_by=["k"])
    version = kf.dataset_history(UUID, store)[0].version
    again = kf.optimize_dataset(UUID, store, sort_by=["k"])
    assert (again.files_removed, again.files_added, again.version) == (0, 0, version)
    assert {s.reason for s in again.partitions_skipped} == {"already optimized"}
    assert kf.dataset_history(UUID, store)[0].version == version  # no commit

    late = _day(99).assign(p=1)
    kf.update_dataset_from_dataframes([late], store=store, dataset_uuid=UUID)
    third = kf.optimize_dataset(UUID, store, sort_by=["k"])
    assert third.partitions_optimized == ("p=1",)
    assert (third.files_removed, third.files_added) == (2, 1)
    # compaction without sort is a different request: the one-file partitions are kept
    assert kf.optimize_dataset(UUID, store).files_removed == 0


def test_a_different_order_rewrites_again(built) -> None:
    store, _ = built
    kf.optimize_dataset(UUID, store, sort_by=["k"])
    z = kf.optimize_dataset(UUID, store, sort_by=["k", "x"], sort_method="zorder")
    assert (z.files_removed, z.files_added) == (3, 3)
    again = kf.optimize_dataset(UUID, store, sort_by=["k", "x"], sort_method="zorder")
    assert again.files_removed == 0


def test_predicates_select_partitions(built) -> None:
    store, expected = built
    result = kf.optimize_dataset(UUID, store, predicates=[[("p", "in", [0, 2])]])
    assert result.partitions_optimized == ("p=0", "p=2")
    by_partition = pd.Series([lb.split("/")[0] for lb in _files(store)]).value_counts()
    assert by_partition.to_dict() == {"p=1": DAYS, "p=0": 1, "p=2": 1}
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(expected))
    with pytest.raises(InvalidInputError, match="only use the partition keys"):
        kf.optimize_dataset(UUID, store, predicates=[[("k", "==", 1)]])


def test_dry_run_writes_nothing(built) -> None:
    store, _ = built
    keys = set(store.iter_keys(""))
    result = kf.optimize_dataset(UUID, store, dry_run=True)
    assert result.dry_run and (result.files_removed, result.files_added) == (3 * DAYS, 3)
    assert set(store.iter_keys("")) == keys


def test_time_travel_until_garbage_collection(file_store: kf.Store) -> None:
    expected = _build(file_store, days=4)
    before = kf.dataset_history(UUID, file_store)[0].version
    old_keys = set(_files(file_store).values())
    kf.optimize_dataset(UUID, file_store)
    old = kf.read_table(UUID, file_store, version=before)
    pd.testing.assert_frame_equal(_rows(old), _rows(expected))
    assert old_keys <= _data_keys(file_store)  # still there for time travel
    kf.garbage_collect_dataset(UUID, file_store, retention_hours=0, grace_hours=0, force=True)
    assert not old_keys & _data_keys(file_store)
    assert _data_keys(file_store) == set(_files(file_store).values())
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, file_store)), _rows(expected))


def test_an_unpartitioned_dataset_with_an_added_column(store: kf.Store) -> None:
    first = pd.DataFrame({"a": range(5), "b": [1.0] * 5})
    kf.store_dataframes_as_dataset(store, "flat", [first])
    second = pd.DataFrame({"a": range(5, 9), "b": [2.0] * 4, "c": ["x"] * 4})
    kf.update_dataset_from_dataframes(
        [second], store=store, dataset_uuid="flat", schema_evolution="add_columns"
    )
    before = kf.read_table("flat", store)
    result = kf.optimize_dataset("flat", store, sort_by="a")
    assert (result.files_removed, result.files_added) == (2, 1)
    got = kf.read_table("flat", store)
    pd.testing.assert_frame_equal(got, before)
    assert got["a"].tolist() == list(range(9))
    assert got["c"].isna().tolist() == [True] * 5 + [False] * 4


@pytest.mark.parametrize("sort_by", [None, ["k"]])
def test_new_files_keep_the_dataset_pandas_metadata(built, sort_by) -> None:
    """Compaction without sorting lost the pandas metadata of the files (plateau and
    kartothek read dtypes from it)."""
    store, _ = built
    kf.optimize_dataset(UUID, store, sort_by=sort_by)
    for key in _files(store).values():
        metadata = pq.read_schema(store.open_input(key)).metadata
        assert metadata is not None and b"pandas" in metadata


def test_plateau_reads_an_optimized_dataset(file_store: kf.Store) -> None:
    plateau = pytest.importorskip("plateau.api.dataset")
    expected = _build(file_store, days=3)
    kf.optimize_dataset(UUID, file_store, sort_by=["k"])
    url = file_store.url.removeprefix("file://")
    got = plateau.read_table(UUID, f"hfs://{url}")
    assert len(got) == len(expected)
    hit = plateau.read_table(UUID, f"hfs://{url}", predicates=[[("k", "==", 7)]])
    pd.testing.assert_frame_equal(_rows(hit), _rows(expected[expected.k == 7]))
    pd.testing.assert_frame_equal(_rows(got), _rows(expected))


# ------------------------------------------------------------------------- concurrency
def test_an_append_racing_an_optimize_both_land(built_anywhere) -> None:
    """The append commits between the optimize's plan and its commit, into a partition
    the optimize rewrites: the optimize rebases onto it and keeps the appended file."""
    store, expected = built_anywhere
    st = ensure_store(store)
    plan, base = load_optimize(st, UUID)
    chunks = [rewrite_unit(st, plan, u) for u in plan.units]
    late = _day(50).assign(p=1)
    kf.update_dataset_from_dataframes([late], store=store, dataset_uuid=UUID)
    late_labels = set(_files(store)) - set(base.metadata.partitions)

    result = commit_optimize(st, plan, base, chunks)

    files = _files(store)
    assert late_labels <= set(files)  # the append survived
    assert len(files) == 3 + len(late_labels)
    assert result.version == kf.dataset_history(UUID, store)[0].version
    want = pd.concat([expected, late], ignore_index=True)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(want))


def test_a_replace_racing_an_optimize_one_wins(built_anywhere) -> None:
    """A delete_scope update removes files the optimize read: whichever commits second
    gets CommitConflictError and leaves no file behind."""
    store, expected = built_anywhere
    st = ensure_store(store)
    plan, base = load_optimize(st, UUID)
    chunks = [rewrite_unit(st, plan, u) for u in plan.units]
    new_keys = {p.key for c in chunks for p in c.partitions}
    replacement = _day(70).assign(p=1)
    kf.update_dataset_from_dataframes(
        [replacement], store=store, dataset_uuid=UUID, delete_scope=[{"p": 1}]
    )
    with pytest.raises(CommitConflictError, match="removed or replaced"):
        commit_optimize(st, plan, base, chunks)
    assert not new_keys & set(store.iter_keys(""))
    want = pd.concat([expected[expected.p != 1], replacement], ignore_index=True)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(want))


def test_an_optimize_wins_against_a_later_replace(built) -> None:
    """The other order: the replace planned on the version before the optimize."""
    store, expected = built
    st = ensure_store(store)
    from kartoframe.execution.eager_write import delete_scope_labels
    from kartoframe.execution.write import commit_write
    from kartoframe.storage.resolve import load_dataset

    base = load_dataset(st, UUID)
    removes = delete_scope_labels(base, st, [{"p": 1}])
    kf.optimize_dataset(UUID, store)
    with pytest.raises(CommitConflictError, match="removed or replaced"):
        commit_write(st, UUID, [], base=base, remove_labels=removes)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(expected))


def test_optimize_in_a_loop_beside_an_appending_thread_loses_nothing(file_store) -> None:
    """Real threads: every acknowledged append is in the final dataset."""
    expected = [_build(file_store, days=2)]
    errors: list[BaseException] = []
    done = threading.Event()

    def appender() -> None:
        try:
            for day in range(100, 112):
                df = _day(day, rows=20)
                kf.update_dataset_from_dataframes([df], store=file_store, dataset_uuid=UUID)
                expected.append(df)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            done.set()

    thread = threading.Thread(target=appender)
    thread.start()
    runs = 0
    while not done.is_set() or runs == 0:
        kf.optimize_dataset(UUID, file_store, sort_by=["k"])
        runs += 1
    thread.join()
    assert not errors, errors
    kf.optimize_dataset(UUID, file_store, sort_by=["k"])
    want = pd.concat(expected, ignore_index=True)
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, file_store)), _rows(want))
    assert len(_files(file_store)) == 3
    assert kf.check_dataset(UUID, file_store).ok


def test_two_optimizes_of_the_same_files_one_wins(built) -> None:
    store, expected = built
    st = ensure_store(store)
    first_plan, first_base = load_optimize(st, UUID)
    second_plan, second_base = load_optimize(st, UUID, sort_by=["k"])
    first = [rewrite_unit(st, first_plan, u) for u in first_plan.units]
    second = [rewrite_unit(st, second_plan, u) for u in second_plan.units]
    commit_optimize(st, first_plan, first_base, first)
    with pytest.raises(CommitConflictError):
        commit_optimize(st, second_plan, second_base, second)
    assert not {p.key for c in second for p in c.partitions} & set(st.iter_keys(""))
    assert _data_keys(st) >= set(_files(st).values())
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, store)), _rows(expected))


APPENDER = """
import sys, numpy as np, pandas as pd, kartoframe as kf
url, first, last = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for day in range(first, last):
    rng = np.random.default_rng(day)
    df = pd.DataFrame({"p": rng.integers(0, 3, 20), "k": rng.integers(0, 50, 20),
                       "x": rng.normal(size=20), "s": rng.choice(["a", "b", "c"], 20),
                       "day": np.full(20, day, dtype="int64")})
    kf.update_dataset_from_dataframes([df], store=url, dataset_uuid="events")
    print(day, flush=True)
"""


def test_optimize_beside_an_appending_process_loses_nothing(file_store) -> None:
    """A separate process appends while this one optimizes: every acknowledged day is in
    the final dataset, exactly once."""
    import subprocess
    import sys

    expected = [_build(file_store, days=2)]
    proc = subprocess.Popen(
        [sys.executable, "-c", APPENDER, file_store.url, "200", "206"],
        stdout=subprocess.PIPE,
        text=True,
    )
    runs = 0
    while proc.poll() is None or runs == 0:
        kf.optimize_dataset(UUID, file_store)
        runs += 1
    out, _ = proc.communicate()
    assert proc.returncode == 0
    acknowledged = [int(line) for line in out.split()]
    assert acknowledged == list(range(200, 206))
    expected += [_day(d, rows=20) for d in acknowledged]
    pd.testing.assert_frame_equal(
        _rows(kf.read_table(UUID, file_store)), _rows(pd.concat(expected, ignore_index=True))
    )
    assert kf.check_dataset(UUID, file_store).ok


# ---------------------------------------------------------------------------- failures
def test_a_failed_rewrite_leaves_the_dataset_as_it_was(built_anywhere) -> None:
    store, _ = built_anywhere
    victim = sorted(_files(store).items())[5]
    store.delete(victim[1])  # a data file lost by hand: reading its partition fails
    header = kf.read_dataset_metadata(UUID, store)
    keys = set(store.iter_keys(""))
    with pytest.raises(Exception, match=victim[0].split("/")[1]):
        kf.optimize_dataset(UUID, store)
    assert kf.read_dataset_metadata(UUID, store).partitions == header.partitions
    assert set(store.iter_keys("")) == keys  # no new file left behind


def test_an_application_transaction_is_applied_once(built) -> None:
    store, _ = built
    first = kf.optimize_dataset(UUID, store, app_id="nightly", app_version=1)
    kf.update_dataset_from_dataframes([_day(80)], store=store, dataset_uuid=UUID)
    retried = kf.optimize_dataset(UUID, store, app_id="nightly", app_version=1)
    assert first.files_removed == 3 * DAYS and retried.files_removed == 0
    assert len(_files(store)) == 6  # the day-80 files were not compacted by the retry


# -------------------------------------------------------------------------------- dask
def test_dask_optimize_equals_the_eager_one(file_store, tmp_path, compute) -> None:
    expected = _build(file_store, days=5)
    other = kf.Store(f"file://{tmp_path}/other")
    _build(other, days=5)
    job = kf.optimize_dataset_as_delayed(UUID, file_store, sort_by=["k"])
    got = compute(job)
    eager = kf.optimize_dataset(UUID, other, sort_by=["k"])
    assert (got.files_removed, got.files_added, got.partitions_optimized) == (
        eager.files_removed,
        eager.files_added,
        eager.partitions_optimized,
    )
    pd.testing.assert_frame_equal(_rows(kf.read_table(UUID, file_store)), _rows(expected))
    assert kf.optimize_dataset(UUID, file_store, sort_by=["k"]).files_removed == 0


def test_a_failed_dask_task_commits_nothing_and_cleans_up(file_store, compute) -> None:
    _build(file_store, days=5)
    victim = sorted(_files(file_store).values())[0]
    job = kf.optimize_dataset_as_delayed(UUID, file_store)  # planned while the file exists
    file_store.delete(victim)
    keys = set(file_store.iter_keys(""))
    header = kf.read_dataset_metadata(UUID, file_store)
    with pytest.raises(Exception, match=victim.rsplit("/", 1)[1].split(".")[0]):
        compute(job)
    assert set(file_store.iter_keys("")) == keys
    assert kf.read_dataset_metadata(UUID, file_store).partitions == header.partitions


def test_dask_dry_run_and_nothing_to_do_build_no_tasks(built) -> None:
    store, _ = built
    dry = kf.optimize_dataset_as_delayed(UUID, store, dry_run=True)
    assert len(dry.dask) == 1 and dry.compute().dry_run
    with pytest.raises(TypeError, match="Unexpected keyword"):
        kf.optimize_dataset_as_delayed(UUID, store, progress=True)
    # a retried step (its app transaction recorded) builds no rewrite task either
    kf.optimize_dataset(UUID, store, app_id="nightly", app_version=1)
    kf.update_dataset_from_dataframes([_day(81)], store=store, dataset_uuid=UUID)
    files = _files(store)
    retried = kf.optimize_dataset_as_delayed(UUID, store, app_id="nightly", app_version=1)
    assert len(retried.dask) == 1 and retried.compute().files_removed == 0
    assert _files(store) == files
