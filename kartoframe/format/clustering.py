"""Row orders that cluster a table for data skipping: lexicographic and z-order (pure).

``optimize`` sorts the rows of every file it writes so that the per-file and per-row-group
min/max statistics of the clustering columns become tight. A lexicographic (``"linear"``)
order makes the first column tight and the others less so; a z-order interleaves the bits
of the columns' ranks, so that a range on *any* of 2–4 columns selects few row groups
(the order Delta Lake's ``z_order`` uses).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError
from kartoframe.format.arrow_memory import release_unused_memory

__all__ = [
    "SORT_METHODS",
    "SortMethod",
    "order_record",
    "sort_indices",
    "sort_table",
    "sorted_columns",
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
    row, most significant bits first, and the rows are sorted by that code.
    """
    k = len(columns)
    if not 1 <= k <= ZORDER_MAX_COLUMNS:
        raise InvalidInputError(
            f"A z-order takes 1 to {ZORDER_MAX_COLUMNS} columns, got {k}: {list(columns)}."
        )
    bits = 64 // k
    top = np.uint64((1 << bits) - 1)
    codes = np.zeros(table.num_rows, dtype=np.uint64)
    ranks = []
    for c in columns:
        # nulls rank last (the default placement)
        r = pc.rank(table.column(c), sort_keys="ascending", tiebreaker="dense").to_numpy()
        r = r.astype(np.uint64) - np.uint64(1)
        high = r.max() if len(r) else np.uint64(0)
        if high > top:  # more distinct values than the bits hold: keep the top bits
            r = (r.astype(np.float64) * (float(top) / float(high))).astype(np.uint64)
        ranks.append(r)
    for b in range(bits - 1, -1, -1):
        for j, r in enumerate(ranks):
            codes |= ((r >> np.uint64(b)) & np.uint64(1)) << np.uint64(b * k + (k - 1 - j))
    return np.argsort(codes, kind="stable")
