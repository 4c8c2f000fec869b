"""Shared numpydoc fragments of the public docstrings.

A docstring line that is only ``$name`` is replaced by the fragment ``name`` (indented as
the line): the parameter descriptions the public functions share are written once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

# "== name" starts fragment ``name``; a line "$other" in it inserts fragment ``other``
_TEXT = """\
== store
store
    Store URL, :class:`kartoframe.Store` or factory.
== uuid
dataset_uuid
    The dataset.
== dataset
$uuid
$store
== store_dataset
$store
$uuid
== factory
factory
    plateau's ``DatasetFactory`` (or any object with ``dataset_uuid`` and
    ``store_factory``) instead of ``dataset_uuid`` and ``store``.
== not_found
DatasetNotFoundError
    The dataset does not exist.
== grace_hours
grace_hours
    Minimum age of a deleted file (default 1 hour). Shorter windows need ``force``.
== changes_range
start_version
    The first version whose changes to return (a previous read's ``next_version``
    to tail the dataset; one past the current version returns no rows).
end_version
    The last version (default: the current one).
columns
    Dataset columns to return (default: all); the feed's columns always follow.
predicates
    Filter rows (DNF, as in :func:`kartoframe.read_table`).
== params_dataset
Parameters
----------
$dataset
== params_store_dataset
Parameters
----------
$store_dataset
== returns_deleted
Returns
-------
list of str
    The deleted keys (with ``dry_run``: the keys that would be deleted), sorted.
== returns_delayed
Returns
-------
dask.delayed.Delayed
    Computes to a :class:`kartoframe.DatasetMetadataResult`.
== raises_not_found
Raises
------
$not_found
== examples
Examples
--------
>>> import pandas as pd, kartoframe as kf
== store_layout
metadata
    User metadata stored in the header (a dict, or a callable returning one).
partition_on
    Columns to partition by (hive-style directories; removed from the files; no nulls).
secondary_indices
    Columns to build inverted indices for.
overwrite
    Replace an existing dataset (its old files become garbage).
table_name
    Table directory name (default ``"table"``).
metadata_storage_format
    ``"json"`` (default) or ``"msgpack"`` (zstd-compressed msgpack).
metadata_version
    Must be 4.
sort_partitions_by
    Sort each file by these columns (makes row-group statistics selective).
== txn
app_id, app_version
    Idempotent writes (Delta's transaction identifiers): the commit records
    ``app_version`` for ``app_id``; if the dataset already records that version (or a
    higher one) for ``app_id``, nothing is written and the call returns the dataset as
    it is. A retried pipeline step therefore never commits twice.
commit_info
    A JSON-serialisable dict stored with the commit (see
    :func:`kartoframe.dataset_history`).
== cube_txn
app_id, app_version
    Application transaction (both or neither): every dataset commit records it, and
    a retried call whose datasets already record ``app_version`` (or a later one)
    for ``app_id`` writes nothing; after a crash between dataset commits the retry
    writes only the datasets still missing.
commit_info
    A JSON-serialisable dict recorded with each dataset's commit.
== cube_evolution
schema_evolution
    ``"add_columns"``: the rows may add nullable payload columns (and safe
    widenings) to their dataset, recorded as schema events; older files read the new
    columns as nulls. Default ``"none"``: the stored schemas must match.
== update_common
delete_scope
    ``[{column: value, ...}, ...]``: partitions matching any dict are removed in the
    same commit (columns must be partition keys or indexed).
metadata
    User metadata merged over the existing metadata (``creation_time`` kept).
df_serializer
    :class:`kartoframe.ParquetSerializer` or :class:`kartoframe.CsvSerializer`.
metadata_merger
    Accepted for plateau compatibility; metadata is merged key by key.
default_metadata_version
    Must be 4.
partition_on
    Must equal the dataset's partition keys (default: taken from the dataset).
sort_partitions_by
    Sort each written file by these columns.
== dask_txn
app_id, app_version, commit_info
    Idempotent writes and commit information, as in
    :func:`kartoframe.store_dataframes_as_dataset` (checked when the graph commits).
table
    plateau's name for ``table_name``.
== new_merger
metadata_merger
    Accepted for plateau compatibility (a new dataset has no metadata to merge).
== dataset_result
DatasetMetadataResult
    ``.uuid`` of the committed dataset; other attributes load its metadata.
"""


def _fragments(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith("== "):
            name = line[3:]
            out[name] = []
        elif line.startswith("$"):
            out[name] += out[line[1:]]
        else:
            out[name].append(line)
    return out


FRAGMENTS = _fragments(_TEXT)


def expand(doc: str | None) -> str | None:
    """``doc`` with every ``$name`` line replaced by its fragment."""
    if doc is None:  # python -OO
        return None
    out: list[str] = []
    for line in doc.split("\n"):
        name = line.strip()[1:] if line.strip().startswith("$") else ""
        if name in FRAGMENTS:
            lines = FRAGMENTS[name]
        else:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip())]
        out += [indent + x for x in lines]
    return "\n".join(out)


def fill(func: F) -> F:
    """Decorator: expand the fragments of ``func``'s docstring."""
    func.__doc__ = expand(func.__doc__)
    return func
