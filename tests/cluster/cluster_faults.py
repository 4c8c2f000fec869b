"""Deterministic process kills inside a write, for the cluster fault tests.

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
                ctx is not None
                and ctx.attemptNumber() == 0
                and ctx.partitionId() == self.partition
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
            record = {"pid": os.getpid(), "path": path}
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


def victims(side_dir: str | Path) -> list[dict[str, Any]]:
    """What each killed process recorded: its PID and the key it had written."""
    return [json.loads(p.read_text()) for p in sorted(Path(side_dir).glob("victim-*.json"))]


def pid_of_task(_: Any = None) -> int:
    """The PID of the process a task runs in (a column of the pipeline's data)."""
    return os.getpid()
