"""Row orders that cluster a table for data skipping: lexicographic and z-order (pure).

``optimize`` sorts the rows of every file it writes so that the per-file and per-row-group
min/max statistics of the clustering columns become tight. A lexicographic (``"linear"``)
order makes the first column tight and the others less so; a z-order interleaves the bits
of the columns' ranks, so that a range on *any* of 2–4 columns selects few row groups
(the order Delta Lake's ``z_order`` uses).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError
from kartoframe.format.arrow_memory import release_unused_memory

__all__ = [
    "SORT_METHODS",
    "DistinctValues",
    "SortMethod",
    "order_record",
    "sort_indices",
    "sort_table",
    "sortable_numbers",
    "sorted_columns",
    "zorder_codes",
    "zorder_indices",
]

SortMethod = Literal["linear", "zorder"]
#: The accepted ``sort_method`` values.
SORT_METHODS: tuple[str, ...] = ("linear", "zorder")
#: Most columns a z-order interleaves (16 bits of rank each in a 64-bit code).
ZORDER_MAX_COLUMNS = 4


def order_record(sort_by: Sequence[str], method: SortMethod) -> tuple[str, ...]:
    """How an order is recorded (:mod:`kartoframe.format.optimized`): ``()`` for none."""
    return (method, *sort_by) if sort_by else ()


def sort_indices(table: pa.Table, sort_by: Sequence[str], method: SortMethod) -> pa.Array:
    """Row indices of ``table`` in ``method`` order of ``sort_by`` (nulls last; ties keep
    their input order).

    Raises
    ------
    InvalidInputError
        An unknown method, or a z-order of more than four columns.
    """
    if method == "linear":
        keys = [(c, "ascending") for c in sort_by]
        return pc.sort_indices(table, sort_keys=keys)  # nulls last: the default
    if method == "zorder":
        return pa.array(zorder_indices(table, sort_by))
    raise InvalidInputError(f"sort_method must be one of {list(SORT_METHODS)}, got {method!r}.")


def sort_table(table: pa.Table, sort_by: Sequence[str], method: SortMethod) -> pa.Table:
    """``table`` with its rows in ``method`` order of ``sort_by`` (see :func:`sort_indices`;
    the caller keeps ``table``, so both are alive: :func:`sorted_columns` when it need not).
    """
    return sorted_columns([table], sort_by, method)


def sorted_columns(holder: list[pa.Table], sort_by: Sequence[str], method: SortMethod) -> pa.Table:
    """The table in ``holder`` sorted, taking it out of ``holder`` and gathering one column
    at a time, each original column released once its sorted copy exists.

    Peak memory is the table, one column and the indices, instead of the table twice
    (:func:`sort_table`). Only works if ``holder`` has the only reference to the table.
    """
    table = holder.pop()
    if not sort_by or table.num_rows < 2:
        return table
    order = sort_indices(table, sort_by, method)
    schema = table.schema
    columns: list[pa.ChunkedArray | None] = list(table.columns)
    del table
    out = []
    for i, column in enumerate(columns):
        assert column is not None
        columns[i] = None
        out.append(column.take(order))
        del column
        release_unused_memory()  # the old column's pages, before the next copy is made
    return pa.Table.from_arrays(out, schema=schema)


def zorder_indices(table: pa.Table, columns: Sequence[str]) -> np.ndarray:
    """Row indices of ``table`` in z-order of ``columns`` (ties keep their input order).

    Each column is replaced by its dense rank (nulls after every value), scaled to
    ``64 // len(columns)`` bits; the bits of the ranks are interleaved into one code per
    row, most significant bits first, and the rows are sorted by that code
    (:func:`zorder_codes` of the whole table).
    """
    return np.argsort(zorder_codes(table, columns), kind="stable")


def _whole_ranks(column: pa.ChunkedArray) -> tuple[np.ndarray, int]:
    """The 0-based dense ranks of a whole column (nulls last) and the highest."""
    r = pc.rank(column, sort_keys="ascending", tiebreaker="dense").to_numpy()
    r = r.astype(np.uint64) - np.uint64(1)
    return r, int(r.max()) if len(r) else 0


def _zorder_columns(columns: Sequence[str]) -> Sequence[str]:
    k = len(columns)
    if not 1 <= k <= ZORDER_MAX_COLUMNS:
        raise InvalidInputError(
            f"A z-order takes 1 to {ZORDER_MAX_COLUMNS} columns, got {k}: {list(columns)}."
        )
    return columns


def sortable_numbers(column: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """A null-free column as numbers that numpy orders as Arrow does (integers, floats
    with NaN last, and dates, times and timestamps as their integers), else None.
    """
    t = column.type
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return np.asarray(column.to_numpy())
    if pa.types.is_temporal(t):
        width = pa.int32() if t.bit_width == 32 else pa.int64()
        return np.asarray(column.cast(width).to_numpy())
    return None


def _unique_numbers(numbers: np.ndarray, *, owned: bool = False) -> np.ndarray:
    """The distinct numbers, sorted (NaN last, one NaN; ``-0.0`` is ``0.0``); by sorting
    (numpy 2's hashing ``unique`` took 9.5 s for 8.6M integers here, a sort 1 s).
    ``owned``: ``numbers`` is the caller's to reorder (sorted in place, no copy).
    """
    if owned:
        numbers.sort()
        ordered = numbers
    else:
        ordered = np.sort(numbers)
    if len(ordered) < 2:
        return ordered
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    if ordered.dtype.kind == "f":
        nan = np.isnan(ordered)
        keep[1:] &= ~(nan[1:] & nan[:-1])
    return ordered[keep]


def _sorted_distinct(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The distinct values of a null-free column by comparison, sorted; by sorting, not
    hashing (Arrow's ``unique`` of 9M integers peaked at 960 MiB here).
    """
    ordered = values.take(pc.sort_indices(values))
    if isinstance(ordered, pa.ChunkedArray):
        ordered = ordered.combine_chunks()
    if len(ordered) < 2:
        return ordered
    keep = np.ones(len(ordered), dtype=bool)
    keep[1:] = np.asarray(
        pc.not_equal(ordered.slice(1), ordered.slice(0, len(ordered) - 1)).to_numpy(
            zero_copy_only=False
        )
    )
    return ordered.filter(pa.array(keep))


@dataclasses.dataclass(frozen=True)
class DistinctValues:
    """The distinct non-null values of a column by comparison (sorted), and whether it
    has nulls: what ranks its values densely when the column is seen a part at a time.

    The dense rank of a value is its position among the distinct values (``-0.0`` is
    ``0.0``, NaN after every number), nulls after every value: the rank
    ``pyarrow.compute.rank(..., tiebreaker="dense")`` gives the whole column. Numbers,
    dates and timestamps are held as a numpy array and found by binary search; other
    types (strings, decimals, booleans) as an Arrow array and ranked by a sort.
    """

    values: pa.Array | np.ndarray
    has_null: bool

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray) -> DistinctValues:
        """The distinct values of ``column``."""
        present = pc.drop_null(column)
        numbers = sortable_numbers(present)
        if numbers is not None:
            return cls(_unique_numbers(numbers), column.null_count > 0)
        return cls(_sorted_distinct(present), column.null_count > 0)

    @classmethod
    def union_of(cls, parts: Sequence[DistinctValues]) -> DistinctValues:
        """The distinct values of all the parts' rows (no parts: no values, no nulls)."""
        if not parts:
            return cls(np.zeros(0, dtype=np.int64), False)
        has_null = any(p.has_null for p in parts)
        if isinstance(parts[0].values, np.ndarray):
            joined = np.concatenate([p.values for p in parts])
            return cls(_unique_numbers(joined, owned=True), has_null)
        joined = pa.chunked_array([p.values for p in parts], type=parts[0].values.type)
        return cls(_sorted_distinct(joined), has_null)

    @property
    def high(self) -> int:
        """The highest rank: that of null if the column has nulls."""
        return len(self.values) if self.has_null else max(len(self.values) - 1, 0)

    def ranks(self, column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
        """The 0-based dense ranks of ``column``'s values (all among :attr:`values`, or
        null), and the highest rank any value of the whole column has.

        Raises
        ------
        ValueError
            ``column`` holds a value that :attr:`values` does not (a caller's mistake).
        """
        n = len(self.values)
        null = np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False))
        ranks = np.full(len(column), n, dtype=np.int64)  # nulls rank last
        present = pc.drop_null(column)
        if isinstance(self.values, np.ndarray):
            wanted = sortable_numbers(present)
            assert wanted is not None
            # an equal value's place; needles in order search a large array far faster
            # (its cache lines are visited once, in order)
            order = np.argsort(wanted)
            where = np.empty(len(wanted), dtype=np.int64)
            where[order] = np.searchsorted(self.values, wanted[order])
            inside = np.minimum(where, max(n - 1, 0))
            found = (where < n) & (self.values[inside] == wanted) if n else where < 0
            if pa.types.is_floating(column.type) and n:
                found |= np.isnan(wanted) & np.isnan(self.values[-1])
            if not found.all():
                raise ValueError("a value the distinct values do not hold")
        else:
            # the dense rank among the distinct values and the column's own values
            both = pa.chunked_array([self.values, *_chunks(present)], type=self.values.type)
            dense = pc.rank(both, sort_keys="ascending", tiebreaker="dense").to_numpy()
            if len(both) and int(dense.max()) > n:
                raise ValueError("a value the distinct values do not hold")
            where = dense[n:].astype(np.int64) - 1
        ranks[~null] = where
        return ranks.astype(np.uint64), self.high


