"""The file-by-file fast path of local scans gives the dataset scan's table, and leaves
every case it does not handle to it."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe.storage import parquet
from kartoframe.storage.local_scan import (
    GATHER_FILES,
    SMALL_FILE_BYTES,
    THREADED_BYTES,
    read_local_files,
)

#: two groups gathered into one chunk a column, and a rest of 3 files
N_FILES = 2 * GATHER_FILES + 3

SCHEMA = pa.schema(
    [("p", pa.string()), ("d", pa.date32()), ("x", pa.int64()), ("s", pa.string())],
    metadata={b"pandas": b"{}"},
)


def _write(store: kf.Store, key: str, table: pa.Table) -> None:
    path = store.path(key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(table, path)


def _body(n: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "x": pa.array(rng.integers(0, 100, n), pa.int64()),
            "s": pa.array([f"v{i}" for i in rng.integers(0, 9, n)], pa.string()),
        }
    )


@pytest.fixture
def files(file_store: kf.Store) -> tuple[kf.Store, list[str], list[Any]]:
    import datetime as dt

    keys, pvs = [], []
    for i in range(N_FILES):
        key = f"ds/table/p=k{i % 2}/d=2024-01-0{i % 3 + 1}/f{i}.parquet"
        _write(file_store, key, _body(40 + i, i))
        keys.append(key)
        pvs.append((("p", f"k{i % 2}"), ("d", dt.date(2024, 1, i % 3 + 1))))
    return file_store, keys, pvs


def _dataset_scan(store: kf.Store, keys: list[str], pvs: list[Any], columns: Any, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(parquet, "read_local_files", lambda *a, **k: None)
        return parquet.read_files(store, keys, SCHEMA, partition_values=pvs, columns=columns)


@pytest.mark.parametrize("columns", [None, ["x"], ["s", "p"], ["d", "x", "p"]])
def test_equals_the_dataset_scan(files, columns, monkeypatch) -> None:
    store, keys, pvs = files
    fast = read_local_files(store, keys, SCHEMA, pvs, columns)
    assert fast is not None
    slow = _dataset_scan(store, keys, pvs, columns, monkeypatch)
    assert fast.equals(slow, check_metadata=True)
    assert parquet.read_files(store, keys, SCHEMA, partition_values=pvs, columns=columns).equals(
        slow
    )


def test_cases_it_leaves_to_the_dataset_scan(files, monkeypatch) -> None:
    store, keys, pvs = files
    assert read_local_files(store, keys, SCHEMA, pvs, []) is None  # rows without columns
    narrow = _body(5, 9).set_column(0, "x", pa.array(range(5), pa.int32()))
    _write(store, "ds/table/p=k0/d=2024-01-01/narrow.parquet", narrow)
    missing = _body(5, 9).select(["x"])
    _write(store, "ds/table/p=k0/d=2024-01-01/missing.parquet", missing)
    inside = _body(5, 9).append_column("p", pa.array(["k0"] * 5))
    _write(store, "ds/table/p=k0/d=2024-01-01/inside.parquet", inside)
    pv = pvs[0]
    for name in ("narrow", "missing", "inside"):
        key = f"ds/table/p=k0/d=2024-01-01/{name}.parquet"
        assert read_local_files(store, [*keys, key], SCHEMA, [*pvs, pv], None) is None, name
        # the scan reads them all the same: widened, null-filled
        got = parquet.read_files(store, [*keys, key], SCHEMA, partition_values=[*pvs, pv])
        assert got.num_rows == sum(40 + i for i in range(N_FILES)) + 5
    n = SMALL_FILE_BYTES // 4  # random int64: more than SMALL_FILE_BYTES on disk
    big = pa.table({"x": np.random.default_rng(1).integers(0, 2**62, n), "s": ["v"] * n})
    _write(store, "ds/table/p=k0/d=2024-01-01/big.parquet", big)
    assert os.path.getsize(store.path("ds/table/p=k0/d=2024-01-01/big.parquet")) > SMALL_FILE_BYTES
    big_key = "ds/table/p=k0/d=2024-01-01/big.parquet"
    assert read_local_files(store, [big_key, *keys], SCHEMA, [pv, *pvs], None) is None
    assert read_local_files(store, ["ds/table/none.parquet"], SCHEMA, [pv], None) is None


@pytest.mark.parametrize("use_threads", [True, False])
def test_a_large_file_among_small_ones_reads_alike_with_and_without_threads(
    files, use_threads, monkeypatch
) -> None:
    """A file above THREADED_BYTES after small ones is decoded on Arrow's threads only
    if the scan allows them; the table is the dataset scan's either way."""
    store, keys, pvs = files
    n = THREADED_BYTES // 6  # random int64: more than THREADED_BYTES on disk
    rng = np.random.default_rng(2)
    big = pa.table({"x": rng.integers(0, 2**62, n), "s": pa.array(["v"]).take(np.zeros(n, int))})
    key = "ds/table/p=k0/d=2024-01-01/large.parquet"
    _write(store, key, big)
    assert os.path.getsize(store.path(key)) > THREADED_BYTES
    fast = read_local_files(
        store, [*keys, key], SCHEMA, [*pvs, pvs[0]], None, use_threads=use_threads
    )
    assert fast is not None and fast.num_rows == sum(40 + i for i in range(N_FILES)) + n
    assert fast.equals(_dataset_scan(store, [*keys, key], [*pvs, pvs[0]], None, monkeypatch))
