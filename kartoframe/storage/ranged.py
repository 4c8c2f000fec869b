"""Ranged reads of remote Parquet objects: the footer, then only the column chunks a scan needs.

A scan of a remote object (S3, GCS, Azure, ``memory://``) that needs 3 of 40 columns used
to download the whole object. :func:`ranged_fragments` fetches, per object and through
the :class:`~kartoframe.storage.store.Store` (concurrent, retried):

1. the last :data:`TAIL` bytes (one suffix-range GET). An object no larger than that has
   arrived whole: it is scanned as it is.
2. From the footer in that tail: the row groups the scan's filter can match (by their
   statistics, as Arrow prunes them) and, in those, the chunks of the projected and
   filtered columns. Byte ranges less than :data:`GAP` apart are merged into one GET.
3. If the merged ranges cover more than :data:`WHOLE_SHARE` of the object, the object is
   fetched whole (one GET): a scan of most of a file is cheaper in one request.
   Otherwise the ranges are fetched concurrently.

The bytes go into one Arrow-owned buffer per object, laid out at their offsets in the
object, the footer at its end (the bytes in between are never read); Arrow scans it like
the object itself. No Python object is ever handed to Arrow (see
:mod:`kartoframe.format.arrow_memory`: the exit-safety rule).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kartoframe.errors import CorruptDataError
from kartoframe.format.arrow_memory import arrow_owned, reader
from kartoframe.storage.store import Store

__all__ = ["GAP", "TAIL", "WHOLE_SHARE", "chunk_ranges", "merge_ranges", "ranged_fragments"]

#: Bytes of the first (suffix-range) GET of an object: its footer, or all of a small object.
TAIL = 64 * 1024
#: Ranges closer than this are fetched in one GET (Arrow's own hole size for coalescing
#: reads): a scan fetches at most this much it does not need between two ranges.
GAP = 8 * 1024
#: Above this share of the object, the needed ranges are fetched as one whole GET.
WHOLE_SHARE = 0.6
_MAGIC = b"PAR1"


def chunk_ranges(
    metadata: pq.FileMetaData, row_groups: Sequence[int], columns: set[str] | None
) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of the column chunks of ``columns`` (top-level names;
    None: all) in ``row_groups``, sorted.
    """
    out = []
    for i in row_groups:
        rg = metadata.row_group(i)
        for j in range(rg.num_columns):
            col = rg.column(j)
            if columns is not None and col.path_in_schema.split(".", 1)[0] not in columns:
                continue
            start = col.data_page_offset
            if col.has_dictionary_page and 0 < col.dictionary_page_offset < start:
                start = col.dictionary_page_offset
            out.append((start, start + col.total_compressed_size))
    return sorted(out)


def merge_ranges(ranges: Sequence[tuple[int, int]], gap: int) -> list[tuple[int, int]]:
    """Sorted ranges with those less than ``gap`` apart merged."""
    merged: list[tuple[int, int]] = []
    for start, end in ranges:
        if merged and start - merged[-1][1] < gap:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


@dataclasses.dataclass(frozen=True, slots=True)
class _Footer:
    """An object's footer (with its length and magic) and where its data ends."""

    footer: bytes
    metadata: pq.FileMetaData
    data_end: int


def _footer(store: Store, key: str, tail: bytes) -> _Footer:
    if len(tail) < 12 or tail[-4:] != _MAGIC:
        raise CorruptDataError(f"{key!r} in {store.display_url} is not a Parquet file.")
    length = int.from_bytes(tail[-8:-4], "little")
    if length + 8 > len(tail):  # a footer larger than the tail: fetch exactly it
        tail = store.get_range_from_end(key, length + 8)
    footer = tail[-(length + 8) :]
    metadata = pq.read_metadata(reader(_MAGIC + footer))
    ends = [e for _, e in chunk_ranges(metadata, range(metadata.num_row_groups), None)]
    return _Footer(footer, metadata, max(ends, default=len(_MAGIC)))


def _layout(info: _Footer) -> pa.Buffer:
    """A buffer laid out like the object: its footer at the end, nothing else yet."""
    buf = pa.allocate_buffer(info.data_end + len(info.footer))
    _put(buf, 0, _MAGIC)
    _put(buf, info.data_end, info.footer)
    return buf


def _put(buf: pa.Buffer, offset: int, data: bytes) -> None:
    """Copy ``data`` into the mutable, Arrow-owned ``buf`` at ``offset``.

    The view is Python's and released here: Arrow holds no Python object.
    """
    with memoryview(buf) as view, view.cast("B") as target:
        target[offset : offset + len(data)] = data


def ranged_fragments(
    store: Store,
    keys: Sequence[str],
    fmt: ds.ParquetFileFormat,
    schema: pa.Schema,
    partition_expressions: Sequence[pc.Expression],
    columns: set[str] | None,
    filter: pc.Expression | None,
    *,
    max_workers: int = 8,
) -> list[ds.Fragment]:
    """Fragments over Arrow-owned buffers holding what a scan of ``keys`` needs.

    ``columns``: the file columns the scan reads (projection and filter; None: all). A
    scan of every column without a filter needs whole objects: one GET each, no footer.
    """
    everything = columns is None and filter is None
    pool = ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(keys))))
    with pool:
        tails = [] if everything else [*pool.map(lambda k: store.get_range_from_end(k, TAIL), keys)]
        # per object: its buffer (None: fetch it whole), the ranges to fill, its row groups
        plans: list[tuple[pa.Buffer | None, list[tuple[int, int]], list[int] | None]] = []
        for i, expr in enumerate(partition_expressions):
            if everything:
                plans.append((None, [], None))
                continue
            key, tail = keys[i], tails[i]
            if len(tail) < TAIL:  # the whole object
                plans.append((arrow_owned(tail), [], None))
                continue
            info = _footer(store, key, tail)
            buf = _layout(info)
            kept = list(range(info.metadata.num_row_groups))
            if filter is not None and kept:
                probe = fmt.make_fragment(pa.BufferReader(buf), partition_expression=expr)
                kept = [
                    rg.id
                    for part in probe.split_by_row_group(filter, schema=schema)
                    for rg in part.row_groups
                ]
            ranges = merge_ranges(chunk_ranges(info.metadata, kept, columns), GAP)
            if sum(e - s for s, e in ranges) > WHOLE_SHARE * info.data_end:
                plans.append((None, [], None))
                continue
            plans.append((buf, ranges, kept))
        jobs = [(i, r) for i, (_, ranges, _) in enumerate(plans) for r in ranges]
        datas = list(pool.map(lambda job: store.get_range(keys[job[0]], *job[1]), jobs))
    for (i, (start, end)), data in zip(jobs, datas, strict=True):
        if len(data) != end - start:
            raise CorruptDataError(
                f"{keys[i]!r} in {store.display_url} is shorter than its footer says."
            )
        buf = plans[i][0]
        assert buf is not None  # objects with ranges to fill have their laid-out buffer
        _put(buf, start, data)
    whole = [i for i, (buf, _, _) in enumerate(plans) if buf is None]
    blobs = store.get_many([keys[i] for i in whole])  # concurrently, large ones in ranges
    for n, i in enumerate(whole):
        plans[i] = (arrow_owned(blobs[n]), [], None)
        blobs[n] = b""  # keep one copy of each object alive, not two
    return [
        fmt.make_fragment(pa.BufferReader(buf), partition_expression=expr, row_groups=kept)
        for (buf, _, kept), expr in zip(plans, partition_expressions, strict=True)
    ]