def _chunks(column: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(column.chunks) if isinstance(column, pa.ChunkedArray) else [column]


def zorder_codes(
    table: pa.Table, columns: Sequence[str], distinct: Sequence[DistinctValues] | None = None
) -> np.ndarray:
    """The z-order code of each row of ``table`` (``uint64``; see :func:`zorder_indices`).

    Without ``distinct`` each column is ranked among its values in ``table``. With it,
    column ``columns[i]`` is ranked by ``distinct[i]``: the distinct values of the
    column's rows in *every* part, so that the codes of a table seen in parts are those
    of the whole.
    """
    k = len(_zorder_columns(columns))
    bits = 64 // k
    top = np.uint64((1 << bits) - 1)
    codes = np.zeros(table.num_rows, dtype=np.uint64)
    ranks = []
    for i, c in enumerate(columns):
        r, high = (
            _whole_ranks(table.column(c))
            if distinct is None
            else distinct[i].ranks(table.column(c))
        )
        if high > top:  # more distinct values than the bits hold: keep the top bits
            r = (r.astype(np.float64) * (float(top) / float(high))).astype(np.uint64)
        ranks.append(r)
    for b in range(bits - 1, -1, -1):
        for j, r in enumerate(ranks):
            codes |= ((r >> np.uint64(b)) & np.uint64(1)) << np.uint64(b * k + (k - 1 - j))
    return codes
