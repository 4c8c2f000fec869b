"""The change data feed's on-disk names and row layout (pure: no I/O).

A commit that knows exactly which rows it changed (a merge) writes them as *change
files* and records their keys in its log entry (``changes``), as Delta Lake writes
``_change_data`` files::

    <uuid>/_kartoframe/changes/<32 hex digits>.changes.pq

A change file holds rows of the dataset (partition columns included, as columns) and a
``_change_type`` column: ``insert``, ``delete``, ``update_preimage`` or
``update_postimage``. The feed of a commit with change files is those files only; the
feed of any other commit is derived from the data files its entry added (``insert``)
and removed (``delete``). Commits that change no row (optimize, index builds, metadata
updates) have an empty feed.

Rows of the feed carry three more columns: ``_change_type``, ``_commit_version`` and
``_commit_timestamp`` (UTC).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = [
    "CHANGES_DIR",
    "CHANGE_SUFFIX",
    "CHANGE_TYPE",
    "CHANGE_TYPES",
    "COMMIT_TIMESTAMP",
    "COMMIT_VERSION",
    "FEED_COLUMNS",
    "NO_DATA_CHANGE",
    "ROW_GROUP_ROWS",
    "change_file_key",
    "change_file_schema",
    "feed_schema",
    "is_change_file",
    "labelled",
    "pairs",
]

#: Folder of the change files below the dataset.
CHANGES_DIR = "_kartoframe/changes"
#: Deliberately not ``.parquet`` (as the statistics files): plateau lists every
#: ``*.parquet`` key below ``<uuid>/`` as a data file when a header has no partitions.
CHANGE_SUFFIX = ".changes.pq"
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
#: The columns the feed adds to the dataset's, in this order.
FEED_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
CHANGE_TYPES = ("insert", "delete", "update_preimage", "update_postimage")
#: Rows per row group of a change file: the writer buffers one group at a time, and a
#: reader with predicates skips groups by their statistics.
ROW_GROUP_ROWS = 65_536
#: Operations that rewrite or describe rows without changing any: their feed is empty.
NO_DATA_CHANGE = frozenset({"OPTIMIZE", "BUILD_INDEX", "SET_METADATA", "REVERT"})
_NAME_RE = re.compile(r"[0-9a-f]{32}" + re.escape(CHANGE_SUFFIX))


def change_file_key(dataset_uuid: str, file_uuid: str) -> str:
    """The key of a new change file of a dataset."""
    return f"{dataset_uuid}/{CHANGES_DIR}/{file_uuid}{CHANGE_SUFFIX}"


def is_change_file(key: str, dataset_uuid: str) -> bool:
    """Whether ``key`` is a change file name a write of ``dataset_uuid`` generates."""
    prefix = f"{dataset_uuid}/{CHANGES_DIR}/"
    return key.startswith(prefix) and _NAME_RE.fullmatch(key[len(prefix) :]) is not None


def change_file_schema(schema: pa.Schema) -> pa.Schema:
    """The schema of a change file of a dataset with ``schema``."""
    return schema.append(pa.field(CHANGE_TYPE, pa.string(), nullable=False))


def feed_schema(schema: pa.Schema, columns: Sequence[str] | None = None) -> pa.Schema:
    """The schema of the feed's rows: the dataset's ``columns`` and :data:`FEED_COLUMNS`."""
    fields = [schema.field(c) for c in (columns if columns is not None else schema.names)]
    return pa.schema(
        [
            *fields,
            pa.field(CHANGE_TYPE, pa.string()),
            pa.field(COMMIT_VERSION, pa.int64()),
            pa.field(COMMIT_TIMESTAMP, pa.timestamp("ms", tz="UTC")),
        ],
        metadata=schema.metadata,
    )


def labelled(table: pa.Table, change_type: str) -> pa.Table:
    """``table`` with a ``_change_type`` column of ``change_type`` on every row
    (dictionary-encoded: one string, a byte per row).
    """
    if change_type not in CHANGE_TYPES:
        raise ValueError(f"unknown change type {change_type!r}")
    codes = pa.array(np.zeros(table.num_rows, dtype=np.int8))
    column = pa.DictionaryArray.from_arrays(codes, pa.array([change_type], pa.string()))
    return table.append_column(pa.field(CHANGE_TYPE, column.type, nullable=False), column)


def pairs(pre: pa.Table, post: pa.Table) -> pa.Table:
    """Update pre- and postimages (row ``i`` of ``pre`` became row ``i`` of ``post``),
    labelled and interleaved: each preimage directly followed by its postimage.
    """
    n = pre.num_rows
    both = pa.concat_tables(
        [labelled(pre, "update_preimage"), labelled(post, "update_postimage")],
        promote_options="permissive",
    )
    order = np.empty(2 * n, dtype=np.int64)
    order[0::2] = np.arange(n)
    order[1::2] = np.arange(n, 2 * n)
    return both.take(pa.array(order, type=pa.int64()))
