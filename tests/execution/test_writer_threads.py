"""How many threads write a chunk's files: the eager engine one per core into a local
folder (execution.eager_write.eager_write_threads), the chunk kernel's default of
``DEFAULT_WRITE_THREADS`` otherwise (object stores, Spark's executors)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.execution.chunks as chunks
import kartoframe.execution.eager_write as eager_write
from kartoframe.storage.store import Store


def _pools(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The ``max_workers`` of every pool the chunk kernel starts."""
    pools: list[int | None] = []

    class Pool(ThreadPoolExecutor):
        def __init__(self, max_workers: int | None = None, **kw: object) -> None:
            pools.append(max_workers)
            super().__init__(max_workers, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(chunks, "ThreadPoolExecutor", Pool)
    return pools


def _frame(small: bool) -> pd.DataFrame:
    rows = 4_000 if small else 400_000  # the small-file path, or one file per pool task
    rng = np.random.default_rng(0)
    return pd.DataFrame({"p": np.arange(rows) % 8, "v": rng.random(rows)})


def test_the_eager_engine_takes_a_thread_per_core_on_a_local_folder(tmp_path: Path) -> None:
    assert eager_write.eager_write_threads(Store(f"file://{tmp_path}")) == (
        eager_write.LOCAL_WRITE_THREADS
    )
    assert eager_write.eager_write_threads(Store("memory://threads")) == (
        chunks.DEFAULT_WRITE_THREADS
    )


@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("url", ["file://{tmp}", "memory://threads-{name}"])
def test_store_dataframes_writes_with_that_many_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, small: bool
) -> None:
    monkeypatch.setattr(eager_write, "LOCAL_WRITE_THREADS", 2)
    pools = _pools(monkeypatch)
    store = url.format(tmp=tmp_path, name=f"{tmp_path.name}-{small}")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[_frame(small)], partition_on=["p"]
    )
    assert pools == [2 if url.startswith("file") else 4]
    assert len(kf.read_table("ds", store)) == len(_frame(small))


def test_the_chunk_kernel_keeps_its_default_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Spark's executors call the kernel without max_workers: 4 threads, local folder or not
    monkeypatch.setattr(eager_write, "LOCAL_WRITE_THREADS", 2)
    pools = _pools(monkeypatch)
    out = chunks.write_chunk(Store(f"file://{tmp_path}"), "ds", _frame(False), partition_on=["p"])
    assert len(out.partitions) == 8
    assert pools == [chunks.DEFAULT_WRITE_THREADS]
