"""Secondary (inverted) indices: value -> partition labels.

An index is held as a two-column :class:`pyarrow.Table` — the indexed column (normalised
type, distinct non-null values) and ``partition`` (``list<string>`` of labels) — which
is exactly the on-disk Parquet layout. All operations are vectorised with pyarrow.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kartoframe.errors import CorruptMetadataError, InvalidInputError
from kartoframe.format.arrow_memory import read_parquet_bytes, reader
from kartoframe.format.schema import normalize_type

__all__ = [
    "PARTITION_COLUMN",
    "GroupedIndex",
    "IndexSource",
    "MergedIndex",
    "build_index",
    "empty_index",
    "group_index",
    "index_from_bytes",
    "index_row_group_size",
    "index_from_embedded",
    "index_labels",
    "index_to_bytes",
    "index_value_pairs",
    "merge_grouped",
    "grouped_from_table",
    "merge_parts",
    "one_label",
    "restrict",
    "merge_index",
]

PARTITION_COLUMN = "partition"


def check_indexable(column: str, arrow_type: pa.DataType) -> None:
    """Raise if a column cannot carry a secondary index."""
    if column == PARTITION_COLUMN:
        raise InvalidInputError("A secondary index on a column named 'partition' is not possible.")
    t = normalize_type(arrow_type)
    if pa.types.is_nested(t):
        raise InvalidInputError(f"Column {column!r} of type {arrow_type} cannot be indexed.")


def empty_index(column: str, arrow_type: pa.DataType) -> pa.Table:
    """An index with no values."""
    return pa.table(
        {
            column: pa.array([], type=normalize_type(arrow_type)),
            PARTITION_COLUMN: pa.array([], type=pa.list_(pa.string())),
        }
    )


def index_value_pairs(column: str, values: pa.Array | pa.ChunkedArray, label: str) -> pa.Table:
    """Distinct non-null values of one partition's column, paired with its label.

    The ``label`` column is dictionary-encoded (one dictionary entry, all codes 0): the
    label string is not repeated per value, and grouping needs no string hashing.
    """
    t = normalize_type(values.type)
    if values.type != t:
        values = values.cast(t)
    if pa.types.is_floating(t):
        # one NaN and one zero: Arrow's unique keeps NaNs of other bit patterns (-nan) and
        # -0.0 apart from 0.0, while equality (and plateau's pandas-built indices) do not
        values = pc.if_else(pc.is_nan(values), pa.scalar(float("nan"), t), values)
        values = pc.if_else(pc.equal(values, pa.scalar(0.0, t)), pa.scalar(0.0, t), values)
    uniq = pc.unique(values).drop_null()
    codes = pa.array(np.zeros(len(uniq), dtype=np.int32))
    labels = pa.DictionaryArray.from_arrays(codes, pa.array([label], type=pa.string()))
    return pa.table({column: uniq, "label": labels})


def build_index(column: str, arrow_type: pa.DataType, pairs: Sequence[pa.Table]) -> pa.Table:
    """Build an index from ``(value, label)`` pair tables."""
    return group_index(column, arrow_type, pairs).table()


def group_index(column: str, arrow_type: pa.DataType, pairs: Sequence[pa.Table]) -> GroupedIndex:
    """:func:`build_index` with the labels kept as codes (see :class:`GroupedIndex`)."""
    t = normalize_type(arrow_type)
    return _group(column, t, pairs)


def _label_codes(labels: Iterable[pa.Array | pa.ChunkedArray]) -> tuple[np.ndarray, pa.Array]:
    """Integer codes of label arrays (plain or dictionary-encoded) and their dictionary.

    Dictionaries of different chunks are concatenated, not unified: a label may occur
    under two codes, which is harmless because the codes are only turned back into strings.
    """
    codes: list[np.ndarray] = []
    dicts: list[pa.Array] = []
    base = 0
    for arr in labels:
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        for ch in chunks:
            if not pa.types.is_dictionary(ch.type):
                ch = pc.dictionary_encode(ch)
            if ch.null_count:
                raise InvalidInputError("Index partition labels must not be null.")
            codes.append(ch.indices.to_numpy(zero_copy_only=False).astype(np.int64) + base)
            d = ch.dictionary
            dicts.append(_string_labels(d))
            base += len(d)
    if not codes:
        return np.zeros(0, dtype=np.int32), pa.array([], type=pa.string())
    # int32 codes (4 bytes per pair) unless the dictionaries hold more labels than that
    kind = np.int32 if base <= np.iinfo(np.int32).max else np.int64
    return np.concatenate([c.astype(kind) for c in codes]), pa.concat_arrays(dicts)


def _stable_order(keys: np.ndarray, n_keys: int) -> np.ndarray:
    """Stable argsort of integer keys in ``[0, n_keys)`` by 16-bit radix passes.

    numpy's stable sort is a radix sort for 16-bit keys; two passes (low, then high
    half) sort keys below 2**32 in linear time, ~3x faster than a comparison sort.
    """
    if n_keys <= 1 << 16:
        return np.argsort(keys.astype(np.uint16), kind="stable")
    if n_keys <= 1 << 32:
        order = np.argsort((keys & 0xFFFF).astype(np.uint16), kind="stable")
        high = (keys >> 16).astype(np.uint16)[order]
        return order[np.argsort(high, kind="stable")]
    return np.argsort(keys, kind="stable")


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class GroupedIndex:
    """An index as integer codes: what :func:`index_to_bytes` streams row group by row group.

    Row ``i`` is ``values[i]`` with the labels ``labels[codes[offsets[i]:offsets[i + 1]]]``
    (``values`` distinct and sorted). A label is one dictionary entry however many values
    it carries, so the index holds 2 bytes per (value, label) pair (4 past 65,536 labels)
    instead of the label's string: the strings of a 10M-row dask write's 3M pairs took
    180 MB, and exist here one row group at a time (:meth:`slice_table`).
    """

    column: str
    values: pa.Array
    offsets: np.ndarray  # int64, len(values) + 1
    codes: np.ndarray  # uint16 / int32 codes into ``labels``, in row order
    labels: pa.Array  # string

    @property
    def num_rows(self) -> int:
        """Number of distinct values."""
        return len(self.values)

    @property
    def num_labels(self) -> int:
        """Number of (value, label) pairs."""
        return len(self.codes)

    def slice_table(self, start: int, stop: int) -> pa.Table:
        """Rows ``start:stop`` as an index table (their label strings only)."""
        lo, hi = int(self.offsets[start]), int(self.offsets[stop])
        labels = self.labels.take(pa.array(self.codes[lo:hi]))
        offsets = (self.offsets[start : stop + 1] - lo).astype(np.int32)
        return pa.table(
            {
                self.column: self.values.slice(start, stop - start),
                PARTITION_COLUMN: pa.ListArray.from_arrays(pa.array(offsets), labels),
            }
        )

    def table(self) -> pa.Table:
        """The whole index as a table (every label string)."""
        return self.slice_table(0, self.num_rows)

    def pair_rows(self) -> np.ndarray:
        """The row of each (value, label) pair, in pair order."""
        return np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(self.offsets))


def _grouped(
    column: str, values: pa.Array, counts: np.ndarray, codes: np.ndarray, labels: pa.Array
) -> GroupedIndex:
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return GroupedIndex(column, values, offsets, _compact_codes(codes, len(labels)), labels)


def _compact_codes(codes: np.ndarray, n_labels: int) -> np.ndarray:
    """``codes`` in the smallest integer type that holds ``n_labels`` codes (a chunk's
    partial index of fewer than 65,536 files needs 2 bytes per pair).
    """
    kind = np.uint16 if n_labels <= 1 << 16 else np.int32 if n_labels <= 1 << 31 else np.int64
    return codes.astype(kind, copy=False)


def restrict(index: GroupedIndex, keep: np.ndarray) -> GroupedIndex:
    """``index`` with only the labels whose code is set in the mask ``keep`` (values left
    without a label dropped; the labels dictionary and its codes unchanged).
    """
    mask = keep[index.codes]
    counts = np.bincount(index.pair_rows()[mask], minlength=index.num_rows)
    rows = np.flatnonzero(counts)
    return _grouped(
        index.column,
        index.values.take(pa.array(rows)),
        counts[rows],
        index.codes[mask],
        index.labels,
    )


def one_label(index: GroupedIndex, code: int) -> GroupedIndex:
    """The values of label ``code`` alone, as an index with that one label."""
    keep = np.zeros(len(index.labels), dtype=bool)
    keep[code] = True
    only = restrict(index, keep)
    zeros = np.zeros(only.num_labels, dtype=np.uint16)
    label = index.labels.take(pa.array([code]))  # a copy: a pickled slice holds every label
    return GroupedIndex(only.column, only.values, only.offsets, zeros, label)


class MergedIndex:
    """Several grouped indices of one column as one index, merged row group by row group.

    ``parts`` are in input order (a base index, then the partial index of each written
    chunk); each has distinct values, sorted. A value's labels are those of every part,
    part after part. Only the distinct values of all parts are held merged (to rank
    them); :meth:`slice_table` builds one window of values from each part's matching
    rows, so the commit of a dask write holds its chunks' partial indices (about 2 bytes
    per value and file) and one row group, not the whole index.
    """

    def __init__(self, column: str, parts: Sequence[GroupedIndex]) -> None:
        self.column = column
        self.parts = tuple(parts)
        if not self.parts:
            raise ValueError("A merged index needs at least one part.")
        enc = pc.dictionary_encode(pa.chunked_array([p.values for p in self.parts]))
        # one dictionary, shared by every chunk
        distinct = enc.chunks[-1].dictionary if enc.num_chunks else self.parts[0].values
        by_value = pc.sort_indices(distinct).to_numpy()
        rank = np.empty(len(distinct), dtype=np.int64)
        rank[by_value] = np.arange(len(distinct), dtype=np.int64)
        self.values = distinct.take(pa.array(by_value))
        codes = [ch.indices.to_numpy(zero_copy_only=False) for ch in enc.chunks]
        ranks = rank[np.concatenate(codes)] if codes else np.zeros(0, np.int64)
        ends = np.cumsum([p.num_rows for p in self.parts])
        self.ranks = np.split(ranks, ends[:-1])
        if len(ranks) != ends[-1] or any(
            len(r) > 1 and bool(np.any(np.diff(r) <= 0)) for r in self.ranks
        ):
            raise ValueError("Partial indices must have distinct, sorted values.")
        sizes = np.array([len(p.labels) for p in self.parts], dtype=np.int64)
        self.bases = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        self.labels = pa.concat_arrays([p.labels for p in self.parts])

    @property
    def num_rows(self) -> int:
        """Number of distinct values of all parts."""
        return len(self.values)

    @property
    def num_labels(self) -> int:
        """Number of (value, label) pairs of all parts."""
        return sum(p.num_labels for p in self.parts)

    def slice_table(self, start: int, stop: int) -> pa.Table:
        """Rows ``start:stop`` of the merged index as an index table."""
        windows = []
        counts = np.zeros(stop - start, dtype=np.int64)
        for part, ranks in zip(self.parts, self.ranks, strict=True):
            lo, hi = np.searchsorted(ranks, [start, stop])
            where = ranks[lo:hi] - start
            n = np.diff(part.offsets[lo : hi + 1])
            counts[where] += n
            windows.append((part, lo, hi, where, n))
        offsets = np.zeros(stop - start + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        cursor = offsets[:-1].copy()
        out = np.empty(int(offsets[-1]), dtype=np.int64)
        for (part, lo, hi, where, n), base in zip(windows, self.bases, strict=True):
            first, last = int(part.offsets[lo]), int(part.offsets[hi])
            if last == first:
                continue
            within = part.offsets[lo:hi] - first
            pos = np.repeat(cursor[where] - within, n) + np.arange(last - first)
            out[pos] = part.codes[first:last].astype(np.int64) + base
            cursor[where] += n
        labels = self.labels.take(pa.array(out))
        return pa.table(
            {
                self.column: self.values.slice(start, stop - start),
                PARTITION_COLUMN: pa.ListArray.from_arrays(
                    pa.array(offsets.astype(np.int32)), labels
                ),
            }
        )

    def table(self) -> pa.Table:
        """The whole merged index as a table (every label string)."""
        return self.slice_table(0, self.num_rows)


#: An index the commit writes without holding its label strings.
IndexSource = GroupedIndex | MergedIndex


def grouped_from_table(column: str, index: pa.Table) -> GroupedIndex:
    """A stored index table as a :class:`GroupedIndex` (values sorted, labels as codes)."""
    t = index.schema.field(column).type
    return _group(column, t, [_explode(column, index)])


def merge_parts(column: str, parts: Sequence[GroupedIndex]) -> IndexSource:
    """One index of ``parts`` (see :class:`MergedIndex`); a single part stays as it is."""
    parts = [p for p in parts if p.num_rows] or list(parts[:1])
    if len(parts) == 1:
        return parts[0]
    try:
        return MergedIndex(column, parts)
    except (ValueError, pa.ArrowNotImplementedError):  # no hash kernel, or unsorted parts
        t = parts[0].values.type
        return _group(column, t, [_explode(column, p.table()) for p in parts])


def _group(column: str, t: pa.DataType, pairs: Sequence[pa.Table]) -> GroupedIndex:
    """Group ``(value, label)`` pairs into one row per value with its list of labels.

    Values are dictionary-encoded (one hash table over all tables) and the distinct
    values sorted; each pair's rank is its value's position in that order. The label
    codes are then scattered table by table into their value's slot (a counting sort:
    labels keep their input order within a value). A table of one label (a written
    file's pairs) has each value once, so its codes land with one vectorised step.
    Memory: about 12 bytes per pair (ranks, codes, the hash's indices), no 8-byte
    array per pair and no label strings.
    """
    values = pa.chunked_array([ch for p in pairs for ch in p[column].cast(t).chunks], type=t)
    if len(values) == 0:  # no values, but the labels keep their codes (a chunk's files)
        empty = empty_index(column, t)[column].combine_chunks()
        _, labels = _label_codes(p["label"] for p in pairs)
        return _grouped(column, empty, np.zeros(0, np.int64), np.zeros(0, np.int32), labels)
    try:
        enc = pc.dictionary_encode(values)
    except pa.ArrowNotImplementedError:
        codes, label_dict = _label_codes(p["label"] for p in pairs)
        return _group_sorted(column, values.combine_chunks(), codes, label_dict)
    del values
    distinct = enc.chunks[-1].dictionary  # one dictionary, shared by every chunk
    by_value = pc.sort_indices(distinct).to_numpy()
    rank = np.empty(len(distinct), dtype=np.int32)
    rank[by_value] = np.arange(len(distinct), dtype=np.int32)
    ranks = np.concatenate([rank[ch.indices.to_numpy(zero_copy_only=False)] for ch in enc.chunks])
    del enc
    offsets = np.zeros(len(distinct) + 1, dtype=np.int64)
    np.cumsum(np.bincount(ranks, minlength=len(distinct)), out=offsets[1:])
    # int32 slots: an index file's list offsets are int32, so codes < 2**31
    slots = np.empty(len(ranks), np.int32)
    grouped = GroupedIndex(column, distinct.take(pa.array(by_value)), offsets, slots, _NO_LABELS)
    labels = _scatter(pairs, ranks, grouped.offsets, grouped.codes)
    if labels is None:  # a one-label table repeated a value: pairs were not unique
        codes, labels = _label_codes(p["label"] for p in pairs)
        codes = codes[_stable_order(ranks, len(distinct))]
    else:
        codes = grouped.codes
    return dataclasses.replace(grouped, codes=_compact_codes(codes, len(labels)), labels=labels)


_NO_LABELS = pa.array([], type=pa.string())


def _scatter(
    pairs: Sequence[pa.Table], ranks: np.ndarray, offsets: np.ndarray, out: np.ndarray
) -> pa.Array | None:
    """Fill ``out`` with each pair's label code at its value's next free slot, in input order.

    Returns the labels dictionary, or None if a one-label table held a value twice (the
    slots then do not add up, which the final check finds).
    """
    cursor = offsets[:-1].copy()
    dicts: list[pa.Array] = []
    base = 0
    pos = 0
    for p in pairs:
        n = p.num_rows
        r = ranks[pos : pos + n]
        pos += n
        column = p["label"]
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        if (
            len(chunks) == 1
            and pa.types.is_dictionary(chunks[0].type)
            and len(chunks[0].dictionary) == 1
        ):
            if chunks[0].null_count:
                raise InvalidInputError("Index partition labels must not be null.")
            dicts.append(_string_labels(chunks[0].dictionary))
            slots = cursor[r]
            out[slots] = base
            cursor[r] = slots + 1
            base += 1
            continue
        codes, d = _label_codes([column])
        dicts.append(d)
        order = np.argsort(r, kind="stable")
        sorted_r = r[order]
        first = np.flatnonzero(np.concatenate([[True], sorted_r[1:] != sorted_r[:-1]]))
        run = np.repeat(first, np.diff(np.append(first, len(sorted_r))))
        out[cursor[sorted_r] + (np.arange(len(sorted_r)) - run)] = codes[order] + base
        cursor += np.bincount(r, minlength=len(cursor)).astype(cursor.dtype)
        base += len(d)
    if not np.array_equal(cursor, offsets[1:]):
        return None
    return pa.concat_arrays(dicts) if dicts else _NO_LABELS


def _string_labels(d: pa.Array) -> pa.Array:
    return d.cast(pa.string()) if d.type != pa.string() else d


def _group_sorted(
    column: str, values: pa.Array, label_codes: np.ndarray, label_dict: pa.Array
) -> GroupedIndex:
    """Comparison-sort grouping for value types without a hash kernel."""
    order = pc.sort_indices(values)
    values = values.take(order)
    codes = label_codes[order.to_numpy()]
    n = len(values)
    if n > 1:
        change = pc.not_equal(values.slice(1), values.slice(0, n - 1))
        starts = np.flatnonzero(change.to_numpy(zero_copy_only=False)) + 1
    else:
        starts = np.array([], dtype=np.int64)
    bounds = np.concatenate([[0], starts, [n]]).astype(np.int64)
    firsts = pa.array(bounds[:-1])
    return _grouped(column, values.take(firsts), np.diff(bounds), codes, label_dict)


def _explode(column: str, index: pa.Table) -> pa.Table:
    lists = index[PARTITION_COLUMN].combine_chunks()
    parents = pc.list_parent_indices(lists)
    labels = pc.list_flatten(lists)
    values = index[column].combine_chunks().take(parents)
    return pa.table({column: values, "label": labels.cast(pa.string())})


def merge_index(
    column: str,
    index: pa.Table,
    add: Sequence[pa.Table] = (),
    remove_labels: Iterable[str] = (),
) -> pa.Table:
    """Return ``index`` with the labels in ``remove_labels`` dropped and ``add`` merged in."""
    merged = merge_grouped(column, index, add, remove_labels)
    return merged if isinstance(merged, pa.Table) else merged.table()


def merge_grouped(
    column: str,
    index: pa.Table,
    add: Sequence[pa.Table] = (),
    remove_labels: Iterable[str] = (),
) -> pa.Table | GroupedIndex:
    """:func:`merge_index` with the labels kept as codes (``index`` itself if unchanged)."""
    remove = pa.array(list(remove_labels), type=pa.string())
    if len(remove) == 0 and not add:
        return index
    t = index.schema.field(column).type
    if pa.types.is_null(t) and add:
        t = add[0].schema.field(column).type
        index = index.cast(pa.schema([(column, t), (PARTITION_COLUMN, pa.list_(pa.string()))]))
    pairs = _explode(column, index)
    if len(remove):
        pairs = pairs.filter(pc.invert(pc.is_in(pairs["label"], value_set=remove)))
    return _group(column, t, [pairs, *add])


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

    A :class:`GroupedIndex` or :class:`MergedIndex` is written one row group at a time:
    only that group's label strings exist at once.
    """
    size = index_row_group_size(index)
    buf = io.BytesIO()
    options: dict[str, Any] = {
        "version": "2.6",
        "dictionary_pagesize_limit": INDEX_DICTIONARY_PAGE_LIMIT,
    }
    if isinstance(index, pa.Table):
        pq.write_table(index.replace_schema_metadata(None), buf, row_group_size=size, **options)
        return buf.getvalue()
    first = index.slice_table(0, min(size, index.num_rows))
    with pq.ParquetWriter(buf, first.schema, **options) as writer:
        writer.write_table(first, row_group_size=size)
        for start in range(size, index.num_rows, size):
            writer.write_table(
                index.slice_table(start, min(start + size, index.num_rows)), row_group_size=size
            )
    return buf.getvalue()


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
    """The row groups of an index file that may hold one of the values ``only``.

    Row-group statistics are used for integer and string value columns, whose order
    is unambiguous; other types, groups without statistics and values that do not compare
    with the statistics keep every row group.
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
    leaf = leaves.index(column)
    values = sorted(only)
    keep = []
    for i in range(md.num_row_groups):
        stats = md.row_group(i).column(leaf).statistics
        if stats is None or not stats.has_min_max:
            keep.append(i)
            continue
        try:
            lo, hi = stats.min, stats.max
            if any(lo <= v <= hi for v in values):
                keep.append(i)
        except TypeError:
            keep.append(i)
    return pf.read_row_groups(keep, use_threads=False)


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
