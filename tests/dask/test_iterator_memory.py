"""``read_dataset_as_dataframes__iterator``: lazy, one file at a time, bounded memory."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from fresh_interpreter import measure_in_fresh_interpreter

import kartoframe as kf

# Runs in a fresh interpreter so the Arrow pool's high-water mark is this read's alone.
MEASURE = """
import gc, json, sys, tracemalloc
import pyarrow as pa
import kartoframe as kf

root, mode = sys.argv[1], sys.argv[2]
drop = mode != "keep"
kf.read_table("m", root, columns=["a"], predicates=[[("p", "==", 0), ("a", "<", 0)]])
gc.collect()
pool = pa.default_memory_pool()
before = pool.max_memory()
tracemalloc.start()
largest = rows = 0
frames = kf.read_dataset_as_dataframes__iterator("m", root)
for df in frames:
    largest = max(largest, int(df.memory_usage(deep=True).sum()))
    rows += len(df)
    if drop:
        del df
_, python_peak = tracemalloc.get_traced_memory()
print(json.dumps({"before": before, "arrow_peak": pool.max_memory(), "python_peak": python_peak,
                  "largest": largest, "rows": rows}))
"""


def partition(p: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(p)
    return pd.DataFrame(
        {
            "p": p,
            "a": rng.integers(0, 1 << 40, n),
            "b": rng.random(n),
            "s": pd.array(rng.integers(0, 10**9, n).astype(str), dtype="str"),
        }
    )


def measure(root: str, mode: str) -> dict[str, int]:
    """Peak memory of one iterator pass whose consumer drops (``drop``) or keeps each frame."""
    result: dict[str, int] = measure_in_fresh_interpreter(MEASURE, root, mode)
    return result


@pytest.mark.slow
def test_peak_memory_is_bounded_by_the_largest_partition(tmp_path) -> None:
    root = str(tmp_path / "store")
    frames = [partition(p, 120_000) for p in range(12)]
    kf.store_dataframes_as_dataset(store=root, dataset_uuid="m", dfs=frames, partition_on=["p"])
    total = sum(int(f.memory_usage(deep=True).sum()) for f in frames)
    dropping = measure(root, "drop")
    holding = measure(root, "keep")
    for m in (dropping, holding):
        assert m["rows"] == 12 * 120_000
        assert m["before"] < m["largest"] / 10  # the warm-up read was tiny
        assert m["python_peak"] < m["largest"] / 10  # frames live in the Arrow pool
    # A consumer that drops each frame: only the file being decoded is held. Arrow's
    # Parquet decoding needs ~2.7x the frame for this mix of columns (measured 2.66x; a
    # plain multi-threaded pq.read_table(...).to_pandas() of one file peaks at 2.9-3.7x).
    assert dropping["arrow_peak"] < 3.2 * dropping["largest"]
    # A for-loop keeps the previous frame alive while the next one is decoded. The peak
    # depends on how Arrow's decode threads interleave: 3.59x-3.88x in four runs of one
    # machine, so the bound leaves room (the point is the next assertion: not the dataset).
    assert holding["arrow_peak"] < 4.8 * holding["largest"]
    # Either way far below the dataset (12 partitions).
    assert holding["arrow_peak"] < 0.5 * total


def test_iterator_is_lazy_and_reads_one_file_per_step(file_store) -> None:
    frames = [partition(p, 10) for p in range(4)]
    kf.store_dataframes_as_dataset(
        store=file_store, dataset_uuid="m", dfs=frames, partition_on=["p"]
    )
    it = kf.read_dataset_as_dataframes__iterator("m", file_store)
    keys = list(kf.read_dataset_metadata("m", file_store).partitions.values())
    for key in keys[1:]:
        os.remove(file_store.path(key))
    first = next(it)
    assert first["p"].unique().tolist() == [0] and len(first) == 10
    with pytest.raises((FileNotFoundError, kf.StorageError)):
        next(it)
    lazy = kf.read_dataset_as_dataframes__iterator("nope", file_store)
    with pytest.raises(kf.DatasetNotFoundError):
        next(lazy)
