"""The commit protocol in one process: versions, rebase, conflicts, idempotency, crashes
between the log entry and the header, foreign (plateau) writers, request counts.

Concurrency is made deterministic here: a commit is built on a base loaded *before* another
writer commits (exactly the situation of two racing processes; the multi-process races are
in ``test_txn_concurrency.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.api.write import delete_scope_labels
from kartoframe.execution.write import commit_write, write_chunk
from kartoframe.format import header_stamp, naming, txlog
from kartoframe.format.commit_args import CommitOptions
from kartoframe.storage import log
from kartoframe.storage.commit import HeaderPublishError, _settle, publish_current
from kartoframe.storage.resolve import load_dataset

HEADER = naming.header_key("ds", "json")


def frame(k: int, p: int | list[int] = 0, rows: int = 2, **extra: Any) -> pd.DataFrame:
    ps = p if isinstance(p, list) else [p] * rows
    return pd.DataFrame({"p": ps, "k": [k] * len(ps), **extra})


def seed(store: kf.Store, **kwargs: Any) -> None:
    kf.store_dataframes_as_dataset(store, "ds", [frame(0, [0, 1, 2])], partition_on=["p"], **kwargs)


def ks(store: kf.Store, **kwargs: Any) -> list[int]:
    return sorted(kf.read_table("ds", store, **kwargs)["k"].tolist())


def stale_commit(
    store: kf.Store,
    df: pd.DataFrame | None,
    between: Callable[[], Any],
    *,
    scope: list[dict[str, Any]] | None = None,
    **kwargs: Any,
) -> Any:
    """Load the base, write ``df``, let ``between`` commit, then commit on the stale base."""
    base = load_dataset(store, "ds")
    chunks = (
        [
            write_chunk(
                store, "ds", df, partition_on=["p"], index_columns=sorted(base.metadata.indices)
            )
        ]
        if df is not None
        else []
    )
    between()
    remove = delete_scope_labels(base, store, scope) if scope is not None else set()
    return commit_write(
        store,
        "ds",
        chunks,
        base=base,
        remove_labels=remove,
        remove_scope=(lambda b: delete_scope_labels(b, store, scope)) if scope else None,
        **kwargs,
    ), chunks


# ------------------------------------------------------------------------------ basics
def test_versions_history_and_header_marker(any_store: kf.Store) -> None:
    seed(any_store)
    kf.update_dataset_from_dataframes(
        [frame(1)], store=any_store, dataset_uuid="ds", commit_info={"job": "a", "n": 1}
    )
    kf.update_dataset_from_dataframes(
        [frame(2, 1)], store=any_store, dataset_uuid="ds", delete_scope=[{"p": 1}]
    )
    kf.update_dataset_from_dataframes([], store=any_store, dataset_uuid="ds", metadata={"x": 1})
    history = kf.dataset_history("ds", any_store)
    assert [(r.version, r.operation) for r in history] == [
        (3, "SET_METADATA"),
        (2, "UPDATE"),
        (1, "APPEND"),
        (0, "CREATE"),
    ]
    assert history[2].commit_info == {"job": "a", "n": 1}
    assert len(history[2].added) == 1 and history[2].removed == ()
    assert [lb.split("/")[0] for lb in history[1].removed] == ["p=1"]
    assert history[1].parameters["delete_scope"] == [{"p": 1}]
    assert history[0].writer.startswith("kartoframe")
    assert all(a.timestamp > b.timestamp for a, b in itertools.pairwise(history))
    assert len(kf.dataset_history("ds", any_store, limit=2)) == 2
    doc = orjson.loads(any_store.get(HEADER))
    assert doc["kartoframe"]["log"]["version"] == 3
    assert ks(any_store) == [0, 0, 1, 1, 2, 2]


def test_every_commit_path_goes_through_the_log(memory_store: kf.Store) -> None:
    seed(memory_store)
    kf.build_dataset_indices(memory_store, "ds", ["k"])
    kf.build_dataset_statistics(memory_store, "ds")
    mp = kf.write_single_partition(memory_store, "ds", frame(5))
    kf.commit_dataset(memory_store, "ds", new_partitions=[mp])
    ops = [r.operation for r in kf.dataset_history("ds", memory_store)]
    assert ops == ["APPEND", "UPDATE", "BUILD_INDEX", "CREATE"]
    assert ks(memory_store) == [0, 0, 0, 5, 5]


# ------------------------------------------------------------------------------ rebase
def test_stale_append_rebases_and_merges_the_index(any_store: kf.Store) -> None:
    seed(any_store, secondary_indices=["k"])
    md, _ = stale_commit(
        any_store,
        frame(7, 2),
        lambda: kf.update_dataset_from_dataframes([frame(5, 1)], any_store, "ds"),
    )
    assert ks(any_store) == [0, 0, 0, 5, 5, 7, 7]
    assert header_stamp.header_log(md).version == 2  # type: ignore[union-attr]
    idx = kf.read_dataset_metadata("ds", any_store).load_index("k")
    assert sorted(idx["k"].tolist()) == [0, 5, 7]
    assert len(kf.read_table("ds", any_store, predicates=[[("k", "==", 5)]])) == 2


def test_metadata_updates_merge(memory_store: kf.Store) -> None:
    seed(memory_store)
    stale_commit(
        memory_store,
        None,
        lambda: kf.update_dataset_from_dataframes([], memory_store, "ds", metadata={"a": 1}),
        metadata={"b": 2},
    )
    meta = kf.read_dataset_metadata("ds", memory_store).metadata
    assert meta["a"] == 1 and meta["b"] == 2


def test_overwrite_is_blind(memory_store: kf.Store) -> None:
    seed(memory_store)
    kf.update_dataset_from_dataframes([frame(1)], memory_store, "ds")
    kf.store_dataframes_as_dataset(
        memory_store, "ds", [frame(9)], partition_on=["p"], overwrite=True
    )
    assert ks(memory_store) == [9, 9]
    assert kf.dataset_history("ds", memory_store)[0].operation == "OVERWRITE"


# ------------------------------------------------------------------------------ conflicts
def test_removing_a_partition_removed_concurrently_conflicts(memory_store: kf.Store) -> None:
    seed(memory_store)
    before: list[str] = []

    def other() -> None:
        kf.update_dataset_from_dataframes(
            [frame(3, 0)], memory_store, "ds", delete_scope=[{"p": 0}]
        )
        before.extend(memory_store.iter_keys())

    with pytest.raises(kf.CommitConflictError, match="removed or replaced by version 1"):
        stale_commit(memory_store, frame(4, 0), other, scope=[{"p": 0}])
    # ``before`` was taken after the loser wrote its data file: exactly that one is gone
    gone = set(before) - set(memory_store.iter_keys())
    assert len(gone) == 1 and set(memory_store.iter_keys()) <= set(before)
    assert gone.isdisjoint(kf.read_dataset_metadata("ds", memory_store).partitions.values())
    assert ks(memory_store) == [0, 0, 3, 3]


def test_append_inside_a_concurrent_delete_scope_conflicts(memory_store: kf.Store) -> None:
    seed(memory_store)
    with pytest.raises(kf.CommitConflictError, match="inside this commit's delete scope"):
        stale_commit(
            memory_store,
            frame(4, 0),
            lambda: kf.update_dataset_from_dataframes([frame(3, 0)], memory_store, "ds"),
            scope=[{"p": 0}],
        )
    # without a scope (only labels), a change in the same partition directory conflicts
    with pytest.raises(kf.CommitConflictError, match="changed partition 'p=0'"):
        base = load_dataset(memory_store, "ds")
        kf.update_dataset_from_dataframes([frame(5, 0)], memory_store, "ds")
        commit_write(
            memory_store,
            "ds",
            [],
            base=base,
            remove_labels={lb for lb in base.metadata.partitions if lb.startswith("p=0/")},
        )


def test_changes_of_other_partitions_do_not_conflict(any_store: kf.Store) -> None:
    seed(any_store)
    stale_commit(
        any_store,
        frame(4, 0),
        lambda: kf.update_dataset_from_dataframes([frame(3, 1)], any_store, "ds"),
        scope=[{"p": 0}],
    )
    df = kf.read_table("ds", any_store)
    assert sorted(df[df.p == 0].k) == [4, 4] and sorted(df[df.p == 1].k) == [0, 3, 3]


def test_delete_scope_on_an_index_is_serialisable(memory_store: kf.Store) -> None:
    seed(memory_store, secondary_indices=["k"])
    # a concurrent append of a *matching* value in another partition conflicts ...
    with pytest.raises(kf.CommitConflictError, match="delete scope"):
        stale_commit(
            memory_store,
            None,
            lambda: kf.update_dataset_from_dataframes([frame(0, 2)], memory_store, "ds"),
            scope=[{"k": 0}],
        )
    # ... a non-matching one does not
    stale_commit(
        memory_store,
        None,
        lambda: kf.update_dataset_from_dataframes([frame(8, 2)], memory_store, "ds"),
        scope=[{"k": 0}],
    )
    assert ks(memory_store) == [8, 8]


def test_concurrent_schema_changes_conflict(memory_store: kf.Store) -> None:
    seed(memory_store)

    def other() -> None:
        kf.update_dataset_from_dataframes(
            [frame(1, a=[1.5, 2.5])], memory_store, "ds", schema_evolution="add_columns"
        )

    with pytest.raises(kf.CommitConflictError, match="schema"):
        stale_commit(memory_store, frame(2, b=["x", "y"]), other, schema_evolution="add_columns")
    assert "b" not in kf.read_table("ds", memory_store).columns
    assert "a" in kf.read_dataset_metadata("ds", memory_store).schema.names
    # a plain append built on the old schema cannot be rebased onto the new one
    with pytest.raises(kf.CommitConflictError, match="column 'c'"):
        stale_commit(
            memory_store,
            frame(3, a=[0.5, 0.5]),
            lambda: kf.update_dataset_from_dataframes(
                [frame(4, a=[1.0, 2.0], c=[1, 2])],
                memory_store,
                "ds",
                schema_evolution="add_columns",
            ),
        )


def test_concurrent_creates_conflict(memory_store: kf.Store) -> None:
    chunk = write_chunk(memory_store, "ds", frame(1), partition_on=["p"])
    seed(memory_store)
    with pytest.raises(kf.CommitConflictError, match="created by another writer"):
        commit_write(memory_store, "ds", [chunk], base=None, expect_absent=True)
    assert not memory_store.exists(chunk.partitions[0].key)
    assert ks(memory_store) == [0, 0, 0]


def test_commit_after_a_concurrent_delete_conflicts(memory_store: kf.Store) -> None:
    seed(memory_store)
    with pytest.raises(kf.CommitConflictError, match="deleted"):
        stale_commit(memory_store, frame(1), lambda: kf.delete_dataset("ds", memory_store))
    assert list(memory_store.iter_keys()) == []


def test_bounded_retries(memory_store: kf.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that keeps losing gives up with CommitConflictError."""
    from kartoframe.storage import commit as commit_module

    seed(memory_store)
    real = commit_module._stored_moved
    calls = {"n": 0}

    def always_moved(store: kf.Store, uuid: str, parent: Any) -> tuple[bool, int | None]:
        calls["n"] += 1
        if calls["n"] % 2:  # every other call is ours; the other writer's commit is not
            kf.update_dataset_from_dataframes([], memory_store, "ds", metadata={"n": calls["n"]})
        return real(store, uuid, parent)

    base = load_dataset(memory_store, "ds")
    monkeypatch.setattr(commit_module, "_stored_moved", always_moved)
    intent = commit_module.Intent("update", "TEST", max_attempts=3)
    with pytest.raises(kf.CommitConflictError, match="after 3 attempts"):
        commit_module.commit_transaction(
            memory_store,
            "ds",
            lambda b: commit_module.Built(b.metadata, b.schema),  # type: ignore[union-attr]
            base=base,
            intent=intent,
        )


