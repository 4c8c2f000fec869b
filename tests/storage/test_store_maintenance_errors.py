"""Cleanup that does not stop at the first failing key, and a directory where a log entry
goes reported as corruption at once (issue 12, section 3)."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.format import txlog


def _frame(values: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"p": values, "v": list(range(len(values)))})


def test_local_delete_many_attempts_every_key(tmp_path: Path) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    for name in ("a", "c"):
        store.put(f"d/{name}.bin", b"x")
    # a name too long for the filesystem cannot be deleted (ENAMETOOLONG): the others are
    long_key = "d/" + "b" * 300 + ".bin"
    with pytest.raises(kf.StorageError, match="Could not delete 1 of 3 keys") as info:
        store.delete_many(["d/a.bin", long_key, "d/c.bin"])
    assert "b" * 300 in str(info.value)
    assert isinstance(info.value.__cause__, kf.StorageError)
    assert list(store.iter_keys()) == []


@pytest.mark.parametrize("position", ["first", "middle", "last"])
def test_failed_write_with_a_long_partition_value_leaves_nothing(
    tmp_path: Path, position: str
) -> None:
    """A 300-character partition value fails the write; no other partition's file stays."""
    store = kf.Store(f"file://{tmp_path}/store")
    kf.store_dataframes_as_dataset(store, "ds", [_frame(["a"])], partition_on=["p"])
    before = {k: store.get(k) for k in store.iter_keys()}
    long_value = {"first": "0", "middle": "m", "last": "z"}[position] * 300
    with pytest.raises(kf.StorageError, match="File name too long"):
        kf.update_dataset_from_dataframes(
            [_frame(["b", long_value, "y"])], store, "ds", partition_on=["p"]
        )
    assert {k: store.get(k) for k in store.iter_keys()} == before
    assert sorted(kf.read_table("ds", store)["p"]) == ["a"]


@pytest.mark.parametrize("backend", ["file", "memory"])
def test_directory_at_the_next_log_entry_is_corruption(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"file://{tmp_path}/store" if backend == "file" else f"memory://kf-{uuid.uuid4().hex}"
    store = kf.Store(url)
    kf.store_dataframes_as_dataset(store, "ds", [_frame(["a"])], partition_on=["p"])
    key = txlog.entry_key("ds", 1)
    if store.is_local:
        os.makedirs(store.path(key))
    else:
        store.fs.pipe_file(store.path(key) + "/x", b"")
    before = sorted(store.iter_keys())
    # storage retries and commit retries back off with time.sleep: count them (not wall time)
    sleeps: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: (sleeps.append(s), real_sleep(s))[1])
    with pytest.raises(kf.CorruptMetadataError, match="a directory exists at that key") as info:
        kf.update_dataset_from_dataframes([_frame(["b"])], store, "ds")
    monkeypatch.setattr(time, "sleep", real_sleep)
    assert type(info.value) is kf.CorruptMetadataError
    assert key in str(info.value)
    assert sleeps == [], "no retries: reported at once"
    assert sorted(store.iter_keys()) == before  # the write's files are gone again
    assert sorted(kf.read_table("ds", store)["p"]) == ["a"]
