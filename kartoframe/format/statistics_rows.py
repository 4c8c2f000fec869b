"""Which rows of statistics files a reader uses (pure: no I/O).

A header's statistics are its reference's files (base, then deltas; see
:class:`kartoframe.format.statistics.StatisticsRef`): :func:`live_statistics` picks the
rows readers use, :func:`groups_holding` the row groups of a file that can hold the rows
of given labels.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

from kartoframe.format.header_partitions import PatchedPartitions

__all__ = ["groups_holding", "kept_rows", "live_statistics"]


def live_statistics(tables: Sequence[pa.Table], partitions: Mapping[str, str]) -> pa.Table:
    """The rows of a reference's files (base, then deltas) that readers use: for each
    label the header lists, the last row with its data file key, in header order.
    """
    table = pa.concat_tables(tables, promote_options="permissive")
    pick = {lb: i for i, lb in _live_rows(table, partitions)}  # a later row wins
    added = partitions.in_added_order(pick) if isinstance(partitions, PatchedPartitions) else None
    if added is not None:  # rows of a commit's new files only: no walk over the base
        order = [pick[lb] for lb in added]
    else:
        order = [pick[lb] for lb in partitions if lb in pick]
    return table.take(pa.array(order, type=pa.int64()))


def kept_rows(tables: Sequence[pa.Table], partitions: Mapping[str, str]) -> pa.Table:
    """The rows of statistics files (base, then deltas) whose file ``partitions`` lists
    with the same data file key, in file order: one lookup per row, none per partition.
    """
    table = pa.concat_tables(tables, promote_options="permissive")
    rows = [i for i, _ in _live_rows(table, partitions)]
    return table.take(pa.array(rows, type=pa.int64()))


def _live_rows(table: pa.Table, partitions: Mapping[str, str]) -> list[tuple[int, str]]:
    """``(row, label)`` of the rows whose label ``partitions`` lists with the row's key."""
    labels = table.column("label").to_pylist()
    keys = table.column("key").to_pylist()
    return [
        (i, lb)
        for i, (lb, k) in enumerate(zip(labels, keys, strict=True))
        if partitions.get(lb) == k
    ]


def groups_holding(bounds: Sequence[tuple[str, str] | None], labels: Iterable[str]) -> list[int]:
    """The row groups of a statistics file that may hold a row of ``labels``, from the
    label column's ``(min, max)`` per row group (None: unknown, always read). Rows are
    in header order, which for daily appends is label order: the bounds are tight.
    """
    wanted = sorted(labels)
    out = []
    for i, b in enumerate(bounds):
        if b is None:
            out.append(i)
            continue
        at = bisect.bisect_left(wanted, b[0])
        if at < len(wanted) and wanted[at] <= b[1]:
            out.append(i)
    return out
