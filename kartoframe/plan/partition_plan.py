"""How a table splits into partition files, before any row is copied (pure planning).

:func:`plan_partitions` groups a table's rows by their partition values into a
:class:`PartitionPlan`; the chunk kernel (:mod:`kartoframe.execution.chunks`) gathers,
encodes and writes the groups.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError, NullPartitionValueError
from kartoframe.format import naming
from kartoframe.format.values import render_partition_value

R = TypeVar("R")

__all__ = [
    "PARALLEL_PLAN_ROWS",
    "PartitionPlan",
    "plan_one_partition",
    "plan_partitions",
    "value_codes",
]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class PartitionPlan:
    """How a table splits into files, before any row is copied.

    ``body`` holds the data columns (partition columns removed); group ``i`` is the
    file with label ``labels[i]`` and key values ``values[i]``, made of the body rows
    ``order[starts[i]:ends[i]]`` (all rows, in order, when ``order`` is None).
    :meth:`rows` gathers one group, so a writer can copy, encode and drop the groups
    one at a time instead of holding a reordered copy of the whole table.
    """

    body: pa.Table
    labels: tuple[str, ...]
    values: tuple[tuple[Any, ...], ...]
    order: np.ndarray | None
    starts: np.ndarray
    ends: np.ndarray
    sort_by: tuple[str, ...]
    source: pa.Table  # the body with low-cardinality strings dictionary-encoded
    #: each row's key code and the group of each code (for :meth:`group_ids`), if kept
    keys: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.labels)

    def rows(self, i: int) -> pa.Table:
        """The rows of group ``i`` (sorted by ``sort_by``), with the body's schema."""
        return self.as_rows(self.gathered(i))

    def gathered(self, i: int) -> pa.Table:
        """The rows of group ``i`` as gathered, in input order: low-cardinality strings
        of a large body still dictionary-encoded (what statistics read fastest).
        """
        if self.order is None:
            return self.body
        return self.source.take(pa.array(self.order[self.starts[i] : self.ends[i]]))

    def as_rows(self, gathered: pa.Table) -> pa.Table:
        """:meth:`rows` of a group from its :meth:`gathered` rows."""
        return _sorted(self._decoded(gathered), self.sort_by)

    def rows_of(
        self, groups: Sequence[int], prepare: Callable[[pa.Table], pa.Table] | None = None
    ) -> list[pa.Table]:
        """:meth:`rows` of each of ``groups``, gathered together (one gather instead of one
        a group: for many small groups the set-up of each gather outweighs its work);
        each result is a slice of one table holding all of them, passed through
        ``prepare`` (a cast, say) once before it is cut.
        """
        if self.order is None or len(groups) < 2:
            return [prepare(self.rows(i)) if prepare else self.rows(i) for i in groups]
        spans = [(int(self.starts[i]), int(self.ends[i])) for i in groups]
        part = self._gather(np.concatenate([self.order[a:b] for a, b in spans]))
        if prepare is not None:
            part = prepare(part)
        out = []
        at = 0
        for a, b in spans:
            out.append(_sorted(part.slice(at, b - a), self.sort_by))
            at += b - a
        return out

    def group_ids(self) -> np.ndarray:
        """The group of every body row (``int32``; group ``i`` holds :meth:`rows` ``(i)``)."""
        n = self.body.num_rows
        if self.order is None:
            return np.zeros(n, dtype=np.int32)
        if self.keys is not None:  # a lookup by each row's code (5M rows: 7.6 ms, not 22)
            codes, group_of = self.keys
            ids: np.ndarray = group_of[codes]
            return ids
        by_start = np.argsort(self.starts, kind="stable")  # the groups' runs in ``order``
        ids = np.empty(n, dtype=np.int32)
        ids[self.order] = np.repeat(by_start.astype(np.int32), (self.ends - self.starts)[by_start])
        return ids

    def sample(self, rows: int) -> pa.Table:
        """Up to ``rows`` rows of the largest group, in input order, with the body's
        schema: what decides the encoding of every file of the plan.
        """
        if self.order is None:
            return self.body.slice(0, rows)
        i = int(np.argmax(self.ends - self.starts))
        start = int(self.starts[i])
        return self._gather(self.order[start : min(int(self.ends[i]), start + rows)])

    def _gather(self, positions: np.ndarray) -> pa.Table:
        """The body rows at ``positions``, with the body's schema."""
        return self._decoded(self.source.take(pa.array(positions)))

    def _decoded(self, part: pa.Table) -> pa.Table:
        """Gathered rows with the body's schema (the dictionary-encoded columns decoded)."""
        if part.schema != self.body.schema:
            part = part.cast(self.body.schema)
        return part


