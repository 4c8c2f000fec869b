"""Progress bars: silent without a terminal, drawn on one (a real pseudo-terminal)."""

from __future__ import annotations

import contextlib
import io
import os
import pty
import threading
from collections.abc import Callable, Iterator

import dask
import dask.bag as db
import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.execution.kernel import iter_plan_batches, read_plan_table
from kartoframe.progress import ProgressBar, dask_progress, progress_enabled, track


class _Terminal:
    """A pseudo-terminal whose output is collected by a thread."""

    def __init__(self) -> None:
        self.master, slave = pty.openpty()
        self.file = os.fdopen(slave, "w", buffering=1, encoding="utf-8")
        self.chunks: list[bytes] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.chunks.append(data)

    def text(self) -> str:
        self.file.flush()
        self.file.close()
        self.thread.join(timeout=10)
        os.close(self.master)
        return b"".join(self.chunks).decode("utf-8", "replace")


@pytest.fixture
def terminal() -> Iterator[Callable[[], _Terminal]]:
    made: list[_Terminal] = []

    def _make() -> _Terminal:
        t = _Terminal()
        made.append(t)
        return t

    yield _make
    for t in made:
        if not t.file.closed:
            t.text()


@pytest.fixture
def tty_stderr(terminal, monkeypatch) -> _Terminal:
    """A terminal to use as standard error (``with contextlib.redirect_stderr(t.file)``:
    pytest re-installs its own ``sys.stderr`` after fixtures ran)."""
    monkeypatch.delenv("KARTOFRAME_PROGRESS", raising=False)
    return terminal()


def _dataset(store: str, n: int = 12) -> None:
    df = pd.DataFrame(
        {
            "part": [i % n for i in range(10 * n)],
            "cat": pd.Categorical([f"c{i % 3}" for i in range(10 * n)]),
            "x": [float(i) for i in range(10 * n)],
        }
    )
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["part"], secondary_indices=["x"]
    )


def test_silent_without_a_terminal(capsys) -> None:
    buffer = io.StringIO()
    assert not progress_enabled(True, buffer)
    with ProgressBar("copying", 3, file=buffer) as bar:
        assert not bar.active
        for _ in range(3):
            bar.advance()
    assert bar.completed == 3
    assert buffer.getvalue() == ""
    assert list(track([1, 2, 3], "items")) == [1, 2, 3]
    assert capsys.readouterr() == ("", "")


def test_draws_on_a_terminal(terminal, monkeypatch) -> None:
    monkeypatch.delenv("KARTOFRAME_PROGRESS", raising=False)
    t = terminal()
    assert progress_enabled(True, t.file)
    assert not progress_enabled(False, t.file)
    with ProgressBar("copying files", 3, file=t.file, unit="files") as bar:
        assert bar.active
        for _ in range(3):
            bar.advance()
    text = t.text()
    assert "copying files" in text and "3/3" in text and "files" in text


def test_environment_variable_silences_bars(terminal, monkeypatch) -> None:
    monkeypatch.setenv("KARTOFRAME_PROGRESS", "0")
    t = terminal()
    with ProgressBar("hidden", 2, file=t.file) as bar:
        bar.advance(2)
    assert not bar.active and "hidden" not in t.text()


def test_batched_read_equals_one_scan(store) -> None:
    _dataset(store.url)
    plan, st = plan_read("ds", store, predicates=[[("x", ">", 5.0)]])
    batches = list(iter_plan_batches(plan, st, batches=5, min_files=1))
    assert [n for _, n in batches] == [3, 3, 3, 3]  # at most 5 batches of ceil(12 / 5) files
    assert pa.concat_tables([t for t, _ in batches]).equals(read_plan_table(plan, st))


def test_read_table_with_progress(tty_stderr, store) -> None:
    _dataset(store.url)
    plain = kf.read_table("ds", store, categoricals=["cat"], predicates=[[("x", ">=", 3.0)]])
    with contextlib.redirect_stderr(tty_stderr.file):
        with_bar = kf.read_table(
            "ds", store, categoricals=["cat"], predicates=[[("x", ">=", 3.0)]], progress=True
        )
    pd.testing.assert_frame_equal(with_bar, plain)
    text = tty_stderr.text()
    assert "reading ds" in text and "12/12" in text


def test_nested_bars_share_one_display(tty_stderr, memory_store) -> None:
    _dataset(memory_store.url, n=4)
    target = kf.Store(memory_store.url + "-copy")
    with contextlib.redirect_stderr(tty_stderr.file), ProgressBar("outer step", 2) as outer:
        kf.build_dataset_indices(memory_store, "ds", ["cat"], progress=True)
        outer.advance()
        kf.copy_dataset("ds", memory_store, target_store=target, progress=True)
        outer.advance()
    text = tty_stderr.text()
    assert "outer step" in text and "indexing ds" in text and "copying ds" in text
    pd.testing.assert_frame_equal(kf.read_table("ds", target), kf.read_table("ds", memory_store))


def test_dask_progress_counts_and_draws(tty_stderr) -> None:
    bag = db.from_sequence(range(100), npartitions=8).map(lambda x: x * 2)
    with contextlib.redirect_stderr(tty_stderr.file):
        with dask_progress("doubling") as cb:
            assert bag.sum().compute(scheduler="threads") == 9900
        with dask_progress("again", enabled=False) as quiet:
            assert int(dask.delayed(sum)([1, 2]).compute(scheduler="sync")) == 3
    assert cb.total > 8 and cb.finished == cb.total
    assert quiet.finished == quiet.total > 0
    text = tty_stderr.text()
    assert "doubling" in text and f"{cb.total}/{cb.total}" in text
    assert "again" not in text


def test_dask_progress_on_a_kartoframe_graph(memory_store, capsys) -> None:
    _dataset(memory_store.url, n=5)
    with dask_progress("read") as cb:
        ddf = kf.read_dataset_as_ddf("ds", memory_store)
        assert len(ddf.compute(scheduler="threads")) == 50
    assert cb.finished == cb.total >= 5
    assert capsys.readouterr().err == ""  # not a terminal: silent
