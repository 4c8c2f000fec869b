"""Numpydoc fragments shared by the write fronts.

A docstring line that is only ``$name`` expands to the write fragment ``name`` (or to a
fragment of :mod:`kartoframe.api._docs`), indented as the line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kartoframe.api._docs import expand

__all__ = ["fill"]

F = TypeVar("F", bound=Callable[..., Any])

_TXN = (
    "app_id, app_version\n"
    "    Idempotent writes (Delta's transaction identifiers): the commit records\n"
    "    ``app_version`` for ``app_id``; if the dataset already records that version (or a\n"
    "    higher one) for ``app_id``, nothing is written and the call returns the dataset as\n"
    "    it is. A retried pipeline step therefore never commits twice."
)
_INFO = (
    "commit_info\n"
    "    A JSON-serialisable dict stored with the commit (see\n"
    "    :func:`kartoframe.dataset_history`)."
)
_CUBE_TXN = (
    "app_id, app_version\n"
    "    Application transaction (both or neither): every dataset commit records it, and\n"
    "    a retried call whose datasets already record ``app_version`` (or a later one)\n"
    "    for ``app_id`` writes nothing; after a crash between dataset commits the retry\n"
    "    writes only the datasets still missing.\n"
    "commit_info\n"
    "    A JSON-serialisable dict recorded with each dataset's commit."
)
_CUBE_EVOLUTION = (
    "schema_evolution\n"
    '    ``"add_columns"``: the rows may add nullable payload columns (and safe\n'
    "    widenings) to their dataset, recorded as schema events; older files read the new\n"
    '    columns as nulls. Default ``"none"``: the stored schemas must match.'
)
_UPDATE_COMMON = (
    "delete_scope\n"
    "    ``[{column: value, ...}, ...]``: partitions matching any dict are removed in the\n"
    "    same commit (columns must be partition keys or indexed).\n"
    "metadata\n"
    "    User metadata merged over the existing metadata (``creation_time`` kept).\n"
    "df_serializer\n"
    "    :class:`kartoframe.ParquetSerializer` or :class:`kartoframe.CsvSerializer`.\n"
    "metadata_merger\n"
    "    Accepted for plateau compatibility; metadata is merged key by key.\n"
    "default_metadata_version\n"
    "    Must be 4.\n"
    "partition_on\n"
    "    Must equal the dataset's partition keys (default: taken from the dataset).\n"
    "sort_partitions_by\n"
    "    Sort each written file by these columns."
)
_STORE_LAYOUT = (
    "metadata\n"
    "    User metadata stored in the header (a dict, or a callable returning one).\n"
    "partition_on\n"
    "    Columns to partition by (hive-style directories; removed from the files; no nulls).\n"
    "secondary_indices\n"
    "    Columns to build inverted indices for.\n"
    "overwrite\n"
    "    Replace an existing dataset (its old files become garbage).\n"
    "table_name\n"
    '    Table directory name (default ``"table"``).\n'
    "metadata_storage_format\n"
    '    ``"json"`` (default) or ``"msgpack"`` (zstd-compressed msgpack).\n'
    "metadata_version\n"
    "    Must be 4.\n"
    "sort_partitions_by\n"
    "    Sort each file by these columns (makes row-group statistics selective)."
)
WRITE_FRAGMENTS = {
    "store_layout": _STORE_LAYOUT,
    "txn": f"{_TXN}\n{_INFO}",
    "cube_txn": _CUBE_TXN,
    "cube_evolution": _CUBE_EVOLUTION,
    "update_common": _UPDATE_COMMON,
    "dataset_result": "DatasetMetadataResult\n"
    "    ``.uuid`` of the committed dataset; other attributes load its metadata.",
}


def fill(func: F) -> F:
    """Decorator: expand the write fragments, then the shared ones, of the docstring."""
    func.__doc__ = expand(func.__doc__, WRITE_FRAGMENTS)
    return func
