"""asv benchmarks of kartoframe (peers are compared by ``asv_benchmarks/compare.py``).

Importing this package (asv does so in its benchmark server before forking the benchmark
processes) applies the allocator settings the comparison harness uses, makes the sibling
modules ``datagen`` and ``systems`` importable, and makes ``import kartoframe`` load this
checkout.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
#: ``asv_benchmarks/``: holds ``datagen.py`` and ``systems.py``.
SUITE_DIR = _HERE.parent
#: Dataset cache shared with compare.py (keys differ by size, so nothing collides).
DATA_DIR = SUITE_DIR.parent / "bench-data" / "asv"

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4


def _allocator_hygiene() -> None:
    """Keep freed memory mapped, like compare.py's re-exec with ``MALLOC_*`` variables.

    asv starts the interpreter itself, so the glibc settings are applied with ``mallopt``
    (same effect as ``MALLOC_MMAP_MAX_=0`` and a huge ``MALLOC_TRIM_THRESHOLD_``) and
    ``MIMALLOC_PURGE_DELAY=-1`` is put in the environment before pyarrow (whose default
    memory pool is mimalloc) is loaded. Variables already set by the caller win.
    """
    if "MIMALLOC_PURGE_DELAY" not in os.environ and "pyarrow" not in sys.modules:
        os.environ["MIMALLOC_PURGE_DELAY"] = "-1"
    if "MALLOC_MMAP_MAX_" in os.environ and "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(_M_MMAP_MAX, 0)
        libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1)  # mallopt takes an int: ~2 GiB
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass


_allocator_hygiene()
if str(SUITE_DIR) not in sys.path:
    sys.path.insert(0, str(SUITE_DIR))

import systems  # noqa: E402  (needs SUITE_DIR on sys.path)

systems.use_checkout_kartoframe()
