"""Computing per-file statistics from Arrow tables (pure): the write side of statistics.

A write computes one slice of statistics per data file (:func:`slice_statistics`), decides
on value lists over the whole chunk (:func:`value_list_candidates`,
:func:`assemble_statistics`) and adds the file columns (:func:`with_files`);
:func:`compute_statistics` does all of it for tables in memory. The layout of the side
file, its codec and merging are :mod:`kartoframe.format.statistics`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.column_kernels import (
    distinct_hashes,
    distinct_values,
    float_bounds,
    nan_count,
    sorted_unique,
    used_entries,
)
from kartoframe.format.statistics import (
    GROUPS,
    STRING_STATS_MAX_BYTES,
    VALUE_LIST_MAX,
    base_type,
    bloom_hashes,
    bloom_type_supported,
    build_bloom,
    has_stats,
    minmax_type,
    value_list_type,
    widens_exactly,
)

__all__ = [
    "ColumnStatistics",
    "SliceAccumulator",
    "SliceStatistics",
    "assemble_statistics",
    "compute_statistics",
    "grouped_slice_statistics",
    "slice_statistics",
    "value_list_candidates",
    "with_files",
]


# --------------------------------------------------------------------------- truncation
def _truncate_min(value: Any, limit: int) -> Any:
    """A prefix of at most ``limit`` bytes: still <= the value."""
    if isinstance(value, str):
        raw = value.encode("utf-8")
        if len(raw) <= limit:
            return value
        return raw[:limit].decode("utf-8", errors="ignore")
    if isinstance(value, bytes) and len(value) > limit:
        return value[:limit]
    return value


def _truncate_max(value: Any, limit: int) -> Any:
    """Return a value of at most ``limit`` bytes above every value with the same prefix.

    None (unknown) if there is none.
    """
    if isinstance(value, str):
        if len(value.encode("utf-8")) <= limit:
            return value
        prefix = value.encode("utf-8")[:limit].decode("utf-8", errors="ignore")
        chars = list(prefix)
        while chars:
            cp = ord(chars[-1]) + 1
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0xE000
            if cp <= 0x10FFFF:
                chars[-1] = chr(cp)
                out = "".join(chars)
                if len(out.encode("utf-8")) <= limit:
                    return out
            chars.pop()
        return None
    if isinstance(value, bytes):
        if len(value) <= limit:
            return value
        raw = bytearray(value[:limit])
        while raw:
            if raw[-1] < 0xFF:
                raw[-1] += 1
                return bytes(raw)
            raw.pop()
        return None
    return value


# --------------------------------------------------------------------------- compute
@dataclasses.dataclass(frozen=True, slots=True)
class ColumnStatistics:
    """One column of one slice, before the chunk decides on value lists.

    ``distinct`` holds the slice's non-null distinct values when the column may keep a
    value list and there are at most :data:`VALUE_LIST_MAX` of them (None otherwise);
    ``values`` the same sorted, unless a string value is too long to be stored exactly.
    """

    arrow_type: pa.DataType
    low: Any
    high: Any
    nulls: int
    candidate: bool
    distinct: pa.Array | None
    values: list[Any] | None
    bloom: bytes | None


@dataclasses.dataclass(frozen=True, slots=True)
class SliceStatistics:
    """Statistics of one slice (one file); see :func:`slice_statistics`."""

    rows: int
    columns: dict[str, ColumnStatistics]


class _ColumnAccumulator:
    """One column's statistics over the row groups of one file, added one at a time.

    What it keeps is bounded by the column's distinct values, not its rows: the null
    count, the running minimum and maximum, the distinct values while they may still
    make a value list (or feed a bloom filter), and the distinct bloom hashes of an
    integer bloom column. :meth:`finish` gives what the column's statistics over all
    rows at once would be (:func:`slice_statistics` is one :meth:`add` and a finish).
    """

    __slots__ = ("candidate", "hashes", "hi", "lo", "nulls", "t", "uniques", "want_bloom")

    def __init__(self, t: pa.DataType, candidate: bool, want_bloom: bool) -> None:
        self.t = t
        self.candidate = candidate
        self.want_bloom = want_bloom
        self.nulls = 0
        self.lo: Any = None
        self.hi: Any = None
        integer_bloom = want_bloom and not candidate and pa.types.is_integer(t)
        #: distinct values of the rows so far (None: not kept)
        self.uniques: list[pa.Array] | None = (
            [] if (candidate or want_bloom) and not integer_bloom else None
        )
        #: sorted distinct bloom hashes of each added part (integer bloom columns)
        self.hashes: list[np.ndarray] | None = [] if integer_bloom else None

    def add(self, col: pa.ChunkedArray) -> None:
        """Take in more rows of the column (with its statistics type, or dictionary-encoded
        strings or binaries: see :func:`_accumulated`).
        """
        nulls = col.null_count
        if pa.types.is_dictionary(col.type):
            # the dictionary entries the rows use: the same bounds and distinct values
            col = used_entries(col, self.t)
        if pa.types.is_floating(self.t):
            nulls += nan_count(col)
        self.nulls += nulls
        if self.hashes is not None:
            self.hashes.append(distinct_hashes(col))
        if self.uniques is not None:
            self.uniques.append(distinct_values(col, self.t))
            if not self.want_bloom and sum(len(u) for u in self.uniques) > VALUE_LIST_MAX:
                union = self._union()  # no value list will come of it: keep its bounds
                if len(union) > VALUE_LIST_MAX:
                    self._extend(union)
                    self.uniques = None
                else:
                    self.uniques = [union]
        if self.uniques is None:
            self._extend(col)

    def _union(self) -> pa.Array:
        assert self.uniques is not None
        if len(self.uniques) == 1:
            return self.uniques[0]
        return pc.unique(pa.chunked_array(self.uniques, type=self.t))

    def _extend(self, values: pa.Array | pa.ChunkedArray) -> None:
        """Widen the running bounds by ``values`` (NaN only where nothing else is)."""
        if not minmax_type(self.t) or len(values) == values.null_count:
            return
        bounds = float_bounds(values)
        if bounds is not None:
            lo, hi = bounds
        else:
            mm = pc.min_max(values)
            lo_s, hi_s = mm["min"], mm["max"]
            if lo_s.type != self.t:  # computed on the narrower stored type (widens_exactly)
                lo_s, hi_s = lo_s.cast(self.t), hi_s.cast(self.t)
            lo, hi = lo_s.as_py(), hi_s.as_py()
        if lo is None or (isinstance(lo, float) and math.isnan(lo)):
            return
        self.lo = lo if self.lo is None else min(self.lo, lo)
        self.hi = hi if self.hi is None else max(self.hi, hi)

    def finish(self) -> ColumnStatistics:
        """The column's statistics over every row added."""
        t = self.t
        distinct: pa.Array | None = None
        values: list[Any] | None = None
        bloom: bytes | None = None
        if self.hashes is not None:
            hashes = np.concatenate(self.hashes) if self.hashes else np.empty(0, np.uint64)
            bloom = build_bloom(sorted_unique(hashes) if len(self.hashes) > 1 else hashes)
        elif self.uniques is not None:
            uniq = self._union() if self.uniques else pa.array([], type=t)
            if self.want_bloom:
                bloom = build_bloom(bloom_hashes(uniq))
            if self.candidate and len(uniq) <= VALUE_LIST_MAX:
                distinct = uniq
                too_long = (pa.types.is_string(t) or pa.types.is_binary(t)) and len(uniq) > 0
                if too_long:
                    too_long = (
                        pc.max(pc.binary_length(uniq)).as_py() or 0
                    ) > STRING_STATS_MAX_BYTES
                if not too_long:
                    values = uniq.take(pc.sort_indices(uniq)).to_pylist()
            if values is None:
                self._extend(uniq)  # the distinct values have the rows' bounds
        lo, hi = self.lo, self.hi
        if values is not None:
            # the sorted distinct values hold min and max (value lists exist for integers,
            # strings, binaries and dates: no NaN); a pass over the rows is saved
            lo, hi = (values[0], values[-1]) if values else (None, None)
        elif pa.types.is_string(t) or pa.types.is_binary(t):
            lo = _truncate_min(lo, STRING_STATS_MAX_BYTES)
            hi = _truncate_max(hi, STRING_STATS_MAX_BYTES)
        return ColumnStatistics(t, lo, hi, self.nulls, self.candidate, distinct, values, bloom)


