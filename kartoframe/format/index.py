"""Secondary (inverted) indices: value -> partition labels.

An index is held as a two-column :class:`pyarrow.Table` — the indexed column (normalised
type, distinct non-null values) and ``partition`` (``list<string>`` of labels) — which
is exactly the on-disk Parquet layout. All operations are vectorised with pyarrow.
Building and merging indices lives in :mod:`kartoframe.format.index_group` (its original
three functions and the ``partition`` column name are re-exported here); this module
reads, writes and queries them.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kartoframe.errors import CorruptMetadataError, InvalidInputError
from kartoframe.format.arrow_memory import read_parquet_bytes, reader
from kartoframe.format.index_group import (
    PARTITION_COLUMN,
    IndexSource,
    build_index,
    canonical_values,
    empty_index,
    merge_index,
)
from kartoframe.format.schema import declared_schema_metadata, normalize_type
from kartoframe.format.value_ranges import footer_statistics

__all__ = [
    "PARTITION_COLUMN",
    "build_index",
    "empty_index",
    "index_from_bytes",
    "index_row_group_size",
    "index_from_embedded",
    "index_labels",
    "index_to_bytes",
    "index_value_pairs",
    "merge_index",
]


def check_indexable(column: str, arrow_type: pa.DataType) -> None:
    """Raise if a column cannot carry a secondary index."""
    if column == PARTITION_COLUMN:
        raise InvalidInputError("A secondary index on a column named 'partition' is not possible.")
    t = normalize_type(arrow_type)
    if pa.types.is_nested(t):
        raise InvalidInputError(f"Column {column!r} of type {arrow_type} cannot be indexed.")


def index_value_pairs(column: str, values: pa.Array | pa.ChunkedArray, label: str) -> pa.Table:
    """Distinct non-null values of one partition's column, paired with its label.

    The ``label`` column is dictionary-encoded (one dictionary entry, all codes 0): the
    label string is not repeated per value, and grouping needs no string hashing.
    """
    uniq = pc.unique(canonical_values(values)).drop_null()
    codes = pa.array(np.zeros(len(uniq), dtype=np.int32))
    labels = pa.DictionaryArray.from_arrays(codes, pa.array([label], type=pa.string()))
    return pa.table({column: uniq, "label": labels})


def index_labels(index: pa.Table, mask: pa.ChunkedArray | pa.Array) -> set[str]:
    """Labels of the index rows selected by a boolean mask (nulls count as False)."""
    selected = index[PARTITION_COLUMN].filter(mask, null_selection_behavior="drop")
    if len(selected) == 0:
        return set()
    flat = pc.list_flatten(selected.combine_chunks())
    return set(pc.unique(flat).to_pylist())


#: Partition labels per row group of an index file (see :func:`index_to_bytes`).
LABELS_PER_ROW_GROUP = 1 << 17
#: Fewest values per row group of an index file.
MIN_VALUES_PER_ROW_GROUP = 64
#: Largest dictionary page of an index file's columns. Parquet's 1 MiB default made the
#: labels of a row group fall back to plain strings once more than ~17,000 distinct labels
#: (files) met in it: a 24,000-file, 18M-entry index took 89 MB and 1.8 s to read, against
#: 36 MB and 0.37 s dictionary-encoded. A row group holds at most
#: :data:`LABELS_PER_ROW_GROUP` labels, so its dictionary is never larger than its plain
#: strings would be.
INDEX_DICTIONARY_PAGE_LIMIT = 16 << 20


def index_row_group_size(index: pa.Table | IndexSource) -> int:
    """Values per row group: about :data:`LABELS_PER_ROW_GROUP` labels each.

    Values are sorted, so row groups cover disjoint value ranges: a lookup of a few
    values reads one or two of them (:func:`index_from_bytes` with ``only``). Smaller
    groups also decode faster in full (measured: a 2,000-value, 763k-label index 19.8 ->
    10.6 ms; 1M values with one label each 36.6 -> 16.8 ms) for about 25-40 % more bytes.
    """
    if not isinstance(index, pa.Table):
        labels = index.num_labels
    else:
        labels = int(pc.sum(pc.list_value_length(index[PARTITION_COLUMN])).as_py() or 0)
    rows: int = index.num_rows
    if rows == 0 or labels == 0:
        return max(rows, 1)
    return int(min(max(rows * LABELS_PER_ROW_GROUP // labels, MIN_VALUES_PER_ROW_GROUP), 1 << 20))


def index_to_bytes(index: pa.Table | IndexSource) -> bytes:
    """Serialise an index as Parquet (no pandas metadata, like plateau).

    A :class:`~kartoframe.format.index_group.GroupedIndex` or
    :class:`~kartoframe.format.index_group.MergedIndex` is written one row group at a time,
    its labels as dictionary codes: no label string is made. The file is the one the
    whole table gives, byte for byte.
    """
    size = index_row_group_size(index)
    buf = io.BytesIO()
    column = index.column if not isinstance(index, pa.Table) else index.column_names[0]
    options: dict[str, Any] = {
        "version": "2.6",
        "dictionary_pagesize_limit": INDEX_DICTIONARY_PAGE_LIMIT,
        # Bounds of the values only (what a lookup skips row groups by): the labels'
        # bounds were half of the encoding (a 2.2M-label index: 61 -> 34 ms).
        "write_statistics": [column],
        # The labels repeat; the values are distinct (a dictionary of them is waste).
        "use_dictionary": [_LABEL_PATH],
    }
    if isinstance(index, pa.Table):
        pq.write_table(index.replace_schema_metadata(None), buf, row_group_size=size, **options)
        return buf.getvalue()
    first = index.slice_table(0, min(size, index.num_rows), encoded=True)
    # The labels reach Parquet dictionary-encoded; the file's Arrow schema says
    # list<string>, as the whole table's would, so every reader gets strings.
    plain = pa.schema([first.schema.field(0), pa.field(PARTITION_COLUMN, pa.list_(pa.string()))])
    n = index.num_rows
    with (
        pq.ParquetWriter(buf, first.schema, store_schema=False, **options) as writer,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="kf-index") as ahead,
    ):
        # the next row group is cut on a thread while this one is encoded (Parquet's
        # encoding releases the GIL): a 2.2M-label index 49 -> 32 ms
        cut = functools.partial(index.slice_table, encoded=True)
        following = ahead.submit(cut, size, min(2 * size, n)) if size < n else None
        writer.write_table(first, row_group_size=size)
        del first
        for start in range(size, n, size):
            assert following is not None
            part = following.result()
            after = start + size
            following = ahead.submit(cut, after, min(after + size, n)) if after < n else None
            writer.write_table(part, row_group_size=size)
            del part
        writer.add_key_value_metadata(declared_schema_metadata(plain))
    return buf.getvalue()


#: The Parquet path of an index file's labels (a list's items, as Parquet names them).
_LABEL_PATH = f"{PARTITION_COLUMN}.list.element"


def index_from_bytes(
    data: bytes,
    column: str,
    origin: str = "",
    only: Sequence[Any] | None = None,
    column_type: pa.DataType | None = None,
) -> pa.Table:
    """Decode an index file; the value column is cast to its normalised type.

    With ``only`` (non-null values of the column's type), row groups whose statistics
    exclude all of them are not decoded: the result holds every row of those values (and
    others). Such a partial index answers ``==`` and ``in`` lookups of those values
    exactly, and nothing else. With ``column_type`` (the column's type in the dataset
    schema), an index whose values are of another kind (strings for an integer column)
    is refused.

    Raises
    ------
    CorruptMetadataError
        If the file is not Parquet, lacks the expected columns or has unusable types.
    """
    try:
        index = _index_from_bytes(data, column, origin, only)
        if column_type is not None:
            _check_value_kind(index.schema.field(column).type, column, column_type, origin)
        return index
    except CorruptMetadataError:
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError) as e:
        # ValueError covers UnicodeDecodeError from corrupt names in the Parquet schema
        raise CorruptMetadataError(f"Cannot read index file {origin}: {e}") from e


def _value_kind(t: pa.DataType) -> str:
    """The comparison family of a type (values of one family compare with each other)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    for kind, test in (
        ("integer", pa.types.is_integer),
        ("floating", pa.types.is_floating),
        ("decimal", pa.types.is_decimal),
        ("string", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
        ("binary", lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x)),
        ("boolean", pa.types.is_boolean),
        ("date", pa.types.is_date),
        ("timestamp", pa.types.is_timestamp),
        ("null", pa.types.is_null),
    ):
        if test(t):
            return kind
    return str(t)


def _check_value_kind(
    value_type: pa.DataType, column: str, column_type: pa.DataType, origin: str
) -> None:
    kinds = {_value_kind(value_type), _value_kind(column_type)}
    if len(kinds) > 1 and "null" not in kinds:
        raise CorruptMetadataError(
            f"Index file {origin} (column {column!r}) holds {value_type} values, but the "
            f"column has type {column_type} in the dataset schema; the index is corrupt "
            "(rebuild it with build_dataset_indices)."
        )


def _index_from_bytes(
    data: bytes, column: str, origin: str, only: Sequence[Any] | None
) -> pa.Table:
    if only is None:
        table = read_parquet_bytes(data, use_threads=False)
    else:
        table = _read_value_groups(data, column, only)
    names = table.column_names
    if len(set(names)) != len(names):
        raise CorruptMetadataError(f"Index file {origin} has duplicate columns: {names}.")
    if column not in names or PARTITION_COLUMN not in names:
        raise CorruptMetadataError(
            f"Index file {origin} must have columns {column!r} and {PARTITION_COLUMN!r}, "
            f"has {names}."
        )
    vt = table.schema.field(column).type
    pt = table.schema.field(PARTITION_COLUMN).type
    if not (pa.types.is_list(pt) or pa.types.is_large_list(pt)):
        raise CorruptMetadataError(f"Index file {origin}: 'partition' must be a list, got {pt}.")
    try:
        return pa.table(
            {
                column: table[column].cast(normalize_type(vt)),
                PARTITION_COLUMN: table[PARTITION_COLUMN].cast(pa.list_(pa.string())),
            }
        )
    except (pa.ArrowException, ValueError) as e:
        raise CorruptMetadataError(f"Index file {origin} has unusable types: {e}") from e


def _read_value_groups(data: bytes, column: str, only: Sequence[Any]) -> pa.Table:
    """The rows of the values ``only`` in the row groups of an index file that may hold
    one of them.

    Row-group statistics are used for integer and string value columns, whose order
    is unambiguous; other types, groups without statistics and values that do not compare
    with the statistics keep every row group. The labels of the kept groups are decoded
    as dictionary codes and only the rows of ``only`` keep them (their labels are decoded
    by the caller's cast): a row group of 343 values lists 122,000 labels, 6 MB of
    strings, of which one value's read uses 249. 3.7-4.1 -> 1.8-1.9 ms for the
    equality read of ``compare.py``.
    """
    pf = pq.ParquetFile(reader(data))
    md = pf.metadata
    if md.num_row_groups <= 1:
        return pf.read(use_threads=False)
    leaves = [md.row_group(0).column(j).path_in_schema for j in range(md.num_columns)]
    if column not in leaves:
        return pf.read(use_threads=False)  # the caller reports the missing column
    t = pf.schema_arrow.field(column).type
    if not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)):
        return pf.read(use_threads=False)
    values = sorted(only)
    keep = []
    for i, stats in enumerate(footer_statistics(md, [column])):
        if column not in stats:
            keep.append(i)
            continue
        try:
            lo, hi, _ = stats[column]
            if any(lo <= v <= hi for v in values):
                keep.append(i)
        except TypeError:
            keep.append(i)
    labels = leaves.index(_LABEL_PATH) if _LABEL_PATH in leaves else None
    if labels is None or md.schema.column(labels).physical_type != "BYTE_ARRAY" or not keep:
        return _rows_of(pf.read_row_groups(keep, use_threads=False), column, values)
    # group by group: each has a dictionary of its own, which one read cannot chunk (the
    # footer already decoded is reused)
    pf = pq.ParquetFile(reader(data), metadata=md, read_dictionary=[_LABEL_PATH])
    groups = [_rows_of(pf.read_row_group(i, use_threads=False), column, values) for i in keep]
    return pa.concat_tables(groups) if len(groups) > 1 else groups[0]


def _rows_of(table: pa.Table, column: str, values: Sequence[Any]) -> pa.Table:
    """The rows of ``table`` whose ``column`` is one of ``values``; every row if the
    values do not convert to the column's type.
    """
    found = table[column]
    try:
        wanted = pa.array(values, type=found.type)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return table
    return table.filter(pc.is_in(found, value_set=wanted))


def index_from_embedded(
    column: str, arrow_type: pa.DataType, embedded: Mapping[Any, Sequence[str]]
) -> pa.Table:
    """Convert a legacy embedded index (``{value: [labels]}``) to the table form."""
    from kartoframe.format.values import parse_partition_value

    t = normalize_type(arrow_type)
    values = [parse_partition_value(v, t, column) if isinstance(v, str) else v for v in embedded]
    try:
        return pa.table(
            {
                column: pa.array(values, type=t),
                PARTITION_COLUMN: pa.array(
                    [list(x) for x in embedded.values()], type=pa.list_(pa.string())
                ),
            }
        )
    except (pa.ArrowException, ValueError, TypeError) as e:
        raise CorruptMetadataError(f"Embedded index of column {column!r} is invalid: {e}") from e
