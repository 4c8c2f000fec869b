"""Deleting what maintenance deletes: garbage collection, vacuum, dataset and cube deletion.

The public fronts (``kf.garbage_collect_dataset``, ``kf.vacuum_dataset``,
``kf.delete_dataset``, ``kf.cleanup_cube``, ``kf.delete_cube``) validate their arguments and
call these functions; which files are garbage is decided by
:mod:`kartoframe.storage.retention`, which names a write generates by
:mod:`kartoframe.format.generated`.
"""

from __future__ import annotations

from kartoframe.errors import (
    CommitConflictError,
    DatasetNotFoundError,
    FormatError,
    InvalidUUIDError,
    KartoframeError,
    StorageError,
)
from kartoframe.format import generated, naming, txlog
from kartoframe.format.cube import SEPARATOR
from kartoframe.format.dataset import LoadedDataset
from kartoframe.storage.commit import publish_current
from kartoframe.storage.lifecycle import delete_headers, delete_log, mark_deleted
from kartoframe.storage.log import State, current_state
from kartoframe.storage.resolve import load_dataset, read_header, statistics_ref
from kartoframe.storage.retention import collect_garbage, dataset_keys
from kartoframe.storage.store import Store

__all__ = [
    "collect_dataset_garbage",
    "delete_dataset_files",
    "delete_loaded",
    "leftover_keys",
    "prefix_garbage",
    "prefix_uuids",
    "referenced_keys",
    "vacuum",
]


def collect_dataset_garbage(
    store: Store, dataset_uuid: str, retention_hours: float, grace_hours: float, *, dry_run: bool
) -> list[str] | None:
    """The work of ``kf.garbage_collect_dataset`` (and, per dataset, of ``kf.cleanup_cube``)
    on validated arguments: delete (``dry_run``: only list) what it deletes, sorted. None if
    there is neither a dataset nor a file a write of it left.
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


def delete_dataset_files(store: Store, uuid: str) -> None:
    """``kf.delete_dataset`` of an existing dataset: record the deletion, then delete."""
    keys: set[str] = set()
    try:
        loaded = load_dataset(store, uuid)
        keys = txlog.referenced_keys(loaded.metadata)
        # the log records the deletion first: writers that started before lose their commit
        mark_deleted(store, uuid)
    except (DatasetNotFoundError, StorageError, CommitConflictError):
        raise
    except KartoframeError:  # corrupt header or log: nothing to record, remove it all
        delete_headers(store, uuid)
    keys |= set(dataset_keys(store, uuid))
    log = {k for k in keys if generated.is_log_file(k, uuid)}
    store.delete_many(sorted(keys - log))
    delete_log(store, uuid)


def referenced_keys(loaded: LoadedDataset) -> set[str]:
    """Every key a dataset's header references: header, schema, indices, data files."""
    md = loaded.metadata
    keys = {naming.header_key(md.uuid, md.storage_format)}
    keys.add(naming.common_metadata_key(md.uuid, md.table_name))
    keys |= set(md.indices.values())
    keys |= set(md.partitions.values())
    stats = statistics_ref(md)
    if stats is not None:
        keys.update(stats.keys)
    return keys


def delete_loaded(store: Store, loaded: LoadedDataset) -> None:
    """Delete a cube dataset: the deletion is committed first, then what its header names."""
    keys = referenced_keys(loaded)
    mark_deleted(store, loaded.uuid)
    delete_headers(store, loaded.uuid)
    store.delete_many(sorted(keys))
    delete_log(store, loaded.uuid)


def prefix_uuids(store: Store, uuid_prefix: str) -> list[str]:
    """Every dataset uuid that owns a key under ``<uuid_prefix>++`` (sorted).

    A key ``<uuid>/...`` or a header ``<uuid>.by-dataset-metadata.*`` names its dataset;
    names that are no valid uuid (foreign folders) are skipped.
    """
    found: set[str] = set()
    for key in store.iter_keys(uuid_prefix + SEPARATOR):
        head, sep, _ = key.partition("/")
        if not sep:
            suffix = next((x for x in naming.HEADER_SUFFIXES.values() if head.endswith(x)), None)
            if suffix is None:
                continue
            head = head[: -len(suffix)]
        if len(head) > len(uuid_prefix + SEPARATOR):
            try:
                found.add(naming.validate_uuid(head))
            except InvalidUUIDError:  # not a dataset's name
                continue
    return sorted(found)


def prefix_garbage(
    store: Store, uuid_prefix: str, grace_hours: float, *, dry_run: bool
) -> list[str]:
    """``kf.cleanup_cube`` on validated arguments: the dataset garbage collection
    (:func:`collect_dataset_garbage`, ``retention_hours=0``) of every uuid under the
    prefix; the deleted (``dry_run``: deletable) keys, sorted.
    """
    deleted: list[str] = []
    for uuid in prefix_uuids(store, uuid_prefix):
        try:
            keys = collect_dataset_garbage(store, uuid, 0.0, grace_hours, dry_run=dry_run)
        except DatasetNotFoundError:  # deleted while the cleanup ran: nothing to do
            continue
        deleted.extend(keys or ())
    return sorted(deleted)


def vacuum(store: Store, uuid: str, hours: float, *, dry_run: bool) -> list[str]:
    """``kf.vacuum_dataset`` on validated arguments; the deleted (deletable) keys, sorted.

    A header that lags the log is published first; log entries older than the oldest
    retained version go after a checkpoint of that version is written.
    """
    if not dry_run:
        publish_current(store, uuid)
    # the retention window is also the grace window: only files older than it go
    collected = collect_garbage(store, uuid, hours, hours)
    kept = collected.retained
    garbage, temps = list(collected.garbage), list(collected.temps)
    expired = list(kept.expired_log)
    if dry_run:
        return sorted([*garbage, *temps, *expired])
    store.delete_many(garbage + temps)
    if expired:
        if not kept.has_checkpoint and kept.oldest is not None and kept.oldest_state is not None:
            state = kept.oldest_state
            store.put_if_absent(
                txlog.checkpoint_key(uuid, kept.oldest),
                txlog.encode_checkpoint(
                    kept.oldest,
                    state.timestamp or 0,
                    state.header,
                    state.schema or _schema_bytes(store, state),
                ),
            )
        for key in expired:  # oldest first: the log stays readable from any point
            store.delete(key)
    return sorted([*garbage, *temps, *expired])


def _schema_bytes(store: Store, state: State) -> bytes | None:
    if state.header is None:
        return None
    return store.get_or_none(naming.common_metadata_key(state.header.uuid, state.header.table_name))
