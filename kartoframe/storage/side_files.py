"""Side files of a commit: index files and statistics files (read and written here).

A commit reads the base's side files it merges into (:func:`base_statistics`; indices
through :func:`kartoframe.storage.resolve.load_indices`), computes the new ones (pure), and
writes each under a fresh, timestamped name (:func:`write_index_file`,
:func:`write_statistics_file`) before the header that references them is published.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping

import pyarrow as pa

from kartoframe.errors import CommitConflictError, CorruptMetadataError
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.index import index_to_bytes
from kartoframe.format.index_group import IndexSource
from kartoframe.format.statistics import statistics_key, statistics_to_bytes
from kartoframe.format.statistics_rows import kept_rows
from kartoframe.storage.resolve import (
    load_statistics,
    statistics_files,
    statistics_ref,
    statistics_rows,
)
from kartoframe.storage.store import Store

__all__ = [
    "FEW_STATISTICS_ROWS",
    "base_statistics",
    "kept_statistics",
    "with_statistics",
    "write_index_file",
    "write_statistics_file",
]

#: A base whose statistics describe fewer than one in this many of the new header's
#: files (a dataset written by plateau, then appended to by kartoframe) has its
#: statistics files read whole: a lookup per row instead of a pass over every label.
FEW_STATISTICS_ROWS = 4


def _put_fresh(store: Store, data: bytes, key_at: Callable[[str], str], failure: str) -> str:
    """Put ``data`` under the first free ``key_at(timestamp)``, from now on."""
    ts = dt.datetime.now(dt.UTC)
    for _ in range(1000):
        key = key_at(ts.isoformat())
        if store.put_if_absent(key, data):
            return key
        ts += dt.timedelta(microseconds=1)
    raise CommitConflictError(failure)


def write_index_file(
    store: Store, dataset_uuid: str, column: str, index: pa.Table | IndexSource
) -> str:
    """Write an index (a table or an :data:`IndexSource`) as a new index file of
    ``column``; return its key.
    """
    return _put_fresh(
        store,
        index_to_bytes(index),
        lambda ts: naming.index_key(dataset_uuid, column, ts),
        f"Could not find a free index file name for {column!r}.",
    )


def write_statistics_file(store: Store, dataset_uuid: str, stats: pa.Table) -> str:
    """Write per-file statistics as a new statistics file of the dataset; return its key."""
    return _put_fresh(
        store,
        statistics_to_bytes(stats),
        lambda ts: statistics_key(dataset_uuid, ts),
        f"Could not find a free statistics file name for {dataset_uuid!r}.",
    )


def base_statistics(
    store: Store, base: LoadedDataset | None, labels: Collection[str] | None = None
) -> pa.Table | None:
    """The base's statistics (with ``labels``: at least the rows of these files, and
    only the row groups of the files that hold them are decoded, unless the base
    carries its whole table already); an unreadable file counts as none (rows become
    unknown).
    """
    if base is None:
        return None
    if labels is None:
        return with_statistics(store, base).statistics
    try:
        return statistics_rows(store, base, labels)
    except CorruptMetadataError:
        return None


def kept_statistics(
    store: Store, base: LoadedDataset | None, partitions: Mapping[str, str]
) -> pa.Table | None:
    """The base's statistics rows of the files the new header (``partitions``) keeps,
    with the same data file key; an unreadable file counts as none (rows become unknown).

    Only the row groups holding these files are decoded; when the base describes few
    files (see :data:`FEW_STATISTICS_ROWS`), its statistics files are read whole instead,
    at a cost of their rows rather than of the header's partitions.
    """
    if base is None:
        return None
    ref = statistics_ref(base.metadata)
    if (
        base.statistics is None
        and ref is not None
        and ref.partitions * FEW_STATISTICS_ROWS < len(partitions)
    ):
        try:
            tables = statistics_files(store, base)
        except CorruptMetadataError:
            return None
        return kept_rows(tables, partitions) if tables is not None else None
    old = base.metadata.partitions
    return base_statistics(
        store, base, [lb for lb, key in partitions.items() if old.get(lb) == key]
    )


def with_statistics(store: Store, base: LoadedDataset) -> LoadedDataset:
    """``base`` carrying its statistics (loaded once: a commit on this base reuses them);
    unchanged if it has none or they cannot be read.
    """
    try:
        return load_statistics(store, base)
    except CorruptMetadataError:
        return base
