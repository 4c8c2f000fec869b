"""Metadata loads of several objects: in the calling thread on a local folder, on threads
for object stores and for a local dataset's large side files."""

from __future__ import annotations

import threading
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.storage import resolve
from kartoframe.storage.io_map import io_map
from kartoframe.storage.resolve import LOCAL_THREADS_PARTITIONS


def _threads(store: kf.Store, **kwargs: bool) -> set[int]:
    barrier = threading.Barrier(2, timeout=10)

    def load(i: int) -> int:
        if kwargs.get("threads_locally") or not store.is_local:
            barrier.wait()  # both items run at the same time, or this times out
        return threading.get_ident()

    return set(io_map(store, load, [1, 2], **kwargs))


def test_local_folders_load_in_the_calling_thread(file_store: kf.Store) -> None:
    distinct = _threads(file_store)
    assert distinct == {threading.get_ident()}
    assert io_map(file_store, lambda i: i * 2, [1, 2, 3]) == [2, 4, 6]  # in order


def test_object_stores_and_large_local_side_files_load_concurrently(
    file_store: kf.Store, memory_store: kf.Store
) -> None:
    for store, kwargs in ((memory_store, {}), (file_store, {"threads_locally": True})):
        distinct = _threads(store, **kwargs)
        assert len(distinct) == 2 and threading.get_ident() not in distinct
    assert io_map(memory_store, lambda i: i * 2, list(range(20))) == [i * 2 for i in range(20)]


@pytest.mark.parametrize("partitions", [10, LOCAL_THREADS_PARTITIONS])
def test_side_files_of_large_local_datasets_load_on_threads(
    file_store: kf.Store, partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    df = pd.DataFrame({"p": range(partitions), "v": range(partitions)})
    kf.store_dataframes_as_dataset(
        file_store, "ds", [df], partition_on=["p"], secondary_indices=["v"]
    )
    seen: list[int] = []  # the threads the index and statistics loads ran in
    for name in ("_load_index", "_statistics_or_none"):
        original = getattr(resolve, name)

        def spy(*a: Any, _original: Any = original, **k: Any) -> Any:
            seen.append(threading.get_ident())
            return _original(*a, **k)

        monkeypatch.setattr(resolve, name, spy)
    # a read of frames with the same integer dtypes (dask, read_dataset_as_dataframes)
    # loads the index of v and the statistics (for the null counts)
    plan, _ = plan_read("ds", file_store, predicates=[[("v", "==", 7)]])
    assert [f.partition_values for t in plan.tasks for f in t.files] == [(7,)]
    assert len(seen) == 2
    in_caller = set(seen) == {threading.get_ident()}
    assert in_caller is (partitions < LOCAL_THREADS_PARTITIONS)
