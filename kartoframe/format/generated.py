"""Which keys kartoframe's (and plateau's) writes generate: the names maintenance may delete.

Garbage collection, vacuum and ``delete_dataset`` never delete a key because of where it
is alone: a key is deleted only if its whole name is one a write of that dataset
generates. Anything else below ``<uuid>/`` (a ``notes.txt`` in the table folder, a
``.<uuid>.notes.tmp-backup`` next to the header) is never touched.

Generated names (``<uuid>`` the dataset, ``<table>`` its table)::

    <uuid>.by-dataset-metadata.json | .msgpack.zstd                 header
    <uuid>/<table>/_common_metadata                                  schema
    <uuid>/<table>/<col>=<val>/.../<32 hex digits>.parquet           data (or .csv[.gz])
    <uuid>/indices/<col>/<timestamp>.by-dataset-index.parquet        index
    <uuid>/_kartoframe/stats/<timestamp>.statistics.pq               statistics
    <uuid>/_kartoframe/log/<20 digits>[.checkpoint].json             transaction log
    <uuid>/_kartoframe/changes/<32 hex digits>.changes.pq      change file
    <folder>/.<name>.tmp-<hex>                                       local temp file of
                                                                     <folder>/<name>

Pure string functions: no I/O.
"""

from __future__ import annotations

import re

from kartoframe.format import naming, txlog
from kartoframe.format.changes import is_change_file
from kartoframe.format.statistics import STATISTICS_DIR, STATISTICS_SUFFIX

__all__ = [
    "is_change_file",
    "is_collectable",
    "is_common_metadata",
    "is_data_file",
    "is_dataset_file",
    "is_header",
    "is_index_file",
    "is_log_file",
    "is_statistics_file",
    "is_table_name",
    "is_temp_file",
]

#: a data file's own name: a file uuid (uuid4 hex; Spark: job id + counter, also 32 hex)
#: and the suffix of Parquet or of CSV as plateau's ``CsvSerializer`` writes it
_DATA_NAME_RE = re.compile(
    r"[0-9a-f]{32}(?:" + "|".join(map(re.escape, (naming.PARQUET_SUFFIX, ".csv.gz", ".csv"))) + ")"
)
_INDEX_NAME_RE = re.compile(r"[^/]+" + re.escape(naming.INDEX_SUFFIX))
_STATS_NAME_RE = re.compile(r"[^/]+" + re.escape(STATISTICS_SUFFIX))
#: the temp file a local publication writes first: ``.<name>.tmp-<uuid4 hex>``
_TEMP_NAME_RE = re.compile(r"\.(?P<name>.+)\.tmp-[0-9a-f]+")


def is_table_name(name: object) -> bool:
    """Whether a write can generate ``name`` as a table name."""
    return naming.reserved_table_reason(name) is None


def _rest(key: str, prefix: str) -> str | None:
    return key[len(prefix) :] if key.startswith(prefix) else None


def is_data_file(key: str, dataset_uuid: str, table: str | None = None) -> bool:
    """``<uuid>/<table>/<col>=<val>/.../<32 hex>.parquet`` (or ``.csv``, ``.csv.gz``;
    any valid table if ``table`` is None).
    """
    rest = _rest(key, dataset_uuid + "/")
    if rest is None:
        return False
    folder, _, name = rest.partition("/")
    if (table is not None and folder != table) or not is_table_name(folder) or not name:
        return False
    *components, base = name.split("/")
    return all(components) and bool(_DATA_NAME_RE.fullmatch(base))


def is_common_metadata(key: str, dataset_uuid: str, table: str | None = None) -> bool:
    """``<uuid>/<table>/_common_metadata`` (any valid table if None)."""
    rest = _rest(key, dataset_uuid + "/")
    if rest is None or not rest.endswith("/" + naming.COMMON_METADATA):
        return False
    folder = rest[: -len(naming.COMMON_METADATA) - 1]
    return is_table_name(folder) and (table is None or folder == table)


def is_index_file(key: str, dataset_uuid: str) -> bool:
    """``<uuid>/indices/<col>/<timestamp>.by-dataset-index.parquet``."""
    rest = _rest(key, f"{dataset_uuid}/indices/")
    if rest is None:
        return False
    column, sep, name = rest.partition("/")
    return bool(column) and bool(sep) and bool(_INDEX_NAME_RE.fullmatch(name))


def is_statistics_file(key: str, dataset_uuid: str) -> bool:
    """``<uuid>/_kartoframe/stats/<timestamp>.statistics.pq``."""
    rest = _rest(key, f"{dataset_uuid}/{STATISTICS_DIR}/")
    return rest is not None and bool(_STATS_NAME_RE.fullmatch(rest))


def is_log_file(key: str, dataset_uuid: str) -> bool:
    """A log entry or checkpoint of the dataset."""
    rest = _rest(key, txlog.log_prefix(dataset_uuid))
    return rest is not None and txlog.parse_log_name(rest) is not None


def is_header(key: str, dataset_uuid: str) -> bool:
    """The dataset's header, in either storage format."""
    return any(key == naming.header_key(dataset_uuid, fmt) for fmt in naming.HEADER_SUFFIXES)


def is_collectable(key: str, dataset_uuid: str, table: str | None) -> bool:
    """A data, index, statistics or change file: what garbage collection and vacuum may
    delete when no retained version references it (``table``: the dataset's table; None: a data
    file of any valid table name).
    """
    return (
        is_data_file(key, dataset_uuid, table)
        or is_index_file(key, dataset_uuid)
        or is_statistics_file(key, dataset_uuid)
        or is_change_file(key, dataset_uuid)
    )


def is_temp_file(key: str, dataset_uuid: str, table: str | None = None) -> bool:
    """A temp file of a local publication of one of the dataset's generated keys."""
    folder, _, base = key.rpartition("/")
    m = _TEMP_NAME_RE.fullmatch(base)
    if m is None:
        return False
    target = f"{folder}/{m['name']}" if folder else m["name"]
    return _is_generated(target, dataset_uuid, table)


def _is_generated(key: str, dataset_uuid: str, table: str | None) -> bool:
    return (
        is_header(key, dataset_uuid)
        or is_common_metadata(key, dataset_uuid, table)
        or is_collectable(key, dataset_uuid, table)
        or is_log_file(key, dataset_uuid)
    )


def is_dataset_file(key: str, dataset_uuid: str, table: str | None = None) -> bool:
    """Any key a write of the dataset generates (what ``delete_dataset`` removes): header,
    schema, data, index, statistics, change and log files, and their temp files.
    """
    return _is_generated(key, dataset_uuid, table) or is_temp_file(key, dataset_uuid, table)
