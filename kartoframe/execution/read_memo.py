"""Reads shared by the tasks of one query: a lower-dimensional dataset read once.

A cube query's groups each join the seed's files of their partitions with every other
dataset's files of the same partitions. A dataset without the cube's partition columns
(``lowdim``: dimension ``x`` only) has the same files in every group, so each group task
would read and de-duplicate the same table again. :class:`ReadMemo` keeps such a read for
the other tasks of the same query: data files are immutable (their names are new on every
write), so the same files read with the same filter give the same table.

A memo belongs to one planned query (the dask ``GroupLoader``); it is dropped with the
graph. It is not shipped between processes: a pickled memo arrives empty, so on the worker
processes of a distributed cluster the tasks share a read only as far as they share one
unpickled copy of the loader (at worst each task reads, as without a memo).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

import pyarrow as pa

__all__ = ["MEMO_BYTES", "ReadMemo"]

#: A table larger than this is not kept (each task reads it again, as without a memo): a
#: memo must not hold a large dataset in memory for the lifetime of a dask graph.
MEMO_BYTES = 64 * 2**20


class ReadMemo:
    """Thread-safe memo of tables read by the tasks of one query.

    The first task to ask for a key reads it; tasks asking meanwhile wait for that read
    instead of starting their own. A failed read is not kept (the next task tries again).
    """

    def __init__(self, max_bytes: int = MEMO_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._tables: dict[Hashable, Future[pa.Table]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"max_bytes": self.max_bytes}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["max_bytes"])  # type: ignore[misc]

    def __len__(self) -> int:
        with self._lock:
            return len(self._tables)

    def get(self, key: Hashable, read: Callable[[], pa.Table]) -> pa.Table:
        """The table of ``key``: kept from an earlier call, or ``read()`` now."""
        with self._lock:
            found = self._tables.get(key)
            owner = found is None
            if found is None:
                found = self._tables[key] = Future()
        if not owner:
            return found.result()
        try:
            table = read()
        except BaseException as error:
            with self._lock:
                del self._tables[key]
            found.set_exception(error)
            raise
        if table.nbytes > self.max_bytes:
            with self._lock:
                del self._tables[key]  # waiting tasks still get this table
        found.set_result(table)
        return table
