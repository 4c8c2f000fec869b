"""Maintenance is safe at any time (issue 12, sections 2 and 3).

``garbage_collect_dataset`` and ``vacuum_dataset`` with their defaults never delete a file
younger than the grace window, a temp file being published, a file a commit newer than
their snapshot references, or a file whose name no write generates; ``delete_dataset``
removes a dataset however corrupt. The loops run GC and vacuum beside appending, replacing
(``delete_scope``) and overwriting writers, as threads and as processes.
"""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from maintenance_worker import frame, maintain_once, rows_of, write_once
from txn_helpers import store_spec

import kartoframe as kf
from kartoframe.execution.write import commit_write, write_chunk
from kartoframe.format import generated, header_stamp, naming, txlog
from kartoframe.storage import retention
from kartoframe.storage.resolve import load_dataset

WORKER = Path(__file__).parent / "maintenance_worker.py"
UNSAFE = {"grace_hours": 0, "force": True}
WRITERS = (("append", 0), ("append", 1), ("replace", 2), ("overwrite", 3))


def _create(store: kf.Store, uuid_: str = "ds") -> None:
    kf.store_dataframes_as_dataset(
        store,
        uuid_,
        [frame(-1, 0, 0), frame(-1, 0, 1)],
        partition_on=["p"],
        secondary_indices=["wid"],
    )


def _local_dataset(tmp_path: Path) -> tuple[Path, kf.Store]:
    """A local folder store (its root) holding dataset ``ds`` (:func:`_create`)."""
    root = tmp_path / "store"
    store = kf.Store(f"file://{root}")
    _create(store)
    return root, store


def _replace_partition_0(store: kf.Store) -> None:
    """A second version of ``ds``: partition ``p == 0`` replaced."""
    kf.update_dataset_from_dataframes(
        [frame(1, 0, 0)], store, "ds", delete_scope=[{"p": 0}], secondary_indices=["wid"]
    )


def _age(root: Path, hours: float = 2.0) -> None:
    """Make every file below ``root`` ``hours`` old (modification time)."""
    past = time.time() - hours * 3600
    for path in root.rglob("*"):
        os.utime(path, (past, past))


def _contents(store: kf.Store) -> dict[str, bytes]:
    return {k: store.get(k) for k in store.iter_keys()}


def check_acknowledged(store: kf.Store, uuid_: str, acked: list[tuple[int, int, int]]) -> None:
    """Every acknowledged commit's version is readable and holds the rows it wrote."""
    versions = {
        (r.commit_info["wid"], r.commit_info["k"]): r.version
        for r in kf.dataset_history(uuid_, store)
        if r.commit_info and not r.reverted
    }
    for wid, k, rows in acked:
        t = kf.read_table(uuid_, store, version=versions[(wid, k)])
        assert ((t["wid"] == wid) & (t["k"] == k)).sum() == rows, (wid, k)
    assert len(kf.read_table(uuid_, store)) >= 2


# --------------------------------------------------------------------------- the loops


def _run_threads(store: kf.Store, commits: int) -> None:
    _create(store)
    acked: list[tuple[int, int, int]] = []
    errors: list[str] = []
    done = threading.Event()

    def writer(kind: str, wid: int) -> None:
        for k in range(commits):
            try:
                write_once(store, "ds", kind, wid, k)
            except kf.CommitConflictError:
                continue
            except Exception as e:
                errors.append(f"{kind} {wid}/{k}: {type(e).__name__}: {e}")
            else:
                acked.append((wid, k, rows_of(kind)))

    def maintainer() -> None:
        rounds = 0
        while not done.is_set() and rounds < 1000:
            try:
                maintain_once(store, "ds")
            except Exception as e:
                errors.append(f"maintenance: {type(e).__name__}: {e}")
            rounds += 1

    threads = [threading.Thread(target=writer, args=w) for w in WRITERS]
    gc_thread = threading.Thread(target=maintainer)
    gc_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    done.set()
    gc_thread.join(120)
    assert not errors, "\n".join(errors)
    assert len(acked) >= commits, acked
    maintain_once(store, "ds")  # and once more after the writes
    check_acknowledged(store, "ds", acked)


@pytest.mark.parametrize("backend", ["file", "memory"])
def test_gc_and_vacuum_beside_writer_threads(tmp_path: Path, backend: str) -> None:
    url = f"file://{tmp_path}/store" if backend == "file" else f"memory://kf-{uuid.uuid4().hex}"
    _run_threads(kf.Store(url), commits=7)


@pytest.mark.s3
def test_gc_and_vacuum_beside_writer_threads_on_s3(s3_store: kf.Store) -> None:
    _run_threads(s3_store, commits=2)


