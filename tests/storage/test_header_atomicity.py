"""Atomic header publication: readers see the old or the new header, never a partial one.

A writer thread commits many updates (``kf.update_dataset_from_dataframes``) while reader
threads re-read and decode the header as fast as they can. The header carries a large
metadata value, so writing it takes long enough that a non-atomic publication (bytes
written in place) would be observed as a truncated document.
"""

from __future__ import annotations

import pickle
import threading
import time
import uuid as _uuid

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import naming
from kartoframe.format.header import decode_header

BLOB = "x" * 400_000  # ~400 KB of header


def _frame(i: int) -> pd.DataFrame:
    return pd.DataFrame({"p": [i % 3] * 4, "v": [i * 10 + j for j in range(4)]})


@pytest.fixture(
    params=[
        pytest.param(("file", "json"), id="file-json"),
        pytest.param(("file", "msgpack"), id="file-msgpack"),
        pytest.param(("memory", "json"), id="memory-json"),
        pytest.param(("s3", "json"), id="s3-json", marks=pytest.mark.s3),
    ]
)
def target(request, tmp_path) -> tuple[kf.Store, str, int]:
    backend, fmt = request.param
    if backend == "file":
        return kf.Store(f"file://{tmp_path}/store"), fmt, 25
    if backend == "memory":
        return kf.Store(f"memory://kf-atomic-{_uuid.uuid4().hex}"), fmt, 25
    return request.getfixturevalue("s3_store"), fmt, 8


def test_readers_never_see_a_partial_header(target: tuple[kf.Store, str, int]) -> None:
    store, fmt, updates = target
    uuid = "atomic"
    key = naming.header_key(uuid, fmt)  # type: ignore[arg-type]
    kf.store_dataframes_as_dataset(
        store,
        uuid,
        [_frame(0)],
        partition_on=["p"],
        metadata={"blob": BLOB, "n": 0},
        metadata_storage_format=fmt,
    )
    stop = threading.Event()
    problems: list[object] = []
    seen: list[list[int]] = []

    def reader(handle: kf.Store) -> None:
        mine: list[int] = []
        seen.append(mine)
        last = -1
        while not stop.is_set():
            data = handle.get(key)
            try:
                md = decode_header(data, uuid, fmt)  # type: ignore[arg-type]
            except Exception as e:  # a partial header
                problems.append((len(data), repr(e)[:200]))
                return
            n = md.metadata["n"]
            if md.metadata["blob"] != BLOB or len(md.partitions) != n + 1:
                problems.append(("inconsistent header", n, len(md.partitions)))
                return
            if n < last:
                problems.append(("went back in time", last, n))
                return
            last = n
            mine.append(n)

    # one reader shares the writer's Store, one uses its own handle (as another process)
    readers = [
        threading.Thread(target=reader, args=(store,)),
        threading.Thread(target=reader, args=(pickle.loads(pickle.dumps(store)),)),
    ]

    def caught_up(i: int) -> None:
        """Wait (bounded) until both readers decoded version ``i``: they overlap the writer
        whatever the thread scheduling, and the next writes race their reads."""
        deadline = time.monotonic() + 60
        while not (len(seen) == 2 and all(m and m[-1] >= i for m in seen)):
            if problems or not all(t.is_alive() for t in readers):
                return
            assert time.monotonic() < deadline, f"the readers did not see version {i} in 60 s"
            time.sleep(0.001)

    for t in readers:
        t.start()
    try:
        checkpoints = {updates // 3, 2 * updates // 3, updates}
        caught_up(0)
        for i in range(1, updates + 1):
            kf.update_dataset_from_dataframes(
                [_frame(i)], store=store, dataset_uuid=uuid, metadata={"n": i}
            )
            if i in checkpoints:
                caught_up(i)
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=60)
    assert not problems, problems[:5]
    observed = {n for mine in seen for n in mine}
    assert {0, *checkpoints} <= observed, "the readers did not overlap the writer"
    df = kf.read_table(uuid, store)
    assert len(df) == 4 * (updates + 1)
    assert sorted(df["v"]) == sorted(i * 10 + j for i in range(updates + 1) for j in range(4))
