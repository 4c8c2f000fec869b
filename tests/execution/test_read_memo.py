"""A query's shared reads: one read per key across threads, failures and large tables not
kept, nothing shipped when pickled (the dask cube query's use: tests/cube/test_cube_dask.py).
"""

from __future__ import annotations

import pickle
import threading

import pyarrow as pa
import pytest

from kartoframe.execution.read_memo import ReadMemo


def test_one_read_per_key_across_threads() -> None:
    memo = ReadMemo()
    calls: list[int] = []
    started, release = threading.Event(), threading.Event()
    table = pa.table({"x": [1, 2]})

    def read() -> pa.Table:
        calls.append(1)
        started.set()
        assert release.wait(10)
        return table

    out: list[pa.Table] = []
    threads = [threading.Thread(target=lambda: out.append(memo.get("k", read))) for _ in range(6)]
    for t in threads:
        t.start()
    assert started.wait(10)
    release.set()
    for t in threads:
        t.join(10)
    assert len(calls) == 1 and len(out) == 6 and all(o is table for o in out)
    assert memo.get("k", lambda: pytest.fail("read again")) is table
    other = memo.get("other", lambda: pa.table({"x": [3]}))
    assert other["x"].to_pylist() == [3] and len(memo) == 2


def test_a_failed_read_reaches_its_waiters_and_is_not_kept() -> None:
    memo = ReadMemo()
    started, release = threading.Event(), threading.Event()

    def failing() -> pa.Table:
        started.set()
        assert release.wait(10)
        raise OSError("disk gone")

    errors: list[BaseException] = []

    def ask() -> None:
        try:
            memo.get("k", failing)
        except OSError as e:
            errors.append(e)

    first = threading.Thread(target=ask)
    first.start()
    assert started.wait(10)
    second = threading.Thread(target=ask)  # waits for the first read
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert [str(e) for e in errors] == ["disk gone", "disk gone"]
    assert len(memo) == 0
    assert memo.get("k", lambda: pa.table({"x": [1]})).num_rows == 1  # tried again


def test_large_tables_are_not_kept_and_pickles_arrive_empty() -> None:
    memo = ReadMemo(max_bytes=100)
    big = pa.table({"x": list(range(1000))})
    assert memo.get("big", lambda: big) is big and len(memo) == 0
    memo.get("small", lambda: pa.table({"x": [1]}))
    assert len(memo) == 1
    copy = pickle.loads(pickle.dumps(memo))
    assert len(copy) == 0 and copy.max_bytes == 100
    assert copy.get("small", lambda: pa.table({"x": [2]}))["x"].to_pylist() == [2]
