"""Chunks of small files: encoded one after the other, written on the pool.

Below :data:`~kartoframe.execution.chunks.SMALL_FILE_BYTES` a file on average, the chunk
kernel encodes each file in the calling thread and hands only the writes to its pool
(threads contending for the GIL made a write of many tiny files slower than one thread).
Both ways must write the same dataset, and a write that fails half-way, with encoded files
still queued, must leave none of its files behind.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
import kartoframe.execution.chunks as chunks


def _frame(partitions: int, rows: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(partitions)
    n = partitions * rows
    return pd.DataFrame(
        {
            "p": np.repeat(np.arange(partitions), rows),
            "x": rng.integers(0, 1_000, n),
            "s": rng.choice(["a", "b", "c"], n),
            "y": rng.random(n),
        }
    )


def _content(root: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    store = str(root)
    table = kf.read_table("ds", store).sort_values(["p", "x", "y"]).reset_index(drop=True)
    stats = kf.dataset_statistics("ds", store).drop(columns=["label", "file"])
    stats = stats.sort_values("p.min").reset_index(drop=True)
    hits = kf.read_table("ds", store, predicates=[[("x", "==", 7)]])
    return table, stats, hits.sort_values(["p", "y"]).reset_index(drop=True)


@pytest.mark.parametrize("partitions", [2, 150])
def test_small_and_threaded_files_write_the_same_dataset(
    tmp_path: Path, partitions: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    df = _frame(partitions)
    written = {}
    for mode, limit in (("small", 1 << 40), ("threaded", 0)):
        monkeypatch.setattr(chunks, "SMALL_FILE_BYTES", limit)
        root = tmp_path / mode
        kf.store_dataframes_as_dataset(
            str(root), "ds", [df], partition_on=["p"], secondary_indices=["x"]
        )
        written[mode] = root
    small, threaded = (_content(written[m]) for m in ("small", "threaded"))
    for a, b in zip(small, threaded, strict=True):
        pd.testing.assert_frame_equal(a, b)
    assert len(small[0]) == len(df)
    assert len(small[1]) == partitions and small[1]["has_statistics"].all()
    assert (small[2]["x"] == 7).all() and len(small[2]) == int((df["x"] == 7).sum())
    files = {
        m: sorted(p.relative_to(written[m]).parent for p in written[m].rglob("*.parquet"))
        for m in written
    }
    assert files["small"] == files["threaded"]
    # the same Parquet: one row group, the chunk's encoding, µs timestamps untouched
    one = next(written["small"].rglob("p=1/*.parquet"))
    two = next(written["threaded"].rglob("p=1/*.parquet"))
    assert (
        pq.read_metadata(one).schema.to_arrow_schema()
        == pq.read_metadata(two).schema.to_arrow_schema()
    )
    assert os.path.getsize(one) == os.path.getsize(two)
    assert kf.check_dataset("ds", str(written["small"])).ok


def test_a_small_files_write_failing_half_way_leaves_none_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain file where partition ``p=97``'s folder must go: its write fails on the pool
    while later files are being encoded and earlier ones written. The error is the
    store's, and every file the write made is removed; the dataset does not exist."""
    monkeypatch.setattr(chunks, "SMALL_FILES_PER_TASK", 4)
    root = tmp_path / "store"
    table_dir = root / "ds" / "table"
    table_dir.mkdir(parents=True)
    (table_dir / "p=97").write_bytes(b"in the way")
    with pytest.raises(kf.StorageError, match="p=97"):
        kf.store_dataframes_as_dataset(str(root), "ds", [_frame(200)], partition_on=["p"])
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert left == [os.path.join("ds", "table", "p=97")]
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_dataset_metadata("ds", str(root))


@pytest.mark.parametrize("workers", [4, 1], ids=["pool", "one-thread"])
def test_small_files_chunk_equals_the_file_by_file_chunk(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk kernel's result, with a pool (eager writes) and without (a dask task):
    the same files byte for byte, the same statistics rows and index pairs."""
    df = _frame(150)
    out = {}
    for mode, limit in (("small", 1 << 40), ("file by file", 0)):
        monkeypatch.setattr(chunks, "SMALL_FILE_BYTES", limit)
        store = kf.Store(str(tmp_path / mode))
        result = chunks.write_chunk(
            store,
            "ds",
            df,
            partition_on=["p"],
            index_columns=["x"],
            max_workers=workers,
            file_uuid="f" * 32,
        )
        out[mode] = (store, result)
    (store_a, a), (store_b, b) = out["small"], out["file by file"]
    assert len(a.partitions) == len(b.partitions) == 150
    for x, y in zip(a.partitions, b.partitions, strict=True):
        assert (x.label, x.key, x.rows, x.size) == (y.label, y.key, y.rows, y.size)
        assert store_a.get(x.key) == store_b.get(y.key)
        assert x.statistics is not None and y.statistics is not None
        assert x.statistics.one().equals(y.statistics.one())
        assert x.index_pairs["x"].pairs().equals(y.index_pairs["x"].pairs())