def _start(tmp: Path, n: int, **spec: Any) -> tuple[subprocess.Popen[bytes], Path]:
    report = tmp / f"report-{n}.json"
    full = {"go": str(tmp / "go"), "ready": str(tmp / f"ready-{n}"), "report": str(report)}
    full.update(spec)
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), json.dumps(full)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    return proc, report


@pytest.mark.slow
def test_gc_and_vacuum_beside_writer_processes(tmp_path: Path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    _create(store)
    where = store_spec(store)
    # one process cycles through append, replace and overwrite, one appends
    writers = [(0, ["append", "replace", "overwrite"]), (1, ["append"])]
    procs = [
        _start(tmp_path, n, task="write", store=where, uuid="ds", kinds=kinds, wid=wid, commits=6)
        for n, (wid, kinds) in enumerate(writers)
    ]
    procs.append(
        _start(
            tmp_path,
            len(procs),
            task="maintain",
            store=where,
            uuid="ds",
            rounds=1000,
            stop=str(tmp_path / "stop"),
        )
    )
    try:
        deadline = time.monotonic() + 60
        for n, (proc, _) in enumerate(procs):
            while not (tmp_path / f"ready-{n}").exists():
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "workers not ready"
                time.sleep(0.01)
        (tmp_path / "go").write_text("go")
        reports = []
        for n, (proc, report) in enumerate(procs):
            if n == len(writers):
                (tmp_path / "stop").write_text("stop")  # every writer is done
            proc.wait(timeout=120)
            assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
            reports.append(json.loads(report.read_text()))
    finally:
        for proc, _ in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    errors = [e for r in reports for e in r["errors"]]
    assert not errors, "\n".join(errors)
    acked = [
        (wid, k, rows)
        for (wid, _), r in zip(writers, reports, strict=False)
        for k, rows in r["acked"]
    ]
    assert len(acked) >= 6
    maintain_once(store, "ds")
    check_acknowledged(store, "ds", acked)


# --------------------------------------------------------------------------- grace window


def test_default_gc_keeps_the_files_of_a_write_in_progress(any_store: kf.Store) -> None:
    """GC between a write's files and its commit: the commit's files are still there."""
    store = any_store
    _create(store)
    base = load_dataset(store, "ds")
    chunk = write_chunk(store, "ds", frame(7, 0, 5), partition_on=["p"], index_columns=["wid"])
    assert kf.garbage_collect_dataset("ds", store) == []
    assert kf.garbage_collect_dataset("ds", store, retention_hours=0) == []
    assert kf.vacuum_dataset("ds", store) == []
    commit_write(store, "ds", [chunk], base=base, secondary_indices=["wid"])
    t = kf.read_table("ds", store)
    assert sorted(t["wid"]) == [-1, -1, -1, -1, 7, 7]
    assert sorted(kf.read_table("ds", store, predicates=[[("wid", "==", 7)]])["p"]) == [5, 5]


def test_default_gc_keeps_the_files_of_a_create_in_progress(any_store: kf.Store) -> None:
    """A create has no header until it commits: GC on that uuid leaves its files alone."""
    store = any_store
    chunk = write_chunk(store, "ds", frame(7, 0, 5), partition_on=["p"])
    assert kf.garbage_collect_dataset("ds", store, retention_hours=0) == []
    assert store.exists(chunk.partitions[0].key)
    commit_write(store, "ds", [chunk], base=None, partition_on=["p"])
    assert sorted(kf.read_table("ds", store)["wid"]) == [7, 7]


def test_gc_keeps_what_a_commit_after_its_snapshot_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit landing between GC's listing and its deletion may reference an old file
    GC's snapshot did not (here: a file adopted with ``owns_files=False``)."""
    root, store = _local_dataset(tmp_path)
    orphan = write_chunk(store, "ds", frame(8, 0, 6), partition_on=["p"], index_columns=["wid"])
    _age(root)  # older than any grace window
    real = retention.key_ages
    fired: list[int] = []

    def listing_then_commit(st: kf.Store, prefix: str) -> dict[str, int | None]:
        found = real(st, prefix)
        if not fired:
            fired.append(1)
            commit_write(st, "ds", [orphan], base=load_dataset(st, "ds"), owns_files=False)
        return found

    monkeypatch.setattr(retention, "key_ages", listing_then_commit)
    deleted = kf.garbage_collect_dataset("ds", store, retention_hours=0)
    assert fired
    assert orphan.partitions[0].key not in deleted
    assert sorted(kf.read_table("ds", store)["wid"]) == [-1, -1, -1, -1, 8, 8]


def test_temp_files_being_published_are_kept(tmp_path: Path) -> None:
    root, store = _local_dataset(tmp_path)
    temps = [
        f"ds/_kartoframe/stats/.2024-01-01T00%3A00%3A00.statistics.pq.tmp-{uuid.uuid4().hex}",
        f"ds/_kartoframe/log/.00000000000000000001.json.tmp-{uuid.uuid4().hex}",
        f"ds/table/p=9/.{uuid.uuid4().hex}.parquet.tmp-{uuid.uuid4().hex}",
        f".ds.by-dataset-metadata.json.tmp-{uuid.uuid4().hex}",
    ]
    for key in temps:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"half written")
    assert all(generated.is_temp_file(k, "ds") for k in temps)
    assert kf.garbage_collect_dataset("ds", store, retention_hours=0) == []
    assert kf.vacuum_dataset("ds", store) == []
    assert all((root / k).exists() for k in temps)
    _age(root)  # an interrupted publication, two hours ago: now garbage
    assert kf.garbage_collect_dataset("ds", store, dry_run=True) == sorted(temps)
    assert kf.garbage_collect_dataset("ds", store) == sorted(temps)
    assert not any((root / k).exists() for k in temps)


