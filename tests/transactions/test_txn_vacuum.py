"""Vacuum and garbage collection respect the retention window; costs stay O(1)."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.execution.write import write_chunk
from kartoframe.format import naming, txlog
from kartoframe.storage import log
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.retention import retained_versions

HOUR_MS = 3_600_000


def frame(k: int, p: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"p": [p, p], "k": [k, k]})


def ks(store: kf.Store, **kwargs: Any) -> list[int]:
    return sorted(kf.read_table("ds", store, **kwargs)["k"].tolist())


def replace(store: kf.Store, k: int) -> None:
    kf.update_dataset_from_dataframes([frame(k)], store, "ds", delete_scope=[{"p": 0}])


def data_files(store: kf.Store) -> set[str]:
    return {k for k in store.iter_keys("ds/table/") if k.endswith(".parquet")}


@pytest.fixture
def three_versions(memory_store: kf.Store) -> kf.Store:
    kf.store_dataframes_as_dataset(
        memory_store, "ds", [frame(0)], partition_on=["p"], secondary_indices=["k"]
    )
    replace(memory_store, 1)
    replace(memory_store, 2)
    return memory_store


def test_retention_arguments(three_versions: kf.Store) -> None:
    store = three_versions
    with pytest.raises(kf.InvalidInputError, match="safe minimum"):
        kf.vacuum_dataset("ds", store, retention_hours=1)
    with pytest.raises(kf.InvalidInputError, match=">= 0"):
        kf.vacuum_dataset("ds", store, retention_hours=-1, force=True)
    with pytest.raises(kf.InvalidInputError, match="number"):
        kf.vacuum_dataset("ds", store, retention_hours="7d")  # type: ignore[arg-type]
    with pytest.raises(kf.DatasetNotFoundError):
        kf.vacuum_dataset("nope", store)
    with pytest.raises(kf.InvalidInputError, match=">= 0"):
        kf.garbage_collect_dataset("ds", store, retention_hours=-2)


def test_default_retention_keeps_every_recent_version(three_versions: kf.Store) -> None:
    store = three_versions
    before = set(store.iter_keys())
    assert kf.vacuum_dataset("ds", store) == []
    assert kf.garbage_collect_dataset("ds", store) == []
    assert set(store.iter_keys()) == before
    for v in range(3):
        assert ks(store, version=v) == [v, v]


def test_zero_retention_vacuum(three_versions: kf.Store) -> None:
    store = three_versions
    current = set(kf.read_dataset_metadata("ds", store).partitions.values())
    planned = kf.vacuum_dataset("ds", store, retention_hours=0, force=True, dry_run=True)
    assert kf.vacuum_dataset("ds", store, retention_hours=0, force=True) == planned
    assert data_files(store) == current
    assert not any(k in current for k in planned)
    assert sum("/indices/" in k for k in planned) == 2
    # the statistics of version 2 are version 0's file and the deltas of versions 1 and
    # 2 (each replacement added one): all still needed
    assert sum("/_kartoframe/stats/" in k for k in planned) == 0
    assert len(list(store.iter_keys("ds/_kartoframe/stats/"))) == 3
    entries, checkpoints = log.list_log(store, "ds")
    assert entries == [2] and checkpoints == [2]
    assert ks(store) == [2, 2] and ks(store, version=2) == [2, 2]
    with pytest.raises(kf.InvalidInputError, match="removed by vacuum_dataset"):
        kf.read_table("ds", store, version=1)
    assert [r.version for r in kf.dataset_history("ds", store)] == [2]
    # the log continues from the checkpoint
    kf.update_dataset_from_dataframes([frame(3, 1)], store, "ds")
    assert ks(store, version=2) == [2, 2] and ks(store) == [2, 2, 3, 3]


def test_window_boundaries(three_versions: kf.Store) -> None:
    """A version is retained while its successor is younger than the window."""
    store = three_versions
    history = {
        r.version: int(r.timestamp.timestamp() * 1000) for r in kf.dataset_history("ds", store)
    }
    kept = retained_versions(store, "ds", 1.0, now_ms=history[2] + HOUR_MS - 1)
    assert kept.oldest == 1  # version 1 was current until version 2, inside the window
    kept = retained_versions(store, "ds", 1.0, now_ms=history[2] + HOUR_MS + 1)
    assert kept.oldest == 2
    kept = retained_versions(store, "ds", 1.0, now_ms=history[1] + HOUR_MS - 1)
    assert kept.oldest == 0
    v0 = load_dataset(store, "ds", version=0).metadata.partitions.values()
    assert set(v0) <= kept.referenced


def test_vacuum_keeps_files_of_running_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    store = kf.Store(f"file://{root}")
    # versions 0 and 1 are committed two hours ago (their log timestamps and file times), so
    # the outcome does not depend on how fast this machine runs the steps below
    real_now = txlog.now_ms
    monkeypatch.setattr(txlog, "now_ms", lambda: real_now() - 2 * HOUR_MS)
    kf.store_dataframes_as_dataset(store, "ds", [frame(0)], partition_on=["p"])
    v0_files = data_files(store)
    replace(store, 1)
    monkeypatch.setattr(txlog, "now_ms", real_now)
    past = time.time() - 2 * 3600
    for path in root.rglob("*"):
        os.utime(path, (past, past))
    replace(store, 2)
    inflight = write_chunk(store, "ds", frame(9), partition_on=["p"]).partitions[0].key
    # a one-hour window (forced): version 0 expired, version 1 was current until just now
    gone = kf.vacuum_dataset("ds", store, retention_hours=1, force=True)
    assert inflight not in gone and store.exists(inflight), "a running write's file is new"
    assert v0_files <= set(gone), "version 0's files are older than the window"
    v0 = set(load_dataset(store, "ds", version=1).metadata.partitions.values())
    assert v0 <= data_files(store)
    assert ks(store, version=1) == [1, 1] and ks(store) == [2, 2]
    with pytest.raises(kf.InvalidInputError):
        kf.read_table("ds", store, version=0)
    assert any(k.endswith("00000000000000000000.json") for k in gone)
    # garbage collection keeps the reference meaning, but a running write's file is
    # younger than the grace window: only a forced collection deletes it
    assert inflight not in kf.garbage_collect_dataset("ds", store, retention_hours=0)
    assert inflight in kf.garbage_collect_dataset(
        "ds", store, retention_hours=0, grace_hours=0, force=True
    )


def test_vacuum_removes_temp_files_and_repairs_the_header(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = kf.Store(f"file://{root}")
    kf.store_dataframes_as_dataset(store, "ds", [frame(0)], partition_on=["p"])
    (root / ".ds.by-dataset-metadata.json.tmp-0123abcd").write_bytes(b"{")
    (root / "ds" / "_kartoframe" / "log" / ".00000000000000000001.json.tmp-ff").write_bytes(b"")
    old_header = store.get(naming.header_key("ds", "json"))
    kf.update_dataset_from_dataframes([frame(1)], store, "ds")
    store.put(naming.header_key("ds", "json"), old_header)  # a lagging header
    gone = kf.vacuum_dataset("ds", store, retention_hours=0, force=True)
    assert ".ds.by-dataset-metadata.json.tmp-0123abcd" in gone
    assert not [p for p in root.rglob("*") if ".tmp-" in p.name]
    state = log.current_state(store, "ds")
    assert state is not None and state.file_version == state.version == 1
    import plateau.api.dataset as plateau

    assert len(plateau.read_table("ds", f"hfs://{root}")) == 4


def test_vacuum_of_a_dataset_without_log(tmp_path: Path) -> None:
    import plateau.api.dataset as plateau

    url = f"{tmp_path}/store"
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}", dataset_uuid="ds", dfs=[frame(0)], partition_on=["p"]
    )
    plateau.update_dataset_from_dataframes(
        [frame(1)], store=f"hfs://{url}", dataset_uuid="ds", delete_scope=[{"p": 0}]
    )
    gone = kf.vacuum_dataset("ds", url, retention_hours=0, force=True)
    assert len(gone) == 1 and gone[0].startswith("ds/table/p=0/")
    assert ks(kf.Store(url)) == [1, 1]


def test_gc_keeps_what_the_window_needs_and_collects_reverted_versions(
    three_versions: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    store, ffs = make_faulty(three_versions)
    ffs.inject(
        "pipe_file",
        exc=lambda p: PermissionError(13, "denied", p),
        times=None,
        match=naming.JSON_SUFFIX,
    )
    ffs.inject("rm_file", exc=lambda p: PermissionError(13, "denied", p), times=None)
    ffs.inject("rm", exc=lambda p: PermissionError(13, "denied", p), times=None)
    with pytest.raises(kf.StorageError):
        replace(store, 3)
    ffs.heal()
    # default window: 7 days; the reverted version's files are new (no grace window)
    removed = kf.garbage_collect_dataset("ds", store, grace_hours=0, force=True)
    assert removed and all("p=0" in k or "/indices/" in k or "/stats/" in k for k in removed)
    for v in (0, 1, 2):
        assert ks(store, version=v) == [v, v]


def test_delete_dataset_removes_the_log(three_versions: kf.Store) -> None:
    kf.delete_dataset("ds", three_versions)
    assert list(three_versions.iter_keys()) == []
    with pytest.raises(kf.DatasetNotFoundError):
        kf.dataset_history("ds", three_versions)
    kf.store_dataframes_as_dataset(three_versions, "ds", [frame(5)], partition_on=["p"])
    assert [r.version for r in kf.dataset_history("ds", three_versions)] == [0]


def test_costs_do_not_grow_with_the_history(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    kf.store_dataframes_as_dataset(memory_store, "ds", [frame(0)], partition_on=["p"])
    store, ffs = make_faulty(memory_store)
    opens, commits = [], []
    for i in range(1, 46):
        ffs.calls.clear()
        base = load_dataset(store, "ds")
        opens.append(sum(ffs.calls.values()))
        chunk = write_chunk(store, "ds", frame(i, i % 3), partition_on=["p"])
        ffs.calls.clear()
        from kartoframe.execution.write import commit_write

        commit_write(store, "ds", [chunk], base=base)
        commits.append(sum(ffs.calls.values()) - (i % 10 == 0) * 2)  # checkpoint: +2 calls
    assert set(opens) == {3}
    # memory: put_if_absent = exists + write. Every MAX_STATISTICS_DELTAS + 1-th commit
    # folds the statistics deltas into one file (reading each): bounded and periodic
    from kartoframe.format.statistics import MAX_STATISTICS_DELTAS

    plain = sorted(set(commits))[0]
    folds = [i for i, c in enumerate(commits) if c != plain]
    assert all(commits[i] <= plain + MAX_STATISTICS_DELTAS + 1 for i in folds), commits
    assert [b - a for a, b in itertools.pairwise(folds)] == [MAX_STATISTICS_DELTAS + 1] * (
        len(folds) - 1
    ), commits
