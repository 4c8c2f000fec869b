"""The commit writes its index files on a thread while it writes the statistics; a
failure of either leaves the dataset as it was, with no side file left behind."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.execution.write as write


def _frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"p": rng.integers(0, 3, 500), "k": rng.integers(0, 50, 500)})


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _store(root: Path, seed: int) -> None:
    kf.store_dataframes_as_dataset(
        store=str(root),
        dataset_uuid="ds",
        dfs=[_frame(seed)],
        partition_on=["p"],
        secondary_indices=["k"],
        overwrite=True,
    )


def test_index_files_are_written_beside_the_statistics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: dict[str, int] = {}
    both = threading.Barrier(2, timeout=30)
    real_index, real_stats = write.write_index_file, write.write_statistics_file

    def index(*a, **k):  # type: ignore[no-untyped-def]
        threads["index"] = threading.get_ident()
        both.wait()  # the statistics are being written at the same time
        return real_index(*a, **k)

    def stats(*a, **k):  # type: ignore[no-untyped-def]
        threads["statistics"] = threading.get_ident()
        both.wait()
        return real_stats(*a, **k)

    monkeypatch.setattr(write, "write_index_file", index)
    monkeypatch.setattr(write, "write_statistics_file", stats)
    _store(tmp_path, 0)
    assert threads["index"] != threads["statistics"]
    got = kf.read_table("ds", str(tmp_path), predicates=[[("k", "==", 7)]])
    assert len(got) == (_frame(0)["k"] == 7).sum()


@pytest.mark.parametrize("failing", ["write_index_file", "write_statistics_file"])
def test_a_failing_side_file_leaves_the_dataset_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    _store(tmp_path, 0)
    before = _files(tmp_path)

    def boom(*a, **k):  # type: ignore[no-untyped-def]
        raise OSError("disk full")

    monkeypatch.setattr(write, failing, boom)
    with pytest.raises(OSError, match="disk full"):
        _store(tmp_path, 1)
    # the header, the log and every file as they were: the other side file and the
    # data files were removed
    assert _files(tmp_path) == before
    got = kf.read_table("ds", str(tmp_path))
    assert len(got) == 500 and sorted(got["k"]) == sorted(_frame(0)["k"])