def test_dry_run_returns_exactly_what_gc_deletes(tmp_path: Path) -> None:
    root, store = _local_dataset(tmp_path)
    _replace_partition_0(store)
    write_chunk(store, "ds", frame(2, 0, 3), partition_on=["p"])  # an orphan
    _age(root)
    before = set(store.iter_keys())
    planned = kf.garbage_collect_dataset("ds", store, retention_hours=0, dry_run=True)
    assert set(store.iter_keys()) == before  # a dry run deletes nothing
    assert planned and all(generated.is_collectable(k, "ds", "table") for k in planned)
    assert kf.garbage_collect_dataset("ds", store, retention_hours=0) == planned
    assert set(store.iter_keys()) == before - set(planned)
    assert sorted(kf.read_table("ds", store)["wid"]) == [-1, -1, 1, 1]


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, -1, 10**400, 1e300])
def test_windows_must_be_finite(memory_store: kf.Store, value: float) -> None:
    _create(memory_store)
    calls: list[Callable[[], Any]] = [
        lambda: kf.garbage_collect_dataset("ds", memory_store, retention_hours=value),
        lambda: kf.garbage_collect_dataset("ds", memory_store, grace_hours=value, force=True),
        lambda: kf.vacuum_dataset("ds", memory_store, retention_hours=value, force=True),
    ]
    for call in calls:
        with pytest.raises(kf.InvalidInputError, match="hours") as info:
            call()
        assert type(info.value) is kf.InvalidInputError


def test_a_short_grace_window_needs_force_and_is_logged(
    memory_store: kf.Store, caplog: pytest.LogCaptureFixture
) -> None:
    _create(memory_store)
    with pytest.raises(kf.InvalidInputError, match="force=True"):
        kf.garbage_collect_dataset("ds", memory_store, grace_hours=0.5)
    with caplog.at_level(logging.WARNING, logger="kartoframe.maintenance"):
        kf.garbage_collect_dataset("ds", memory_store, **UNSAFE)  # type: ignore[arg-type]
    assert "writes in progress" in caplog.text


# --------------------------------------------------------------------------- names


def test_reserved_table_names_are_refused_on_write(memory_store: kf.Store) -> None:
    for name in ("indices", "_kartoframe"):
        with pytest.raises(kf.InvalidUUIDError, match="reserved"):
            kf.store_dataframes_as_dataset(
                memory_store, "ds", [frame(0, 0, 0)], partition_on=["p"], table_name=name
            )
    assert list(memory_store.iter_keys()) == []


def _retable(store: kf.Store, table: str) -> None:
    """Edit the header by hand: its partitions' files maps use ``table``."""
    key = naming.header_key("ds", "json")
    doc = json.loads(store.get(key))
    for part in doc["partitions"].values():
        ((_, file_key),) = part["files"].items()
        part["files"] = {table: file_key}
    store.put(key, json.dumps(doc).encode())


@pytest.mark.parametrize("table", ["_kartoframe", "indices"])
def test_header_with_a_reserved_table_name(tmp_path: Path, table: str) -> None:
    root, store = _local_dataset(tmp_path)
    kf.update_dataset_from_dataframes([frame(1, 0, 2)], store, "ds", secondary_indices=["wid"])
    _retable(store, table)
    _age(root)
    before = _contents(store)
    with pytest.raises(kf.CorruptMetadataError, match=f"table name '{table}'") as info:
        kf.read_table("ds", store)
    assert type(info.value) is kf.CorruptMetadataError
    with pytest.raises(kf.CorruptMetadataError):
        kf.garbage_collect_dataset("ds", store, retention_hours=0, **UNSAFE)  # type: ignore[arg-type]
    with pytest.raises(kf.CorruptMetadataError):
        kf.vacuum_dataset("ds", store, retention_hours=0, force=True)
    assert _contents(store) == before  # no log entry, no statistics file deleted
    kf.delete_dataset("ds", store)
    assert list(store.iter_keys()) == []


