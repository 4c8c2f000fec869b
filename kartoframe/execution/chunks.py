"""The chunk kernel shared by every write engine: one input frame -> data files.

:func:`write_chunk` runs wherever a chunk is — a thread, a dask worker, a Spark executor —
and returns a small picklable :class:`~kartoframe.plan.write.ChunkResult` (labels, keys,
index value pairs, per-file statistics, schema) for the one commit on the driver
(:func:`kartoframe.execution.write.commit_write`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import sys
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError
from kartoframe.format import naming
from kartoframe.format.arrow_memory import release_unused_memory
from kartoframe.format.convert import frame_to_table, storage_table
from kartoframe.format.encoding import SAMPLE_ROWS, dictionary_columns
from kartoframe.format.file_rows import encoded_file_rows
from kartoframe.format.index import index_value_pairs
from kartoframe.format.index_group import files_index
from kartoframe.format.schema import normalize_schema
from kartoframe.format.statistics_compute import (
    SliceAccumulator,
    SliceStatistics,
    assemble_statistics,
    grouped_slice_statistics,
    slice_statistics,
    value_list_candidates,
    with_files,
)
from kartoframe.plan.partition_plan import PartitionPlan, plan_one_partition, plan_partitions
from kartoframe.plan.write import (
    ChunkResult,
    FilePairs,
    StatisticsRow,
    WrittenPartition,
    check_write_columns,
    chunk_pairs,
    new_file_uuid,
)
from kartoframe.storage.commit_values import committed_version
from kartoframe.storage.csv_files import CsvSerializer, csv_key, write_csv
from kartoframe.storage.parquet import (
    DEFAULT_ROW_GROUP_ROWS,
    DICTIONARY_PAGE_LIMIT,
    encode_table,
    write_encoded,
    write_row_groups,
    write_table,
)
from kartoframe.storage.store import Store

__all__ = [
    "ChunkResult",
    "DataSerializer",
    "ParquetSerializer",
    "WrittenPartition",
    "delete_files",
    "row_groups",
    "split_rows",
    "write_chunk",
    "write_stream",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ParquetSerializer:
    """How data files are written (plateau's ``ParquetSerializer``).

    Parameters
    ----------
    compression
        Parquet codec (``"SNAPPY"`` default, ``"ZSTD"``, ``"GZIP"``, ``"NONE"``...).
    chunk_size
        Rows per row group (None: pyarrow's default).
    """

    compression: str = "SNAPPY"
    chunk_size: int | None = None

    def __post_init__(self) -> None:
        if self.chunk_size is not None:
            if not isinstance(self.chunk_size, int) or isinstance(self.chunk_size, bool):
                raise InvalidInputError("chunk_size must be an int or None.")
            if self.chunk_size < 1:
                raise InvalidInputError("chunk_size must be >= 1.")


#: How data files are written: Parquet (the default) or CSV (plateau's ``CsvSerializer``).
DataSerializer = ParquetSerializer | CsvSerializer


def delete_files(store: Store, keys: Iterable[str]) -> None:
    """Best-effort removal of files written by a failed write.

    Called while an exception is handled: if that exception was raised after the write's
    version was committed (see :func:`kartoframe.storage.commit.committed_version`), the
    files are referenced and nothing is deleted.
    """
    if committed_version(sys.exc_info()[1]) is not None:
        return
    with contextlib.suppress(Exception):
        store.delete_many(list(keys))


#: Files of at least this many rows hand the writer's freed pages back before their
#: statistics are computed (for smaller ones the call costs more than it saves).
_RELEASE_ROWS = 65_536

#: Chunks whose files average at most this many bytes of rows are encoded in the calling
#: thread, one file after the other, and only written on the pool. For such files the
#: Python around each one (gather, writer set-up, statistics) outweighs the encoding, and
#: threads contending for the GIL made a 10k-partition write of 4-row files 1.7x slower
#: than one thread on 2 cores (tmpfs). The pool still overlaps the file system's work
#: (folders, files, uploads) with the encoding.
SMALL_FILE_BYTES = 64 << 10
#: Small files whose rows are gathered together (their average size is at most
#: :data:`SMALL_FILE_BYTES`: at most 64 MiB of rows in flight).
SMALL_FILES_PER_GATHER = 1024
#: Small files written by one task of the pool (fewer hand-overs between threads).
SMALL_FILES_PER_TASK = 16
#: Tasks of encoded small files waiting for the pool at most (bounds their memory).
SMALL_TASKS_IN_FLIGHT = 8


#: Threads writing one chunk's files, unless the engine says otherwise.
DEFAULT_WRITE_THREADS = 4


def _write_all(store: Store, files: Sequence[tuple[str, pa.Buffer]]) -> None:
    for key, data in files:
        write_encoded(store, key, data)


def write_chunk(
    store: Store,
    dataset_uuid: str,
    df: Any,
    *,
    table_name: str = "table",
    partition_on: Sequence[str] = (),
    index_columns: Sequence[str] = (),
    serializer: DataSerializer | None = None,
    sort_partitions_by: Sequence[str] = (),
    origin: str = "",
    max_workers: int = DEFAULT_WRITE_THREADS,
    file_uuid: str | None = None,
    statistics: bool = True,
    bloom_filter_columns: Sequence[str] = (),
    partition_values: Sequence[Any] | None = None,
) -> ChunkResult:
    """Write one input frame as data files (no header change).

    ``df`` may be a pandas DataFrame or a pyarrow Table. Partition columns are removed
    from the files; nulls in them are refused. With ``partition_values`` every row
    belongs to the partition of these values of ``partition_on`` and ``df`` holds only
    the data columns (one file, nothing grouped: an optimize unit). Files get fresh uuid names (or
    ``file_uuid``, which must be unique per call: the Spark engine prefixes it with a
    job id so that a failed job can find and remove its files). Unless ``statistics``
    is False, per-file statistics are computed from the written slices (bloom filters
    for ``bloom_filter_columns``) and returned with the result for the commit.
    """
    serializer = serializer or ParquetSerializer()
    table = df if isinstance(df, pa.Table) else frame_to_table(df, what=origin or "DataFrame")
    file_uuid = file_uuid or new_file_uuid()
    if partition_values is not None:
        schema = table.schema
        plan = plan_one_partition(
            table, partition_on, partition_values, file_uuid=file_uuid, sort_by=sort_partitions_by
        )
    else:
        check_write_columns(table.schema, partition_on, index_columns, what=origin or "the data")
        schema = normalize_schema(table.schema, partition_on)
        plan = plan_partitions(
            table, partition_on, file_uuid=file_uuid, sort_by=list(sort_partitions_by)
        )
    candidates = _value_list_candidates(plan.body) if statistics else None
    # one encoding decision for the chunk's files (it cost 8 % of a 200-file write)
    dictionary = None
    if len(plan) > 1 and not isinstance(serializer, CsvSerializer):
        dictionary = dictionary_columns(storage_table(plan.sample(SAMPLE_ROWS)))
    keys: list[str] = []
    parquet = serializer if isinstance(serializer, ParquetSerializer) else None
    compression = parquet.compression.lower() if parquet and parquet.compression else None
    row_group_size = parquet.chunk_size if parquet else None
    # the files' low-cardinality strings handed to the writer still encoded (the same
    # files; rows sorted by ``sort_partitions_by`` are decoded first)
    file_rows = None
    if parquet is not None and isinstance(dictionary, list) and not plan.sort_by and len(plan):
        file_rows = encoded_file_rows(
            plan.source,
            plan.body.schema,
            dictionary,
            row_group_rows=row_group_size or DEFAULT_ROW_GROUP_ROWS,
            max_file_rows=int(np.max(plan.ends - plan.starts)),
            dictionary_page_limit=DICTIONARY_PAGE_LIMIT,
        )

    def _finish(
        i: int, rows: pa.Table, key: str, size: int, known: list[SliceStatistics] | None = None
    ) -> tuple[WrittenPartition, SliceStatistics | None]:
        label = plan.labels[i]
        stats = None
        if known is not None:
            stats = known[i]
        elif candidates is not None:
            stats = _slice_statistics(rows, candidates, bloom_filter_columns)
        return WrittenPartition(label, key, rows.num_rows, size, {}), stats

    def _one(i: int) -> tuple[WrittenPartition, SliceStatistics | None]:
        # gather, encode and drop one file's rows: no reordered copy of the whole chunk
        gathered = plan.gathered(i)
        key = naming.data_key(dataset_uuid, table_name, plan.labels[i])
        if isinstance(serializer, CsvSerializer):
            key = csv_key(key, serializer)
            keys.append(key)
            size = write_csv(store, key, plan.as_rows(gathered), serializer)
        else:
            keys.append(key)
            how = file_rows
            rows = how.rows(gathered) if how is not None else None
            declared = how.declared if how is not None and rows is not None else None
            if rows is None:
                rows = storage_table(plan.as_rows(gathered))
            size = write_table(
                store,
                key,
                rows,
                compression=compression,
                row_group_size=row_group_size,
                dictionary=dictionary,
                declared=declared,
            )
            del rows
        if gathered.num_rows >= _RELEASE_ROWS:
            release_unused_memory()  # the writer's pages, before the statistics' hash tables
        return _finish(i, gathered, key, size)  # statistics need no order, nor decoding

    def _small(
        pool: ThreadPoolExecutor | None,
    ) -> list[tuple[WrittenPartition, SliceStatistics | None]]:
        # encoded here, one file after the other; only the writes go to the pool (if any)
        known = None
        if candidates is not None:
            with contextlib.suppress(pa.ArrowException):  # computed file by file, then
                known = grouped_slice_statistics(
                    plan.body,
                    plan.group_ids(),
                    len(plan),
                    value_list_columns=candidates,
                    bloom_filter_columns=bloom_filter_columns,
                )
        out = []
        pending: collections.deque[Future[None]] = collections.deque()
        batch: list[tuple[str, pa.Buffer]] = []
        per_gather = max(1, min(SMALL_FILES_PER_GATHER, len(plan)))
        gathered: list[pa.Table] = []
        for i in range(len(plan)):
            if i % per_gather == 0:
                some = range(i, min(i + per_gather, len(plan)))
                gathered = plan.rows_of(some, prepare=storage_table)
            rows = gathered[i % per_gather]  # in the stored types (the index normalises)
            key = naming.data_key(dataset_uuid, table_name, plan.labels[i])
            data = encode_table(rows, compression, row_group_size, dictionary)
            keys.append(key)
            batch.append((key, data))
            out.append(_finish(i, rows, key, data.size, known))
            if len(batch) == SMALL_FILES_PER_TASK or i == len(plan) - 1:
                if pool is None:
                    _write_all(store, batch)
                else:
                    pending.append(pool.submit(_write_all, store, batch))
                batch = []
            while len(pending) > SMALL_TASKS_IN_FLIGHT:
                pending.popleft().result()
        for done in pending:
            done.result()
        return out

    results: list[tuple[WrittenPartition, SliceStatistics | None]] = []
    entries: dict[str, list[FilePairs]] | None = None
    threads = min(max_workers, len(plan))
    try:
        small = parquet is not None and plan.body.nbytes <= SMALL_FILE_BYTES * len(plan)
        if threads > 1:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                if small:
                    results = _small(pool)
                else:
                    files = pool.map(_one, range(len(plan)))  # every file submitted
                    entries = _index_entries(plan, index_columns)  # while they are written
                    results = list(files)
        else:
            # a dask task's chunk of small files: one thread, many files
            results = _small(None) if len(plan) > 1 and small else list(map(_one, range(len(plan))))
        if entries is None:
            entries = _index_entries(plan, index_columns)
    except BaseException:
        delete_files(store, keys)
        raise
    written = [
        dataclasses.replace(w, index_pairs={c: entries[c][i] for c in index_columns})
        for i, (w, _) in enumerate(results)
    ]
    parts = [st for _, st in results]
    if written and candidates is not None and all(st is not None for st in parts):
        written = _with_statistics(written, assemble_statistics(parts))  # type: ignore[arg-type]
    return ChunkResult(tuple(written), schema, origin)


def _index_entries(plan: PartitionPlan, index_columns: Sequence[str]) -> dict[str, list[FilePairs]]:
    """Each file's entries of the chunk's partial index of each column (see
    :class:`~kartoframe.plan.write.FilePairs`), built from the whole column at once
    (:func:`~kartoframe.format.index_group.files_index`), or from each file's pairs.
    """
    if not index_columns or not len(plan):
        return {c: [] for c in index_columns}
    groups = plan.group_ids()
    out = {}
    for c in index_columns:
        column = plan.body[c]
        index = files_index(c, column, groups, plan.labels)
        if index is not None:
            out[c] = [FilePairs(index, i) for i in range(len(plan))]
            continue
        if plan.order is not None:  # one gather of the column, grouped by file
            column = column.take(pa.array(plan.order))
        files = [
            (label, index_value_pairs(c, column.slice(a, b - a), label))
            for label, a, b in zip(plan.labels, plan.starts, plan.ends, strict=True)
        ]
        out[c] = chunk_pairs(c, files)
    return out


def _value_list_candidates(body: pa.Table) -> frozenset[str] | None:
    """Value-list candidates of a chunk, or None: no statistics (no compute kernels)."""
    try:
        return value_list_candidates(body)
    except pa.ArrowException:
        return None


def _slice_statistics(
    rows: pa.Table, candidates: frozenset[str], bloom_filter_columns: Sequence[str]
) -> SliceStatistics | None:
    """One file's statistics, or None for types without compute kernels."""
    try:
        return slice_statistics(
            rows, value_list_columns=candidates, bloom_filter_columns=bloom_filter_columns
        )
    except pa.ArrowException:
        return None  # files without statistics


def _with_statistics(written: list[WrittenPartition], computed: pa.Table) -> list[WrittenPartition]:
    """Attach each file's statistics row (computed from the slices as written)."""
    labels = [w.label for w in written]
    stats = with_files(computed, labels, [w.key for w in written], [w.size for w in written])
    # the files share the chunk's table (a pickled row travels as a one-row copy)
    return [
        dataclasses.replace(w, statistics=StatisticsRow(stats, i)) for i, w in enumerate(written)
    ]


def row_groups(batches: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The rows of ``batches`` in order, as tables of ``rows`` rows (the last one fewer);
    empty batches are skipped, and a batch is copied only where groups straddle batches.
    """
    pending: list[pa.Table] = []
    held = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        pending.append(batch)
        held += batch.num_rows
        if held < rows:
            continue
        table = pa.concat_tables(pending)
        pending.clear()
        full = held - held % rows
        for start in range(0, full, rows):
            yield table.slice(start, rows)
        if held > full:
            pending.append(table.slice(full))
        held -= full
        del table
    if pending:
        yield pa.concat_tables(pending)


def split_rows(batches: Iterable[pa.Table], rows: int) -> Iterator[Iterator[pa.Table]]:
    """The rows of ``batches`` in order, as parts of ``rows`` rows (the last one fewer),
    each part the tables that hold its rows (slices, never copies).

    Take each part's tables before the next part (what is left of a part is skipped).
    """
    source = iter(batches)
    ahead: list[pa.Table] = []

    def filled() -> bool:
        while not ahead:
            table = next(source, None)
            if table is None:
                return False
            if table.num_rows:
                ahead.append(table)
        return True

    def part() -> Iterator[pa.Table]:
        need = rows
        while need and filled():
            table = ahead.pop()
            if table.num_rows > need:
                ahead.append(table.slice(need))
                table = table.slice(0, need)
            need -= table.num_rows
            yield table

    while filled():
        current = part()
        yield current
        for _ in current:  # a part its consumer left unfinished
            pass


def write_stream(
    store: Store,
    dataset_uuid: str,
    batches: Iterable[pa.Table],
    *,
    partition_on: Sequence[str],
    partition_values: Sequence[Any],
    table_name: str = "table",
    index_columns: Sequence[str] = (),
    bloom_filter_columns: Sequence[str] = (),
    serializer: ParquetSerializer | None = None,
    metadata: dict[bytes, bytes] | None = None,
    origin: str = "",
    file_uuid: str | None = None,
) -> ChunkResult:
    """Write the rows of ``batches`` (data columns only, all of the partition with key
    ``partition_values``) as one Parquet file, row group by row group, as they come.

    The result equals :func:`write_chunk` of all the rows with the same
    ``partition_values`` (statistics, bloom filters and index values included), while
    memory holds one batch and one row group, and per column at most its distinct
    values. ``metadata`` becomes the file schema's metadata. No rows: no file.
    """
    serializer = serializer or ParquetSerializer()
    size = serializer.chunk_size or 1_048_576  # pyarrow's default row group size
    groups = row_groups(batches, size)
    first = next(groups, None)
    if first is None:
        return ChunkResult((), pa.schema([]), origin)
    label = plan_one_partition(
        first, partition_on, partition_values, file_uuid=file_uuid or new_file_uuid()
    ).labels[0]
    key = naming.data_key(dataset_uuid, table_name, label)
    candidates = _value_list_candidates(first)
    stats = SliceAccumulator(
        first.schema, value_list_columns=candidates or (), bloom_filter_columns=bloom_filter_columns
    )
    uniques: dict[str, list[pa.Array]] = {c: [] for c in index_columns}
    schema = first.schema if metadata is None else first.schema.with_metadata(metadata)
    head = [first]  # the only reference to the first group: written, then dropped
    del first
    rows = 0

    def prepared(group: pa.Table) -> pa.Table:
        # index values and statistics of the rows as given (as write_chunk computes them),
        # then the rows as stored
        nonlocal rows
        rows += group.num_rows
        for c, seen in uniques.items():
            seen.append(pc.unique(group.column(c)))
        if candidates is not None:
            stats.add(group)
        group = storage_table(group)
        return group if metadata is None else group.replace_schema_metadata(metadata)

    def observed() -> Iterator[pa.Table]:
        yield prepared(head.pop())
        for group in groups:
            yield prepared(group)

    try:
        written = write_row_groups(
            store,
            key,
            observed(),
            compression=serializer.compression.lower() if serializer.compression else None,
        )
    except BaseException:
        delete_files(store, [key])
        raise
    pairs = {
        c: index_value_pairs(c, pa.chunked_array(seen, type=schema.field(c).type), label)
        for c, seen in uniques.items()
    }
    parts = [WrittenPartition(label, key, rows, written, pairs)]
    if candidates is not None:
        parts = _with_statistics(parts, assemble_statistics([stats.finish()]))
    return ChunkResult(tuple(parts), schema, origin)
