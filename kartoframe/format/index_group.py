"""Building secondary indices: (value, label) pairs grouped on integer codes.

A written chunk groups its files' pairs into a partial index (:class:`GroupedIndex`:
values sorted, labels as codes); the commit merges the partial indices and the base index
row group by row group (:class:`MergedIndex`) as :func:`~kartoframe.format.index.index_to_bytes`
writes the file, so label strings exist one row group at a time. Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError
from kartoframe.format.schema import normalize_type

__all__ = [
    "PARTITION_COLUMN",
    "GroupedIndex",
    "IndexSource",
    "MergedIndex",
    "build_index",
    "canonical_values",
    "empty_index",
    "files_index",
    "group_index",
    "grouped_from_table",
    "index_slice",
    "merge_grouped",
    "merge_index",
    "merge_parts",
    "one_label",
    "restrict",
]

PARTITION_COLUMN = "partition"


def empty_index(column: str, arrow_type: pa.DataType) -> pa.Table:
    """An index with no values."""
    return pa.table(
        {
            column: pa.array([], type=normalize_type(arrow_type)),
            PARTITION_COLUMN: pa.array([], type=pa.list_(pa.string())),
        }
    )


def build_index(column: str, arrow_type: pa.DataType, pairs: Sequence[pa.Table]) -> pa.Table:
    """Build an index from ``(value, label)`` pair tables."""
    return group_index(column, arrow_type, pairs).table()


def group_index(column: str, arrow_type: pa.DataType, pairs: Sequence[pa.Table]) -> GroupedIndex:
    """:func:`build_index` with the labels kept as codes (see :class:`GroupedIndex`)."""
    t = normalize_type(arrow_type)
    return _group(column, t, pairs)


def canonical_values(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``values`` as an index holds them: the normalised type and, for floats, one NaN
    and one zero.

    Arrow's hashing keeps NaNs of other bit patterns (-nan) and -0.0 apart from 0.0,
    while equality (and plateau's pandas-built indices) do not.
    """
    t = normalize_type(values.type)
    if values.type != t:
        values = values.cast(t)
    if pa.types.is_floating(t):
        values = pc.if_else(pc.is_nan(values), pa.scalar(float("nan"), t), values)
        values = pc.if_else(pc.equal(values, pa.scalar(0.0, t)), pa.scalar(0.0, t), values)
    return values


#: Most (distinct value, file) cells :func:`files_index` marks at once (one byte each).
MAX_INDEX_CELLS = 1 << 26


def files_index(
    column: str, values: pa.ChunkedArray, groups: np.ndarray, labels: Sequence[str]
) -> GroupedIndex | None:
    """The partial index of a chunk's files, from the whole column at once.

    ``groups`` holds the file of every row of ``values`` (file ``g`` has label
    ``labels[g]``). The result is the :class:`GroupedIndex` that :func:`group_index`
    makes of the files' ``index_value_pairs`` (labels coded by file), without one hash
    table per file: the values are coded once, and each (value, file) cell that occurs
    is marked in a value-major grid, so reading the grid's marks in order gives each
    value's files in file order. Integers of a narrow range are coded by their offset
    from the minimum, others by a hash table. A 5M-row, 200-file chunk of 50,000
    product ids: 66 ms (92 ms hashed), against 172 ms file by file. Returns None when
    the grid would exceed :data:`MAX_INDEX_CELLS` or 8 bytes a row (of at least 1 MiB),
    or the type has no hash kernel (group the files' pairs instead).
    """
    n_files = len(labels)
    label_array = pa.array(labels, pa.string())
    if len(values) == 0:
        return _no_values(column, values.type, label_array)
    cap = min(MAX_INDEX_CELLS, max(8 * len(values), 1 << 20))
    try:  # a type without a cast or hash kernel: None
        canonical = canonical_values(values)
        direct = _integer_files_index(column, canonical, groups, label_array, cap)
        if direct is not None:
            return direct
        enc = pc.dictionary_encode(canonical).combine_chunks()
    except pa.ArrowNotImplementedError:
        return None
    distinct = enc.dictionary
    if len(distinct) * n_files > cap:
        return None  # the grid would outweigh the column
    by_value = pc.sort_indices(distinct).to_numpy()
    rank = np.empty(len(distinct), dtype=np.int32)
    rank[by_value] = np.arange(len(distinct), dtype=np.int32)
    codes, groups = _non_null(enc.indices, groups)
    _, offsets, file_codes = _grid_index(rank[codes], groups, len(distinct), n_files)
    sorted_values = distinct.take(pa.array(by_value))  # every distinct value occurs
    return GroupedIndex(column, sorted_values, offsets, file_codes, label_array)


