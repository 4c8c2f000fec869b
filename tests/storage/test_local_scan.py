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
    # a string file column of an int64 dataset column: no cast, the scan names the file
    uncastable = _body(5, 9).set_column(0, "x", pa.array(["a"] * 5))
    _write(store, "ds/table/p=k0/d=2024-01-01/uncastable.parquet", uncastable)
    missing = _body(5, 9).select(["x"])
    _write(store, "ds/table/p=k0/d=2024-01-01/missing.parquet", missing)
    inside = _body(5, 9).append_column("p", pa.array(["k0"] * 5))
    _write(store, "ds/table/p=k0/d=2024-01-01/inside.parquet", inside)
    pv = pvs[0]
    for name in ("missing", "inside"):
        key = f"ds/table/p=k0/d=2024-01-01/{name}.parquet"
        assert read_local_files(store, [*keys, key], SCHEMA, [*pvs, pv], None) is None, name
        # the scan reads them all the same: null-filled, the file's partition column ignored
        got = parquet.read_files(store, [*keys, key], SCHEMA, partition_values=[*pvs, pv])
        assert got.num_rows == sum(40 + i for i in range(N_FILES)) + 5
    key = "ds/table/p=k0/d=2024-01-01/uncastable.parquet"
    assert read_local_files(store, [*keys, key], SCHEMA, [*pvs, pv], None) is None
    with pytest.raises(kf.CorruptDataError, match="uncastable"):
        parquet.read_files(store, [*keys, key], SCHEMA, partition_values=[*pvs, pv])
    n = SMALL_FILE_BYTES // 4  # random int64: more than SMALL_FILE_BYTES on disk
    big = pa.table({"x": np.random.default_rng(1).integers(0, 2**62, n), "s": ["v"] * n})
    _write(store, "ds/table/p=k0/d=2024-01-01/big.parquet", big)
    assert os.path.getsize(store.path("ds/table/p=k0/d=2024-01-01/big.parquet")) > SMALL_FILE_BYTES
    big_key = "ds/table/p=k0/d=2024-01-01/big.parquet"
    assert read_local_files(store, [big_key, *keys], SCHEMA, [pv, *pvs], None) is None
    assert read_local_files(store, ["ds/table/none.parquet"], SCHEMA, [pv], None) is None


def test_narrower_file_types_are_widened_as_the_dataset_scan_widens(files, monkeypatch) -> None:
    """A file written from int16/int32 columns of an int64 dataset column (pandas frames of
    narrower dtypes appended to a dataset) is read file by file, cast as the scan casts."""
    store, keys, pvs = files
    narrow = _body(5, 9).set_column(0, "x", pa.array([1, -2, 3, 2**15 - 1, -(2**15)], pa.int16()))
    key = "ds/table/p=k0/d=2024-01-01/narrow.parquet"
    _write(store, key, narrow)
    all_keys, all_pvs = [*keys, key], [*pvs, pvs[0]]
    fast = read_local_files(store, all_keys, SCHEMA, all_pvs, None)
    assert fast is not None
    assert fast.equals(
        _dataset_scan(store, all_keys, all_pvs, None, monkeypatch), check_metadata=True
    )
    assert fast["x"].type == pa.int64() and fast["x"].to_pylist()[-5:] == [1, -2, 3, 32767, -32768]


def test_one_file_of_any_size_is_read_file_by_file(files, monkeypatch) -> None:
    """One file (a dask task's) has no other file to decode beside: no dataset scan, even
    above SMALL_FILE_BYTES; the table is the dataset scan's."""
    store, _, pvs = files
    n = SMALL_FILE_BYTES // 4
    rng = np.random.default_rng(1)
    big = pa.table({"x": rng.integers(0, 2**62, n), "s": ["v"] * n})
    key = "ds/table/p=k0/d=2024-01-01/big.parquet"
    _write(store, key, big)
    assert os.path.getsize(store.path(key)) > SMALL_FILE_BYTES
    fast = read_local_files(store, [key], SCHEMA, [pvs[0]], None)
    assert fast is not None
    assert fast.equals(
        _dataset_scan(store, [key], [pvs[0]], None, monkeypatch), check_metadata=True
    )


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


