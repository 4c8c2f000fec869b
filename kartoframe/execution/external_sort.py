"""Sorting more rows than a job should hold: sorted runs spilled to the local disk, merged.

``optimize`` with ``sort_by`` sorts each rewrite unit (a partition's files). A unit
sorted in memory costs the unit, its sorted copy and the indices; a large partition would
take the worker's memory (delta-rs users report z-order running out of it). Here the
unit's rows come a few files at a time (:func:`spill_sorted_runs`): each batch is sorted
and written to a spill file, and :func:`SortedRuns.merged` merges the files back with
:func:`kartoframe.format.sorted_merge.merge_sorted`, a small batch of each at a time.

The order is exactly the in-memory one (:func:`kartoframe.format.clustering.sort_table`
of all the rows): a stable sort, ties in input order. A z-order ranks each column by its
distinct values in the *whole* unit (:class:`~kartoframe.format.clustering.DistinctValues`):
:func:`spilled_with_distinct` reads the batches once, spilling them as they are while it
gathers those values, so every batch then gets the codes the whole unit would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pyarrow as pa

from kartoframe.errors import InvalidInputError
from kartoframe.format.arrow_memory import release_unused_memory
from kartoframe.format.clustering import (
    SORT_METHODS,
    DistinctValues,
    SortMethod,
    sorted_columns,
    zorder_codes,
)
from kartoframe.format.sorted_merge import merge_sorted
from kartoframe.storage.spill import SpillFolder

__all__ = [
    "MERGE_BATCH_BYTES",
    "DistinctAccumulator",
    "SortedRuns",
    "spill_sorted_runs",
    "spilled_with_distinct",
]

#: The merge reads each spilled run about this many bytes (Arrow) at a time: it holds one
#: such batch of every run and at most as many rows held back.
MERGE_BATCH_BYTES = 256 * 2**10
#: The z-order code column a run carries while it is sorted and merged.
_CODE = "__kartoframe_zorder"


class DistinctAccumulator:
    """The distinct values of some columns over tables added one at a time.

    Each table's distinct values are kept and united with the values so far once they
    outnumber them (uniting every table as it comes would sort the growing set again
    for every table; uniting only at the end would hold every table's values at once).
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._names = tuple(names)
        self._parts: list[list[DistinctValues]] = [[] for _ in names]

    def add(self, table: pa.Table) -> None:
        """Take the distinct values of ``table``'s columns (it holds at least those)."""
        for seen, c in zip(self._parts, self._names, strict=True):
            seen.append(DistinctValues.of(table.column(c)))
            if len(seen) > 1 and sum(len(p.values) for p in seen[1:]) > len(seen[0].values):
                # the parts since the last union outgrew it: unite them (each value is
                # sorted O(log) times, and memory holds at most about twice the result)
                seen[:] = [DistinctValues.union_of(seen)]

    def result(self) -> list[DistinctValues]:
        """The distinct values of every table added, one per column."""
        return [DistinctValues.union_of(seen) for seen in self._parts]


def spilled_with_distinct(
    tables: Iterable[pa.Table], names: Sequence[str], spill: SpillFolder
) -> tuple[Iterator[pa.Table], list[DistinctValues]]:
    """Spill ``tables`` as they are while gathering the distinct values of ``names``;
    the tables read back (each spill file removed once read) and those values.

    A z-order of tables that arrive one at a time needs the distinct values of them all
    before the first is ranked: reading them once and keeping them on the local disk is
    faster than decoding their Parquet files twice.
    """
    seen = DistinctAccumulator(names)
    paths = []
    for table in tables:
        seen.add(table)
        paths.append(spill.write([table], batch_rows=max(1, table.num_rows)))
        del table

    def back() -> Iterator[pa.Table]:
        for path in paths:  # one table as it was spilled (each chunk is a batch there)
            batches = list(spill.read(path))
            if batches:
                yield pa.concat_tables(batches)
            del batches
            spill.discard(path)

    return back(), seen.result()


@dataclasses.dataclass(frozen=True)
class SortedRuns:
    """Sorted runs in spill files: their rows in order, with :meth:`merged`."""

    spill: SpillFolder
    paths: tuple[Path, ...]
    keys: tuple[str, ...]
    rows: int
    #: Columns the runs carry for the sort only (the z-order code), dropped on the way out.
    extra: tuple[str, ...] = ()

    def merged(self) -> Iterator[pa.Table]:
        """Every row of the runs, in order (see :func:`merge_sorted`), as tables."""
        for table in merge_sorted([self.spill.read(p) for p in self.paths], self.keys):
            yield table.drop_columns(list(self.extra)) if self.extra else table


def spill_sorted_runs(
    batches: Iterable[pa.Table],
    sort_by: Sequence[str],
    method: SortMethod,
    spill: SpillFolder,
    *,
    distinct: Sequence[DistinctValues] | None = None,
    merge_batch_bytes: int = MERGE_BATCH_BYTES,
) -> SortedRuns:
    """Sort each of ``batches`` and write it to a spill file of ``spill``, one at a time.

    Parameters
    ----------
    batches
        The rows to sort, in input order (ties keep it).
    sort_by, method
        The order (as :func:`kartoframe.format.clustering.sort_indices`).
    spill
        Where the runs go (the caller closes it after the merge).
    distinct
        For a z-order: the distinct values of ``sort_by`` over *all* the batches
        (:func:`spilled_with_distinct`).
    merge_batch_bytes
        How much of each run the merge holds at a time.
    """
    code = ""
    keys: tuple[str, ...] = tuple(sort_by)
    if method == "zorder":
        if distinct is None:
            raise ValueError("a z-order of batches needs the distinct values of all of them")
        code = _CODE
        keys = (code,)
    elif method != "linear":
        raise InvalidInputError(f"sort_method must be one of {list(SORT_METHODS)}, got {method!r}.")
    paths: list[Path] = []
    rows = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        if code:
            codes = zorder_codes(batch, sort_by, distinct or ())
            batch = batch.append_column(code, pa.array(codes))
            del codes
        holder = [batch]
        del batch
        run = sorted_columns(holder, keys, "linear")  # stable: ties keep input order
        per_row = max(1, run.nbytes // max(1, run.num_rows))
        paths.append(spill.write([run], batch_rows=max(1024, merge_batch_bytes // per_row)))
        rows += run.num_rows
        del run
        release_unused_memory()  # the batch's pages, before the next one is read
    return SortedRuns(spill, tuple(paths), keys, rows, (code,) if code else ())
