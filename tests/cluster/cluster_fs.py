"""Filesystem wrappers for the cluster tests: deterministic process kills inside a write
(:class:`KillAfterWriteFileSystem`), and a record of which process read or wrote each data
file (:class:`RecordingFileSystem`).

:class:`KillAfterWriteFileSystem` is fsspec's :class:`DirFileSystem` with an empty prefix (it
delegates every call, unchanged, to the wrapped filesystem, as ``tests/storage/faultfs.py``)
that, right after a data file (``<table>/.../*.parquet``) has been written completely, kills
its own process with SIGKILL — once:

* ``engine="spark"``: in a Spark task's first attempt (``TaskContext.attemptNumber() == 0``)
  of partition ``partition`` (the Python worker dies; Spark retries the task);
* ``engine="dask"``: in a dask worker (not in the client), the first time any worker gets
  there (an ``O_EXCL`` marker file decides; dask reschedules the task of a dead worker).

Before dying it records the key it wrote and its PID in ``side_dir`` (a local folder: the
cluster runs on this host), so the test knows which file the killed attempt left. Its
settings are constructor arguments, so they travel with the pickled ``kf.Store`` to the
executors and workers (an fsspec filesystem pickles as its constructor's arguments). Spark
executors import this module from ``SparkContext.addPyFile``, dask workers from
``Client.upload_file``.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from fsspec.implementations.dirfs import DirFileSystem


def _is_data_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith(".parquet") and "/table/" in path and not name.startswith(".")


class KillAfterWriteFileSystem(DirFileSystem):
    """Delegates to ``fs``; kills its process once after writing a data file (see module)."""

    cachable = False

    def __init__(
        self, fs: Any, *, side_dir: str, engine: str, partition: int = 0, **kwargs: Any
    ) -> None:
        super().__init__(path="", fo="", fs=fs, **kwargs)
        self.side_dir = side_dir
        self.engine = engine
        self.partition = partition

    def _should_die(self) -> bool:
        if self.engine == "spark":
            from pyspark import TaskContext

            ctx = TaskContext.get()
            return (
                ctx is not None and ctx.attemptNumber() == 0 and ctx.partitionId() == self.partition
            )
        try:
            from distributed import get_worker

            get_worker()
        except (ImportError, ValueError):
            return False  # the client (the commit), not a worker
        try:
            os.close(os.open(Path(self.side_dir) / "killed", os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        return True

    def _after_write(self, path: str) -> None:
        if _is_data_file(path) and self._should_die():
            record = {"pid": os.getpid(), "pids": ancestors(), "path": path}
            (Path(self.side_dir) / f"victim-{os.getpid()}.json").write_text(json.dumps(record))
            os.kill(os.getpid(), signal.SIGKILL)

    def pipe_file(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        out = DirFileSystem.pipe_file(self, path, *args, **kwargs)
        self._after_write(str(path))
        return out

    def open(self, path: Any, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        f = DirFileSystem.open(self, path, mode, *args, **kwargs)
        if not any(c in mode for c in "wxa"):
            return f
        close = f.close

        def close_then_check() -> None:
            close()
            self._after_write(str(path))

        f.close = close_then_check
        return f


def ancestors(pid: int | None = None) -> list[int]:
    """``pid`` (default: this process) and its parents, up to PID 1 (from /proc)."""
    chain = [os.getpid() if pid is None else pid]
    while chain[-1] > 1:
        try:
            stat = Path(f"/proc/{chain[-1]}/stat").read_text()
        except OSError:
            break
        chain.append(int(stat.rsplit(")", 1)[1].split()[1]))
    return chain


class RecordingFileSystem(DirFileSystem):
    """Delegates to ``fs``; appends a line to ``side_dir/calls-<pid>.jsonl`` for every read
    and write of a data file: ``{"verb", "path", "pids"}`` (``pids``: the process and its
    ancestors, so the test can tell a Spark executor's Python worker from the driver and a
    dask worker from the client).
    """

    cachable = False

    def __init__(self, fs: Any, *, side_dir: str, **kwargs: Any) -> None:
        super().__init__(path="", fo="", fs=fs, **kwargs)
        self.side_dir = side_dir

    def _record(self, verb: str, path: Any) -> None:
        paths = [path] if isinstance(path, str) else list(path)
        lines = "".join(
            json.dumps({"verb": verb, "path": str(p), "pids": ancestors()}) + "\n"
            for p in paths
            if _is_data_file(str(p))
        )
        if lines:
            fd = os.open(
                Path(self.side_dir) / f"calls-{os.getpid()}.jsonl",
                os.O_WRONLY | os.O_APPEND | os.O_CREAT,
            )
            try:
                os.write(fd, lines.encode())
            finally:
                os.close(fd)

    def pipe_file(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self._record("write", path)
        return DirFileSystem.pipe_file(self, path, *args, **kwargs)

    def open(self, path: Any, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        self._record("write" if any(c in mode for c in "wxa") else "read", path)
        return DirFileSystem.open(self, path, mode, *args, **kwargs)

    def cat_file(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self._record("read", path)
        return DirFileSystem.cat_file(self, path, *args, **kwargs)

    def cat_ranges(self, paths: Any, *args: Any, **kwargs: Any) -> Any:
        self._record("read", paths)
        return DirFileSystem.cat_ranges(self, paths, *args, **kwargs)

    def cat(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        self._record("read", path)
        return DirFileSystem.cat(self, path, *args, **kwargs)


def calls(side_dir: str | Path) -> list[dict[str, Any]]:
    """Every recorded data-file call of a :class:`RecordingFileSystem`."""
    return [
        json.loads(line)
        for p in sorted(Path(side_dir).glob("calls-*.jsonl"))
        for line in p.read_text().splitlines()
    ]


def victims(side_dir: str | Path) -> list[dict[str, Any]]:
    """What each killed process recorded: its PID, its ancestors' and the key it had written."""
    return [json.loads(p.read_text()) for p in sorted(Path(side_dir).glob("victim-*.json"))]
