"""Parquet objects in a store: write one table, read many files as one scan."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from kartoframe.format.arrow_memory import reader
from kartoframe.storage.store import Store, local_makedirs

__all__ = ["read_files", "read_footer", "write_table"]


def write_table(
    store: Store,
    key: str,
    table: pa.Table,
    *,
    compression: str | None = "snappy",
    row_group_size: int | None = None,
) -> int:
    """Write a table as one Parquet object (µs timestamps); return its size in bytes.

    Data keys are always fresh (never overwritten), so a plain write is safe: no reader
    knows the key before the header that references it is published.
    """
    kwargs: dict[str, Any] = {
        "compression": compression or "none",
        "row_group_size": row_group_size,
        "version": "2.6",
        "coerce_timestamps": "us",
        "allow_truncated_timestamps": False,
    }
    path = store.path(key)
    if store.is_local:

        def _write_local() -> int:
            local_makedirs(path, lambda: pq.write_table(table, path, **kwargs))
            return os.path.getsize(path)

        return store.with_retry("write", key, _write_local)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **kwargs)
    data = sink.getvalue().to_pybytes()
    store.put(key, data)
    return len(data)


def read_files(
    store: Store,
    keys: Sequence[str],
    schema: pa.Schema,
    *,
    partition_values: Sequence[Sequence[tuple[str, Any]]] | None = None,
    columns: Sequence[str] | None = None,
    filter: pc.Expression | None = None,
    use_threads: bool = True,
) -> pa.Table:
    """Scan Parquet objects as one table with the dataset ``schema``.

    Data files may hold narrower types (int8 for int64, ``large_string`` for
    ``string``), lack columns (filled with nulls) or carry stray pandas index columns
    (ignored); partition columns absent from the files are materialised from
    ``partition_values``. ``filter`` prunes row groups by their statistics and filters
    rows. File order is kept.
    """
    if not keys:
        cols = list(columns) if columns is not None else schema.names
        return pa.schema([schema.field(c) for c in cols], metadata=schema.metadata).empty_table()
    exprs = []
    for pv in partition_values or [()] * len(keys):
        e: pc.Expression = pc.scalar(True)
        for col, value in pv:
            e = e & (pc.field(col) == pa.scalar(value, type=schema.field(col).type))
        exprs.append(e)
    cols = list(columns) if columns is not None else None
    if not store.is_local:
        return _read_fetched(store, keys, schema, exprs, cols, filter, use_threads)
    paths = [store.path(k) for k in keys]

    def _scan() -> pa.Table:
        dataset = ds.FileSystemDataset.from_paths(
            paths,
            schema=schema,
            format=ds.ParquetFileFormat(),
            filesystem=store.arrow_filesystem(),
            partitions=exprs,
        )
        return dataset.to_table(columns=cols, filter=filter, use_threads=use_threads)

    return store.with_retry("read", keys[0], _scan)


def _read_fetched(
    store: Store,
    keys: Sequence[str],
    schema: pa.Schema,
    exprs: Sequence[pc.Expression],
    columns: list[str] | None,
    filter: pc.Expression | None,
    use_threads: bool,
) -> pa.Table:
    """Scan objects of a remote store from Arrow-owned copies of their bytes.

    The objects are fetched whole and concurrently by the store (fsspec). Arrow never
    sees a Python file object: a scan over ``PyFileSystem(FSSpecHandler)`` releases
    Python-backed files and buffers on Arrow's worker threads, and when that happens
    as the interpreter exits the process aborts (see :mod:`kartoframe.format.arrow_memory`).
    """
    fmt = ds.ParquetFileFormat()
    blobs = store.get_many(keys)
    fragments = []
    for i, expr in enumerate(exprs):
        fragments.append(fmt.make_fragment(reader(blobs[i]), partition_expression=expr))
        blobs[i] = b""  # keep one copy of each object alive, not two
    dataset = ds.FileSystemDataset(fragments, schema, fmt)
    return dataset.to_table(columns=columns, filter=filter, use_threads=use_threads)


def read_footer(store: Store, key: str) -> pq.FileMetaData:
    """Read only the Parquet footer of an object (ranged reads)."""

    def _read() -> pq.FileMetaData:
        with store.open_input(key) as f:
            return pq.ParquetFile(f).metadata

    return store.with_retry("read footer", key, _read)
