"""Concurrent writers in separate processes, on local disk and on the S3-compatible server.

N worker processes (``txn_worker.py``) are released at the same moment and commit K appends
each to one dataset: every commit must land exactly once (no lost commit, no phantom or
duplicate row), the log must be a gap-free sequence of versions, the stored header must end
at the newest version, and plateau must read the same rows. Then several workers replace the
same partition on the same base version: exactly one commits, every other one is told
``CommitConflictError`` and its file is gone.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from txn_helpers import Workers, store_spec

import kartoframe as kf
from kartoframe.format import header_stamp, naming
from kartoframe.storage import log


def _seed(store: kf.Store, uuid: str) -> None:
    kf.store_dataframes_as_dataset(
        store,
        uuid,
        [pd.DataFrame({"p": [0, 1, 2], "wid": [-1] * 3, "k": [-1] * 3, "r": [0, 0, 0]})],
        partition_on=["p"],
        secondary_indices=["wid"],
    )


def _check_appends(store: kf.Store, uuid: str, n: int, k: int) -> None:
    df = kf.read_table(uuid, store)
    got = Counter(zip(df["wid"], df["k"], df["r"], strict=True))
    expected = Counter(
        [(-1, -1, 0)] * 3 + [(w, c, r) for w in range(n) for c in range(k) for r in range(3)]
    )
    assert got == expected, "lost or phantom rows"
    history = kf.dataset_history(uuid, store)
    assert [r.version for r in history] == list(range(n * k, -1, -1)), "gaps in the log"
    assert Counter(r.operation for r in history) == {"APPEND": n * k, "CREATE": 1}
    assert not any(r.reverted for r in history)
    # every data file of the current version is one commit's, and exactly those exist
    md = kf.read_dataset_metadata(uuid, store)
    data_files = set(store.iter_keys(naming.table_prefix(uuid, "table"))) - {
        naming.common_metadata_key(uuid, "table")
    }
    assert data_files == set(md.partitions.values()), "orphaned data files"
    # the index was rebuilt on every rebase: it knows every writer
    idx = md.load_index("wid")
    assert sorted(idx["wid"].tolist()) == [-1, *range(n)]
    # the stored header settled at the newest version
    stored = log.read_stored_header(store, uuid)
    assert stored is not None
    hlog = header_stamp.header_log(stored[0])
    assert hlog is not None and hlog.version == n * k


def _plateau_rows(path: str, uuid: str) -> int:
    import plateau.api.dataset as plateau

    return len(plateau.read_table(uuid, f"hfs://{path}"))


@pytest.mark.slow
def test_concurrent_appends_local(tmp_path: Path, workers: Workers) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    n, k = 4, 6
    _seed(store, "ds")
    for wid in range(n):
        workers.start("append", store=store_spec(store), uuid="ds", wid=wid, commits=k)
    workers.release()
    reports = workers.reports()
    assert all(r["conflicts"] == 0 for r in reports)
    _check_appends(store, "ds", n, k)
    assert _plateau_rows(f"{tmp_path}/store", "ds") == 3 + n * k * 3


@pytest.mark.slow
@pytest.mark.s3
def test_concurrent_appends_s3(s3_store: kf.Store, workers: Workers) -> None:
    n, k = 3, 4
    _seed(s3_store, "ds")
    for wid in range(n):
        workers.start("append", store=store_spec(s3_store), uuid="ds", wid=wid, commits=k)
    workers.release()
    reports = workers.reports()
    assert all(r["conflicts"] == 0 for r in reports)
    _check_appends(s3_store, "ds", n, k)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["file", pytest.param("s3", marks=pytest.mark.s3)])
def test_concurrent_replacements_of_one_partition(
    backend: str, tmp_path: Path, workers: Workers, request: pytest.FixtureRequest
) -> None:
    store = (
        kf.Store(f"file://{tmp_path}/store")
        if backend == "file"
        else request.getfixturevalue("s3_store")
    )
    _seed(store, "ds")
    kf.update_dataset_from_dataframes(
        [pd.DataFrame({"p": [0, 1], "wid": [-2, -2], "k": [0, 0], "r": [0, 0]})],
        store=store,
        dataset_uuid="ds",
    )
    before = kf.read_table("ds", store)
    n = 3 if backend == "file" else 2
    for wid in range(n):
        workers.start("replace", store=store_spec(store), uuid="ds", wid=wid)
    workers.release()
    reports = workers.reports()
    outcomes = Counter(r["outcome"] for r in reports)
    assert outcomes == {"committed": 1, "conflict": n - 1}, reports
    (winner,) = [i for i, r in enumerate(reports) if r["outcome"] == "committed"]
    for r in reports:
        if r["outcome"] == "conflict":
            assert "removed or replaced" in r["message"] or "delete scope" in r["message"]
            assert not store.exists(r["files"][0]), "the loser's file must be deleted"
    df = kf.read_table("ds", store)
    # exactly the winner's rows in p == 0; other partitions untouched
    assert sorted(df[df.p == 0]["wid"].unique().tolist()) == [winner]
    pd.testing.assert_frame_equal(
        df[df.p != 0].reset_index(drop=True), before[before.p != 0].reset_index(drop=True)
    )
    assert kf.dataset_history("ds", store)[0].version == 2


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_concurrent_appends_to_a_large_header(tmp_path: Path, workers: Workers, fmt: str) -> None:
    """The same race on a header of more partitions than the column-wise paths start at:
    decoded maps, patched partitions, spliced encodings, the byte-wise re-check before
    the claim and the rebase all run under contention; no commit is lost, every version
    replays to the header its committer recorded, and plateau reads the newest header."""
    from kartoframe.format.header_partitions import JSON_COLUMNAR_MIN

    store = kf.Store(f"file://{tmp_path}/store")
    n, k, seed = 3, 3, JSON_COLUMNAR_MIN + 50
    kf.store_dataframes_as_dataset(
        store,
        "ds",
        [pd.DataFrame({"p": range(seed), "wid": -1, "k": -1, "r": 0})],
        partition_on=["p"],
        secondary_indices=["wid"],
        metadata_storage_format=fmt,
    )
    for wid in range(n):
        workers.start("append", store=store_spec(store), uuid="ds", wid=wid, commits=k)
    workers.release()
    workers.reports()
    df = kf.read_table("ds", store)
    got = Counter(zip(df["wid"], df["k"], df["r"], strict=True))
    expected = Counter(
        [(-1, -1, 0)] * seed + [(w, c, r) for w in range(n) for c in range(k) for r in range(3)]
    )
    assert got == expected, "lost or phantom rows"
    history = kf.dataset_history("ds", store)
    assert [r.version for r in history] == list(range(n * k, -1, -1)), "gaps in the log"
    for v in range(n * k + 1):  # each replay is checked against the recorded digest
        state = log.state_at(store, "ds", v)
        assert state.header is not None and len(state.header.partitions) == seed + v
    stored = log.read_stored_header(store, "ds")
    assert stored is not None and stored[0].storage_format == fmt
    hlog = header_stamp.header_log(stored[0])
    assert hlog is not None and hlog.version == n * k
    from plateau.core.dataset import DatasetMetadata  # plateau reads the newest header

    plateau_md = DatasetMetadata.load_from_store("ds", f"hfs://{tmp_path}/store")
    assert set(plateau_md.partitions) == set(state.header.partitions)
    assert kf.check_dataset("ds", store).ok