def test_files_of_mixed_types_are_cast_group_by_group(files, monkeypatch) -> None:
    """Files are cast once per run of files alike in their types: narrower and dataset
    types interleaved across gather groups (and a timestamp unit change) read as the
    dataset scan reads them, in file order; an uncastable file anywhere gives None."""
    store, _, pvs = files
    import datetime as dt

    schema = SCHEMA.append(pa.field("t", pa.timestamp("ns")))
    mixed_keys, mixed_pvs = [], []
    for i in range(3 * GATHER_FILES + 1):
        body = _body(7 + i, 100 + i)
        if i % 3 == 1:
            body = body.set_column(0, "x", body["x"].cast(pa.int16()))
        if i % 5 == 2:
            body = body.set_column(0, "x", body["x"].cast(pa.int32()))
        unit = "us" if i % 2 else "ns"
        stamps = [dt.datetime(2024, 1, 1, 0, 0, i)] * body.num_rows
        body = body.append_column("t", pa.array(stamps, pa.timestamp(unit)))
        key = f"ds/table/p=k0/d=2024-01-01/mixed{i}.parquet"
        _write(store, key, body)
        mixed_keys.append(key)
        mixed_pvs.append(pvs[0])
    fast = read_local_files(store, mixed_keys, schema, mixed_pvs, None)
    assert fast is not None
    with monkeypatch.context() as m:
        m.setattr(parquet, "read_local_files", lambda *a, **k: None)
        slow = parquet.read_files(store, mixed_keys, schema, partition_values=mixed_pvs)
    assert fast.equals(slow, check_metadata=True)
    assert fast.schema.field("x").type == pa.int64()
    assert fast.schema.field("t").type == pa.timestamp("ns")
    assert fast["x"].to_pylist()[: 7 + 8] == (
        _body(7, 100)["x"].to_pylist() + _body(8, 101)["x"].to_pylist()
    )
    bad = (
        _body(5, 9)
        .set_column(0, "x", pa.array(["a"] * 5))
        .append_column("t", pa.array([dt.datetime(2024, 1, 1)] * 5, pa.timestamp("ns")))
    )
    bad_key = "ds/table/p=k0/d=2024-01-01/bad.parquet"
    _write(store, bad_key, bad)
    for at in (0, GATHER_FILES // 2, len(mixed_keys)):
        ks = [*mixed_keys[:at], bad_key, *mixed_keys[at:]]
        assert read_local_files(store, ks, schema, [pvs[0]] * len(ks), None) is None, at


def test_files_declaring_required_columns_read_with_the_others(files, monkeypatch) -> None:
    """A file whose column is required (non-nullable, as Spark writes non-null columns)
    among files where it is optional, on both sides of a gather group's edge: read file
    by file as the dataset scan reads them, with the dataset's (nullable) fields."""
    store, keys, pvs = files
    body = _body(6, 3)
    required = pa.schema([pa.field("x", pa.int64(), nullable=False), pa.field("s", pa.string())])
    key = "ds/table/p=k0/d=2024-01-01/required.parquet"
    _write(store, key, body.cast(required))
    assert not pq.read_schema(store.path(key)).field("x").nullable
    for at in (0, GATHER_FILES - 1, GATHER_FILES, len(keys)):
        ks = [*keys[:at], key, *keys[at:]]
        ps = [*pvs[:at], pvs[0], *pvs[at:]]
        fast = read_local_files(store, ks, SCHEMA, ps, None)
        assert fast is not None, at
        assert fast.equals(_dataset_scan(store, ks, ps, None, monkeypatch), check_metadata=True)
        assert fast.schema.field("x").nullable
