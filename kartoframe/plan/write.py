"""Write planning: validate a write; what a written chunk reports to its commit (pure).

How a table splits into partition files is :mod:`kartoframe.plan.partition_plan`.
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kartoframe.errors import (
    ColumnNotFoundError,
    InvalidInputError,
)
from kartoframe.format.index import check_indexable
from kartoframe.format.index_group import GroupedIndex, group_index, one_label, restrict
from kartoframe.format.schema import SchemaEvolution, merge_into_stored, normalize_schema

__all__ = [
    "ChunkResult",
    "FilePairs",
    "StatisticsRow",
    "WrittenPartition",
    "check_against_base",
    "check_write_columns",
    "new_file_uuid",
    "index_parts",
    "chunk_pairs",
    "statistics_tables",
]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class StatisticsRow:
    """Row ``row`` of a chunk's statistics table: one file's per-file statistics.

    The files of a chunk share its table instead of holding a one-row Arrow table each
    (about 14-24 KB of Arrow objects per file: 1.4 GB for a 100k-partition write).
    Pickled (dask, Spark), a row travels alone: as a one-row copy, not the whole table.
    """

    table: pa.Table
    row: int

    def one(self) -> pa.Table:
        """The row as a one-row table (a copy)."""
        return self.table.take(pa.array([self.row], pa.int64()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StatisticsRow):
            return NotImplemented
        return bool(self.one().equals(other.one()))

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[pa.Table, int]]:
        return (StatisticsRow, (self.one(), 0))


def statistics_tables(rows: Iterable[pa.Table | StatisticsRow]) -> list[pa.Table]:
    """Per-file statistics as tables: consecutive rows of one chunk's table become one
    ``take`` of it (files keep their order); tables pass through.
    """
    out: list[pa.Table] = []
    table: pa.Table | None = None
    picked: list[int] = []

    def flush() -> None:
        if table is not None and picked:
            out.append(table.take(pa.array(picked, pa.int64())))

    for r in rows:
        if isinstance(r, StatisticsRow):
            if r.table is not table:
                flush()
                table, picked = r.table, []
            picked.append(r.row)
            continue
        flush()
        table, picked = None, []
        out.append(r)
    flush()
    return out


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class FilePairs:
    """One file's index entries of a column: label ``code`` of its chunk's partial index.

    The files of a chunk share one :class:`~kartoframe.format.index.GroupedIndex` per
    indexed column (distinct values sorted, each with the codes of the files holding it:
    2 bytes per value and file) instead of a two-column Arrow table each (~11 KB of
    objects per file beside 12 bytes per value). The commit merges the chunks' partial
    indices row group by row group (:class:`~kartoframe.format.index.MergedIndex`).
    Pickled alone, a file's entries travel as a one-label index, not the chunk's.
    """

    index: GroupedIndex
    code: int

    def pairs(self) -> pa.Table:
        """The file's (value, label) pairs (values sorted), as
        :func:`~kartoframe.format.index.index_value_pairs` makes them.
        """
        only = one_label(self.index, self.code)
        codes = pa.array(np.zeros(only.num_rows, dtype=np.int32))
        label = pa.DictionaryArray.from_arrays(codes, only.labels)
        return pa.table({only.column: only.values, "label": label})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FilePairs):
            return NotImplemented
        return bool(self.pairs().equals(other.pairs()))

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[GroupedIndex, int]]:
        return (FilePairs, (one_label(self.index, self.code), 0))


def chunk_pairs(column: str, files: Sequence[tuple[str, pa.Table]]) -> list[FilePairs]:
    """The partial index of a chunk's files (``(label, pairs)`` in order); their entries."""
    index = group_index(column, files[0][1].schema.field(column).type, [t for _, t in files])
    return [FilePairs(index, i) for i in range(len(files))]


