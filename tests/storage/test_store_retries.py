"""Retries: transient object-store errors are retried by the storage layer, not by callers.

The store's real filesystem (moto S3, and memory:// for a fast second binding) is wrapped
in ``FaultyFileSystem`` (``faultfs.py``): a real fsspec filesystem that delegates every
call and fails the first k calls of a verb. Nothing of kartoframe is mocked.
"""

from __future__ import annotations

import errno
import time
import uuid as _uuid
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import naming

TRANSIENT: dict[str, Callable[[str], BaseException]] = {
    "ConnectionError": lambda p: ConnectionError(f"connection reset ({p})"),
    "TimeoutError": lambda p: TimeoutError(f"read timed out ({p})"),
    "OSError": lambda p: OSError(f"503 Slow Down ({p})"),
    "OSError-EIO": lambda p: OSError(errno.EIO, "internal error", p),
}


@pytest.fixture(params=["memory", pytest.param("s3", marks=pytest.mark.s3)])
def base_store(request) -> kf.Store:
    if request.param == "memory":
        return kf.Store(f"memory://kf-retry-{_uuid.uuid4().hex}")
    return request.getfixturevalue("s3_store")


@pytest.fixture
def flaky(base_store: kf.Store, make_faulty: Callable[..., Any]) -> tuple[kf.Store, Any]:
    """(store over a FaultyFileSystem with retries=3, the FaultyFileSystem)."""
    return make_faulty(base_store, retries=3)


def _frame(start: int, n: int = 6) -> pd.DataFrame:
    return pd.DataFrame({"p": [i % 2 for i in range(n)], "v": range(start, start + n)})


# -- single verbs ------------------------------------------------------------------------
def _on(memory_cases: list[Any], s3_cases: list[Any]) -> list[Any]:
    """Parameters for ``("base_store", ...)``: every case on memory, a subset on S3."""
    return [pytest.param("memory", *c) for c in memory_cases] + [
        pytest.param("s3", *c, marks=pytest.mark.s3) for c in s3_cases
    ]


@pytest.mark.parametrize(
    "base_store,kind",
    _on([(k,) for k in TRANSIENT], [("ConnectionError",)]),
    indirect=["base_store"],
)
def test_transient_read_errors_are_retried(flaky: tuple[kf.Store, Any], kind: str) -> None:
    store, ffs = flaky
    store.put("k", b"payload")
    ffs.inject("cat_file", exc=TRANSIENT[kind], times=2)
    assert store.get("k") == b"payload"
    assert ffs.calls["cat_file"] == 3
    ffs.inject("cat_file", exc=TRANSIENT[kind], times=2)
    assert store.get_range("k", 1, 4) == b"ayl"
    assert ffs.calls["cat_file"] == 6


def test_transient_write_errors_are_retried(flaky: tuple[kf.Store, Any]) -> None:
    store, ffs = flaky
    ffs.inject("pipe_file", times=2)
    store.put("a/k", b"v1")
    assert ffs.calls["pipe_file"] == 3
    assert store.get("a/k") == b"v1"


def test_listing_and_delete_are_retried(flaky: tuple[kf.Store, Any]) -> None:
    store, ffs = flaky
    for k in ("d/a", "d/b", "e"):
        store.put(k, b"1")
    ffs.inject("find", times=2)
    assert list(store.iter_keys()) == ["d/a", "d/b", "e"]
    assert ffs.calls["find"] == 3
    ffs.inject("ls", times=1)
    assert list(store.iter_prefixes()) == ["d/", "e"]
    ffs.inject("isfile", times=2)
    assert store.exists("e")
    ffs.inject("rm_file", times=1)
    ffs.inject("rm", times=1)
    store.delete("e")
    store.delete_many(["d/a", "d/b"])
    assert list(store.iter_keys()) == []


