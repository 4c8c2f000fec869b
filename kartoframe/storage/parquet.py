"""Parquet objects in a store: write one table, read many files as one scan."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypedDict, Unpack

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kartoframe.errors import CorruptDataError, KartoframeError, MissingDataFileError
from kartoframe.format.encoding import dictionary_columns
from kartoframe.format.schema import declared_schema_metadata
from kartoframe.format.value_ranges import ValueRange
from kartoframe.storage.local_files import local_makedirs
from kartoframe.storage.local_scan import read_local_files
from kartoframe.storage.ranged import ranged_fragments
from kartoframe.storage.store import Store

__all__ = [
    "data_key_location",
    "empty_table",
    "encode_table",
    "partition_expression",
    "read_files",
    "read_footer",
    "scan_arguments",
    "ScanOptions",
    "write_row_groups",
    "write_encoded",
    "write_table",
]


#: Largest dictionary page of a column chunk before it falls back to plain encoding
#: (Parquet C++'s default). Nearly unique columns never get this far: they are written
#: plain from the start (:mod:`kartoframe.format.encoding`). A lower cap (64 KiB, from
#: 3144d2c to this change) made columns of many repeated values fall back half way
#: through a large chunk: the sales table's ``product_id`` (50,000 products) and
#: ``revenue`` did, its files were 12 % larger and its full read 8-10 % slower.
DICTIONARY_PAGE_LIMIT = 2**20
#: Rows of a row group when the writer is given no row group size (pyarrow's default).
DEFAULT_ROW_GROUP_ROWS = 1024 * 1024


def _write_options(
    table: pa.Table, compression: str | None, dictionary: list[str] | bool | None = None
) -> dict[str, Any]:
    """The Parquet writer's options for data files whose first rows are ``table``'s
    (``dictionary``: the columns to dictionary-encode, decided by the caller; None:
    :func:`~kartoframe.format.encoding.dictionary_columns` of ``table``).
    """
    return {
        "compression": compression or "none",
        "version": "2.6",
        "coerce_timestamps": "us",
        "allow_truncated_timestamps": False,
        "dictionary_pagesize_limit": DICTIONARY_PAGE_LIMIT,
        "use_dictionary": dictionary_columns(table) if dictionary is None else dictionary,
    }


def write_table(
    store: Store,
    key: str,
    table: pa.Table,
    *,
    compression: str | None = "snappy",
    row_group_size: int | None = None,
    dictionary: list[str] | bool | None = None,
    declared: pa.Schema | None = None,
) -> int:
    """Write a table as one Parquet object (µs timestamps); return its size in bytes.

    ``dictionary`` names the columns to dictionary-encode (a writer of many files
    decides once, see :func:`~kartoframe.format.encoding.dictionary_columns`); None
    decides from ``table``'s first rows. ``declared`` is the file's Arrow schema when
    it is not ``table``'s: the rows of
    :func:`~kartoframe.format.file_rows.encoded_file_rows`, whose dictionary-encoded
    strings the file declares as strings.

    Data keys are always fresh (never overwritten), so a plain write is safe: no reader
    knows the key before the header that references it is published.
    """
    if not store.is_local:
        data = encode_table(table, compression, row_group_size, dictionary, declared)
        return write_encoded(store, key, data)
    path = store.path(key)

    def _write_local() -> int:
        local_makedirs(
            path, lambda: _encode(table, path, compression, row_group_size, dictionary, declared)
        )
        return os.path.getsize(path)

    return store.with_retry("write", key, _write_local)


def encode_table(
    table: pa.Table,
    compression: str | None = "snappy",
    row_group_size: int | None = None,
    dictionary: list[str] | bool | None = None,
    declared: pa.Schema | None = None,
) -> pa.Buffer:
    """The bytes :func:`write_table` writes for ``table``, encoded in memory (no I/O)."""
    sink = pa.BufferOutputStream()
    _encode(table, sink, compression, row_group_size, dictionary, declared)
    return sink.getvalue()


def _encode(
    table: pa.Table,
    where: str | pa.NativeFile,
    compression: str | None,
    row_group_size: int | None,
    dictionary: list[str] | bool | None,
    declared: pa.Schema | None = None,
) -> None:
    """Encode ``table`` as one Parquet file into ``where`` (a local path or a sink),
    its Arrow schema ``declared`` (None: ``table``'s).
    """
    options = _write_options(table, compression, dictionary)
    if declared is None or declared == table.schema:
        pq.write_table(table, where, row_group_size=row_group_size, **options)
        return
    with pq.ParquetWriter(
        where, table.schema.remove_metadata(), store_schema=False, **options
    ) as writer:
        writer.write_table(table, row_group_size=row_group_size)
        writer.add_key_value_metadata(declared_schema_metadata(declared))


def write_encoded(store: Store, key: str, data: pa.Buffer) -> int:
    """Write the bytes of :func:`encode_table` as a data object; return their size.

    A local file is written with one system call where Arrow's file writer makes one
    per page and footer part (about 25 calls for a small file); see :func:`write_table`
    for why a plain write is safe.
    """
    if not store.is_local:
        store.put(key, data.to_pybytes())
        return int(data.size)
    path = store.path(key)
    store.with_retry("write", key, lambda: local_makedirs(path, lambda: _write_bytes(path, data)))
    return int(data.size)


def _write_bytes(path: str, data: pa.Buffer) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def write_row_groups(
    store: Store, key: str, row_groups: Iterable[pa.Table], *, compression: str | None = "snappy"
) -> int:
    """Write one Parquet object, each table of ``row_groups`` (at least one, all of the
    first one's schema) as one row group, as they come; return its size in bytes.

    Only one row group is in memory at a time (a local file is written as it grows; an
    object store's object is encoded in memory, then uploaded). A failure of a local
    file is a :class:`~kartoframe.errors.StorageError`, as with :func:`write_table` (not
    retried: the rows before it are gone); the source's own errors pass as they are. A
    failure may leave a partial object behind: the caller deletes it.
    """
    groups = iter(row_groups)
    head = [next(groups)]  # the only reference to the first group: written, then dropped
    schema = head[0].schema
    kwargs = _write_options(head[0], compression)
    if store.is_local:
        path = store.path(key)

        def call(fn: Callable[[], Any]) -> Any:
            return store.once("write", key, fn)

        def _open() -> pq.ParquetWriter:
            return local_makedirs(path, lambda: pq.ParquetWriter(path, schema, **kwargs))

        writer = store.with_retry("write", key, _open)  # creating the file can be repeated
    else:
        sink = pa.BufferOutputStream()

        def call(fn: Callable[[], Any]) -> Any:
            return fn()  # into memory: no store failure

        writer = pq.ParquetWriter(sink, schema, **kwargs)
    try:
        for group in itertools.chain([head.pop()], groups):
            call(
                functools.partial(writer.write_table, group, row_group_size=max(1, group.num_rows))
            )
            del group
        call(writer.close)  # the footer
    except BaseException:
        with contextlib.suppress(Exception):  # its error is not the one to report
            writer.close()  # an incomplete file: the caller deletes it
        raise
    if store.is_local:
        return os.path.getsize(path)
    return write_encoded(store, key, sink.getvalue())


def partition_expression(schema: pa.Schema, values: Sequence[tuple[str, Any]]) -> pc.Expression:
    """The expression a file's partition values (``[(column, value), ...]``) stand for,
    typed by the dataset ``schema`` (true for no values).
    """
    e: pc.Expression = pc.scalar(True)
    for col, value in values:
        e = e & (pc.field(col) == pa.scalar(value, type=schema.field(col).type))
    return e


def empty_table(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Table:
    """No rows, the ``columns`` of the dataset ``schema`` (all if None)."""
    names = list(columns) if columns is not None else schema.names
    return pa.schema([schema.field(c) for c in names], metadata=schema.metadata).empty_table()


def data_key_location(key: str) -> tuple[str, str]:
    """``(dataset uuid, partition path)`` of a data key (``""``: no partition keys)."""
    parts = key.split("/")
    return parts[0], "/".join(parts[2:-1]) if len(parts) > 3 else ""


class ScanOptions(TypedDict, total=False):
    """The keywords of the data-file scans (:func:`read_files`,
    :func:`kartoframe.storage.csv_files.read_data_files`), written once.

    Attributes
    ----------
    partition_values
        Per key, the ``(column, value)`` pairs its partition path stands for (default:
        none).
    columns
        Projection (default: all columns of the schema).
    filter
        Row filter, also pruning row groups by their statistics (default: none).
    use_threads
        Let Arrow scan on its thread pool (default True).
    filter_columns
        The columns ``filter`` reads (a remote scan then fetches only the chunks of
        these and the projected columns; default: unknown, all columns).
    covering
        ``filter`` as conjunctions of value ranges (those ranges can express): a local
        file whose footer statistics prove one of them for all its rows is read without
        the filter (:mod:`kartoframe.format.value_ranges`; default: none).
    """

    partition_values: Sequence[Sequence[tuple[str, Any]]] | None
    columns: Sequence[str] | None
    filter: pc.Expression | None
    use_threads: bool
    filter_columns: Sequence[str] | None
    covering: Sequence[Sequence[ValueRange]]


def scan_arguments(
    schema: pa.Schema, keys: Sequence[str], options: ScanOptions
) -> tuple[list[pc.Expression], list[str] | None, pc.Expression | None, bool]:
    """``(partition expression per key, columns, filter, use_threads)`` of a scan."""
    pvs = options.get("partition_values")
    columns = options.get("columns")
    return (
        [partition_expression(schema, pv) for pv in pvs or [()] * len(keys)],
        list(columns) if columns is not None else None,
        options.get("filter"),
        options.get("use_threads", True),
    )


def _read_files(
    store: Store, keys: Sequence[str], schema: pa.Schema, options: ScanOptions
) -> pa.Table:
    """The scan of :func:`read_files`, its errors as Arrow and the store raise them."""
    if store.is_local and keys:
        plain = read_local_files(
            store,
            keys,
            schema,
            options.get("partition_values"),
            options.get("columns"),
            use_threads=options.get("use_threads", True),
            filter=options.get("filter"),
            filter_columns=options.get("filter_columns"),
            covering=options.get("covering") or (),
        )
        if plain is not None:
            return plain
    exprs, cols, filter, use_threads = scan_arguments(schema, keys, options)
    if not keys:
        return empty_table(schema, cols)
    if not store.is_local:
        needed = _needed_columns(schema, cols, filter, options.get("filter_columns"))
        return _read_fetched(store, keys, schema, exprs, cols, filter, use_threads, needed)
    paths = [store.path(k) for k in keys]

    def _scan() -> pa.Table:
        dataset = ds.FileSystemDataset.from_paths(
            paths,
            schema=schema,
            format=ds.ParquetFileFormat(),
            filesystem=store.arrow_filesystem(),
            partitions=exprs,
        )
        try:
            return dataset.to_table(columns=cols, filter=filter, use_threads=use_threads)
        except OSError as e:
            if e.errno is None and not isinstance(e, KartoframeError):
                # Arrow reports undecodable bytes (bad thrift, pages) as an OSError
                # without errno: not a failure of the disk, so not worth retrying
                raise _Undecodable(e) from e
            raise

    return store.with_retry("read", keys[0], _scan)


class _Undecodable(Exception):
    """Carries an Arrow decoding error out of the store's retry loop (never retried)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


def read_files(
    store: Store, keys: Sequence[str], schema: pa.Schema, **options: Unpack[ScanOptions]
) -> pa.Table:
    """Scan Parquet objects as one table with the dataset ``schema``.

    Data files may hold narrower types (int8 for int64, ``large_string`` for
    ``string``), lack columns (filled with nulls) or carry stray pandas index columns
    (ignored); partition columns absent from the files are materialised from
    ``partition_values``. ``filter`` prunes row groups by their statistics and filters
    rows. File order is kept.

    Raises
    ------
    MissingDataFileError
        A key does not exist (the message names the file, its partition and dataset).
    CorruptDataError
        A file cannot be decoded, or its columns cannot be read with ``schema``.
    StorageError
        The store failed.
    """
    try:
        return _read_files(store, keys, schema, options)
    except KartoframeError:
        raise
    except _Undecodable as u:
        raise _data_error(store, keys, schema, u.error, options) from u.error
    except (pa.ArrowException, OSError) as e:
        raise _data_error(store, keys, schema, e, options) from e


def _describe(store: Store, key: str) -> tuple[str, str, str]:
    """``(dataset uuid, partition path, description)`` of a data key."""
    uuid, partition = data_key_location(key)
    where = f"partition {partition!r}" if partition else "no partition keys"
    return uuid, partition, f"{key!r} ({where}) of dataset {uuid!r} in {store.display_url}"


def _culprit(
    store: Store, keys: Sequence[str], schema: pa.Schema, e: BaseException, options: ScanOptions
) -> str | None:
    """The key a failed scan of several files failed on (probed one by one)."""
    if len(keys) == 1:
        return keys[0]
    text = str(e)
    for k in keys:
        if store.path(k) in text:
            return k
    pvs = options.get("partition_values")
    for i, k in enumerate(keys):
        if isinstance(e, FileNotFoundError):
            if not store.exists(k):
                return k
            continue
        one: ScanOptions = {**options, "partition_values": None if pvs is None else [pvs[i]]}
        try:
            _read_files(store, [k], schema, one)
        except Exception:  # any failure of this one file names it
            return k
    return None


def _data_error(
    store: Store, keys: Sequence[str], schema: pa.Schema, e: BaseException, options: ScanOptions
) -> CorruptDataError:
    """The error for a failed scan, naming the file, its partition and its dataset."""
    key = _culprit(store, keys, schema, e, options)
    detail = store._safe_message(e)
    if key is None:
        return CorruptDataError(
            f"Cannot read the data files {list(keys)[:5]} (first of {len(keys)}) in "
            f"{store.display_url}: {detail}"
        )
    uuid, partition, where = _describe(store, key)
    if isinstance(e, FileNotFoundError):
        return MissingDataFileError(
            f"Data file {where} is missing: the header references it but the store has "
            "no such object. The dataset is corrupt (a file was deleted by hand or by "
            "another tool); restore the file or an earlier version.",
            dataset_uuid=uuid,
            partition=partition,
            key=key,
        )
    return CorruptDataError(
        f"Data file {where} cannot be read as Parquet with the dataset's schema: "
        f"{type(e).__name__}: {detail}",
        dataset_uuid=uuid,
        partition=partition,
        key=key,
    )


def _needed_columns(
    schema: pa.Schema,
    columns: list[str] | None,
    filter: pc.Expression | None,
    filter_columns: Sequence[str] | None,
) -> set[str] | None:
    """The columns a scan reads from its files (None: all of them)."""
    if columns is None or (filter is not None and filter_columns is None):
        return None
    needed = set(columns) | set(filter_columns or ())
    return None if needed >= set(schema.names) else needed


def _read_fetched(
    store: Store,
    keys: Sequence[str],
    schema: pa.Schema,
    exprs: Sequence[pc.Expression],
    columns: list[str] | None,
    filter: pc.Expression | None,
    use_threads: bool,
    needed: set[str] | None,
) -> pa.Table:
    """Scan objects of a remote store from Arrow-owned buffers of what the scan needs.

    The store fetches each object's footer, then only the chunks of the ``needed``
    columns in the row groups ``filter`` can match, concurrently
    (:mod:`kartoframe.storage.ranged`; small objects whole). Arrow never sees a Python
    file object: a scan over ``PyFileSystem(FSSpecHandler)`` releases Python-backed
    files and buffers on Arrow's worker threads, and when that happens as the
    interpreter exits the process aborts (see :mod:`kartoframe.format.arrow_memory`).
    """
    fmt = ds.ParquetFileFormat()
    fragments = ranged_fragments(store, keys, fmt, schema, exprs, needed, filter)
    dataset = ds.FileSystemDataset(fragments, schema, fmt)
    return dataset.to_table(columns=columns, filter=filter, use_threads=use_threads)


def read_footer(store: Store, key: str) -> pq.FileMetaData:
    """Read only the Parquet footer of an object (ranged reads)."""

    def _read() -> pq.FileMetaData:
        with store.open_input(key) as f:
            return pq.ParquetFile(f).metadata

    return store.with_retry("read footer", key, _read)