def _stat_columns(schema: pa.Schema) -> list[tuple[str, pa.DataType, pa.DataType]]:
    """(name, stored type, statistics type) of the columns that get statistics."""
    out = []
    for name in schema.names:
        raw_type = schema.field(name).type
        t = base_type(raw_type)
        if has_stats(t) and not name.startswith("__index_level_"):
            out.append((name, raw_type, t))
    return out


def _as_stat_type(col: pa.ChunkedArray, raw_type: pa.DataType, t: pa.DataType) -> pa.ChunkedArray:
    """``col`` cast to its statistics type, unless that widening is exact (see
    :func:`widens_exactly`: statistics of narrow columns are cast, not the columns).
    """
    if raw_type != t and not widens_exactly(raw_type, t):
        return col.cast(t)
    return col


def _accumulated(col: pa.ChunkedArray, raw_type: pa.DataType, t: pa.DataType) -> pa.ChunkedArray:
    """What a :class:`_ColumnAccumulator` takes in of ``col``: :func:`_as_stat_type`, but
    strings or binaries dictionary-encoded without null entries (the write kernel
    gathers low-cardinality strings so) stay encoded: the accumulator reads the entries
    their rows use (:func:`~kartoframe.format.column_kernels.used_entries`) instead of
    every row decoded.
    """
    if (
        pa.types.is_dictionary(raw_type)
        and (pa.types.is_string(t) or pa.types.is_binary(t))
        and all(ch.dictionary.null_count == 0 for ch in col.chunks)
    ):
        return col
    return _as_stat_type(col, raw_type, t)