# ------------------------------------------------------------------------------ idempotency
def test_app_transactions_make_writes_idempotent(any_store: kf.Store) -> None:
    seed(any_store)
    for _ in range(2):  # a retried pipeline step
        kf.update_dataset_from_dataframes(
            [frame(1)], any_store, "ds", app_id="pipeline", app_version=1
        )
    assert ks(any_store) == [0, 0, 0, 1, 1]
    keys = set(any_store.iter_keys())
    kf.update_dataset_from_dataframes([frame(1)], any_store, "ds", app_id="pipeline", app_version=0)
    assert set(any_store.iter_keys()) == keys, "a skipped write writes no file"
    kf.update_dataset_from_dataframes([frame(2)], any_store, "ds", app_id="pipeline", app_version=2)
    kf.update_dataset_from_dataframes([frame(3)], any_store, "ds", app_id="other", app_version=1)
    assert ks(any_store) == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    history = kf.dataset_history("ds", any_store)
    assert [(r.app_id, r.app_version) for r in history[:3]] == [
        ("other", 1),
        ("pipeline", 2),
        ("pipeline", 1),
    ]
    # creating writes too: a retried create does not fail with DatasetExistsError
    for _ in range(2):
        kf.store_dataframes_as_dataset(
            any_store, "ds2", [frame(1)], partition_on=["p"], app_id="c", app_version=7
        )
    assert len(kf.dataset_history("ds2", any_store)) == 1


