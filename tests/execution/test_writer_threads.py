"""How many threads write a chunk's files (execution.chunks._writer_threads)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kartoframe.execution.chunks as chunks
from kartoframe.storage.store import Store


def test_a_local_folder_gets_a_thread_per_core_an_object_store_max_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chunks, "LOCAL_WRITE_THREADS", 2)
    local, remote = Store(f"file://{tmp_path}"), Store("memory://threads")
    assert chunks._writer_threads(local, 4, 200) == 2
    assert chunks._writer_threads(remote, 4, 200) == 4
    assert chunks._writer_threads(remote, 4, 3) == 3
    assert chunks._writer_threads(local, 1, 200) == 1


@pytest.mark.parametrize("small", [False, True])
@pytest.mark.parametrize("url", ["file://{tmp}", "memory://threads-{name}"])
def test_write_chunk_starts_that_many_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, small: bool
) -> None:
    monkeypatch.setattr(chunks, "LOCAL_WRITE_THREADS", 2)
    pools: list[int | None] = []

    class Pool(ThreadPoolExecutor):
        def __init__(self, max_workers: int | None = None, **kw: object) -> None:
            pools.append(max_workers)
            super().__init__(max_workers, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(chunks, "ThreadPoolExecutor", Pool)
    rows = 4_000 if small else 400_000
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"p": np.arange(rows) % 8, "v": rng.random(rows)})
    store = Store(url.format(tmp=tmp_path, name=tmp_path.name))
    out = chunks.write_chunk(store, "ds", df, partition_on=["p"], max_workers=4)
    assert len(out.partitions) == 8
    assert pools == [2 if url.startswith("file") else 4]
