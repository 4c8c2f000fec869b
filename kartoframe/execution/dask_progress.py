"""The dask side of :func:`kartoframe.progress.dask_progress` (a local-scheduler callback)."""

from __future__ import annotations

from typing import Any

from dask.callbacks import Callback

from kartoframe._progress_bar import ProgressBar

__all__ = ["DaskProgressCallback"]


class DaskProgressCallback(Callback):  # type: ignore[misc]
    """Draw one bar per ``compute()``: finished tasks out of all tasks of the graph.

    The callback :func:`kartoframe.progress.dask_progress` returns; ``description`` and
    ``enabled`` are its arguments.
    """

    def __init__(self, description: str = "dask", *, enabled: object = True) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.description = description
        self.enabled = enabled
        self.bar: ProgressBar | None = None
        #: Tasks finished in the last computation (also counted when nothing is drawn).
        self.finished = 0
        #: Tasks of the last computation's graph.
        self.total = 0

    def _start(self, dsk: Any) -> None:
        self.finished = 0
        self.total = 0
        self.bar = ProgressBar(self.description, None, enabled=self.enabled, unit="tasks")
        self.bar.__enter__()

    def _start_state(self, dsk: Any, state: dict[str, Any]) -> None:
        self.total = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
        if self.bar is not None:
            self.bar.update(total=self.total)

    def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
        self.finished += 1
        if self.bar is not None:
            self.bar.advance()

    def _finish(self, dsk: Any, state: Any, errored: bool) -> None:
        bar, self.bar = self.bar, None
        if bar is not None:
            bar.__exit__(RuntimeError if errored else None, None, None)
