"""Local Parquet files read one by one: the fast path of a local scan of small files.

A ``pyarrow.dataset`` scan pays a per-file cost of its own: on 7,300 small files (a year of
daily appends, 1,300 rows each) it spent 2.0 s of wall time and 3.5 s of CPU where reading
each file with ``ParquetFile.read`` on the calling thread took 1.35 s of both. So a local
scan of small files (or of one file: a dask task's) reads them one by one, as long as each
holds the requested columns with the dataset's types or types that cast to them (an int16
file column of an int64 dataset column, as the dataset scan casts); anything else (a
missing column, a failed cast, a partition column stored in the file, an unreadable file)
returns None and the caller runs the dataset scan, which handles every case and reports
errors. Files larger than :data:`THREADED_BYTES` are decoded on Arrow's thread pool.

A row filter is applied here too, to the rows of small files: gathered, with their
partition columns as one chunk each, every :data:`FILTER_ROWS` rows. The dataset scan
filtered 249 files of 330 rows (an equality read through an index) in 65 ms; read file
by file and filtered so, 47 ms on one thread and 39.5 ms on two (:data:`READ_THREADS`).
A larger file is read here only if its footer statistics prove the filter for all its
rows (then without it); otherwise the dataset scan, which skips the row groups the
statistics rule out, reads them all.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kartoframe.format.arrow_memory import release_unused_memory
from kartoframe.format.value_ranges import ValueRange, footer_statistics, ranges_hold
from kartoframe.storage.io_map import thread_map
from kartoframe.storage.local_parquet import LocalParquetFiles
from kartoframe.storage.store import Store

__all__ = [
    "FILTER_ROWS",
    "GATHER_FILES",
    "READ_THREADS",
    "RELEASE_BYTES",
    "SPLIT_FILES",
    "SMALL_FILE_BYTES",
    "THREADED_BYTES",
    "read_local_files",
]

#: Files are read one by one only if the first is at most this large (a dataset's files
#: are usually alike): 7,300 files of 18 KiB were read 30 % faster file by file, 200 files
#: of 170-190 KiB (25,000 rows each) 3 % slower. A file this large or smaller is also
#: read whole when the scan has a row filter (its statistics rarely rule out its one
#: row group).
SMALL_FILE_BYTES = 64 * 1024
#: A larger file among them is decoded on Arrow's thread pool.
THREADED_BYTES = 4 * 2**20
#: Every this many files, their columns are gathered into one chunk each (and the
#: allocator's freed pages handed back, see :data:`RELEASE_BYTES`). Each small file's
#: arrays and decoding buffers take medium-sized blocks that leave mimalloc's pages
#: (pyarrow's default pool) partly used: 365 files of 10,000 rows (13.5 MiB of data)
#: grew the process by 29 MiB read one by one, by 17 MiB gathered every 8 files (the
#: system allocator: 17 MiB), for one more copy of the data.
GATHER_FILES = 8
#: The allocator's freed pages are handed back each time groups of at least this many
#: bytes in all have been gathered or filtered (their files' buffers freed). Releasing
#: after every group cost 0.27 ms a call in a process whose pool had grown (31 calls in a
#: read of 249 files of 330 rows: 8 of its 51 ms). 365 files of 1,300 rows (16.5 MiB)
#: grew the process by 27.5 MiB releasing after every group, 27.9 MiB every 2 MiB;
#: filtered to half their rows, by 19.1-19.7 MiB and 20.5-21.8 MiB.
RELEASE_BYTES = 2 * 2**20
#: A scan of at least this many files (with ``use_threads``) reads them as
#: :data:`READ_THREADS` runs of consecutive files, each on a thread of its own.
SPLIT_FILES = 32
#: Threads of a split scan: one a core, at most 4 (one core: no split). The decoding
#: releases the GIL, the per-file work in Python between does not: 249 files of 330 rows
#: on 2 cores were read in 47.0 ms on one thread (48 ms of CPU), 39.5 ms on 2 (63 ms),
#: 43 ms on 3 (68 ms).
READ_THREADS = min(4, os.cpu_count() or 1)
#: A filtered scan filters the rows it has read once they are at least this many: the
#: unfiltered rows held at once stay bounded, and the filter runs over a few large
#: chunks (one Arrow batch each) rather than file by file.
FILTER_ROWS = 1 << 16


def _widened(table: pa.Table, target: pa.Schema) -> pa.Table | None:
    """``table`` (the columns of ``target``, in order) with the dataset's fields: a file may
    hold narrower types (int16 for int64, µs for a frame's ns), cast as the dataset scan
    casts, or declare a column non-nullable (Spark's required fields); None if a cast
    fails.
    """
    if table.schema.equals(target):
        return table
    columns = table.columns
    try:
        cast = [
            col if col.type.equals(f.type) else col.cast(f.type, safe=True)
            for col, f in zip(columns, target, strict=True)
        ]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    return pa.Table.from_arrays(cast, schema=target)


def _proven(
    md: pq.FileMetaData,
    covering: Sequence[Sequence[ValueRange]],
    partition_values: Sequence[tuple[str, Any]],
) -> bool:
    """Whether a file's partition values or footer statistics prove one conjunction of
    ``covering`` for all its rows.
    """
    values = dict(partition_values)
    names = {r.column for conj in covering for r in conj if r.column not in values}
    return ranges_hold(covering, values, footer_statistics(md, names))


def _constant_column(values: list[Any], counts: list[int], t: pa.DataType) -> pa.Array:
    """A partition column: each file's value repeated for its rows, as one chunk (a chunk
    per file would split the filter's batches), decoded in Arrow memory from one
    run-end-encoded array of the files' values.

    Built from a ``pa.repeat`` of a scalar for each run of files sharing a value, the two
    partition columns of 249 files in 249 partitions took 3.2 ms; decoded so, 0.7 ms.
    Types without a decoding kernel (dictionaries) are still built run by run.
    """
    runs = [(v, n) for v, n in zip(values, counts, strict=True) if n]
    if not runs:
        return pa.array([], type=t)
    try:
        ends = pa.array(itertools.accumulate(n for _, n in runs), type=pa.int64())
        encoded = pa.RunEndEncodedArray.from_arrays(ends, pa.array([v for v, _ in runs], type=t))
        return pc.run_end_decode(encoded)
    except pa.ArrowNotImplementedError:
        pass
    pieces = [
        pa.repeat(pa.scalar(value, type=t), sum(n for _, n in run))
        for value, run in itertools.groupby(runs, key=lambda vn: vn[0])
    ]
    return pieces[0] if len(pieces) == 1 else pa.concat_arrays(pieces)


@dataclasses.dataclass(frozen=True)
class _Scan:
    """What every file of a scan is read for: the columns (``plain``; ``widest`` with the
    filter's own), the partition columns made from the keys (``given``), the filter; and
    the schemas of the tables built from them, made once a scan rather than once a file.
    """

    schema: pa.Schema
    names: list[str]
    plain: list[str]
    widest: list[str]
    given: list[str]
    filter: pc.Expression | None
    covering: Sequence[Sequence[ValueRange]]
    use_threads: bool
    #: the scan's result: ``names`` with the dataset's fields and metadata
    out: pa.Schema = dataclasses.field(init=False)
    #: the dataset's fields of :meth:`read` (``plain``, or ``widest`` if filtered)
    targets: dict[bool, pa.Schema] = dataclasses.field(init=False)
    #: what a filtered run's rows are filtered in: ``widest``, then ``given``
    filtered_schema: pa.Schema = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        def fields(names: list[str]) -> list[pa.Field]:
            return [self.schema.field(c) for c in names]

        object.__setattr__(self, "out", pa.schema(fields(self.names), self.schema.metadata))
        targets = {False: pa.schema(fields(self.plain)), True: pa.schema(fields(self.widest))}
        object.__setattr__(self, "targets", targets)
        filtered = pa.schema(fields(self.widest + self.given))
        object.__setattr__(self, "filtered_schema", filtered)

    def read(self, filtered: bool) -> list[str]:
        """The columns read from a file: with the filter's own if it is ``filtered``."""
        return self.widest if filtered else self.plain


class _Run:
    """Consecutive files read with the same columns (with the filter's or without),
    gathered with the dataset's types and then given their partition columns.

    Casting once per group of files, not per file, and only the columns whose types
    differ: 249 files of 330 rows with three narrower columns were read in 77 ms instead
    of 101 ms.
    """

    def __init__(self, scan: _Scan, filtered: bool, freed: list[int]) -> None:
        self.scan, self.filtered = scan, filtered
        self.read = scan.read(filtered)
        self.target = scan.targets[filtered]
        self.freed = freed  # bytes gathered since the pages were last handed back
        self.groups: list[pa.Table] = []  # files gathered, with the dataset's types
        self.pending: list[pa.Table] = []  # files alike in their file types
        self.counts: list[int] = []  # rows of each file
        self.values: list[dict[str, Any]] = []  # partition values of each file
        self.rows = 0

    def add(self, table: pa.Table, values: dict[str, Any]) -> bool:
        """Take one file's rows; False if a cast fails."""
        other = self.pending and not table.schema.equals(self.pending[0].schema)
        if other and not self._gather(last=False):  # other types follow
            return False
        self.pending.append(table)
        self.counts.append(table.num_rows)
        self.values.append(values)
        self.rows += table.num_rows
        return len(self.pending) < GATHER_FILES or self._gather(last=False)

    def _gather(self, *, last: bool) -> bool:
        """The pending files as one table with the dataset's types (unless they are the
        ``last`` of the scan, gathered into one chunk a column and the allocator's freed
        pages handed back: see :data:`GATHER_FILES`); False if a cast fails.
        """
        table = pa.concat_tables(self.pending)
        self.pending.clear()
        if not last:
            table = table.combine_chunks()
            self._freed(table.nbytes)
        widened = _widened(table, self.target)
        if widened is None:
            return False
        self.groups.append(widened)
        return True

    def close(self, *, last: bool) -> pa.Table | None:
        """The run's rows with the scan's columns and result schema (filtered if the run
        is ``filtered``); None if a cast fails.
        """
        if self.pending and not self._gather(last=last):
            return None
        scan = self.scan
        groups = self.groups
        body = groups[0] if len(groups) == 1 else pa.concat_tables(groups)  # a file a run at least
        columns = body.columns
        for c in scan.given:
            values = [v.get(c) for v in self.values]
            columns.append(_constant_column(values, self.counts, scan.schema.field(c).type))
        if not self.filtered or scan.filter is None:
            by_name = dict(zip(self.read + scan.given, columns, strict=True))
            return pa.Table.from_arrays([by_name[c] for c in scan.names], schema=scan.out)
        table = pa.Table.from_arrays(columns, schema=scan.filtered_schema)
        kept = table.filter(scan.filter).select(scan.names)
        read = body.nbytes
        groups.clear()
        del body, columns, table
        self._freed(read)  # the run's rows, kept ones copied
        return pa.Table.from_arrays(kept.columns, schema=scan.out)

    def _freed(self, nbytes: int) -> None:
        """Count ``nbytes`` freed; hand the pages back past :data:`RELEASE_BYTES`."""
        self.freed[0] += nbytes
        if self.freed[0] >= RELEASE_BYTES:
            release_unused_memory()
            self.freed[0] = 0


def read_local_files(
    store: Store,
    keys: Sequence[str],
    schema: pa.Schema,
    partition_values: Sequence[Sequence[tuple[str, Any]]] | None,
    columns: Sequence[str] | None,
    *,
    use_threads: bool = True,
    filter: pc.Expression | None = None,
    filter_columns: Sequence[str] | None = None,
    covering: Sequence[Sequence[ValueRange]] = (),
) -> pa.Table | None:
    """The rows of local Parquet objects ``keys`` (in order) with the dataset ``schema``'s
    ``columns`` (all if None; partition columns from ``partition_values``), read file by
    file; None if a file needs what only the dataset scan does.

    With ``use_threads``, at least :data:`SPLIT_FILES` files are read as
    :data:`READ_THREADS` runs of consecutive files on as many threads, and a file larger
    than :data:`THREADED_BYTES` is decoded on Arrow's threads.

    ``filter`` (which reads ``filter_columns``; without them there is no fast path) keeps
    the rows it is true for. A file of at most :data:`SMALL_FILE_BYTES` is read with the
    filter's columns and filtered; a larger one must be proven by its partition values or
    footer statistics to satisfy one conjunction of ``covering`` in all its rows, and is
    read without the filter (else None: the dataset scan prunes its row groups by their
    statistics and filters its rows).
    """
    names = list(columns) if columns is not None else list(schema.names)
    if not names or not keys:
        return None  # no column (only the row count: the footers have it) or no file
    if filter is not None and (
        filter_columns is None or not set(filter_columns) <= set(schema.names)
    ):
        return None
    try:
        if len(keys) > 1 and os.path.getsize(store.path(keys[0])) > SMALL_FILE_BYTES:
            return None  # many files this large: the dataset scan's threads decode faster
    except OSError:
        return None
    pvs = partition_values if partition_values is not None else [()] * len(keys)
    extra = [c for c in filter_columns or () if c not in names] if filter is not None else []
    given = sorted({c for pv in pvs for c, _ in pv if c in names or c in extra})
    plain = [c for c in names if c not in given]
    widest = plain + [c for c in extra if c not in given]
    scan = _Scan(schema, names, plain, widest, given, filter, covering, use_threads)
    if use_threads and READ_THREADS > 1 and len(keys) >= SPLIT_FILES:
        step = -(-len(keys) // READ_THREADS)
        starts = range(0, len(keys), step)
        parts = thread_map(
            lambda at: _read_run(store, keys[at : at + step], pvs[at:], scan),
            list(starts),
            READ_THREADS,
        )
    else:
        parts = [_read_run(store, keys, pvs, scan)]
    if any(p is None for p in parts):
        return None
    tables = [p for p in parts if p is not None]
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _read_run(
    store: Store,
    keys: Sequence[str],
    pvs: Sequence[Sequence[tuple[str, Any]]],
    scan: _Scan,
) -> pa.Table | None:
    """The rows of consecutive files ``keys`` (partition values ``pvs``) read one by one
    on the calling thread, with the columns ``scan.names``; None if a file needs the
    dataset scan.
    """
    tables: list[pa.Table] = []  # runs of files, with the columns ``names``
    run: _Run | None = None
    freed = [0]
    files = LocalParquetFiles()
    try:
        for i, key in enumerate(keys):
            with files.open(store.path(key)) as f:
                if scan.filter is None:
                    filtered = False
                elif f.size <= SMALL_FILE_BYTES:
                    filtered = True
                elif scan.covering and _proven(f.metadata, scan.covering, pvs[i]):
                    filtered = False
                else:
                    return None  # some rows may fail the filter
                read = scan.read(filtered)
                if not f.holds(read) or f.holds_any(scan.given):
                    return None  # a missing column, or a partition column in the file
                table = f.read(read, use_threads=scan.use_threads and f.size > THREADED_BYTES)
            if run is not None and (
                run.filtered != filtered or (filtered and run.rows >= FILTER_ROWS)
            ):
                done = run.close(last=False)
                if done is None:
                    return None
                tables.append(done)
                run = None
            if run is None:
                run = _Run(scan, filtered, freed)
            if not run.add(table, dict(pvs[i])):
                return None
        assert run is not None
        done = run.close(last=True)
        if done is None:
            return None
        tables.append(done)
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    except (OSError, EOFError, pa.ArrowException, ValueError, TypeError):
        return None  # the dataset scan reads them again and names what failed