def test_put_if_absent_survives_a_lost_answer(flaky: tuple[kf.Store, Any]) -> None:
    """The create succeeded but its answer was lost: the retry must not report a loss."""
    store, ffs = flaky
    ffs.inject("pipe_file", after=True, times=1)
    assert store.put_if_absent("idx/k", b"mine") is True
    assert ffs.calls["pipe_file"] >= 1
    assert store.get("idx/k") == b"mine"
    # a real conflict is still a loss, and a lost answer on a loser stays a loss
    assert store.put_if_absent("idx/k", b"other") is False
    ffs.inject("pipe_file", times=1)
    assert store.put_if_absent("idx/k", b"other") is False
    assert store.get("idx/k") == b"mine"


def _exists_after_writing(path: str) -> BaseException:
    """What a client library raises when its own retry of a conditional PUT whose 200
    was lost (a read timeout) finds the object: 412, as ``FileExistsError``."""
    return FileExistsError(errno.EEXIST, "injected: precondition failed on the retry", path)


def test_put_if_absent_survives_a_lost_answer_retried_inside_the_client(
    flaky: tuple[kf.Store, Any],
) -> None:
    """s3fs and botocore retry a PUT after a timeout themselves: the create succeeded,
    the client's retry got 412, and our first attempt sees ``FileExistsError``. The key
    holds our bytes: we created it."""
    store, ffs = flaky
    ffs.inject("pipe_file", after=True, times=1, exc=_exists_after_writing)
    assert store.put_if_absent("idx/k", b"mine") is True
    assert store.get("idx/k") == b"mine"
    ffs.inject("pipe_file", times=1, exc=_exists_after_writing)
    assert store.put_if_absent("idx/k", b"other") is False


def test_a_commit_whose_entry_answer_was_lost_inside_the_client_lands_once(
    flaky: tuple[kf.Store, Any],
) -> None:
    """A commit that took its version but was told the entry existed must not rebase
    onto itself and commit its rows a second time."""
    store, ffs = flaky
    kf.store_dataframes_as_dataset(store, "ds", [_frame(0)], partition_on=["p"])
    fault = ffs.inject(
        "pipe_file", after=True, times=1, exc=_exists_after_writing, match="/_kartoframe/log/"
    )
    kf.update_dataset_from_dataframes([_frame(100)], store=store, dataset_uuid="ds")
    assert fault.fired == 1
    assert sorted(kf.read_table("ds", store)["v"]) == [*range(6), *range(100, 106)]
    assert [h.version for h in kf.dataset_history("ds", store)] == [1, 0]


def test_exhausted_retries_raise_storage_error(flaky: tuple[kf.Store, Any]) -> None:
    store, ffs = flaky
    store.put("k", b"1")
    ffs.inject("cat_file", times=None)
    t0 = time.perf_counter()
    with pytest.raises(kf.StorageError, match=r"get of 'k' .* failed after 3 attempt\(s\)") as info:
        store.get("k")
    assert time.perf_counter() - t0 >= 0.1, "retries must back off"
    assert ffs.calls["cat_file"] == 3
    assert isinstance(info.value, OSError) and isinstance(info.value, kf.KartoframeError)
    assert "ConnectionError" in str(info.value)


PERMANENT: list[tuple[Callable[[str], BaseException], int]] = [
    (lambda p: PermissionError(errno.EACCES, "Access Denied", p), errno.EACCES),
    (lambda p: OSError(errno.ENOSPC, "No space left", p), errno.ENOSPC),
    (lambda p: OSError(errno.EROFS, "Read-only", p), errno.EROFS),
]


@pytest.mark.parametrize(
    "base_store,exc,code", _on(PERMANENT, PERMANENT[:1]), indirect=["base_store"]
)
def test_permanent_errors_are_not_retried(
    flaky: tuple[kf.Store, Any], exc: Callable[[str], BaseException], code: int
) -> None:
    store, ffs = flaky
    ffs.inject("pipe_file", exc=exc, times=None)
    with pytest.raises(kf.StorageError, match=r"after 1 attempt\(s\)") as info:
        store.put("k", b"1")
    assert ffs.calls["pipe_file"] == 1
    assert info.value.errno == code


def test_programming_errors_are_not_wrapped(flaky: tuple[kf.Store, Any]) -> None:
    store, ffs = flaky
    ffs.inject("cat_file", exc=lambda p: KeyError(p), times=None)
    with pytest.raises(KeyError):
        store.get("k")
    assert ffs.calls["cat_file"] == 1