def value_list_candidates(table: pa.Table) -> frozenset[str]:
    """Columns of a chunk that may keep value lists.

    Those of a value-list type whose first rows, and an evenly spread sample of rows
    (for input sorted by the column), hold at most :data:`VALUE_LIST_MAX` distinct
    values: a cheap test that only ever rules columns out; the per-slice distinct
    values decide (:func:`assemble_statistics`).
    """

    def many(sample: pa.ChunkedArray, raw_type: pa.DataType, t: pa.DataType) -> bool:
        sample = _as_stat_type(sample, raw_type, t)  # e.g. categoricals: count their values
        return bool(pc.count_distinct(sample).as_py() > VALUE_LIST_MAX)

    out = set()
    for name, raw_type, t in _stat_columns(table.schema):
        if not value_list_type(t):
            continue
        col = table.column(name)
        if len(col) > 4 * _SAMPLE_ROWS:
            if many(col.slice(0, _SAMPLE_ROWS), raw_type, t):
                continue
            step = len(col) // _SAMPLE_ROWS
            rows = pa.array(np.arange(0, step * _SAMPLE_ROWS, step, dtype=np.int64))
            if many(col.take(rows), raw_type, t):
                continue
        out.add(name)
    return frozenset(out)


_SAMPLE_ROWS = 4096


def slice_statistics(
    table: pa.Table,
    *,
    value_list_columns: Iterable[str] = (),
    bloom_filter_columns: Iterable[str] = (),
) -> SliceStatistics:
    """Statistics of one slice as written (partition columns removed).

    Runs on the slice alone, so a writer can compute it right after gathering the
    slice's rows; :func:`assemble_statistics` combines the slices of a chunk.
    """
    acc = SliceAccumulator(
        table.schema,
        value_list_columns=value_list_columns,
        bloom_filter_columns=bloom_filter_columns,
    )
    acc.add(table)
    return acc.finish()


