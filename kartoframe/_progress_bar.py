"""The rich-based progress bar: a low-level utility any layer may draw with.

The public face is :mod:`kartoframe.progress` (which also holds the dask callback factory);
this module imports nothing of kartoframe, so storage, execution, api and the command line can
all use it without importing upwards.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import IO, TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

__all__ = ["ProgressBar", "progress_enabled", "track"]

T = TypeVar("T")

#: Set to ``0`` to silence every bar (also on a terminal); ``1`` leaves the default.
ENV_DISABLE = "KARTOFRAME_PROGRESS"

_lock = threading.RLock()
#: The live display shared by nested bars, and how many bars use it.
_shared: Progress | None = None
_users = 0


def _is_jupyter() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except Exception:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def progress_enabled(progress: object = True, file: IO[str] | None = None) -> bool:
    """Whether a bar would be drawn for this ``progress`` argument.

    Parameters
    ----------
    progress
        The caller's ``progress`` argument: only ``True`` can enable a bar.
    file
        The stream bars go to (default: standard error).

    Returns
    -------
    bool
        True only if ``progress`` is True, :data:`ENV_DISABLE` is not ``0``, and the stream
        is a terminal (or the code runs in a Jupyter kernel).

    Examples
    --------
    >>> import io
    >>> progress_enabled(True, io.StringIO()), progress_enabled(False)
    (False, False)
    """
    if progress is not True or os.environ.get(ENV_DISABLE, "") == "0":
        return False
    stream = sys.stderr if file is None else file
    try:
        if stream is not None and stream.isatty():
            return True
    except (AttributeError, ValueError):  # closed or odd streams
        return False
    return file is None and _is_jupyter()


def _new_progress(file: IO[str] | None) -> Progress:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(file=file if file is not None else sys.stderr)
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        redirect_stdout=False,
        redirect_stderr=False,
        refresh_per_second=8,
    )


class ProgressBar:
    """One progress bar (a context manager); does nothing unless it is enabled.

    Parameters
    ----------
    description
        Text in front of the bar.
    total
        Number of steps, or None for an indeterminate (pulsing) bar; can be set later
        with :meth:`update`.
    enabled
        The caller's ``progress`` argument; see :func:`progress_enabled`.
    unit
        Word after the ``done/total`` counter (``"files"``, ``"tasks"``...).
    file
        The stream to draw on (default: standard error).

    Notes
    -----
    :meth:`advance` and :meth:`update` may be called from any thread. A bar opened while
    another is shown adds a line to the same display and removes it when it closes.
    """

    def __init__(
        self,
        description: str,
        total: float | None = None,
        *,
        enabled: object = True,
        unit: str = "",
        file: IO[str] | None = None,
    ) -> None:
        self.description = description
        self.total = total
        self.unit = unit
        self.enabled = progress_enabled(enabled, file)
        self._file = file
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._nested = False
        self.completed = 0.0

    @property
    def active(self) -> bool:
        """Whether the bar is being drawn."""
        return self._progress is not None

    def __enter__(self) -> ProgressBar:
        global _shared, _users
        if not self.enabled:
            return self
        with _lock:
            if _shared is None:
                _shared = _new_progress(self._file)
                _shared.start()
            else:
                self._nested = True
            _users += 1
            self._progress = _shared
            self._task = _shared.add_task(self.description, total=self.total, unit=self.unit)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        global _shared, _users
        if self._progress is None or self._task is None:
            return
        with _lock:
            if exc_type is None and self.total is None:
                # an indeterminate bar that finished: show it as complete
                self._progress.update(self._task, total=1, completed=1)
            if self._nested:
                self._progress.remove_task(self._task)
            _users -= 1
            if _users == 0 and _shared is not None:
                _shared.stop()
                _shared = None
            self._progress = None
            self._task = None

    def advance(self, steps: float = 1) -> None:
        """Mark ``steps`` more steps as done."""
        self.completed += steps
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, advance=steps)

    def update(
        self,
        *,
        total: float | None = None,
        completed: float | None = None,
        description: str | None = None,
        refresh: bool = False,
    ) -> None:
        """Change the total, the number of completed steps, or the description.

        ``refresh`` draws the change at once instead of at the next tick.
        """
        if total is not None:
            self.total = total
        if completed is not None:
            self.completed = completed
        if description is not None:
            self.description = description
        if self._progress is not None and self._task is not None:
            self._progress.update(
                self._task,
                total=total,
                completed=completed,
                description=description,
                refresh=refresh,
            )


def track(
    iterable: Iterable[T],
    description: str,
    *,
    total: float | None = None,
    enabled: object = True,
    unit: str = "",
) -> Iterator[T]:
    """Yield the items of ``iterable``, advancing a bar after each one.

    Parameters
    ----------
    iterable
        The items.
    description
        Text in front of the bar.
    total
        Number of items (default: ``len(iterable)`` when it has a length).
    enabled
        The caller's ``progress`` argument.
    unit
        Word after the counter.

    Yields
    ------
    object
        The items of ``iterable``.
    """
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    with ProgressBar(description, total, enabled=enabled, unit=unit) as bar:
        for item in iterable:
            yield item
            bar.advance()
