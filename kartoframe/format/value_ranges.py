"""Ranges that prove a row filter true for every row of a file. Pure functions.

A read with a row filter usually needs Arrow's dataset scan, which evaluates the filter
on every row. When a file's own statistics (the Parquet footer's per row group ``min``,
``max`` and ``null_count``) show that **every** row satisfies the filter, the file can be
read without it: the rows are the same. This is common in cube queries and selective
reads: a condition on a column that is constant in a file (an index column coarser than
the partitioning, a date range covering whole daily files).

A :class:`ValueRange` states "every value of ``column`` lies between ``low`` and ``high``
and none is null"; a conjunction of ranges is what one AND of a filter's literals says.
Only kinds whose footer statistics are exact and ordered like Python values are given
ranges by the planner: integers and dates (any bounds), strings (equality only: proven
by ``min == max == value``, which holds whatever byte order a writer used). Floats never
are (a footer's ``null_count`` does not count NaN, which kartoframe's filters treat as
null). Anything unknown (no statistics, a null count missing or above zero, values of
another kind) proves nothing, and the caller keeps the filter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow.parquet as pq

__all__ = ["ValueRange", "footer_statistics", "range_holds", "ranges_hold"]

#: One column chunk's footer statistics: ``(min, max, null_count)``; None where unknown
RowGroupStatistics = tuple[Any, Any, int | None]


@dataclasses.dataclass(frozen=True, slots=True)
class ValueRange:
    """Every value of ``column`` is within the bounds and none is null.

    A bound of None is open. ``exact`` ranges (strings) are proven only by statistics
    whose ``min`` and ``max`` both equal ``low`` (with ``low == high``).
    """

    column: str
    low: Any = None
    high: Any = None
    low_inclusive: bool = True
    high_inclusive: bool = True
    exact: bool = False

    def contains(self, value: Any) -> bool:
        """Whether ``value`` (not null) is within the bounds; False if not comparable."""
        if value is None:
            return False
        try:
            if self.low is not None and (
                value < self.low or (value == self.low and not self.low_inclusive)
            ):
                return False
            if self.high is not None and (
                value > self.high or (value == self.high and not self.high_inclusive)
            ):
                return False
        except TypeError:
            return False
        return type(value) is type(self.low if self.low is not None else self.high)


def footer_statistics(
    md: pq.FileMetaData, columns: Iterable[str]
) -> list[dict[str, RowGroupStatistics]]:
    """Per row group of a Parquet footer, ``column -> (min, max, null_count)`` of the
    (top-level) ``columns`` whose chunk has bounds; a null count the footer lacks is None.
    """
    names = set(columns)
    out: list[dict[str, RowGroupStatistics]] = []
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        found: dict[str, RowGroupStatistics] = {}
        for j in range(rg.num_columns):
            chunk = rg.column(j)
            if chunk.path_in_schema not in names:
                continue
            st = chunk.statistics
            if st is not None and st.has_min_max:
                found[chunk.path_in_schema] = (
                    st.min,
                    st.max,
                    st.null_count if st.has_null_count else None,
                )
        out.append(found)
    return out


def range_holds(r: ValueRange, minimum: Any, maximum: Any, null_count: int | None) -> bool:
    """Whether statistics (``min``, ``max``, ``null_count`` of a row group) prove ``r`` for
    every row. Unknown statistics (None) prove nothing.
    """
    if null_count is None or null_count != 0 or minimum is None or maximum is None:
        return False
    if r.exact:
        return bool(minimum == r.low and maximum == r.low and type(minimum) is type(r.low))
    try:
        if maximum < minimum:
            return False  # not trustworthy
    except TypeError:
        return False
    return r.contains(minimum) and r.contains(maximum)


def ranges_hold(
    conjunctions: Sequence[Sequence[ValueRange]],
    values: dict[str, Any],
    statistics: Iterable[dict[str, RowGroupStatistics]],
) -> bool:
    """Whether one of ``conjunctions`` holds for every row of a file.

    ``values`` are the file's constant columns (partition values from its key);
    ``statistics`` gives, per row group, ``column -> (min, max, null_count)``
    (:func:`footer_statistics`). A file
    without row groups has no row, so any conjunction holds.
    """
    groups = list(statistics)
    return any(all(_holds(r, values, groups) for r in conj) for conj in conjunctions)


def _holds(r: ValueRange, values: dict[str, Any], groups: list[dict[str, Any]]) -> bool:
    if r.column in values:
        return r.contains(values[r.column])
    for stats in groups:
        found = stats.get(r.column)
        if found is None or not range_holds(r, *found):
            return False
    return True
