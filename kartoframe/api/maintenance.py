"""Delete, garbage-collect and index existing datasets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kartoframe.errors import DatasetNotFoundError
from kartoframe.execution.index_build import commit_index_build, index_file, plan_index_build
from kartoframe.front.args import StoreInput, dataset_args, maintenance_flags
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import str_list
from kartoframe.progress import track
from kartoframe.storage.garbage import collect_dataset_garbage, delete_dataset_files
from kartoframe.storage.resolve import dataset_exists
from kartoframe.storage.retention import (
    DEFAULT_RETENTION_HOURS,
    GRACE_HOURS,
    check_grace,
    check_hours,
)

__all__ = ["build_dataset_indices", "delete_dataset", "garbage_collect_dataset"]


@fill
def garbage_collect_dataset(
    dataset_uuid: str | None = None,
    store: StoreInput | None = None,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
    *,
    dry_run: bool = False,
    grace_hours: float = GRACE_HOURS,
    force: bool = False,
    factory: Any = None,
) -> list[str]:
    """Delete files of a dataset that no retained version references.

    Safe to run at any time with its defaults, also while writes run (from cron, as
    Delta's vacuum). A file is deleted only if all of these hold:

    * its name is one kartoframe's (or plateau's) writes generate: a data file
      ``<table>/.../<32 hex digits>.parquet``, an index file, a statistics file, or a
      temp file of a local publication (``.<name>.tmp-<hex>``) — never another file
      that happens to sit in those folders;
    * neither the current version nor any version that was current during the last
      ``retention_hours`` references it (``retention_hours=0``: the current version
      only, plateau's meaning), nor any version committed while the collection runs
      (the log is read again after the listing, just before deleting);
    * it is older than ``grace_hours`` by the store's modification time: files of
      writes in progress and temp files being published are newer.

    ``_common_metadata`` and the transaction log are never deleted (that is
    :func:`kartoframe.vacuum_dataset`'s job).

    A dataset without a header (a failed create whose own cleanup failed too) is
    collected entirely: every file with a name kartoframe or plateau generates below
    ``<uuid>/`` (see :func:`kartoframe.storage.garbage.leftover_keys`), log included —
    again only files older than the grace window (a create in progress has no header yet).

    $params_dataset
    retention_hours
        Keep what versions current during this many past hours need (default 168).
    dry_run
        Delete nothing; return exactly what the call would delete (the same
        computation, for previews such as ``kartoframe STORE gc --dry-run``).
    $grace_hours
    force
        Allow ``grace_hours`` below 1 hour. **Unsafe** while any write runs: a write's
        files (or a temp file being published) can be deleted before it commits, and
        the committed version then references missing files. A warning is logged
        (logger ``kartoframe.maintenance``).
    $factory

    $returns_deleted

    Raises
    ------
    InvalidInputError
        A window is not a finite number >= 0, ``grace_hours`` is below 1 without
        ``force``, or ``dry_run``/``force`` is not a bool.
    DatasetNotFoundError
        No header and no file a write of this dataset leaves.
    CorruptMetadataError
        The header or the log is corrupt (nothing is deleted; see
        :func:`kartoframe.delete_dataset`).
    """
    uuid, st = dataset_args(dataset_uuid, store, factory)
    maintenance_flags(dry_run, force)
    hours = check_hours(retention_hours, "retention_hours")
    grace = check_grace(grace_hours, force=force, what="garbage_collect_dataset")
    keys = collect_dataset_garbage(st, uuid, hours, grace, dry_run=dry_run)
    if keys is None:
        raise DatasetNotFoundError(uuid, st.display_url)
    return keys


def delete_dataset(
    dataset_uuid: str | None = None, store: StoreInput | None = None, factory: Any = None
) -> None:
    """Delete a dataset: header first (so readers never see a partial dataset), then files.

    Whichever header exists (JSON or msgpack) is removed, then every file the header
    references and every file with a name a write of the dataset generates (data files of
    any table, ``_common_metadata``, index, statistics and temp files), the log last.
    Other files below ``<uuid>/`` are left alone.

    A corrupt dataset (an undecodable header, log entries that fail their digest check,
    missing files) is deleted all the same: what cannot be read is not needed to remove
    it.

    Raises
    ------
    DatasetNotFoundError
        If the dataset does not exist.
    """
    uuid, st = dataset_args(dataset_uuid, store, factory)
    if not dataset_exists(st, uuid):
        raise DatasetNotFoundError(uuid, st.display_url)
    delete_dataset_files(st, uuid)


@fill
def build_dataset_indices(
    store: StoreInput | None,
    dataset_uuid: str | None,
    columns: Sequence[str],
    *,
    progress: bool = False,
    factory: Any = None,
) -> DatasetMetadataResult:
    """Build (or rebuild) secondary indices by scanning the needed columns.

    $params_store_dataset
    columns
        Columns to index (not partition keys).
    progress
        Show a progress bar of the files scanned (only on a terminal).
    $factory
    """
    uuid, st = dataset_args(dataset_uuid, store, factory)
    cols = str_list(columns, "columns")
    loaded, all_cols, plan = plan_index_build(st, uuid, cols)
    # rebuild every index from the data so all indices cover all partitions
    parts = [
        index_file(plan, task, st, all_cols)
        for task in track(plan.tasks, f"indexing {uuid}", enabled=progress, unit="files")
    ]
    commit_index_build(st, loaded, parts, all_cols, cols)
    return DatasetMetadataResult(uuid, st)