def _codes(column: pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    enc = pc.dictionary_encode(column).combine_chunks()
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary


#: Tables of at least this many rows are planned column by column on threads (Arrow's
#: kernels release the GIL): dictionary-encoding the key columns and preparing the
#: gather source are a third of a 5M-row, 200-partition write's serial time otherwise.
#: A table that splits does both on the same threads (the key columns' hashing and
#: the low-cardinality strings' in parallel).
PARALLEL_PLAN_ROWS = 1 << 20
_PLAN_THREADS = 4


def _all(jobs: Sequence[Callable[[], R]], rows: int) -> list[R]:
    """The results of ``jobs`` (work on the columns of a table of ``rows`` rows), on
    threads when the table has many rows.
    """
    if rows < PARALLEL_PLAN_ROWS or len(jobs) < 2:
        return [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=_plan_workers(len(jobs))) as pool:
        return list(pool.map(lambda job: job(), jobs))


def value_codes(table: pa.Table, columns: Sequence[str]) -> tuple[np.ndarray, int]:
    """One code per row for its values of ``columns`` (equal values, equal codes) and
    the number of possible codes.

    The codes are ``uint16`` when there are at most 65,536 possible codes (a write's
    partition keys: no 8-byte copy of every row), ``int64`` otherwise. Codes of several
    high-cardinality columns are renumbered before their product could overflow.
    """
    return _combined(_all(_code_jobs(table, columns), len(table)), len(table))


def _code_jobs(table: pa.Table, columns: Sequence[str]) -> list[Callable[[], Any]]:
    """:func:`_codes` of each of ``columns``, to run."""
    return [functools.partial(_codes, table[c]) for c in columns]


def _combined(parts: Sequence[tuple[np.ndarray, pa.Array]], rows: int) -> tuple[np.ndarray, int]:
    """:func:`value_codes` from the codes and dictionary of each column."""
    n_codes = math.prod(len(dictionary) for _, dictionary in parts)
    dtype = np.uint16 if n_codes <= 1 << 16 else np.int64
    if not parts:
        return np.zeros(rows, dtype=dtype), 1
    codes: np.ndarray[Any, np.dtype[Any]]
    n = 1
    for col_codes, dictionary in parts:
        if n == 1:  # the first column, or only single-valued ones before it
            codes = col_codes.astype(dtype)
        else:
            if n * len(dictionary) > 1 << 62:  # renumber the combinations seen so far
                uniq, inverse = np.unique(codes, return_inverse=True)
                codes, n = inverse.astype(np.int64), len(uniq)
            codes *= len(dictionary)
            codes += col_codes.astype(dtype, copy=False)
        n *= len(dictionary)
    return codes, n


def plan_partitions(
    table: pa.Table,
    partition_on: Sequence[str],
    *,
    file_uuid: str,
    sort_by: Sequence[str] = (),
) -> PartitionPlan:
    """Group a table's rows by their partition values, without copying them.

    Groups come in order of first appearance (as plateau writes them); inside a group
    rows keep their input order (a stable sort groups them) unless ``sort_by`` is given.

    Raises
    ------
    NullPartitionValueError
        A partition column contains nulls.
    """
    sort_by = tuple(sort_by)
    if not partition_on:
        bounds = np.array([0]), np.array([table.num_rows])
        return PartitionPlan(table, (file_uuid,), ((),), None, *bounds, sort_by, table)
    for c in partition_on:
        nulls = table[c].null_count
        if nulls:
            raise NullPartitionValueError(
                f"Partition column {c!r} contains {nulls} null value(s); null partition "
                "values cannot be stored. Fill or drop them first."
            )
    data_cols = [c for c in table.column_names if c not in partition_on]
    body = table.select(data_cols)
    if table.num_rows == 0:
        none = np.zeros(0, np.int64)
        return PartitionPlan(body, (), (), none, none, none, sort_by, body)
    rows = table.num_rows
    pool: ThreadPoolExecutor | None = None
    try:
        if rows >= max(PARALLEL_PLAN_ROWS, 8 * _SAMPLE) and _several_values(table, partition_on):
            # the keys' codes first, then the gather source's columns, on as many threads
            # as cores: the groups are formed while the last columns are still prepared
            key_jobs, source_jobs = _code_jobs(table, partition_on), _source_jobs(body)
            pool = ThreadPoolExecutor(max_workers=_plan_workers(len(key_jobs) + len(source_jobs)))
            coding = [pool.submit(job) for job in key_jobs]
            prepared = [pool.submit(job) for job in source_jobs]
            parts = [f.result() for f in coding]
        else:
            parts = _all(_code_jobs(table, partition_on), rows)
        codes, n_codes = _combined(parts, rows)
        if pool is None and (codes == codes[0]).all():  # one partition value (a dask task's)
            vals = tuple(table[c][0].as_py() for c in partition_on)
            return plan_one_partition(
                body, partition_on, vals, file_uuid=file_uuid, sort_by=sort_by
            )
        grouped = _grouped(codes, n_codes, parts, partition_on, file_uuid)
        source = (
            _source_table(body, [f.result() for f in prepared])
            if pool is not None
            else _gather_source(body)
        )
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    labels, values, order, starts, ends, keys_kept = grouped
    return PartitionPlan(body, labels, values, order, starts, ends, sort_by, source, keys_kept)


def _plan_workers(jobs: int) -> int:
    """Threads for the planning jobs: no more than the cores (the key columns' jobs,
    submitted first, then finish first) nor :data:`_PLAN_THREADS`.
    """
    return max(1, min(jobs, _PLAN_THREADS, max(2, os.cpu_count() or 2)))


def _grouped(
    codes: np.ndarray,
    n_codes: int,
    parts: Sequence[tuple[np.ndarray, pa.Array]],
    partition_on: Sequence[str],
    file_uuid: str,
) -> tuple[
    tuple[str, ...],
    tuple[tuple[Any, ...], ...],
    np.ndarray,
    np.ndarray,
    np.ndarray,
    tuple[np.ndarray, np.ndarray],
]:
    """The groups of rows with equal ``codes`` (``parts``: each key column's codes and
    dictionary): labels, key values, the rows' order, each group's bounds in it, and
    each row's code with the group of each code.
    """
    if n_codes <= 1 << 16:
        # dense codes: Arrow's stable sort of 16-bit integers is a counting sort (5M rows:
        # 12 ms; numpy's radix sort 40 ms)
        order = pc.sort_indices(pa.array(codes.astype(np.uint16, copy=False))).to_numpy()
        counts_all = np.bincount(codes, minlength=n_codes)
        present = np.flatnonzero(counts_all)
        counts = counts_all[present]
        row_codes, slots = codes, present  # group of code ``present[k]`` decided below
    else:
        present, inverse = np.unique(codes, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        counts = np.bincount(inverse, minlength=len(present))
        row_codes, slots = inverse.astype(np.int32), np.arange(len(present))
    offsets = np.concatenate([[0], np.cumsum(counts)])
    first = order[offsets[:-1]]
    # groups in order of first appearance, as plateau does
    appearance = np.argsort(first, kind="stable")
    starts, ends = offsets[:-1][appearance], offsets[1:][appearance]
    group_of = np.zeros(int(slots[-1]) + 1, dtype=np.int32)
    group_of[slots[appearance]] = np.arange(len(appearance), dtype=np.int32)
    # each group's key values from the key columns' dictionaries (no gather from the
    # columns themselves: 10 ms of a 5M-row write's serial time)
    firsts = first[appearance]
    key_values = [d.take(pa.array(c[firsts])).to_pylist() for c, d in parts]
    labels = []
    values = []
    for pos in range(len(appearance)):
        vals = tuple(kv[pos] for kv in key_values)
        pairs = [(c, render_partition_value(v)) for c, v in zip(partition_on, vals)]
        labels.append(naming.make_label(pairs, file_uuid))
        values.append(vals)
    return tuple(labels), tuple(values), order, starts, ends, (row_codes, group_of)


def _several_values(table: pa.Table, columns: Sequence[str]) -> bool:
    """Whether the first rows of ``table`` already hold two partitions (then the table
    is split, and its gather source is prepared while its keys are coded).
    """
    head = table.slice(0, _SAMPLE)
    for c in columns:
        col = head[c]
        if pa.types.is_dictionary(col.type):  # a categorical: its values
            col = col.cast(col.type.value_type)
        if pc.count_distinct(col).as_py() > 1:
            return True
    return False


def plan_one_partition(
    body: pa.Table,
    partition_on: Sequence[str],
    values: Sequence[Any],
    *,
    file_uuid: str,
    sort_by: Sequence[str] = (),
) -> PartitionPlan:
    """One file of every row of ``body`` (the data columns: no partition column) in the
    partition with key ``values``: no row is grouped or copied.
    """
    vals = tuple(values)
    if len(vals) != len(partition_on):
        raise InvalidInputError(
            f"{len(vals)} partition values for the partition columns {list(partition_on)}."
        )
    pairs = [(c, render_partition_value(v)) for c, v in zip(partition_on, vals, strict=True)]
    label = naming.make_label(pairs, file_uuid)
    bounds = np.array([0]), np.array([body.num_rows])
    return PartitionPlan(body, (label,), (vals,), None, *bounds, tuple(sort_by), body)


#: A string column whose first rows hold at most this many distinct values is gathered
#: through its dictionary encoding.
_FEW_DISTINCT = 1024
_SAMPLE = 4096


def _gather_source(body: pa.Table) -> pa.Table:
    """What the groups of ``body`` are gathered from: the same rows, every column in one
    chunk and, in a large body, low-cardinality strings dictionary-encoded (column by
    column, on threads: :func:`_source_column`).
    """
    if body.num_rows < 8 * _SAMPLE:
        return _single_chunks(body)
    return _source_table(body, _all(_source_jobs(body), body.num_rows))


def _source_jobs(body: pa.Table) -> list[Callable[[], pa.ChunkedArray]]:
    """:func:`_source_column` of each column of ``body``, to run."""
    return [functools.partial(_source_column, c) for c in body.columns]


def _source_table(body: pa.Table, columns: Sequence[pa.ChunkedArray]) -> pa.Table:
    """The gather source of ``body`` from its prepared columns."""
    source = pa.Table.from_arrays(list(columns), names=body.column_names)
    return source.replace_schema_metadata(body.schema.metadata)  # gathered groups keep it


def _single_chunks(body: pa.Table) -> pa.Table:
    """``body`` with every multi-chunk column combined into one chunk.

    A gather from a chunked column resolves chunks for every index (or concatenates
    them first): paid once per group it made a 5M-row write with 39-chunk string columns
    (as ``pandas.read_parquet`` returns them) 50 % slower.
    """
    if all(c.num_chunks <= 1 for c in body.columns):
        return body
    columns = [_one_chunk(c) for c in body.columns]
    return pa.Table.from_arrays(columns, schema=body.schema)  # keeps the schema metadata


def _one_chunk(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if column.num_chunks <= 1:
        return column
    return pa.chunked_array([column.combine_chunks()])


def _source_column(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """One column of a large body to gather from: in one chunk and, when it holds
    strings with few distinct values, dictionary-encoded.

    Gathering variable-length values from random positions is cache-bound (5M short
    strings: ~200 ms); gathering integer codes and decoding them from a small,
    cache-resident dictionary gives the same values in well under half the time.
    """
    column = _one_chunk(column)
    t = column.type
    if (
        column.num_chunks == 1
        and (pa.types.is_string(t) or pa.types.is_large_string(t))
        and pc.count_distinct(column.slice(0, _SAMPLE)).as_py() <= _FEW_DISTINCT
    ):
        encoded = pc.dictionary_encode(column.chunk(0))
        if len(encoded.dictionary) <= 4 * _FEW_DISTINCT:
            return pa.chunked_array([encoded])
    return column


def _sorted(table: pa.Table, sort_by: Sequence[str]) -> pa.Table:
    if not sort_by or table.num_rows == 0:
        return table
    keys = [(c, "ascending") for c in sort_by if c in table.column_names]
    if not keys:
        return table
    return table.take(pc.sort_indices(table, sort_keys=keys))
