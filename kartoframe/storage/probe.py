"""Reads for :func:`kartoframe.check_dataset`: many files at once, each failure kept.

A check must go on after a file fails to read, so these functions return the error of
each key in place of its content instead of raising the first one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from kartoframe.format.arrow_memory import reader
from kartoframe.storage.io_map import thread_map
from kartoframe.storage.store import Store

__all__ = [
    "FOOTER_GUESS",
    "PROBE_ERRORS",
    "fetch_many",
    "read_data_files",
    "read_footer_tail",
    "read_footers",
]

T = TypeVar("T")

#: Failures a probe reports per key: missing (``FileNotFoundError``), store failures
#: (``StorageError``), undecodable bytes (``ArrowInvalid`` and friends).
PROBE_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, pa.ArrowException)


def _each(
    keys: Sequence[str], fn: Callable[[str], T], max_workers: int
) -> dict[str, T | BaseException]:
    def _one(key: str) -> T | BaseException:
        try:
            return fn(key)
        except PROBE_ERRORS as e:
            return e

    return dict(zip(keys, thread_map(_one, keys, max_workers)))


#: Bytes of the first read at the end of a Parquet object: the footers of data files
#: (the schema and the row groups' statistics) are almost always smaller.
FOOTER_GUESS = 64 * 1024


def read_footer_tail(store: Store, key: str) -> pq.FileMetaData:
    """The Parquet footer of one object from its last bytes.

    One suffix-range request (``bytes=-65536`` on object stores: no size lookup first),
    and a second one only if the footer is larger than that.
    """
    path = store.path(key)

    def _tail(n: int) -> bytes:
        data = store.fs.cat_file(path, start=-n)
        return data if isinstance(data, bytes) else bytes(data)

    tail = store.with_retry("read footer", key, lambda: _tail(FOOTER_GUESS))
    if len(tail) >= FOOTER_GUESS and tail[-4:] == b"PAR1":
        need = int.from_bytes(tail[-8:-4], "little") + 8
        if need > len(tail):
            tail = store.with_retry("read footer", key, lambda: _tail(need))
    return pq.ParquetFile(reader(tail)).metadata


def read_footers(
    store: Store, keys: Sequence[str], *, max_workers: int = 16
) -> dict[str, pq.FileMetaData | BaseException]:
    """The Parquet footer of each key (read concurrently), or its read error."""
    return _each(keys, lambda k: read_footer_tail(store, k), max_workers)


def fetch_many(
    store: Store, keys: Sequence[str], *, max_workers: int = 8
) -> dict[str, bytes | BaseException | None]:
    """The bytes of each key (None: it does not exist), or its read error."""
    return _each(keys, store.get_or_none, max_workers)


def read_data_files(
    store: Store,
    keys: Sequence[str],
    reduce: Callable[[pa.Table], T],
    *,
    max_workers: int = 4,
) -> dict[str, T | BaseException]:
    """Each Parquet object decoded in full (every data page) and reduced, or its error.

    Only ``reduce(table)`` is kept, so memory holds a few files at a time.
    """

    def _read(key: str) -> T:
        return reduce(pq.ParquetFile(reader(store.get(key))).read(use_threads=False))

    return _each(keys, _read, max_workers)
