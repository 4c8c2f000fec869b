"""A write that fails at any point leaves the dataset exactly as before.

"Exactly as before": the same header bytes, the same ``read_table`` result and the same
keys in the store once the write's own files are cleaned up. If the store cannot even
delete (it became read-only), the files the write left behind are orphans that
``kf.garbage_collect_dataset`` removes, and only those.

Failures are real: wrong input met half-way, a generator raising, and a store whose
filesystem (``FaultyFileSystem``, a real fsspec wrapper) refuses writes from some point on.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import naming

HEADER = naming.header_key("ds", "json")


def _frame(start: int, n: int = 6) -> pd.DataFrame:
    return pd.DataFrame({"p": [i % 3 for i in range(n)], "v": range(start, start + n)})


class Snapshot:
    """Header bytes, content and keys of dataset ``ds``."""

    def __init__(self, store: kf.Store) -> None:
        self.header = store.get_or_none(HEADER)
        self.frame = kf.read_table("ds", store) if self.header is not None else None
        # the transaction log keeps a version whose header failed, and its revert (history)
        self.keys = [k for k in store.iter_keys() if "/_kartoframe/log/" not in k]

    def assert_same_dataset(self, other: Snapshot) -> None:
        assert other.header == self.header, "header bytes changed"
        if self.frame is None:
            assert other.frame is None
        else:
            assert other.frame is not None
            pd.testing.assert_frame_equal(other.frame, self.frame)


@pytest.fixture
def existing(store: kf.Store) -> tuple[kf.Store, Snapshot]:
    kf.store_dataframes_as_dataset(
        store, "ds", [_frame(0)], partition_on=["p"], secondary_indices=["v"]
    )
    return store, Snapshot(store)


# -- bad input met half-way ------------------------------------------------------------------
def test_schema_conflict_in_second_frame_of_a_create(store: kf.Store) -> None:
    frames = [_frame(0), _frame(10).assign(v=lambda d: d["v"].astype(str))]
    with pytest.raises(kf.SchemaError, match="column 'v'"):
        kf.store_dataframes_as_dataset(store, "ds", frames, partition_on=["p"])
    assert list(store.iter_keys()) == [], "the first frame's files must be removed"


def test_schema_conflict_in_second_frame_of_an_update(existing: tuple[kf.Store, Snapshot]) -> None:
    store, before = existing
    frames = [_frame(10), _frame(20).assign(v=lambda d: d["v"].astype(float))]
    with pytest.raises(kf.SchemaError, match="column 'v'"):
        kf.update_dataset_from_dataframes(frames, store=store, dataset_uuid="ds")
    after = Snapshot(store)
    before.assert_same_dataset(after)
    assert after.keys == before.keys


def test_nulls_in_the_third_frame(existing: tuple[kf.Store, Snapshot]) -> None:
    store, before = existing
    bad = _frame(30).assign(p=pd.array([0, None, 1, 2, 0, 1], dtype="Int64"))
    with pytest.raises(kf.NullPartitionValueError, match="'p'"):
        kf.update_dataset_from_dataframes(
            [_frame(10), _frame(20), bad], store=store, dataset_uuid="ds"
        )
    after = Snapshot(store)
    before.assert_same_dataset(after)
    assert after.keys == before.keys


def test_generator_failing_half_way(existing: tuple[kf.Store, Snapshot]) -> None:
    store, before = existing

    def frames() -> Iterator[pd.DataFrame]:
        yield _frame(10)
        yield _frame(20)
        raise RuntimeError("the producer broke")

    with pytest.raises(RuntimeError, match="producer broke"):
        kf.update_dataset_from_dataframes__iter(frames(), store=store, dataset_uuid="ds")
    after = Snapshot(store)
    before.assert_same_dataset(after)
    assert after.keys == before.keys


# -- the store stops accepting writes -------------------------------------------------------
# where the store turns read-only: (path substring, matching writes that still pass)
POINTS = {
    "after the data files": (naming.JSON_SUFFIX, 0),  # the header write fails
    "at the index file": ("/indices/", 0),
    "at the second data file": (".parquet", 1),
}
OPERATIONS: dict[str, Callable[[kf.Store], Any]] = {
    "update": lambda s: kf.update_dataset_from_dataframes(
        [_frame(100), _frame(200)], store=s, dataset_uuid="ds"
    ),
    "update with delete_scope": lambda s: kf.update_dataset_from_dataframes(
        [_frame(100)], store=s, dataset_uuid="ds", delete_scope=[{"p": 1}]
    ),
    "overwrite with a new schema": lambda s: kf.store_dataframes_as_dataset(
        s,
        "ds",
        [_frame(100).assign(w="a"), _frame(200).assign(w="b")],
        partition_on=["p"],
        secondary_indices=["v"],
        overwrite=True,
    ),
}


@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
@pytest.mark.parametrize("point", POINTS.values(), ids=POINTS.keys())
def test_store_becomes_read_only(
    make_faulty: Callable[..., Any],
    operation: Callable[[kf.Store], Any],
    point: tuple[str, int],
) -> None:
    base = kf.Store(f"memory://kf-readonly-{uuid.uuid4().hex}")
    store, ffs = make_faulty(base)
    kf.store_dataframes_as_dataset(
        store, "ds", [_frame(0)], partition_on=["p"], secondary_indices=["v"]
    )
    before = Snapshot(base)
    match, passing = point
    faults = [
        ffs.inject(
            "pipe_file", exc=_denied, times=None, match=match, skip=passing
        ),  # writes from that point on
        ffs.inject("rm_file", exc=_denied, times=None),  # and no cleanup possible
        ffs.inject("rm", exc=_denied, times=None),
    ]
    with pytest.raises(kf.StorageError, match="after 1 attempt") as info:
        operation(store)
    assert isinstance(info.value, PermissionError.__mro__[1])  # an OSError
    assert faults[0].fired >= 1
    assert len(set(faults[0].paths)) == len(faults[0].paths), "permission errors are not retried"
    after = Snapshot(base)
    before.assert_same_dataset(after)
    orphans = sorted(set(after.keys) - set(before.keys))
    assert set(before.keys) <= set(after.keys)
    if passing or match == naming.JSON_SUFFIX:
        assert orphans, "the test must leave orphans behind to be meaningful"
    # the store is writable again: garbage collection removes exactly the orphans
    ffs.heal()
    removed = kf.garbage_collect_dataset("ds", store, grace_hours=0, force=True)
    assert sorted(removed) == orphans
    final = Snapshot(base)
    before.assert_same_dataset(final)
    assert final.keys == before.keys
    base.delete_many(final.keys)


def _denied(path: str) -> BaseException:
    return PermissionError(13, "injected: access denied", path)


@pytest.mark.parametrize("operation", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_failed_header_write_with_working_cleanup(
    make_faulty: Callable[..., Any], operation: Callable[[kf.Store], Any]
) -> None:
    """If deleting still works, the failed write removes its own files: nothing to collect."""
    base = kf.Store(f"memory://kf-cleanup-{uuid.uuid4().hex}")
    store, ffs = make_faulty(base)
    kf.store_dataframes_as_dataset(
        store, "ds", [_frame(0)], partition_on=["p"], secondary_indices=["v"]
    )
    before = Snapshot(base)
    ffs.inject("pipe_file", exc=_denied, times=None, match=naming.JSON_SUFFIX)
    with pytest.raises(kf.StorageError):
        operation(store)
    after = Snapshot(base)
    before.assert_same_dataset(after)
    assert after.keys == before.keys
    ffs.heal()
    assert kf.garbage_collect_dataset("ds", store) == []
    base.delete_many(after.keys)


def test_failed_create_leaves_no_dataset(make_faulty: Callable[..., Any]) -> None:
    base = kf.Store(f"memory://kf-failed-create-{uuid.uuid4().hex}")
    store, ffs = make_faulty(base)
    ffs.inject("pipe_file", exc=_denied, times=None, match=naming.JSON_SUFFIX)
    with pytest.raises(kf.StorageError):
        kf.store_dataframes_as_dataset(
            store, "ds", [_frame(0), _frame(10)], partition_on=["p"], secondary_indices=["v"]
        )
    assert list(base.iter_keys()) == []
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_table("ds", base)


def test_orphans_of_a_failed_create_are_collectable(make_faulty: Callable[..., Any]) -> None:
    base = kf.Store(f"memory://kf-failed-create-{uuid.uuid4().hex}")
    store, ffs = make_faulty(base)
    ffs.inject("pipe_file", exc=_denied, times=None, match=naming.JSON_SUFFIX)
    ffs.inject("rm_file", exc=_denied, times=None)
    with pytest.raises(kf.StorageError):
        kf.store_dataframes_as_dataset(store, "ds", [_frame(0)], partition_on=["p"])
    orphans = list(base.iter_keys())
    assert orphans
    ffs.heal()
    assert kf.garbage_collect_dataset("ds", store) == []  # younger than the grace window
    assert sorted(kf.garbage_collect_dataset("ds", store, grace_hours=0, force=True)) == sorted(
        orphans
    )
    assert list(base.iter_keys()) == []
    with pytest.raises(kf.DatasetNotFoundError):  # nothing left: not a dataset
        kf.garbage_collect_dataset("ds", store)


def test_headerless_gc_touches_only_the_files_writes_leave(tmp_path) -> None:
    """A folder that shares a dataset's name but holds other files is never emptied."""
    store = kf.Store(f"file://{tmp_path}/store")
    foreign = {
        "raw/notes.txt": b"keep",
        "raw/table/data.parquet": b"keep",  # not a generated (32-hex) name
        "raw/indices/readme.md": b"keep",
        "raw/_kartoframe/other.json": b"keep",
    }
    for key, data in foreign.items():
        store.put(key, data)
    with pytest.raises(kf.DatasetNotFoundError):
        kf.garbage_collect_dataset("raw", store)
    leftover = {
        "raw/table/p=1/" + "a" * 32 + ".parquet": b"x",
        "raw/table/_common_metadata": b"x",
        "raw/indices/v/2024-01-01T00%3A00%3A00.by-dataset-index.parquet": b"x",
        "raw/_kartoframe/stats/2024.statistics.pq": b"x",
        "raw/_kartoframe/log/" + "0" * 20 + ".json": b"x",
    }
    for key, data in leftover.items():
        store.put(key, data)
    assert kf.garbage_collect_dataset("raw", store) == []  # younger than the grace window
    deleted = kf.garbage_collect_dataset("raw", store, grace_hours=0, force=True)
    assert deleted == sorted(leftover)
    assert sorted(store.iter_keys()) == sorted(foreign)
    # with a header, GC deletes what the header does not reference, but still only names
    # writes generate: the foreign files below <uuid>/<table>/ and <uuid>/indices/ stay
    kf.store_dataframes_as_dataset(store, "raw", [_frame(0)], partition_on=["p"])
    deleted = kf.garbage_collect_dataset("raw", store, retention_hours=0, grace_hours=0, force=True)
    assert deleted == []
    assert set(foreign) <= set(store.iter_keys())
