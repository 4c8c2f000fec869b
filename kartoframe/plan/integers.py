"""Which integer columns a read returns as pandas nullable integers. Pure, no I/O.

pandas' numpy integer dtypes cannot hold a missing value: Arrow's conversion turns an
integer column holding nulls into ``float64``, which changes values above 2**53. kartoframe
returns such columns as pandas nullable integers (``Int64``, ``UInt64``) instead. Deciding
that per frame from the frame's own nulls gives a read whose frames disagree (a dask
collection whose ``meta`` says ``int64`` while the partitions holding nulls are ``Int64``),
so reads that produce several frames (dask partitions and ``meta``, iterator batches,
:func:`kartoframe.read_dataset_as_dataframes`) decide once, at planning time, from what is
known before any data file is opened:

* the stored pandas metadata: a column it declares with a nullable dtype (``Int64``,
  ``int64[pyarrow]``) already reads with it in every frame and needs no decision;
* the Arrow field's nullability: a non-nullable field holds no nulls;
* partition keys: their values are in the labels of the planned files;
* kartoframe's per-file statistics (:mod:`kartoframe.format.statistics`): the null count
  of the column in each planned file. A file the statistics do not describe (a dataset
  written by plateau, a file added by another writer, a column added by schema evolution)
  may hold nulls.

A column is read as a nullable integer in every frame iff some planned file may hold a
null in it; otherwise every frame keeps the numpy dtype (the fast default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kartoframe.format.convert import declares_missing_values
from kartoframe.format.schema import pandas_metadata
from kartoframe.format.statistics_rows import rows_of
from kartoframe.plan.file_part import FilePart

__all__ = ["integer_statistics_needed", "nullable_integer_columns"]


def _candidates(
    schema: pa.Schema, columns: Sequence[str], categoricals: Sequence[str]
) -> list[pa.Field]:
    """Integer fields of ``columns`` whose pandas dtype depends on nulls."""
    meta = pandas_metadata(schema) or {}
    declared = {
        r.get("name"): r.get("numpy_type") for r in meta.get("columns", []) if isinstance(r, dict)
    }
    cats = set(categoricals)
    out = []
    for name in dict.fromkeys(columns):
        if name in cats or name not in schema.names:
            continue
        field = schema.field(name)
        if pa.types.is_integer(field.type) and not declares_missing_values(declared.get(name)):
            out.append(field)
    return out


def integer_statistics_needed(
    schema: pa.Schema,
    columns: Sequence[str] | None,
    partition_keys: Sequence[str],
    categoricals: Sequence[str] = (),
) -> bool:
    """Whether :func:`nullable_integer_columns` would use per-file statistics for a read.

    True if a projected integer column (not a partition key) is nullable in the schema and
    not declared with a nullable pandas dtype: the resolver should then load the dataset's
    statistics (a header without them costs no request).
    """
    cols = list(schema.names) if columns is None else list(columns)
    pk = set(partition_keys)
    return any(f.nullable and f.name not in pk for f in _candidates(schema, cols, categoricals))


def nullable_integer_columns(
    schema: pa.Schema,
    columns: Sequence[str],
    files: Sequence[FilePart],
    partition_keys: Sequence[str],
    statistics: pa.Table | None,
    categoricals: Sequence[str] = (),
) -> tuple[str, ...]:
    """Integer columns every frame of a read returns as pandas nullable integers.

    Parameters
    ----------
    schema
        The dataset schema (with its pandas metadata).
    columns
        The columns the read returns.
    files
        The planned data files (after pruning).
    partition_keys
        The dataset's partition keys (their values come from the files' labels).
    statistics
        The dataset's per-file statistics, or None (unknown: every file may hold nulls).
    categoricals
        Columns returned as ``category`` (not decided here).

    Returns
    -------
    tuple of str
        The columns, in ``columns`` order: integer columns not declared with a nullable
        pandas dtype in which some planned file may hold a null.
    """
    fields = _candidates(schema, columns, categoricals)
    if not fields or not files:
        return ()
    pk_pos = {k: i for i, k in enumerate(partition_keys)}
    rows: list[int | None] | None = None
    out = []
    for field in fields:
        if field.name in pk_pos:
            i = pk_pos[field.name]
            if any(f.partition_values[i] is None for f in files):
                out.append(field.name)
            continue
        if not field.nullable:
            continue
        if statistics is None:
            out.append(field.name)
            continue
        if rows is None:
            rows = _statistics_rows(statistics, files)
        if _may_hold_nulls(statistics, rows, field.name):
            out.append(field.name)
    return tuple(out)


def _statistics_rows(statistics: pa.Table, files: Sequence[FilePart]) -> list[int | None]:
    """The statistics row of each file (None: not described, or for another data file)."""
    return rows_of(statistics, [f.label for f in files], [f.key for f in files])


def _may_hold_nulls(statistics: pa.Table, rows: Sequence[int | None], column: str) -> bool:
    if any(i is None for i in rows):
        return True
    if "null_count" not in statistics.column_names:
        return True
    group = statistics.column("null_count").type
    if group.get_field_index(column) < 0:
        return True
    counts: list[Any] = statistics.column("null_count").combine_chunks().field(column).to_pylist()
    return any(counts[i] is None or counts[i] > 0 for i in rows if i is not None)
