"""Progress bars for long operations: drawn on a terminal, silent everywhere else.

Long library calls take an opt-in ``progress=True`` (for example
:func:`kartoframe.read_table`, :func:`kartoframe.build_dataset_indices`,
:func:`kartoframe.copy_dataset`); the ``kartoframe`` command line shows bars by default.
A bar is drawn (with `rich <https://rich.readthedocs.io>`_, on standard error) only when
standard error is a terminal or a Jupyter notebook: in logs, pipes, CI and tests nothing is
written, so ``progress=True`` is always safe to pass.

Bars opened while another one is shown (a library call with ``progress=True`` inside a
command that shows its own bar, or dask tasks) join the same display as extra lines.

For dask computations use :func:`dask_progress` around ``compute()`` (local schedulers:
threads, processes, synchronous). With a ``dask.distributed`` client use
``distributed.progress`` or the dashboard instead.

Examples
--------
>>> from kartoframe.progress import ProgressBar, track
>>> with ProgressBar("copying", total=3) as bar:   # silent here: not a terminal
...     for _ in range(3):
...         bar.advance()
>>> sum(track(range(4), "summing"))
6
"""

from __future__ import annotations

from typing import Any

# The public front of the progress bars, at the api rank: the bar itself is the low-level
# utility ``kartoframe._progress_bar`` (usable from every layer, it imports nothing of
# kartoframe); the dask callback lives in the execution layer and is imported only when
# asked for (importing kartoframe does not import dask).
from kartoframe._progress_bar import ENV_DISABLE as ENV_DISABLE
from kartoframe._progress_bar import ProgressBar, progress_enabled, track

__all__ = ["ProgressBar", "dask_progress", "progress_enabled", "track"]


def dask_progress(description: str = "dask", *, enabled: object = True) -> Any:
    """A dask callback that draws a bar of finished tasks for each ``compute()``.

    Use it as a context manager (``with dask_progress(): ddf.compute()``) or call its
    ``register()`` method to show bars for every computation. It works with dask's local
    schedulers (threads, processes, synchronous); computations on a ``dask.distributed``
    client do not call local callbacks.

    Parameters
    ----------
    description
        Text in front of the bar.
    enabled
        The caller's ``progress`` argument (bars are drawn only on a terminal).

    Returns
    -------
    dask.callbacks.Callback

    Examples
    --------
    >>> import dask
    >>> from kartoframe.progress import dask_progress
    >>> with dask_progress("summing"):
    ...     int(dask.delayed(sum)([1, 2, 3]).compute(scheduler="threads"))
    6
    """
    from kartoframe.execution.dask_progress import DaskProgressCallback

    return DaskProgressCallback(description, enabled=enabled)