FOREIGN = {
    "ds/table/notes.txt": b"mine",
    "ds/table/p=0/notes.parquet": b"mine",
    "ds/indices/readme.md": b"mine",
    "ds/_kartoframe/stats/notes.json": b"mine",
    "ds/_kartoframe/log/notes.json": b"mine",
    ".ds.notes.tmp-backup": b"mine",
    "ds/.notes.tmp-0123": b"mine",
}


def test_foreign_files_survive_gc_vacuum_and_delete(tmp_path: Path) -> None:
    root, store = _local_dataset(tmp_path)
    _replace_partition_0(store)
    for key, data in FOREIGN.items():
        store.put(key, data)
    _age(root)
    gone = kf.garbage_collect_dataset("ds", store, retention_hours=0, **UNSAFE)  # type: ignore[arg-type]
    gone += kf.vacuum_dataset("ds", store, retention_hours=0, force=True)
    assert gone, "the old version's files are collected"
    assert not set(gone) & set(FOREIGN)
    assert {k: store.get(k) for k in FOREIGN} == FOREIGN
    assert sorted(kf.read_table("ds", store)["wid"]) == [-1, -1, 1, 1]
    kf.delete_dataset("ds", store)
    assert _contents(store) == FOREIGN


# --------------------------------------------------------------------------- delete_dataset


def _three_versions(store: kf.Store) -> None:
    _create(store)
    kf.update_dataset_from_dataframes([frame(1, 0, 2)], store, "ds", secondary_indices=["wid"])
    kf.update_dataset_from_dataframes([frame(1, 1, 3)], store, "ds")


def _undecodable_header(store: kf.Store) -> None:
    store.put(naming.header_key("ds", "json"), b'{"dataset_metadata_version": 4, "partit')


def _digest_mismatch(store: kf.Store) -> None:
    # a lagging header (version 1) and a version-2 entry edited by hand: its replay no
    # longer matches the digest the committer recorded
    v1 = load_dataset(store, "ds", version=1).metadata
    key = txlog.entry_key("ds", 2)
    doc = json.loads(store.get(key))
    doc["add"] = []
    store.put(key, json.dumps(doc).encode())
    from kartoframe.format.header import encode_header

    stamped = header_stamp.stamp_header(v1, 1, 0, {})
    store.put(naming.header_key("ds", "json"), encode_header(stamped))


def _undecodable_entry(store: kf.Store) -> None:
    header = naming.header_key("ds", "json")
    doc = json.loads(store.get(header))
    doc["kartoframe"]["log"]["version"] = 1  # lagging: version 2 is replayed
    store.put(header, json.dumps(doc).encode())
    store.put(txlog.entry_key("ds", 2), b"\x00not json")


def _missing_files(store: kf.Store) -> None:
    md = kf.read_dataset_metadata("ds", store)
    store.delete(sorted(md.partitions.values())[0])
    store.delete(naming.common_metadata_key("ds", "table"))


CORRUPTIONS = {
    "undecodable header": _undecodable_header,
    "log entry failing its digest": _digest_mismatch,
    "undecodable log entry": _undecodable_entry,
    "missing data file and schema": _missing_files,
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_delete_dataset_removes_a_corrupt_dataset(
    store: kf.Store, corrupt: Callable[[kf.Store], None]
) -> None:
    _three_versions(store)
    store.put("ds/table/notes.txt", b"mine")
    store.put("other/table/p=0/" + "a" * 32 + ".parquet", b"another dataset")
    corrupt(store)
    with pytest.raises(kf.KartoframeError):
        kf.read_table("ds", store)
    kf.delete_dataset("ds", store)
    assert sorted(store.iter_keys()) == [
        "ds/table/notes.txt",
        "other/table/p=0/" + "a" * 32 + ".parquet",
    ]
    with pytest.raises(kf.DatasetNotFoundError):
        kf.delete_dataset("ds", store)
    _create(store)  # the name is free again
    assert len(kf.read_table("ds", store)) == 4


def test_delete_dataset_of_a_missing_dataset(store: kf.Store) -> None:
    store.put("ds/table/notes.txt", b"mine")
    with pytest.raises(kf.DatasetNotFoundError):
        kf.delete_dataset("ds", store)
    assert list(store.iter_keys()) == ["ds/table/notes.txt"]
