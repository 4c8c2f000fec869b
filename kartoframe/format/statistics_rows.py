"""Which rows of statistics files a reader uses (pure: no I/O).

A header's statistics are its reference's files (base, then deltas; see
:class:`kartoframe.format.statistics.StatisticsRef`): :func:`live_statistics` picks the
rows readers use, :func:`groups_holding` the row groups of a file that can hold the rows
of given labels, :func:`rows_of` the row describing each of a read's files.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.header_partitions import PatchedPartitions

__all__ = ["groups_holding", "kept_rows", "live_statistics", "rows_of"]


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


def rows_of(
    statistics: pa.Table, labels: Sequence[str], keys: Sequence[str | None]
) -> list[int | None]:
    """The row of ``statistics`` describing each file: the first row with its label,
    if that row's data file key is the file's ``keys`` entry (None: not described, or
    described for another data file). Live statistics hold one row a label.

    One hashed lookup of the labels in Arrow: a read keeping 249 of 10,000 files looks
    them up without converting the 10,000 labels and keys to Python.
    """
    if statistics.num_rows == 0 or not labels:
        return [None] * len(labels)
    value_set = statistics.column("label").combine_chunks()
    at = pc.index_in(pa.array(labels, type=value_set.type), value_set=value_set)
    found = statistics.column("key").take(at).to_pylist()
    return [
        i if i is not None and k is not None and k == want else None
        for i, k, want in zip(at.to_pylist(), found, keys, strict=True)
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