# -- whole operations ----------------------------------------------------------------------
def test_read_table_retries_data_and_header_reads(flaky: tuple[kf.Store, Any]) -> None:
    """Remote data files are fetched by the store (not opened by pyarrow): each GET retries."""
    store, ffs = flaky
    kf.store_dataframes_as_dataset(store, "ds", [_frame(0), _frame(10)], partition_on=["p"])
    expected = kf.read_table("ds", store)
    ffs.inject("cat_file", times=2, match=".parquet")
    ffs.inject("cat_file", times=1, match=naming.JSON_SUFFIX)
    got = kf.read_table("ds", store)
    pd.testing.assert_frame_equal(got, expected)
    assert sum(f.fired for f in ffs.faults) == 3


def test_writes_succeed_through_transient_errors(flaky: tuple[kf.Store, Any]) -> None:
    store, ffs = flaky
    ffs.inject("pipe_file", times=1, match=".parquet")
    ffs.inject("pipe_file", times=2, match=naming.JSON_SUFFIX)
    kf.store_dataframes_as_dataset(
        store, "ds", [_frame(0)], partition_on=["p"], secondary_indices=["v"]
    )
    ffs.inject("pipe_file", times=2, match="/indices/")
    kf.update_dataset_from_dataframes([_frame(100)], store=store, dataset_uuid="ds")
    df = kf.read_table("ds", store)
    assert sorted(df["v"]) == [*range(6), *range(100, 106)]
    assert sum(f.fired for f in ffs.faults) == 5


def _snapshot(store: kf.Store, uuid: str) -> tuple[bytes | None, pd.DataFrame | None, list[str]]:
    header = store.get_or_none(naming.header_key(uuid, "json"))
    frame = kf.read_table(uuid, store) if header is not None else None
    # the transaction log records a version whose header failed, and its revert (history)
    keys = [k for k in store.iter_keys() if "/_kartoframe/log/" not in k]
    return header, frame, keys


# an update keeping the schema never writes _common_metadata: no ("update", "schema")
FAILURE_CASES = [
    (operation, point)
    for operation in ("create", "overwrite", "update")
    for point in ("data", "index", "schema", "header")
    if (operation, point) != ("update", "schema")
]


@pytest.mark.parametrize(
    "base_store,operation,point",
    _on(FAILURE_CASES, [("create", "index"), ("overwrite", "header"), ("update", "data")]),
    indirect=["base_store"],
)
def test_exhausted_retries_leave_the_dataset_unchanged(
    flaky: tuple[kf.Store, Any], base_store: kf.Store, operation: str, point: str
) -> None:
    """Writes failing at any point (after retries) leave header bytes and content as before."""
    store, ffs = flaky
    if operation != "create":
        kf.store_dataframes_as_dataset(
            store, "ds", [_frame(0)], partition_on=["p"], secondary_indices=["v"]
        )
    before = _snapshot(base_store, "ds")
    match = {
        "data": ".parquet",
        "index": "/indices/",
        "schema": naming.COMMON_METADATA,
        "header": naming.JSON_SUFFIX,
    }[point]
    # the first matching write passes (a data file lands) when failing later data files
    fault = ffs.inject("pipe_file", times=None, match=match, skip=1 if point == "data" else 0)
    with pytest.raises(kf.StorageError, match="after 3 attempt"):
        if operation == "update":
            kf.update_dataset_from_dataframes(
                [_frame(50), _frame(60)], store=store, dataset_uuid="ds"
            )
        else:  # a new schema (extra column w): _common_metadata is rewritten
            kf.store_dataframes_as_dataset(
                store,
                "ds",
                [_frame(50).assign(w="a"), _frame(60).assign(w="b")],
                partition_on=["p"],
                secondary_indices=["v"],
                overwrite=operation == "overwrite",
            )
    assert fault.fired == 3
    after = _snapshot(base_store, "ds")
    assert after[0] == before[0], "header bytes changed"
    if before[1] is None:
        assert after[1] is None
    else:
        pd.testing.assert_frame_equal(after[1], before[1])
    assert after[2] == before[2], "files of the failed write were left behind"
