"""The process's transparent-huge-page flag (Linux), for jobs that stream data through
Arrow.

pyarrow's default allocator (mimalloc 3, with pyarrow 26) advises its memory for
transparent huge pages. A 2 MiB page counts whole in the process's RSS however little of
it is live, and where the kernel compacts memory to find one (THP ``defrag`` set to
``madvise`` or ``always`` on a fragmented machine) its first touch stalls. The flag
(``prctl(PR_SET_THP_DISABLE)``) turns them off for the memory the process touches from
then on, in every library and thread, and for the processes it starts.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["KEEP_HUGE_PAGES_ENV", "disable_transparent_huge_pages", "huge_pages_off"]

#: ``prctl`` options of Linux (``<linux/prctl.h>``): set and read the process's
#: "no transparent huge pages" flag
_PR_SET_THP_DISABLE = 41
_PR_GET_THP_DISABLE = 42

#: Environment variable: set to ``1`` and kartoframe's maintenance jobs leave the
#: process's huge-page flag alone (:func:`huge_pages_off` does nothing).
KEEP_HUGE_PAGES_ENV = "KARTOFRAME_KEEP_HUGE_PAGES"


def disable_transparent_huge_pages() -> bool:
    """Stop the kernel from giving this process transparent huge pages (Linux), for good.

    On the benchmark machine a fresh process's first read of 10M rows took 2.3-4.0 s
    instead of 1.3 s in the huge-page mode, and an ``optimize`` grew RSS by 1.9-2.05x its
    largest partition instead of 1.4-1.75x (``docs/benchmarks.md``). Setting
    ``MIMALLOC_ALLOW_THP=0`` does the same for mimalloc, but only before pyarrow is
    imported; this works at any time.

    The flag holds for the memory the process touches from then on, for every library in
    it, and for the processes it starts. kartoframe sets it on its own only while an
    ``optimize`` runs (:func:`huge_pages_off`); call this at the start of a job or in a
    dask worker's setup to have it for everything.

    Returns
    -------
    bool
        True if the flag is set; False where it cannot be (not Linux, or the kernel
        refused).
    """
    global _disabled_for_good
    with _scope_lock:
        done = _prctl(_PR_SET_THP_DISABLE, 1) == 0
        _disabled_for_good = _disabled_for_good or done
    return done


def _prctl(option: int, arg: int) -> int | None:
    """``prctl(option, arg, 0, 0, 0)``; None where there is no ``prctl`` (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0))
    except (OSError, AttributeError):
        return None


_scope_lock = threading.Lock()
#: scopes of :func:`huge_pages_off` open in this process (threads), and whether the
#: outermost one set the flag (so the last one to leave clears it)
_scope_depth = 0
_scope_set_flag = False
#: :func:`disable_transparent_huge_pages` was called: no scope clears the flag
_disabled_for_good = False


@contextmanager
def huge_pages_off() -> Iterator[None]:
    """Within: the process's new memory comes in 4 KiB pages (Linux's THP flag set);
    after: the flag as it was.

    For the maintenance jobs (``optimize``) that stream a partition's files through
    Arrow: pyarrow's allocator (mimalloc 3) advises its memory for transparent huge
    pages, and a 2 MiB page counts whole in the RSS however little of it is live. Their
    peak RSS on the benchmark's 16.6 MiB partition: 2.14-2.18x it with huge pages,
    1.44-1.50x without, in the same time (``docs/benchmarks.md``, run 26). The flag is
    the process's: while a scope is open, every thread's new memory is in small pages,
    and a process started then inherits it. Scopes nest and may overlap across threads:
    the flag is cleared when the last one closes, unless it was set before the first one
    (by the user, or :func:`disable_transparent_huge_pages`). With
    ``KARTOFRAME_KEEP_HUGE_PAGES=1`` in the environment the flag is left alone.
    """
    global _scope_depth, _scope_set_flag
    with _scope_lock:
        if _scope_depth == 0:
            keep = os.environ.get(KEEP_HUGE_PAGES_ENV, "") not in ("", "0")
            _scope_set_flag = (
                not keep
                and _prctl(_PR_GET_THP_DISABLE, 0) == 0
                and _prctl(_PR_SET_THP_DISABLE, 1) == 0
            )
        _scope_depth += 1
    try:
        yield
    finally:
        with _scope_lock:
            _scope_depth -= 1
            if _scope_depth == 0 and _scope_set_flag:
                if not _disabled_for_good:
                    _prctl(_PR_SET_THP_DISABLE, 0)
                _scope_set_flag = False
