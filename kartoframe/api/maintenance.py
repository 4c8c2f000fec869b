"""Delete, garbage-collect and index existing datasets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kartoframe.api._args import StoreInput, check_uuid, ensure_store, str_list
from kartoframe.api.compat import resolve_factory
from kartoframe.api.write import DatasetMetadataResult
from kartoframe.errors import (
    CommitConflictError,
    DatasetNotFoundError,
    FormatError,
    InvalidInputError,
    KartoframeError,
    StorageError,
)
from kartoframe.execution.index_build import commit_index_build, index_file, plan_index_build
from kartoframe.format import generated, txlog
from kartoframe.progress import track
from kartoframe.storage.lifecycle import delete_headers, delete_log, mark_deleted
from kartoframe.storage.log import current_state
from kartoframe.storage.resolve import dataset_exists, load_dataset, read_header
from kartoframe.storage.retention import (
    DEFAULT_RETENTION_HOURS,
    GRACE_HOURS,
    check_grace,
    check_hours,
    collect_garbage,
    dataset_keys,
)
from kartoframe.storage.store import Store

__all__ = [
    "build_dataset_indices",
    "collect_dataset_garbage",
    "delete_dataset",
    "garbage_collect_dataset",
    "leftover_keys",
    "unreferenced_keys",
]


def unreferenced_keys(
    store: Store, dataset_uuid: str, retention_hours: float | None = None
) -> list[str]:
    """Data, index and statistics files (names writes generate) that no version inside
    the retention window references, whatever their age (None: the current version).

    This ignores the grace window; what :func:`garbage_collect_dataset` would delete is
    ``garbage_collect_dataset(..., dry_run=True)``.
    """
    hours = 0.0 if retention_hours is None else check_hours(retention_hours, "retention_hours")
    return list(collect_garbage(store, dataset_uuid, hours, 0.0).garbage)


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
    ``<uuid>/`` (see :func:`leftover_keys`), log included — again only files older than
    the grace window (a create in progress has no header yet).

    Parameters
    ----------
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory.
    retention_hours
        Keep what versions current during this many past hours need (default 168).
    dry_run
        Delete nothing; return exactly what the call would delete (the same
        computation, for previews such as ``kartoframe STORE gc --dry-run``).
    grace_hours
        Minimum age of a deleted file (default 1 hour). Shorter windows need ``force``.
    force
        Allow ``grace_hours`` below 1 hour. **Unsafe** while any write runs: a write's
        files (or a temp file being published) can be deleted before it commits, and
        the committed version then references missing files. A warning is logged
        (logger ``kartoframe.maintenance``).
    factory
        plateau's ``DatasetFactory`` (or any object with ``dataset_uuid`` and
        ``store_factory``) instead of ``dataset_uuid`` and ``store``.

    Returns
    -------
    list of str
        The deleted keys (with ``dry_run``: the keys that would be deleted), sorted.

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
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    if not isinstance(dry_run, bool) or not isinstance(force, bool):
        raise InvalidInputError("dry_run and force must be booleans.")
    hours = check_hours(retention_hours, "retention_hours")
    grace = check_grace(grace_hours, force=force, what="garbage_collect_dataset")
    keys = collect_dataset_garbage(st, uuid, hours, grace, dry_run=dry_run)
    if keys is None:
        raise DatasetNotFoundError(uuid, st.display_url)
    return keys


def collect_dataset_garbage(
    store: Store, dataset_uuid: str, retention_hours: float, grace_hours: float, *, dry_run: bool
) -> list[str] | None:
    """The work of :func:`garbage_collect_dataset` (and, per dataset, of
    :func:`kartoframe.cleanup_cube`) on validated arguments: delete (``dry_run``: only
    list) what it deletes, sorted. None if there is neither a dataset nor a file a write
    of it left.
    """
    st, uuid, hours, grace = store, dataset_uuid, retention_hours, grace_hours
    if _absent(st, uuid):
        found = leftover_keys(st, uuid)
        if not found:
            return None
        leftovers = _old_enough(st, uuid, found, grace)
        if not dry_run and leftovers:
            if not _absent(st, uuid):  # created meanwhile: collect normally
                return collect_dataset_garbage(st, uuid, hours, grace, dry_run=dry_run)
            _delete_leftovers(st, uuid, leftovers)
        return leftovers
    collected = collect_garbage(st, uuid, hours, grace)
    keys = sorted([*collected.garbage, *collected.temps])
    if not dry_run:
        st.delete_many(keys)
    return keys


def _absent(store: Store, dataset_uuid: str) -> bool:
    """No dataset: no header, and no log version that creates it (a create between its
    log entry and its header write is a dataset; its files are not leftovers).
    """
    if read_header(store, dataset_uuid) is not None:
        return False
    try:
        return current_state(store, dataset_uuid) is None
    except FormatError:  # no header and a log that does not decode: what a write left
        return True


def _old_enough(store: Store, dataset_uuid: str, keys: list[str], grace: float) -> list[str]:
    if grace == 0:
        return keys
    cutoff = txlog.now_ms() - int(grace * 3_600_000)
    ages = dataset_keys(store, dataset_uuid)
    return [k for k in keys if (t := ages.get(k)) is not None and t < cutoff]


def _delete_leftovers(store: Store, dataset_uuid: str, keys: list[str]) -> None:
    log_keys = [k for k in keys if generated.is_log_file(k, dataset_uuid)]
    store.delete_many([k for k in keys if k not in set(log_keys)])
    for key in log_keys:  # oldest first, as delete_log
        store.delete(key)


def leftover_keys(store: Store, dataset_uuid: str) -> list[str]:
    """Files a write of ``dataset_uuid`` left behind when the dataset has no header.

    A create that failed, and whose own cleanup failed too, leaves data, index,
    statistics and log files but no header. Only keys with the names kartoframe (and
    plateau) generate are listed (:func:`kartoframe.format.generated.is_dataset_file`):
    data files named by a 32-digit hex uuid, index and statistics files,
    ``_common_metadata``, log entries and temp files of those. Anything else under the
    prefix (a folder of other files that happens to share the name) is never touched.
    """
    return sorted(dataset_keys(store, dataset_uuid))


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
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    if not dataset_exists(st, uuid):
        raise DatasetNotFoundError(uuid, st.display_url)
    keys: set[str] = set()
    try:
        loaded = load_dataset(st, uuid)
        keys = txlog.referenced_keys(loaded.metadata)
        # the log records the deletion first: writers that started before lose their commit
        mark_deleted(st, uuid)
    except (DatasetNotFoundError, StorageError, CommitConflictError):
        raise
    except KartoframeError:  # corrupt header or log: nothing to record, remove it all
        delete_headers(st, uuid)
    keys |= set(dataset_keys(st, uuid))
    log = {k for k in keys if generated.is_log_file(k, uuid)}
    st.delete_many(sorted(keys - log))
    delete_log(st, uuid)


def build_dataset_indices(
    store: StoreInput | None,
    dataset_uuid: str | None,
    columns: Sequence[str],
    *,
    progress: bool = False,
    factory: Any = None,
) -> DatasetMetadataResult:
    """Build (or rebuild) secondary indices by scanning the needed columns.

    Parameters
    ----------
    store
        Store URL, :class:`kartoframe.Store` or factory.
    dataset_uuid
        The dataset.
    columns
        Columns to index (not partition keys).
    progress
        Show a progress bar of the files scanned (only on a terminal).
    factory
        plateau's ``DatasetFactory`` (or any object with ``dataset_uuid`` and
        ``store_factory``) instead of ``dataset_uuid`` and ``store``.
    """
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    cols = str_list(columns, "columns")
    loaded, all_cols, plan = plan_index_build(st, uuid, cols)
    # rebuild every index from the data so all indices cover all partitions
    parts = [
        index_file(plan, task, st, all_cols)
        for task in track(plan.tasks, f"indexing {uuid}", enabled=progress, unit="files")
    ]
    commit_index_build(st, loaded, parts, all_cols, cols)
    return DatasetMetadataResult(uuid, st)