def _integer_files_index(
    column: str, values: pa.ChunkedArray, groups: np.ndarray, labels: pa.Array, cap: int
) -> GroupedIndex | None:
    """:func:`files_index` of integers whose range is small enough for the grid to have a
    row per integer of it: a value's code is its offset from the minimum, with no hash
    table (a 5M-row column of 50,000 product ids: 28 ms of ``dictionary_encode`` saved),
    and the grid's rows come in value order, with no sort. None: not such a column.
    """
    t = normalize_type(values.type)
    if not pa.types.is_integer(t):
        return None
    values = canonical_values(values)  # a no-op for :func:`files_index`'s canonical values
    bounds = pc.min_max(values)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo is None or (hi - lo + 1) * len(labels) > cap:
        return None  # only nulls (the hashing path indexes none), or a wide range
    span = hi - lo + 1
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    raw, groups = _non_null(arr, groups)
    # every value lies in [lo, hi]: the difference is below ``span`` in either signedness
    codes = (raw - raw.dtype.type(lo)).astype(np.int32)
    present, offsets, file_codes = _grid_index(codes, groups, span, len(labels))
    sorted_values = pa.array(present.astype(raw.dtype) + raw.dtype.type(lo), type=t)
    return GroupedIndex(column, sorted_values, offsets, file_codes, labels)


def _non_null(arr: pa.Array, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``arr`` as numpy and the file of each of its rows, null values left out (an index
    holds none).
    """
    if arr.null_count:
        keep = arr.is_valid()
        arr, groups = arr.filter(keep), groups[keep.to_numpy(zero_copy_only=False)]
    return arr.to_numpy(zero_copy_only=False), groups


def _grid_index(
    codes: np.ndarray, groups: np.ndarray, n_values: int, n_files: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (value, file) cells that occur, marked in a value-major grid and read back in
    order: the codes of the values that occur, each one's offsets into the file codes,
    and the file codes (``codes`` int32 in ``[0, n_values)``, consumed; ``groups`` the
    file of each row).
    """
    cells = codes
    cells *= n_files
    cells += groups.astype(np.int32, copy=False)
    grid = np.zeros(n_values * n_files, dtype=bool)
    grid[cells] = True
    del cells
    marked = np.flatnonzero(grid)
    del grid
    value_of = marked // n_files
    counts = np.bincount(value_of, minlength=n_values)
    present = np.flatnonzero(counts)
    offsets = np.zeros(len(present) + 1, dtype=np.int64)
    np.cumsum(counts[present], out=offsets[1:])
    return present, offsets, _compact_codes(marked - value_of * n_files, n_files)


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

    def slice_table(self, start: int, stop: int, encoded: bool = False) -> pa.Table:
        """Rows ``start:stop`` as an index table (their label strings only; ``encoded``:
        the labels dictionary-encoded, see :func:`index_slice`).
        """
        lo, hi = int(self.offsets[start]), int(self.offsets[stop])
        values = self.values.slice(start, stop - start)
        offsets = self.offsets[start : stop + 1] - lo
        return index_slice(self.column, values, offsets, self.codes[lo:hi], self.labels, encoded)

    def table(self) -> pa.Table:
        """The whole index as a table (every label string)."""
        return self.slice_table(0, self.num_rows)

    def pair_rows(self) -> np.ndarray:
        """The row of each (value, label) pair, in pair order."""
        return np.repeat(np.arange(self.num_rows, dtype=np.int64), np.diff(self.offsets))


def index_slice(
    column: str,
    values: pa.Array,
    offsets: np.ndarray,
    codes: np.ndarray,
    labels: pa.Array,
    encoded: bool = False,
) -> pa.Table:
    """An index table of ``values`` whose labels are ``labels[codes]``, cut by ``offsets``.

    ``encoded``: the labels as a dictionary of the labels used, in order of first use
    (what Parquet's dictionary encoder makes of the strings), so a row group of an index
    file exists as 4 bytes per label, not as strings: 576k labels of the 60M-row dask
    benchmark were 33 MB of strings.
    """
    if encoded:
        n = len(codes)
        first = np.full(len(labels), n, dtype=np.int64)
        # reversed, so the first use of a code is the last (winning) write; the order only
        # decides the bytes (the same file as the whole table), not what the file holds
        first[codes[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
        used = np.flatnonzero(first < n)
        used = used[np.argsort(first[used], kind="stable")]
        rank = np.zeros(len(labels), dtype=np.int32)
        rank[used] = np.arange(len(used), dtype=np.int32)
        items: pa.Array = pa.DictionaryArray.from_arrays(
            pa.array(rank[codes], pa.int32()), labels.take(pa.array(used))
        )
    else:
        items = labels.take(pa.array(codes))
    partition = pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), items)
    return pa.table({column: values, PARTITION_COLUMN: partition})


def _no_values(column: str, arrow_type: pa.DataType, labels: pa.Array) -> GroupedIndex:
    """An index of no values whose labels keep their codes (files holding only nulls)."""
    empty = empty_index(column, arrow_type)[column].combine_chunks()
    return _grouped(column, empty, np.zeros(0, np.int64), np.zeros(0, np.int32), labels)


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

    def slice_table(self, start: int, stop: int, encoded: bool = False) -> pa.Table:
        """Rows ``start:stop`` of the merged index as an index table (``encoded``: see
        :func:`index_slice`).
        """
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
        values = self.values.slice(start, stop - start)
        return index_slice(self.column, values, offsets, out, self.labels, encoded)

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
        return _no_values(column, t, _label_codes(p["label"] for p in pairs)[1])
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