def test_app_transaction_race_is_decided_at_commit(memory_store: kf.Store) -> None:
    seed(memory_store)
    md, chunks = stale_commit(
        memory_store,
        frame(1),
        lambda: kf.update_dataset_from_dataframes(
            [frame(1)], memory_store, "ds", app_id="job", app_version=5
        ),
        commit=CommitOptions("job", 5),
    )
    assert ks(memory_store) == [0, 0, 0, 1, 1]
    assert not memory_store.exists(chunks[0].partitions[0].key), "skipped: files removed"
    assert header_stamp.header_txn(md) == {"job": 5}


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"app_id": "a"}, kf.InvalidInputError),
        ({"app_version": 1}, kf.InvalidInputError),
        ({"app_id": "", "app_version": 1}, kf.InvalidTypeError),
        ({"app_id": "a", "app_version": -1}, kf.InvalidTypeError),
        ({"app_id": "a", "app_version": True}, kf.InvalidTypeError),
        ({"commit_info": {"x": object()}}, kf.InvalidTypeError),
        ({"commit_info": {1: "x"}}, kf.InvalidTypeError),
        ({"commit_info": "text"}, kf.InvalidTypeError),
    ],
)
def test_invalid_transaction_arguments(
    memory_store: kf.Store, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    seed(memory_store)
    keys = set(memory_store.iter_keys())
    with pytest.raises(error):
        kf.update_dataset_from_dataframes([frame(1)], memory_store, "ds", **kwargs)
    assert set(memory_store.iter_keys()) == keys


# ------------------------------------------------------------------------------ crashes
class Crash(BaseException):
    """Stands for the process dying (not an Exception: nothing cleans up)."""


def test_crash_between_log_entry_and_header(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    seed(memory_store, secondary_indices=["k"])
    store, ffs = make_faulty(memory_store)
    old_header = memory_store.get(HEADER)
    ffs.inject("pipe_file", exc=lambda p: Crash(p), match=naming.JSON_SUFFIX)
    with pytest.raises(Crash):
        kf.update_dataset_from_dataframes(
            [frame(1, a=[1, 2])], store, "ds", schema_evolution="add_columns"
        )
    # the version is committed (its log entry exists); the header and schema file lag
    assert memory_store.get(HEADER) == old_header
    state = log.current_state(memory_store, "ds")
    assert state is not None and (state.file_version, state.version) == (0, 1)
    df = kf.read_table("ds", memory_store)  # readers apply the log entry
    assert sorted(df.k) == [0, 0, 0, 1, 1] and "a" in df.columns
    assert sorted(kf.read_table("ds", memory_store, predicates=[[("k", "==", 1)]]).k) == [1, 1]
    # the next commit builds on it and publishes a header (and schema) that include it
    kf.update_dataset_from_dataframes([frame(2, a=[3, 4])], memory_store, "ds")
    state = log.current_state(memory_store, "ds")
    assert state is not None and state.file_version == state.version == 2
    import plateau.api.dataset as plateau  # noqa: F401  (plateau reads memory stores poorly)

    doc = orjson.loads(memory_store.get(HEADER))
    assert len(doc["partitions"]) == 5


def test_publish_current_repairs_a_lagging_header(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    seed(memory_store)
    store, ffs = make_faulty(memory_store)
    ffs.inject("pipe_file", exc=lambda p: Crash(p), match=naming.JSON_SUFFIX)
    with pytest.raises(Crash):
        kf.update_dataset_from_dataframes([frame(1)], store, "ds")
    publish_current(memory_store, "ds")
    state = log.current_state(memory_store, "ds")
    assert state is not None and state.file_version == state.version == 1


def test_a_slow_writer_overwriting_a_newer_header_is_settled(memory_store: kf.Store) -> None:
    seed(memory_store)
    kf.update_dataset_from_dataframes([frame(1)], memory_store, "ds")
    v1 = memory_store.get(HEADER)
    kf.update_dataset_from_dataframes([frame(2)], memory_store, "ds")
    memory_store.put(HEADER, v1)  # the header write of version 1 arrives late
    assert ks(memory_store) == [0, 0, 0, 1, 1, 2, 2]  # readers roll forward anyway
    _settle(memory_store, "ds", 1)  # what the writer of version 1 does after its write
    assert orjson.loads(memory_store.get(HEADER))["kartoframe"]["log"]["version"] == 2


def test_failed_header_write_is_reverted(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    seed(memory_store)
    store, ffs = make_faulty(memory_store)
    before = memory_store.get(HEADER)
    ffs.inject(
        "pipe_file",
        exc=lambda p: PermissionError(13, "denied", p),
        times=None,
        match=naming.JSON_SUFFIX,
    )
    with pytest.raises(kf.StorageError):
        kf.update_dataset_from_dataframes([frame(1)], store, "ds")
    assert memory_store.get(HEADER) == before
    assert ks(memory_store) == [0, 0, 0]
    history = kf.dataset_history("ds", memory_store)
    assert [(r.version, r.operation, r.reverted, r.reverts) for r in history[:2]] == [
        (2, "REVERT", False, 1),
        (1, "APPEND", True, None),
    ]
    with pytest.raises(kf.InvalidInputError, match="reverted"):
        kf.read_table("ds", memory_store, version=1)
    assert ks(memory_store, version=2) == [0, 0, 0]
    ffs.heal()
    kf.update_dataset_from_dataframes([frame(3)], store, "ds")
    assert ks(memory_store) == [0, 0, 0, 3, 3]


def test_header_failure_after_the_commit_point_keeps_the_version(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    """The header and the revert both fail: the version stands, its files are kept."""
    seed(memory_store)
    store, ffs = make_faulty(memory_store)
    ffs.inject(
        "pipe_file",
        exc=lambda p: PermissionError(13, "denied", p),
        times=None,
        match=naming.JSON_SUFFIX,
    )
    ffs.inject(
        "pipe_file",
        exc=lambda p: PermissionError(13, "denied", p),
        times=None,
        match=txlog.entry_key("ds", 2),
    )
    with pytest.raises(HeaderPublishError, match="committed") as info:
        kf.update_dataset_from_dataframes([frame(1)], store, "ds")
    assert info.value.version == 1
    assert isinstance(info.value, kf.StorageError)
    assert ks(memory_store) == [0, 0, 0, 1, 1]  # kartoframe readers see it
    ffs.heal()
    kf.update_dataset_from_dataframes([frame(2)], store, "ds")
    doc = orjson.loads(memory_store.get(HEADER))
    assert len(doc["partitions"]) == 5


# ------------------------------------------------------------------------------ faults
@pytest.mark.parametrize("backend", ["memory", pytest.param("s3", marks=pytest.mark.s3)])
def test_transient_log_errors_are_retried(
    backend: str,
    request: pytest.FixtureRequest,
    make_faulty: Callable[..., tuple[kf.Store, Any]],
) -> None:
    base_store = request.getfixturevalue(f"{backend}_store")
    seed(base_store)
    store, ffs = make_faulty(base_store, retries=4)
    faults = [
        ffs.inject("cat_file", times=2, match="/_kartoframe/log/"),
        ffs.inject("cat_file", times=2, match=naming.JSON_SUFFIX),
        ffs.inject("pipe_file", times=2, match="/_kartoframe/log/"),
        ffs.inject(
            "pipe_file",
            exc=lambda p: OSError(5, "503 Slow Down", p),
            times=2,
            match=naming.JSON_SUFFIX,
        ),
    ]
    kf.update_dataset_from_dataframes([frame(1)], store, "ds")
    assert ks(store) == [0, 0, 0, 1, 1]
    assert all(f.fired == 2 for f in faults)
    assert [r.version for r in kf.dataset_history("ds", store)] == [1, 0]


def test_lost_answer_of_the_log_entry_put(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    seed(memory_store)
    store, ffs = make_faulty(memory_store)
    fault = ffs.inject("pipe_file", after=True, match="/_kartoframe/log/")
    kf.update_dataset_from_dataframes([frame(1)], store, "ds")
    assert fault.fired == 1
    assert [r.version for r in kf.dataset_history("ds", store)] == [1, 0]
    assert ks(store) == [0, 0, 0, 1, 1]


def test_log_entry_put_failing_after_retries_changes_nothing(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    seed(memory_store)
    store, ffs = make_faulty(memory_store)
    keys = set(memory_store.iter_keys())
    header = memory_store.get(HEADER)
    ffs.inject("pipe_file", times=None, match="/_kartoframe/log/")
    with pytest.raises(kf.StorageError, match="after 3 attempt"):
        kf.update_dataset_from_dataframes([frame(1)], store, "ds", secondary_indices=[])
    assert set(memory_store.iter_keys()) == keys
    assert memory_store.get(HEADER) == header


# ------------------------------------------------------------------------------ plateau
def test_plateau_reads_and_writes_between_kartoframe_commits(tmp_path: Path) -> None:
    import plateau.api.dataset as plateau

    url = f"{tmp_path}/store"
    store = kf.Store(url)
    seed(store, secondary_indices=["k"])
    for i in range(1, 4):
        kf.update_dataset_from_dataframes([frame(i, i % 3)], store, "ds")
    assert sorted(plateau.read_table("ds", f"hfs://{url}")["k"]) == [0, 0, 0, 1, 1, 2, 2, 3, 3]
    # plateau updates: its header has no kartoframe map; kartoframe reads it as it is
    plateau.update_dataset_from_dataframes([frame(10, 1)], store=f"hfs://{url}", dataset_uuid="ds")
    assert ks(store) == [0, 0, 0, 1, 1, 2, 2, 3, 3, 10, 10]
    kf.update_dataset_from_dataframes([frame(11, 2)], store, "ds", app_id="a", app_version=1)
    history = kf.dataset_history("ds", store)
    assert [r.operation for r in history[:3]] == ["APPEND", "EXTERNAL", "APPEND"]
    assert [lb.split("/")[0] for lb in history[1].added] == ["p=1"]
    assert ks(store, version=history[1].version) == [0, 0, 0, 1, 1, 2, 2, 3, 3, 10, 10]
    assert sorted(plateau.read_table("ds", f"hfs://{url}")["k"]) == [
        0,
        0,
        0,
        1,
        1,
        2,
        2,
        3,
        3,
        10,
        10,
        11,
        11,
    ]
    idx = kf.read_dataset_metadata("ds", store).load_index("k")
    assert sorted(idx["k"].tolist()) == [0, 1, 2, 3, 10, 11]
    # plateau again, then a retried kartoframe step: the app transaction survived plateau
    plateau.update_dataset_from_dataframes([frame(12, 0)], store=f"hfs://{url}", dataset_uuid="ds")
    kf.update_dataset_from_dataframes([frame(11, 2)], store, "ds", app_id="a", app_version=1)
    assert ks(store).count(11) == 2
    kf.update_dataset_from_dataframes([frame(13, 2)], store, "ds")
    assert [r.operation for r in kf.dataset_history("ds", store)[:2]] == ["APPEND", "EXTERNAL"]
    assert len(plateau.read_table("ds", f"hfs://{url}")) == 17


# ------------------------------------------------------------------------------ atomicity
def test_a_store_without_atomic_create_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fsspec.implementations.dirfs import DirFileSystem
    from fsspec.implementations.local import LocalFileSystem

    (tmp_path / "dir").mkdir()
    fs = DirFileSystem(path=str(tmp_path / "dir"), fs=LocalFileSystem(auto_mkdir=True))
    store = kf.Store("dir://root", filesystem=fs)
    assert not store.supports_conditional_put
    with pytest.raises(kf.StorageError, match="KARTOFRAME_ALLOW_UNSAFE_COMMITS"):
        kf.store_dataframes_as_dataset(store, "ds", [frame(1)], partition_on=["p"])
    assert not [k for k in store.iter_keys() if k.endswith(".parquet")], "files removed"
    monkeypatch.setenv("KARTOFRAME_ALLOW_UNSAFE_COMMITS", "1")
    kf.store_dataframes_as_dataset(store, "ds", [frame(1)], partition_on=["p"])
    assert ks(store) == [1, 1]


# ------------------------------------------------------------------------------ costs
def _count(ffs: Any, fn: Callable[[], Any]) -> int:
    ffs.calls.clear()
    fn()
    return sum(ffs.calls.values())


@pytest.mark.s3
def test_request_counts_on_s3(
    s3_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    """Opening the current version: <= 3 requests; an append commit: <= 6 + its files
    (and the statistics deltas it folds, once every few commits)."""
    seed(s3_store)
    store, ffs = make_faulty(s3_store)
    costs = []
    for i in range(1, 25):
        if i % 10 == 0:  # a checkpoint is written: one more request every tenth version
            kf.update_dataset_from_dataframes([frame(i)], store, "ds")
            continue
        assert _count(ffs, lambda: load_dataset(store, "ds")) == 3
        base = load_dataset(store, "ds")
        chunk = write_chunk(store, "ds", frame(i), partition_on=["p"])
        ffs.calls.clear()
        commit_write(store, "ds", [chunk], base=base)
        costs.append(sum(ffs.calls.values()))
    # an append writes its statistics as a delta; every MAX_STATISTICS_DELTAS + 1-th
    # folds the deltas into one file (it reads them all): cost bounded, periodic
    from kartoframe.format.statistics import MAX_STATISTICS_DELTAS

    folds = [c for c in costs if c > 6]
    assert max(costs) <= 6 + MAX_STATISTICS_DELTAS + 1, costs
    assert len(folds) <= len(costs) // (MAX_STATISTICS_DELTAS + 1) + 1, costs
    plain = [c for c in costs if c <= 6]
    assert plain[0] == plain[-1], "commit cost does not grow with the history"
