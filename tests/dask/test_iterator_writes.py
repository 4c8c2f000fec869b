"""``store_dataframes_as_dataset__iter`` / ``update_dataset_from_dataframes__iter``.

Frames are written as the generator produces them (one at a time) and committed once, at
the end; a generator that fails leaves the dataset and the store as they were.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from dask_helpers import data_keys, header_bytes, sales, write_sales

import kartoframe as kf


def test_store_iter_streams_frames_and_commits_once(store) -> None:
    seen: list[tuple[int, bool]] = []

    def frames() -> Iterator[pd.DataFrame]:
        for i in range(3):
            # earlier frames are on disk already, the dataset is not visible yet
            seen.append((len(data_keys(store, "w")), header_bytes(store, "w") is None))
            yield sales(6, 6 * i)

    kf.store_dataframes_as_dataset__iter(frames(), store, "w", partition_on=["country"])
    assert seen == [(0, True), (3, True), (6, True)]
    assert len(kf.read_dataset_metadata("w", store).partitions) == 9
    assert sorted(kf.read_table("w", store)["units"]) == list(range(18))


def test_update_iter_streams_and_skips_none(store) -> None:
    write_sales(store)
    seen: list[int] = []
    before = header_bytes(store, "ds")

    def frames() -> Iterator[pd.DataFrame | None]:
        for i in range(3):
            seen.append(len(data_keys(store, "ds")))
            assert header_bytes(store, "ds") == before
            yield None if i == 1 else sales(3, 100 + 3 * i)

    kf.update_dataset_from_dataframes__iter(frames(), store, "ds", delete_scope=[{"country": "IT"}])
    assert seen == [9, 12, 12]
    got = kf.read_table("ds", store)
    assert sorted(got.loc[got["units"] >= 100, "units"]) == [100, 101, 102, 106, 107, 108]
    assert "IT" not in set(got.loc[got["units"] < 100, "country"])


@pytest.mark.parametrize("writer", ["store", "update"])
def test_failing_generator_leaves_no_trace(store, writer) -> None:
    write_sales(store)
    before, keys = header_bytes(store, "ds"), data_keys(store, "ds", indices=True)

    def frames() -> Iterator[pd.DataFrame]:
        yield sales(6, 100)
        yield sales(6, 106)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        if writer == "store":
            kf.store_dataframes_as_dataset__iter(frames(), store, "new", partition_on=["country"])
        else:
            kf.update_dataset_from_dataframes__iter(frames(), store, "ds")
    assert header_bytes(store, "new") is None and data_keys(store, "new", indices=True) == []
    assert header_bytes(store, "ds") == before
    assert data_keys(store, "ds", indices=True) == keys


def test_empty_generator(store) -> None:
    with pytest.raises(kf.EmptyInputError):
        kf.store_dataframes_as_dataset__iter(iter([]), store, "w")
    assert list(store.iter_keys()) == []
