"""Data skipping with per-file statistics: the third pruning stage. Pure functions.

After partition keys and secondary indices (:mod:`kartoframe.plan.pruning`), a file is
dropped when its statistics (:mod:`kartoframe.format.statistics`) prove that no row can
satisfy any conjunction of the predicate. The rules follow kartoframe's null semantics
(NaN counts as null, see :mod:`kartoframe.plan.predicates`):

* ``min``/``max`` bound the non-null, non-NaN values (strings may be truncated: the
  bounds stay valid, so only ``<``/``>`` style tests use them);
* ``null_count`` counts nulls and NaN; a file whose rows are all null matches only
  literals that can match nulls, and a file without nulls never matches ``== None``;
* a value list is the exact set of non-null values; a bloom filter answers "may contain";
* a missing statistic (null), a missing column, or a file the statistics do not list (or
  list with another data file key) is *unknown*: the file is kept.

Timestamps are compared in integer microseconds; a literal with sub-microsecond digits
is rounded outwards (floor for lower bounds, ceil for upper bounds), so no file holding
a matching row is ever dropped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.statistics import bloom_hashes, bloom_may_contain
from kartoframe.format.statistics_rows import rows_of
from kartoframe.plan.predicates import Literal, Predicate

__all__ = ["skip_by_statistics", "statistics_columns"]

Mask = npt.NDArray[np.bool_]
_SCALAR_ERRORS = (pa.ArrowException, OverflowError, ValueError, TypeError)


def statistics_columns(statistics: pa.Table) -> set[str]:
    """Columns the statistics describe (those with a null count)."""
    if "null_count" not in statistics.column_names:
        return set()
    return {f.name for f in statistics.schema.field("null_count").type}


def _np(mask: pa.Array | pa.ChunkedArray, fill: bool) -> Mask:
    return np.asarray(pc.fill_null(mask, fill).to_numpy(zero_copy_only=False), dtype=bool)


class _Column:
    """The statistics of one column over the selected files."""

    def __init__(self, stats: pa.Table, name: str) -> None:
        self.n = stats.num_rows
        rows = stats.column("rows").to_numpy(zero_copy_only=False)
        nulls_arr = self._field(stats, "null_count", name)
        self.rows = np.nan_to_num(np.asarray(rows, dtype=float), nan=-1)
        if nulls_arr is None:
            self.nulls = np.full(self.n, -1.0)
        else:
            self.nulls = np.nan_to_num(
                np.asarray(nulls_arr.to_numpy(zero_copy_only=False), dtype=float), nan=-1
            )
        known = np.asarray((self.nulls >= 0) & (self.rows >= 0), dtype=np.bool_)
        #: may hold a non-null value
        self.nonnull: Mask = ~known | (self.nulls < self.rows)
        #: may hold a null
        self.null: Mask = ~known | (self.nulls > 0)
        self.min = self._field(stats, "min", name)
        self.max = self._field(stats, "max", name)
        self.values = self._field(stats, "value_list", name)
        self.bloom = self._field(stats, "bloom", name)
        self.type = self.min.type if self.min is not None else None
        if self.type is not None and pa.types.is_timestamp(self.type):
            assert self.min is not None and self.max is not None
            self.min = self.min.cast(pa.int64())
            self.max = self.max.cast(pa.int64())

    @staticmethod
    def _field(stats: pa.Table, group: str, name: str) -> pa.Array | None:
        if group not in stats.column_names:
            return None
        col = stats.column(group).combine_chunks()
        if col.type.get_field_index(name) < 0:
            return None
        return col.field(name)

    # -- literal values in the comparison domain -----------------------------------

    def bounds(self, value: Any) -> tuple[Any, Any] | None:
        """(floor, ceil) of a literal in the domain of ``min``/``max``; None if unusable."""
        t = self.type
        if t is None:
            return None
        try:
            if pa.types.is_timestamp(t):
                s = value if isinstance(value, pa.Scalar) else pa.scalar(value)
                if not pa.types.is_timestamp(s.type):
                    return None
                ns = s.cast(pa.timestamp("ns", tz=s.type.tz)).value
                if ns is None:
                    return None
                lo, hi = ns // 1000, -((-ns) // 1000)
                return pa.scalar(lo, pa.int64()), pa.scalar(hi, pa.int64())
            s = value if isinstance(value, pa.Scalar) else pa.scalar(value, type=t)
            s = s.cast(t)
            return s, s
        except _SCALAR_ERRORS:
            return None

    def value_array(self, values: Sequence[Any]) -> pa.Array | None:
        """Literal values typed like the value lists / bloom filters (None if unusable)."""
        t = self.values.type.value_type if self.values is not None else self.type
        if t is None:
            return None
        try:
            if pa.types.is_timestamp(t):
                items = [v.as_py() if isinstance(v, pa.Scalar) else v for v in values]
                return pa.array(items, type=pa.timestamp("ns", tz=t.tz)).cast(t, safe=False)
            return pa.array([v.as_py() if isinstance(v, pa.Scalar) else v for v in values], type=t)
        except _SCALAR_ERRORS:
            return None

    # -- tests over all files ------------------------------------------------------

    def cmp(self, which: str, op: str, scalar: Any) -> Mask:
        """``which`` (min|max) ``op`` scalar, unknown -> True."""
        arr = self.min if which == "min" else self.max
        if arr is None:
            return np.ones(self.n, dtype=bool)
        fn = {"<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}[op]
        return _np(fn(arr, scalar), True)

    def in_range(self, value: Any) -> Mask:
        """Test ``min <= value <= max`` (unknown -> True)."""
        b = self.bounds(value)
        if b is None:
            return np.ones(self.n, dtype=bool)
        lo, hi = b
        return self.cmp("min", "<=", lo) & self.cmp("max", ">=", hi)

    def any_in_range(self, values: Sequence[Any]) -> Mask:
        """Test ``min <= v <= max`` for any of ``values`` at once (unknown -> True): a
        binary search of the sorted values per file, not a pass over the files per value.
        """
        if self.min is None or self.max is None or self.type is None:
            return np.ones(self.n, dtype=bool)
        if not len(values):
            return np.zeros(self.n, dtype=bool)
        domain = self._domain(values)
        if domain is None:
            out = np.zeros(self.n, dtype=bool)
            for x in values:
                out |= self.in_range(x)
            return out
        vals = np.sort(np.asarray(domain.to_numpy(zero_copy_only=False)))
        unknown = pc.or_(self.min.is_null(), self.max.is_null())
        known = ~np.asarray(unknown.to_numpy(zero_copy_only=False), dtype=bool)
        idx = np.flatnonzero(known)
        out = ~known
        if len(vals) and len(idx):
            lo = np.asarray(self.min.take(pa.array(idx)).to_numpy(zero_copy_only=False))
            hi = np.asarray(self.max.take(pa.array(idx)).to_numpy(zero_copy_only=False))
            first = np.searchsorted(vals, lo, side="left")  # the least value >= min
            inside = first < len(vals)
            out[idx[inside]] = vals[first[inside]] <= hi[inside]
        return out

    def _domain(self, values: Sequence[Any]) -> pa.Array | None:
        """The distinct non-null (non-NaN) ``values`` as an array comparable with
        ``min``/``max`` (timestamps as µs integers; None: not convertible).
        """
        t = self.type
        assert t is not None
        if pa.types.is_timestamp(t):
            return None  # the literal's own unit and zone: :meth:`bounds` per value
        if pa.types.is_decimal(t) or pa.types.is_boolean(t):
            return None  # numpy compares these element by element: the plain loop is as good
        try:
            items = [v.as_py() if isinstance(v, pa.Scalar) else v for v in values]
            arr = pa.array(items).cast(t)
        except _SCALAR_ERRORS:
            return None
        if pa.types.is_floating(t):
            arr = pc.filter(arr, pc.invert(pc.is_nan(arr)))
        return pc.unique(arr.drop_null())

    def all_equal(self, value: Any) -> Mask:
        """Every non-null value is ``value`` (unknown -> False)."""
        out = np.zeros(self.n, dtype=bool)
        b = self.bounds(value)
        if b is not None and self.min is not None and self.max is not None:
            lo, hi = b
            if lo.equals(hi):
                out |= _np(pc.equal(self.min, lo), False) & _np(pc.equal(self.max, lo), False)
        return out | self.values_within([value])

    def values_within(self, values: Sequence[Any]) -> Mask:
        """The value list is a subset of ``values`` (unknown -> False)."""
        if self.values is None:
            return np.zeros(self.n, dtype=bool)
        known = ~np.asarray(self.values.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
        vals = self.value_array(values)
        if vals is None:
            return np.zeros(self.n, dtype=bool)
        flat = pc.list_flatten(self.values)
        parents = np.asarray(pc.list_parent_indices(self.values).to_numpy(), dtype=np.int64)
        outside = ~_np(pc.is_in(flat, value_set=vals), False)
        n_outside = np.bincount(parents[outside], minlength=self.n)
        return known & np.asarray(n_outside == 0, dtype=np.bool_)

    def values_meet(self, values: Sequence[Any]) -> Mask:
        """The value list holds one of ``values`` (unknown -> True)."""
        if self.values is None:
            return np.ones(self.n, dtype=bool)
        unknown = np.asarray(self.values.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
        vals = self.value_array(values)
        if vals is None:
            return np.ones(self.n, dtype=bool)
        flat = pc.list_flatten(self.values)
        parents = np.asarray(pc.list_parent_indices(self.values).to_numpy(), dtype=np.int64)
        hit = _np(pc.is_in(flat, value_set=vals), False)
        n_hit = np.bincount(parents[hit], minlength=self.n)
        return unknown | np.asarray(n_hit > 0, dtype=np.bool_)

    def bloom_meets(self, values: Sequence[Any]) -> Mask:
        """The bloom filter may contain one of ``values`` (unknown -> True)."""
        if self.bloom is None or not values:
            return np.ones(self.n, dtype=bool)
        arr = self.value_array(values)
        if arr is None:
            return np.ones(self.n, dtype=bool)
        return bloom_may_contain(self.bloom, bloom_hashes(arr))


def _literal_may_match(lit: Literal, col: _Column) -> Mask:
    op, v = lit.op, lit.value
    if op in ("in", "not in"):
        vals = list(v)
        if op == "in":
            hit = col.any_in_range(vals)
            hit &= col.values_meet(vals) & col.bloom_meets(vals) & col.nonnull
            return (hit | col.null) if lit.has_null else hit
        covered = col.values_within(vals)
        for x in vals:
            covered |= col.all_equal(x)
        return col.nonnull & ~covered
    if v is None:
        return col.null if op == "==" else col.nonnull
    if op == "==":
        return col.nonnull & col.in_range(v) & col.values_meet([v]) & col.bloom_meets([v])
    if op in ("!=", "is distinct from"):
        out = col.nonnull & ~col.all_equal(v)
        return (out | col.null) if op == "is distinct from" else out
    b = col.bounds(v)
    if b is None:
        return np.ones(col.n, dtype=bool)
    lo, hi = b
    if op == "<":
        test = col.cmp("min", "<", hi)
    elif op == "<=":
        test = col.cmp("min", "<=", lo)
    elif op == ">":
        test = col.cmp("max", ">", lo)
    else:  # ">="
        test = col.cmp("max", ">=", hi)
    return col.nonnull & test


def skip_by_statistics(
    predicate: Predicate | None,
    labels: Sequence[str],
    partitions: Mapping[str, str],
    statistics: pa.Table | None,
    partition_keys: Sequence[str] = (),
) -> list[str]:
    """Drop the labels whose statistics prove that no row matches ``predicate``.

    Parameters
    ----------
    predicate
        The bound predicate (None: nothing is dropped).
    labels
        Candidate labels (after partition-key and index pruning), in order.
    partitions
        Label -> data file key of the current header; a statistics row is only used if
        its ``key`` equals the label's key here.
    statistics
        The statistics table (see :mod:`kartoframe.format.statistics`), or None.
    partition_keys
        Literals on these columns are left to partition pruning.

    Returns
    -------
    list of str
        The kept labels, in input order.
    """
    if predicate is None or statistics is None or not labels or statistics.num_rows == 0:
        return list(labels)
    described = statistics_columns(statistics)
    pk = set(partition_keys)
    usable = [
        [lit for lit in conj if lit.column in described and lit.column not in pk]
        for conj in predicate.conjunctions
    ]
    if any(not conj for conj in usable):
        return list(labels)  # a conjunction the statistics cannot refute keeps everything
    rows: list[int] = []
    positions: list[int] = []
    found = rows_of(statistics, labels, [partitions.get(lb) for lb in labels])
    for pos, i in enumerate(found):
        if i is not None:
            rows.append(i)
            positions.append(pos)
    if not rows:
        return list(labels)
    sub = statistics.take(pa.array(rows, type=pa.int64()))
    columns: dict[str, _Column] = {}
    may = np.zeros(len(rows), dtype=bool)
    for conj in usable:
        m = np.ones(len(rows), dtype=bool)
        for lit in conj:
            col = columns.get(lit.column)
            if col is None:
                col = columns[lit.column] = _Column(sub, lit.column)
            m &= _literal_may_match(lit, col)
            if not m.any():
                break
        may |= m
    dropped = {positions[i] for i in np.flatnonzero(~may)}
    return [lb for pos, lb in enumerate(labels) if pos not in dropped]
