"""Filtered reads of small local files go through kartoframe's file-by-file scan
(``storage/local_scan.py``) and return what the dataset scan returns, through the public
API: categoricals, dates, nullable integers, partition and index predicates, projections.
"""

from __future__ import annotations

import datetime as dt
import os

import numpy as np
import pandas as pd
import pytest
from spies import record_results

import kartoframe as kf
from kartoframe.storage import local_scan, parquet


@pytest.fixture
def dataset(file_store: kf.Store) -> kf.Store:
    rng = np.random.default_rng(3)
    n = 4000
    df = pd.DataFrame(
        {
            "country": rng.choice(["DE", "FR", "NL"], n),
            "month": rng.choice(["2024-01", "2024-02", "2024-03", "2024-04"], n),
            "channel": pd.Categorical(rng.choice(["web", "shop", "phone"], n)),
            "product_id": rng.integers(0, 40, n),
            "units": pd.array(
                [None if v % 7 == 0 else int(v) for v in rng.integers(0, 50, n)], dtype="Int64"
            ),
            "day": [
                dt.date(2024, 1, 1) + dt.timedelta(days=int(d)) for d in rng.integers(0, 90, n)
            ],
            "price": rng.random(n),
        }
    )
    kf.store_dataframes_as_dataset(
        store=file_store,
        dataset_uuid="s",
        dfs=[df],
        partition_on=["country", "month"],
        secondary_indices=["product_id"],
    )
    return file_store


CASES = [
    ([[("product_id", "==", 7)]], None, ()),
    ([[("product_id", "in", [3, 9]), ("price", "<", 0.5)]], ["price", "country"], ()),
    ([[("channel", "==", "web")], [("units", "==", None)]], None, ("channel",)),
    ([[("country", "==", "FR"), ("day", ">=", dt.date(2024, 2, 15))]], ["units", "day"], ()),
    ([[("units", ">", 45), ("month", "!=", "2024-02")]], ["channel"], ("channel",)),
]


@pytest.mark.parametrize(("predicates", "columns", "categoricals"), CASES)
def test_filtered_reads_equal_the_dataset_scan(
    dataset, monkeypatch, predicates, columns, categoricals
) -> None:
    calls = record_results(monkeypatch, parquet, "read_local_files")
    monkeypatch.setattr(local_scan, "SPLIT_FILES", 2)  # on threads too
    options = {"predicates": predicates, "columns": columns, "categoricals": list(categoricals)}
    fast = kf.read_table("s", dataset, **options)
    assert calls and all(c is not None for c in calls)  # the file-by-file scan read them
    monkeypatch.setattr(parquet, "read_local_files", lambda *a, **k: None)
    slow = kf.read_table("s", dataset, **options)
    assert len(fast) > 0
    pd.testing.assert_frame_equal(fast, slow)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_damaged_file_among_many_is_named(dataset, monkeypatch, damage) -> None:
    """A file removed (maintenance beside the reader) or cut short among the files a
    threaded, filtered read splits: the read fails with the store's specific error naming
    that file, not with a thread's exception or fewer rows."""
    monkeypatch.setattr(local_scan, "SPLIT_FILES", 2)
    keys = sorted(kf.read_dataset_metadata("s", dataset).partitions.values())
    assert len(keys) >= 4
    victim = keys[len(keys) // 2]
    path = dataset.path(victim)
    if damage == "missing":
        os.remove(path)
        error: type[Exception] = kf.MissingDataFileError
    else:
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        error = kf.CorruptDataError
    name = victim.rsplit("/", 1)[-1]
    with pytest.raises(error, match=name.replace(".", r"\.")) as raised:
        kf.read_table("s", dataset, predicates=[[("price", "<", 2.0)]])
    missing = isinstance(raised.value, kf.MissingDataFileError)
    assert missing == (damage == "missing")
