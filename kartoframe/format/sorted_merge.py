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

__all__ = ["merge_sorted"]


def _next_rows(run: Iterator[pa.Table]) -> pa.Table | None:
    """The run's next non-empty table, or None once it has no more."""
    for table in run:
        if table.num_rows:
            return table
    return None


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
    next table of every run whose current one is all emitted, sorts the *key columns* of
    what is left of every current table, and emits every row up to the smallest last
    row of the current tables: no later row of any run can sort before it. The emitted
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
        ends = np.cumsum([t.num_rows for t in tables])
        rows = int(ends[-1])
        # the key columns only; sort_indices is stable, so ties keep the tables' order
        # (run order, then order within the run)
        key_table = pa.concat_tables([t.select(list(keys)) for t in tables])
        order = pc.sort_indices(key_table, sort_keys=[(k, "ascending") for k in keys]).to_numpy()
        del key_table
        where = np.empty_like(order)
        where[order] = np.arange(rows, dtype=order.dtype)
        # a run's last row read bounds every later row of that run; the smallest bound
        # of the runs that may have more is where this round stops
        cut = min(int(where[ends[j] - 1]) for j in range(len(live))) + 1
        emitted = order[:cut]
        yield pa.concat_tables(tables).take(emitted)
        taken = np.bincount(np.searchsorted(ends, emitted, side="right"), minlength=len(live))
        for j, i in enumerate(live):
            left = tables[j].num_rows - int(taken[j])
            if left:
                current[i] = tables[j].slice(int(taken[j]))
            else:
                del current[i]
        del tables, order, where, emitted
        release_unused_memory()  # the round's copies: the next round reuses no sizes