def grouped_slice_statistics(
    table: pa.Table,
    groups: np.ndarray,
    n_groups: int,
    *,
    value_list_columns: Iterable[str] = (),
    bloom_filter_columns: Iterable[str] = (),
) -> list[SliceStatistics]:
    """:func:`slice_statistics` of the rows of each group (group ``g``: the rows where
    ``groups == g``, every group non-empty), computed for all groups at once.

    A column that keeps no value list and no bloom filter gets its null count and bounds
    from one grouped aggregation over all rows (a write of 10,000 four-row files made
    three compute calls a file before); the others are computed group by group, from one
    reordered copy of just those columns.
    """
    candidates = set(value_list_columns)
    blooms = set(bloom_filter_columns)
    columns = _stat_columns(table.schema)
    counts = np.bincount(groups, minlength=n_groups)
    grouped: dict[str, list[ColumnStatistics]] = {}
    rest = []
    for name, raw_type, t in columns:
        if name in candidates or (name in blooms and bloom_type_supported(t)):
            rest.append(name)
            continue
        col = _as_stat_type(table.column(name), raw_type, t)
        grouped[name] = _grouped_column(col, t, groups, n_groups)
    per_group: list[dict[str, ColumnStatistics]] = [{} for _ in range(n_groups)]
    if rest:
        order = np.argsort(groups, kind="stable")
        reordered = table.select(rest).take(pa.array(order))
        starts = np.concatenate([[0], np.cumsum(counts)])
        for g in range(n_groups):
            part = reordered.slice(int(starts[g]), int(counts[g]))
            per_group[g] = slice_statistics(
                part, value_list_columns=candidates, bloom_filter_columns=blooms
            ).columns
    out = []
    for g in range(n_groups):
        found = per_group[g]
        cols = {n: grouped[n][g] if n in grouped else found[n] for n, _, _ in columns}
        out.append(SliceStatistics(int(counts[g]), cols))
    return out


def _grouped_column(
    col: pa.ChunkedArray, t: pa.DataType, groups: np.ndarray, n_groups: int
) -> list[ColumnStatistics]:
    """One column's statistics in every group, as a :class:`_ColumnAccumulator` without
    value list or bloom filter gives them (NaN counts as null; bounds ignore NaN and are
    unknown when a group holds nothing else).
    """
    data = pa.table({"v": col, "g": pa.array(groups)})
    aggregates: list[Any] = [("v", "count", pc.CountOptions(mode="only_null"))]
    floating = pa.types.is_floating(t)
    if floating:
        data = data.append_column("nan", pc.cast(pc.is_nan(col), pa.int64()))
        aggregates.append(("nan", "sum"))
    bounds = minmax_type(t)
    if bounds:
        aggregates.append(("v", "min_max"))
    res = data.group_by("g", use_threads=False).aggregate(aggregates)
    at = res.column("g").to_numpy()
    nulls = np.zeros(n_groups, dtype=np.int64)
    nulls[at] = res.column("v_count").to_numpy()
    if floating:
        nulls[at] += res.column("nan_sum").fill_null(0).to_numpy()
    lows: list[Any] = [None] * n_groups
    highs: list[Any] = [None] * n_groups
    if bounds:
        mm = res.column("v_min_max").combine_chunks()
        lo_arr, hi_arr = mm.field("min"), mm.field("max")
        if lo_arr.type != t:  # computed on the narrower stored type (see widens_exactly)
            lo_arr, hi_arr = lo_arr.cast(t), hi_arr.cast(t)
        text = pa.types.is_string(t) or pa.types.is_binary(t)
        for g, lo, hi in zip(at.tolist(), lo_arr.to_pylist(), hi_arr.to_pylist(), strict=True):
            if lo is None or (floating and math.isnan(lo)):
                continue  # nothing but nulls and NaN: no bounds
            if text:
                lo = _truncate_min(lo, STRING_STATS_MAX_BYTES)
                hi = _truncate_max(hi, STRING_STATS_MAX_BYTES)
            lows[g], highs[g] = lo, hi
    nulls_list = nulls.tolist()
    return [
        ColumnStatistics(t, lows[g], highs[g], nulls_list[g], False, None, None, None)
        for g in range(n_groups)
    ]


