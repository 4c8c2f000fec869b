"""The streaming writer of ``optimize`` (``write_stream``): a file written row group by row
group holds the same rows, statistics, bloom filters and index values as the chunk kernel
writes for the same rows at once, with row groups of the asked size; no rows make no
file; and a failure part-way leaves no file behind."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe.execution.chunks import ParquetSerializer, row_groups, write_chunk, write_stream
from kartoframe.plan.write import FilePairs, statistics_tables

PK = ["p"]
INDICES = ["k", "f", "t", "ls"]  # t: ns timestamps, ls: large strings (stored as us, string)
BLOOMS = ["id", "k"]
META = {b"kartoframe-test": b"kept"}


def _batches(n: int, sizes: list[int]) -> list[pa.Table]:
    rng = np.random.default_rng(n)
    floats = rng.random(n)
    floats[::7] = np.nan
    floats[::11] = -0.0
    table = pa.table(
        {
            "id": pa.array(rng.integers(0, 10**9, n)),
            "k": pa.array(rng.integers(0, 20, n), mask=rng.random(n) < 0.1),
            "f": pa.array(floats),
            "s": pa.array(np.array(["a", "b", "c" * 80])[rng.integers(0, 3, n)]),
            "t": pa.array((rng.integers(0, 10**12, n) * 1000).astype("datetime64[ns]")),
            "ls": pa.array(
                np.array(["x", "y", "z" * 70])[rng.integers(0, 3, n)], pa.large_string()
            ),
        }
    )
    out, start = [], 0
    for size in sizes:
        out.append(table.slice(start, size))
        start += size
    out.append(table.slice(start))
    return out


def _options() -> dict[str, object]:
    return {
        "table_name": "table",
        "index_columns": INDICES,
        "bloom_filter_columns": BLOOMS,
        "serializer": ParquetSerializer(chunk_size=1000),
    }


@pytest.mark.parametrize("url", ["file", "memory"])
@pytest.mark.parametrize("sizes", [[], [1], [999, 1, 1000], [250] * 9, [0, 3000, 0]])
def test_the_file_equals_the_chunk_kernels(tmp_path, url: str, sizes: list[int]) -> None:
    store = kf.Store(str(tmp_path) if url == "file" else f"memory://ws-{tmp_path.name}")
    batches = _batches(4321, sizes)
    whole = pa.concat_tables(batches).replace_schema_metadata(META)
    want = write_chunk(store, "u", whole, partition_on=PK, partition_values=[7], **_options())
    got = write_stream(
        store,
        "u",
        iter(batches),
        partition_on=PK,
        partition_values=[7],
        metadata=META,
        **_options(),
    )
    [w], [g] = want.partitions, got.partitions
    assert g.label != w.label and g.label.startswith("p=7/")
    assert g.rows == w.rows == whole.num_rows
    data = store.get(g.key)
    file = pq.ParquetFile(pa.BufferReader(data))
    assert g.size == len(data)
    got_rows = file.read()
    want_rows = pq.ParquetFile(pa.BufferReader(store.get(w.key))).read()
    assert got_rows.schema.equals(want_rows.schema, check_metadata=True)
    assert got_rows.to_pandas().equals(want_rows.to_pandas())  # NaN equals NaN here
    assert file.schema_arrow.metadata[b"kartoframe-test"] == b"kept"
    rg = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
    assert rg == [1000, 1000, 1000, 1000, 321]
    for c in INDICES:
        got_pairs, want_pairs = (_pairs(x.index_pairs[c]) for x in (g, w))
        got_values, want_values = (
            p.column(c).to_pandas().sort_values(ignore_index=True) for p in (got_pairs, want_pairs)
        )
        assert got_values.equals(want_values)  # NaN (one of it) equals NaN here
        assert set(got_pairs.column("label").to_pylist()) == {g.label}
    # the statistics rows differ only in the file columns
    files = ["label", "key", "bytes"]
    g_stats, w_stats = statistics_tables([g.statistics, w.statistics])
    assert g_stats.drop_columns(files).equals(w_stats.drop_columns(files))
    assert g_stats.column("bytes").to_pylist() == [g.size]


def test_row_groups_cut_batches_into_groups_of_the_size() -> None:
    batches = [pa.table({"x": list(range(a, b))}) for a, b in [(0, 3), (3, 3), (3, 10), (10, 11)]]
    groups = list(row_groups(batches, 4))
    assert [g.num_rows for g in groups] == [4, 4, 3]
    assert pa.concat_tables(groups).column("x").to_pylist() == list(range(11))
    assert list(row_groups([pa.table({"x": pa.array([], pa.int64())})], 4)) == []


def test_no_rows_no_file(tmp_path) -> None:
    store = kf.Store(str(tmp_path))
    empty = _batches(0, [])
    out = write_stream(store, "u", iter(empty), partition_on=PK, partition_values=[1], **_options())
    assert out.partitions == ()
    assert list(store.iter_keys("u/")) == []


@pytest.mark.parametrize("url", ["file", "memory"])
def test_a_failure_part_way_leaves_no_file(tmp_path, url: str) -> None:
    store = kf.Store(str(tmp_path) if url == "file" else f"memory://wf-{tmp_path.name}")
    batches = _batches(5000, [1000, 1000])

    def failing():
        yield batches[0]
        yield batches[1]
        raise OSError("the source broke")

    with pytest.raises(OSError, match="the source broke") as info:
        write_stream(store, "u", failing(), partition_on=PK, partition_values=[1], **_options())
    assert not isinstance(info.value, kf.StorageError)  # the source's error, as it was
    assert list(store.iter_keys("u/")) == []


_FULL_DISK = """
import resource, signal, sys
import kartoframe as kf
from kartoframe.execution.chunks import write_stream
sys.path.insert(0, {tests!r})
from test_write_stream import PK, _batches, _options

store = kf.Store({root!r})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (40_000, resource.RLIM_INFINITY))
try:
    write_stream(store, "u", iter(_batches(20_000, [4000] * 4)), partition_on=PK,
                 partition_values=[1], **_options())
except kf.StorageError as e:
    print("StorageError", "write of 'u/table/p=1/" in str(e), list(store.iter_keys("u/")))
"""


def test_a_local_write_failure_is_a_storage_error_and_leaves_no_file(tmp_path) -> None:
    # the file outgrows the process's file size limit part-way (as a full disk would stop it)
    code = _FULL_DISK.format(tests=str(pathlib.Path(__file__).parent), root=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["StorageError", "True", "[]"], proc.stdout + proc.stderr


def _pairs(entry: pa.Table | FilePairs) -> pa.Table:
    """A file's index pairs, whether its own table or its entry in the chunk's index."""
    return entry.pairs() if isinstance(entry, FilePairs) else entry
