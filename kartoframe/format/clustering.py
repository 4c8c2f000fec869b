"""Row orders that cluster a table for data skipping: lexicographic and z-order (pure).

``optimize`` sorts the rows of every file it writes so that the per-file and per-row-group
min/max statistics of the clustering columns become tight. A lexicographic (``"linear"``)
order makes the first column tight and the others less so; a z-order interleaves the bits
of the columns' ranks, so that a range on *any* of 2–4 columns selects few row groups
(the order Delta Lake's ``z_order`` uses).
"""

from __future__ import annotations

import dataclasses
import functools
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


@dataclasses.dataclass(frozen=True)
class DistinctValues:
    """The distinct non-null values of a column (sorted), and whether it has nulls: what
    ranks its values densely when the column is seen a part at a time.

    The dense rank of a value is its position among the distinct values by comparison
    (``-0.0`` ties with ``0.0``, NaN after every number), nulls after every value: the
    rank ``pyarrow.compute.rank(..., tiebreaker="dense")`` gives the whole column.
    """

    values: pa.Array
    has_null: bool

    @classmethod
    def of(cls, column: pa.Array | pa.ChunkedArray) -> DistinctValues:
        """The distinct values of ``column``."""
        unique = pc.unique(column).drop_null()
        return cls(unique.take(pc.sort_indices(unique)), column.null_count > 0)

    @classmethod
    def union_of(cls, parts: Sequence[DistinctValues]) -> DistinctValues:
        """The distinct values of all the parts' rows (none: no values, no nulls)."""
        if not parts:
            return cls(pa.array([], pa.null()), False)
        both = cls.of(pa.chunked_array([p.values for p in parts], type=parts[0].values.type))
        return cls(both.values, any(p.has_null for p in parts))

    @functools.cached_property
    def _lookup(self) -> tuple[np.ndarray, int]:
        """The dense rank of each of :attr:`values` and then of null; the highest rank."""
        # the values are distinct by their bits (0.0 and -0.0 are two), their ranks by
        # comparison
        value_ranks = np.zeros(0, dtype=np.uint64)
        if len(self.values):
            dense = pc.rank(self.values, sort_keys="ascending", tiebreaker="dense")
            value_ranks = dense.to_numpy().astype(np.uint64) - np.uint64(1)
        null_rank = int(value_ranks[-1]) + 1 if len(value_ranks) else 0
        high = null_rank if self.has_null else max(null_rank - 1, 0)
        return np.append(value_ranks, np.uint64(null_rank)), high

    @functools.cached_property
    def _numbers(self) -> np.ndarray | None:
        """:attr:`values` as numbers numpy orders as Arrow does (NaN last), else None."""
        t = self.values.type
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            return np.asarray(self.values.to_numpy(zero_copy_only=False))
        return None

    def _positions(self, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Where each value of ``column`` stands in :attr:`values` (an equal value:
        ``-0.0`` may find ``0.0``, which has the same rank); ``len(values)`` for null.
        """
        numbers = self._numbers
        if numbers is not None and len(numbers):
            null = np.asarray(pc.is_null(column).to_numpy(zero_copy_only=False))
            filled = pc.fill_null(column, self.values[0]) if column.null_count else column
            wanted = np.asarray(filled.to_numpy())
            where = np.searchsorted(numbers, wanted)
            inside = np.minimum(where, len(numbers) - 1)
            found = numbers[inside] == wanted
            if pa.types.is_floating(self.values.type):
                found |= np.isnan(numbers[inside]) & np.isnan(wanted)
            if not (found | null).all():
                raise ValueError("a value the distinct values do not hold")  # a caller's bug
            where[null] = len(numbers)
            return where
        positions = pc.index_in(column, value_set=self.values)
        if positions.null_count:
            unknown = pc.and_(pc.is_null(positions), pc.is_valid(column))
            if pc.any(unknown).as_py():
                raise ValueError("a value the distinct values do not hold")  # a caller's bug
            positions = pc.fill_null(positions, len(self.values))
        return np.asarray(positions.to_numpy()).astype(np.int64)

    def ranks(self, column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, int]:
        """The 0-based dense ranks of ``column``'s values (all among :attr:`values`, or
        null), and the highest rank any value of the whole column has.
        """
        lookup, high = self._lookup
        return lookup[self._positions(column)], high


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