def index_parts(column: str, rows: Iterable[pa.Table | FilePairs]) -> list[GroupedIndex]:
    """The written files' index entries as partial indices, in input order.

    Consecutive entries of one chunk's partial index become that index (restricted to
    those files when some are missing, or ordered differently); runs of plain pair tables
    are grouped into one.
    """
    out: list[GroupedIndex] = []
    tables: list[pa.Table] = []
    index: GroupedIndex | None = None
    codes: list[int] = []

    def flush() -> None:
        nonlocal index
        if tables:
            out.append(group_index(column, tables[0].schema.field(column).type, tables))
            tables.clear()
        if index is not None:
            if codes == list(range(len(index.labels))):
                out.append(index)
            else:
                keep = np.zeros(len(index.labels), dtype=bool)
                keep[codes] = True
                sorted_codes = codes == sorted(codes)
                out.extend(
                    [restrict(index, keep)]
                    if sorted_codes
                    else [one_label(index, c) for c in codes]
                )
            index = None
            codes.clear()

    for r in rows:
        if isinstance(r, FilePairs):
            if r.index is not index or tables:
                flush()
                index = r.index
            codes.append(r.code)
        else:
            if index is not None:
                flush()
            tables.append(r)
    flush()
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class WrittenPartition:
    """A data file written by a chunk.

    ``index_pairs`` holds, per indexed column, the file's distinct values paired with its
    label (:func:`~kartoframe.format.index.index_value_pairs`): a table, or its rows of
    the chunk's partial index (:class:`FilePairs`; :func:`index_parts` turns many into
    partial indices). ``statistics`` is the file's row of per-file statistics (see
    :mod:`kartoframe.format.statistics`): a one-row table, or its row of the chunk's
    statistics table (:class:`StatisticsRow`; :func:`statistics_tables` turns many into
    tables), or None if they were not computed.
    """

    label: str
    key: str
    rows: int
    size: int
    index_pairs: Mapping[str, pa.Table | FilePairs]
    statistics: pa.Table | StatisticsRow | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkResult:
    """What a chunk write returns to the committer (small and picklable).

    Pickled (a dask or Spark task's result), the statistics rows of its files travel as
    one table per chunk, not one table per file (unpickled, a one-row Arrow table costs
    about 50 KB of objects: 600 MB for the 12,000 files of a 30M-row dask write), and
    its partial indices once each.
    """

    partitions: tuple[WrittenPartition, ...]
    schema: pa.Schema | None
    origin: str

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        parts = self.partitions
        plain = (ChunkResult, (parts, self.schema, self.origin))
        marks = [isinstance(p.statistics, StatisticsRow) for p in parts]
        stats = statistics_tables([p.statistics for p, m in zip(parts, marks) if m])  # type: ignore[misc]
        shared = sorted(
            {c for p in parts for c, v in p.index_pairs.items() if isinstance(v, FilePairs)}
        )
        indices = {
            c: {
                id(v.index): v.index
                for p in parts
                if isinstance(v := p.index_pairs.get(c), FilePairs)
            }
            for c in shared
        }
        if len(stats) > 1 or any(len(i) != 1 for i in indices.values()) or not (stats or shared):
            return plain  # rows of several tables: each file's travel alone
        codes = [
            {c: v.code for c, v in p.index_pairs.items() if isinstance(v, FilePairs)} for p in parts
        ]
        bare = tuple(
            dataclasses.replace(
                p,
                statistics=None if m else p.statistics,
                index_pairs={
                    c: v for c, v in p.index_pairs.items() if not isinstance(v, FilePairs)
                },
            )
            for p, m in zip(parts, marks, strict=True)
        )
        partial = {c: next(iter(i.values())) for c, i in indices.items()}
        return (
            _shared_chunk,
            (bare, marks, stats[0] if stats else None, codes, partial, self.schema, self.origin),
        )


def _shared_chunk(
    partitions: tuple[WrittenPartition, ...],
    marks: Sequence[bool],
    stats: pa.Table | None,
    codes: Sequence[Mapping[str, int]],
    partial: Mapping[str, GroupedIndex],
    schema: pa.Schema | None,
    origin: str,
) -> ChunkResult:
    """Unpickle a :class:`ChunkResult` whose files share its statistics table and partial
    indices.
    """
    row = iter(range(stats.num_rows if stats is not None else 0))
    out = []
    for p, m, n in zip(partitions, marks, codes, strict=True):
        pairs: dict[str, pa.Table | FilePairs] = dict(p.index_pairs)
        pairs.update({c: FilePairs(partial[c], k) for c, k in n.items()})
        stat = StatisticsRow(stats, next(row)) if m and stats is not None else p.statistics
        out.append(dataclasses.replace(p, index_pairs=pairs, statistics=stat))
    return ChunkResult(tuple(out), schema, origin)


def new_file_uuid(prefix: str = "") -> str:
    """A fresh file uuid (uuid4 hex, as the reference implementations use), starting with
    ``prefix`` (a Spark job's id: its files are found by it) and as long as one without.
    """
    return prefix + _uuid.uuid4().hex[len(prefix) :]


def check_write_columns(
    schema: pa.Schema,
    partition_on: Sequence[str],
    secondary_indices: Sequence[str],
    *,
    what: str = "the data",
) -> None:
    """Validate ``partition_on`` and ``secondary_indices`` against a schema.

    Raises
    ------
    ColumnNotFoundError
        A named column is missing.
    InvalidInputError
        Duplicates, an index on a partition column, nothing left outside the partition
        columns, or an index on an unindexable type.
    """
    names = schema.names
    for what_cols, cols in (
        ("partition_on", partition_on),
        ("secondary_indices", secondary_indices),
    ):
        if isinstance(cols, str):
            raise InvalidInputError(f"{what_cols} must be a list of column names, not a string.")
        if len(set(cols)) != len(cols):
            raise InvalidInputError(f"{what_cols} contains duplicates: {list(cols)}.")
        missing = [c for c in cols if c not in names]
        if missing:
            raise ColumnNotFoundError(f"{what_cols} columns not found in {what}: {missing}.")
    both = sorted(set(partition_on) & set(secondary_indices))
    if both:
        raise InvalidInputError(f"Cannot create secondary index on partition columns: {both}.")
    if partition_on and not [c for c in names if c not in partition_on]:
        raise InvalidInputError("No data left to save outside partition columns.")
    for c in secondary_indices:
        check_indexable(c, schema.field(c).type)
    for c in partition_on:
        t = schema.field(c).type
        if pa.types.is_nested(t) or pa.types.is_binary(t):
            raise InvalidInputError(f"Cannot partition on column {c!r} of type {t}.")


def check_against_base(
    schema: pa.Schema,
    base_schema: pa.Schema | None,
    partition_on: Sequence[str],
    secondary_indices: Sequence[str],
    *,
    dataset_uuid: str,
    origin: str,
    schema_evolution: SchemaEvolution = "none",
) -> pa.Schema:
    """Refuse an incompatible input before any file is written; return its normalised schema.

    The columns are checked (:func:`check_write_columns`) and, for an update
    (``base_schema``), the schema against the stored one (``schema_evolution``).
    """
    check_write_columns(schema, partition_on, secondary_indices, what=origin)
    norm = normalize_schema(schema, partition_on)
    if base_schema is not None:
        merge_into_stored(
            base_schema,
            norm,
            schema_evolution=schema_evolution,
            dataset_uuid=dataset_uuid,
            origin=origin,
            partition_keys=partition_on,
        )
    return norm
