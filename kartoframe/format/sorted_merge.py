"""Merging sorted runs of rows into one sorted stream, a few batches at a time (pure).

An external sort (:mod:`kartoframe.execution.external_sort`) sorts a large set of rows
as runs that each fit in memory, then merges them with :func:`merge_sorted`. The merge
holds one batch of each run and the rows not yet safe to emit, never the whole set.

The result is the order a *stable* sort of all rows (the runs one after another) gives:
rows that tie on the keys come in run order, then in their order within a run. So an
external sort equals :func:`kartoframe.format.clustering.sort_table` of the same rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.arrow_memory import release_unused_memory
from kartoframe.format.clustering import sortable_numbers

__all__ = ["merge_sorted"]


def _next_rows(run: Iterator[pa.Table]) -> pa.Table | None:
    """The run's next non-empty table, or None once it has no more."""
    for table in run:
        if table.num_rows:
            return table
    return None


def _numeric_cut(tables: Sequence[pa.Table], key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """One round on a single numeric key without nulls: how many leading rows of each
    table go out, and their order (a stable sort of those rows only); None where the
    key is not such a column.

    The bound is the smallest ``(last key, run)`` of the tables: a row goes out if its
    key is smaller, or equal and its run is not after the bound's run (stable order).
    """
    columns = [t.column(key) for t in tables]
    if any(c.null_count for c in columns):
        return None
    numbers: list[np.ndarray] = []
    for column in columns:
        found = sortable_numbers(column)
        if found is None:
            return None
        numbers.append(found)
    lasts = [n[-1] for n in numbers]
    first = min(range(len(lasts)), key=lambda j: (_order_key(lasts[j]), j))
    bound = lasts[first]
    counts = np.array(
        [
            np.searchsorted(n, bound, side="right" if j <= first else "left")
            for j, n in enumerate(numbers)
        ]
    )
    keys = np.concatenate([n[:c] for n, c in zip(numbers, counts, strict=True)])
    return counts, np.argsort(keys, kind="stable")


def _order_key(value: object) -> tuple[bool, object]:
    """Sorts numbers as numpy does: NaN after every number."""
    nan = isinstance(value, float | np.floating) and bool(np.isnan(value))
    return (nan, 0.0 if nan else value)


def _general_cut(tables: Sequence[pa.Table], keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """One round on any keys: sort the key columns of every table (stable), cut at the
    smallest last row; the leading rows of each table that go out, and their order.
    """
    ends = np.cumsum([t.num_rows for t in tables])
    key_table = pa.concat_tables([t.select(list(keys)) for t in tables])
    order = pc.sort_indices(key_table, sort_keys=[(k, "ascending") for k in keys])
    order = order.to_numpy().astype(np.int64)
    where = np.empty_like(order)
    where[order] = np.arange(len(order), dtype=order.dtype)
    cut = min(int(where[end - 1]) for end in ends) + 1
    emitted = order[:cut]
    table_of = np.searchsorted(ends, emitted, side="right")
    counts = np.bincount(table_of, minlength=len(tables))
    # the emitted rows of each table are a prefix of it: renumber them as the prefixes'
    # concatenation
    starts = np.concatenate([[0], ends[:-1]])
    before = np.concatenate([[0], np.cumsum(counts)[:-1]])
    return counts, emitted - starts[table_of] + before[table_of]


def merge_sorted(runs: Sequence[Iterable[pa.Table]], keys: Sequence[str]) -> Iterator[pa.Table]:
    """The rows of ``runs`` in ascending order of ``keys`` (nulls last), as tables.

    Parameters
    ----------
    runs
        Each yields tables (one schema for all) whose rows, one table after another,
        are in ascending order of ``keys`` with nulls last (the order
        ``pyarrow.compute.sort_indices`` gives).
    keys
        The columns the runs are sorted by.

    Yields
    ------
    pyarrow.Table
        The rows in order, with the runs' columns. Ties keep run order, then the order
        within a run: the order of a stable sort of the runs' rows one after another.

    Notes
    -----
    Each run has a current table, of which a prefix has been emitted. A round takes the
    next table of every run whose current one is all emitted and emits every row up to
    the smallest last row of the current tables: no later row of any run can sort
    before it. With one numeric key (a z-order code, a number, a date) and no nulls the
    bound is found by binary search and only the emitted rows are sorted, so each row is
    sorted once; otherwise the key columns of all current tables are sorted. The emitted
    rows of each run are a prefix of what was left, so only they are copied (one
    ``take``), once. Memory holds one table of each run and the rows one round emits.
    """
    iters = [iter(r) for r in runs]
    unread = set(range(len(iters)))  # runs that may have more tables
    current: dict[int, pa.Table] = {}  # run -> its table, what is left of it
    while True:
        for i in sorted(unread - current.keys()):
            table = _next_rows(iters[i])
            if table is None:
                unread.discard(i)
            else:
                current[i] = table
        if not current:
            return
        live = sorted(current)
        tables = [current[i] for i in live]
        cut = _numeric_cut(tables, keys[0]) if len(keys) == 1 else None
        counts, order = cut if cut is not None else _general_cut(tables, keys)
        heads = [t.slice(0, int(c)) for t, c in zip(tables, counts, strict=True)]
        yield pa.concat_tables(heads).take(order)
        for j, i in enumerate(live):
            if counts[j] < tables[j].num_rows:
                current[i] = tables[j].slice(int(counts[j]))
            else:
                del current[i]
        del tables, heads, order
        release_unused_memory()  # the round's copies: the next round reuses no sizes