class SliceAccumulator:
    """The statistics of one file written part by part (a streaming writer's row groups).

    ``add`` each part (with ``schema``), then ``finish``: the result equals
    :func:`slice_statistics` of all the parts concatenated, while memory holds one part
    and, per column, at most its distinct values (bounds, counts, bloom hashes).
    """

    def __init__(
        self,
        schema: pa.Schema,
        *,
        value_list_columns: Iterable[str] = (),
        bloom_filter_columns: Iterable[str] = (),
    ) -> None:
        candidates = set(value_list_columns)
        blooms = set(bloom_filter_columns)
        self._rows = 0
        self._columns = {
            name: (
                raw_type,
                _ColumnAccumulator(
                    t, name in candidates, name in blooms and bloom_type_supported(t)
                ),
            )
            for name, raw_type, t in _stat_columns(schema)
        }

    def add(self, table: pa.Table) -> None:
        """Take in the next rows of the file."""
        self._rows += table.num_rows
        for name, (raw_type, acc) in self._columns.items():
            acc.add(_accumulated(table.column(name), raw_type, acc.t))

    def finish(self) -> SliceStatistics:
        """The file's statistics over every row added."""
        return SliceStatistics(
            self._rows, {name: acc.finish() for name, (_, acc) in self._columns.items()}
        )


def assemble_statistics(slices: Sequence[SliceStatistics]) -> pa.Table:
    """The statistics table of a chunk's slices (one row per slice, same order).

    A column keeps value lists only if every slice has at most
    :data:`VALUE_LIST_MAX` distinct values and so does the whole chunk.
    """
    if not slices:
        return pa.table({"rows": pa.array([], type=pa.int64())})
    groups: dict[str, dict[str, pa.Array]] = {g: {} for g in GROUPS}
    for name, first in slices[0].columns.items():
        t = first.arrow_type
        cols = [s.columns[name] for s in slices]
        keep = first.candidate and all(c.distinct is not None for c in cols)
        if keep:
            union = pa.chunked_array([c.distinct for c in cols], type=t)
            keep = len(pc.unique(union)) <= VALUE_LIST_MAX
        groups["null_count"][name] = pa.array([c.nulls for c in cols], type=pa.int64())
        if minmax_type(t):
            groups["min"][name] = pa.array([c.low for c in cols], type=t)
            groups["max"][name] = pa.array([c.high for c in cols], type=t)
        if value_list_type(t):
            lists = [c.values if keep else None for c in cols]
            groups["value_list"][name] = pa.array(lists, type=pa.list_(t))
        if first.bloom is not None:
            groups["bloom"][name] = pa.array([c.bloom for c in cols], type=pa.binary())
    out: dict[str, pa.Array] = {"rows": pa.array([s.rows for s in slices], type=pa.int64())}
    for g in GROUPS:
        if groups[g]:
            out[g] = pa.StructArray.from_arrays(list(groups[g].values()), list(groups[g]))
    return pa.table(out)


def compute_statistics(
    tables: Sequence[pa.Table],
    *,
    bloom_filter_columns: Iterable[str] = (),
) -> pa.Table:
    """Statistics of each table (one row per table, same order; no file columns yet).

    Parameters
    ----------
    tables
        Slices of one written chunk, as written (same schema). Partition columns must
        already be removed.
    bloom_filter_columns
        Columns to build bloom filters for (ignored where the type does not qualify).

    Returns
    -------
    pyarrow.Table
        Columns ``rows``, ``min``, ``max``, ``null_count``, ``value_list``, ``bloom``
        (groups without fields are left out).
    """
    if not tables:
        return pa.table({"rows": pa.array([], type=pa.int64())})
    candidates = value_list_candidates(pa.concat_tables(tables))
    blooms = list(bloom_filter_columns)
    return assemble_statistics(
        [
            slice_statistics(t, value_list_columns=candidates, bloom_filter_columns=blooms)
            for t in tables
        ]
    )


def with_files(
    stats: pa.Table, labels: Sequence[str], keys: Sequence[str], sizes: Sequence[int | None]
) -> pa.Table:
    """Prepend the ``label``, ``key`` and ``bytes`` columns to computed statistics."""
    out = {
        "label": pa.array(list(labels), type=pa.string()),
        "key": pa.array(list(keys), type=pa.string()),
        "rows": stats.column("rows"),
        "bytes": pa.array(list(sizes), type=pa.int64()),
    }
    for g in GROUPS:
        if g in stats.column_names:
            out[g] = stats.column(g)
    return pa.table(out)
