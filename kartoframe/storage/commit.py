"""The commit protocol: the only code that writes a dataset header.

Every change of a dataset (write, update, delete of partitions, metadata, index and
statistics builds, overwrite, delete, cube undo) goes through :func:`commit_transaction`:

1. **base**: the version the change was built on (``kartoframe.log.version`` of its
   header; for a header written by another program, a new log entry records it first);
2. **build**: the caller's builder turns a base into the new header (writing index and
   statistics files under fresh names);
3. **check**: the stored header is re-read; if it moved past the base, go to *rebase*;
4. **publish the version**: log entry ``base + 1`` is created with ``put_if_absent``
   (local disk: ``os.link`` of a finished temp file; S3: ``If-None-Match: *``; GCS/Azure:
   exclusive create). Creating it *is* the commit. If it exists, another writer won:
   *rebase* — load the new current version, check for conflicts (below), rebuild, retry
   (bounded, with jittered backoff);
5. **publish the header**: ``_common_metadata`` if the schema changed, then the Kartothek
   header (atomic put), carrying its version in ``kartoframe.log``. If that fails, a revert
   entry undoes the version (or, if another writer already built on it, it stays);
6. **settle**: if a newer entry exists, a slower writer may have overwritten its header
   with ours; the newest version's header is written again (bounded). Every tenth version
   gets a checkpoint.

Readers never lock: they read the header and check that the next entry does not exist
(two requests), and apply newer entries if the header lags (a committer between steps 4
and 5, or one that crashed there).

Conflicts (``docs/transactions.md``): appends rebase and retry automatically; a commit
that removes partitions conflicts with concurrent removals of the same partitions and with
concurrent additions its ``delete_scope`` covers; concurrent schema changes conflict; a
create conflicts with a concurrent create; overwrites never conflict; metadata updates
merge key by key. A conflict raises :class:`~kartoframe.errors.CommitConflictError`.

The parent a commit builds on (adopting a header written by another program) is found by
:mod:`kartoframe.storage.parents`; the operations built on this protocol (copies, deletes,
undoing a cube write) are in :mod:`kartoframe.storage.lifecycle`. The on-disk format of
the log is :mod:`kartoframe.format.txlog`. The values a caller passes and gets back are in
:mod:`kartoframe.storage.commit_values`, rebasing on a newer version and the conflict rules
in :mod:`kartoframe.storage.rebase`, reverting a version whose header could not be written
in :mod:`kartoframe.storage.revert`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import time

from kartoframe.errors import (
    CommitConflictError,
    InvalidInputError,
    KartoframeError,
    StorageError,
)
from kartoframe.format import header_stamp, log_diff, naming, txlog
from kartoframe.format.commit_args import already_committed
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.format.schema import schema_to_bytes
from kartoframe.format.txlog import LogEntry
from kartoframe.storage import log
from kartoframe.storage.commit_values import (
    Builder,
    Built,
    CommitResult,
    HeaderPublishError,
    Intent,
    mark_committed,
)
from kartoframe.storage.log import State
from kartoframe.storage.parents import Parent, parent_of_base, parent_of_state, writer_name
from kartoframe.storage.rebase import discard_built, loaded_base, rebase
from kartoframe.storage.revert import revert_version
from kartoframe.storage.store import Store

__all__ = [
    "UNSAFE_COMMITS_ENV",
    "HeaderPublishError",
    "check_atomic",
    "commit_transaction",
    "publish_current",
]


_log = logging.getLogger("kartoframe.commit")

#: How often a committer re-publishes the newest header when it finds newer versions.
_SETTLE_ROUNDS = 8
#: Set to ``1`` to commit on a filesystem without an atomic put-if-absent (one writer only).
UNSAFE_COMMITS_ENV = "KARTOFRAME_ALLOW_UNSAFE_COMMITS"


# ------------------------------------------------------------------------------ helpers
def check_atomic(store: Store) -> None:
    """Refuse to commit to a store without an atomic put-if-absent (unless allowed).

    Raises
    ------
    StorageError
        The store cannot create a file only if it is absent.
    """
    if store.supports_conditional_put or os.environ.get(UNSAFE_COMMITS_ENV) == "1":
        return
    raise StorageError(
        f"The store {store.display_url} (protocol {store.protocol!r}) has no atomic "
        "put-if-absent, so concurrent commits could overwrite each other. kartoframe refuses "
        f"to commit to it; if only one process ever writes this store, set {UNSAFE_COMMITS_ENV}=1."
    )


def _schema_key(header: DatasetHeader) -> str:
    return naming.common_metadata_key(header.uuid, header.table_name)


# ------------------------------------------------------------------------------ checks
def _stored_moved(store: Store, uuid: str, parent: Parent) -> tuple[bool, int | None]:
    """Re-read the stored header: (moved past the parent?, its log version).

    A stored header with the very bytes the parent was loaded from is the parent's own
    (when the parent is a version of the log, not an adopted foreign header): nothing
    is decoded then.
    """
    prefer = parent.header.storage_format if parent.header is not None else "json"
    found: tuple[DatasetHeader, bytes] | None = None
    if parent.raw is not None and parent.foreign_sha is None and parent.pending is None:
        stamp = header_stamp.header_log(parent.header) if parent.header is not None else None
        if stamp is not None and stamp.version == parent.version:
            data = store.get_or_none(naming.header_key(uuid, prefer))
            if data == parent.raw:
                return False, parent.version
            if data is not None:
                found = log.decode_stored_header(data, uuid, prefer), data
    if found is None:
        found = log.read_stored_header(store, uuid, prefer)
    if found is None:
        # no header: fine while the parent is a version still in the log (a create
        # between its commit point and its header write); gone means deleted meanwhile
        if parent.header is None:
            return False, None
        return not store.exists(txlog.entry_key(uuid, parent.version)), None
    header, raw = found
    hlog = header_stamp.header_log(header)
    if hlog is None:
        return parent.foreign_sha != header_stamp.bytes_digest(raw), None
    if parent.header is None and parent.pending is None:
        # a header appeared; fine only if its version is an old one (a deleted state)
        return hlog.version > parent.version or parent.version < 0, hlog.version
    return hlog.version > parent.version, hlog.version


# ------------------------------------------------------------------------------ commit
def commit_transaction(
    store: Store,
    dataset_uuid: str,
    build: Builder,
    *,
    base: LoadedDataset | None,
    intent: Intent,
) -> CommitResult:
    """Build and publish the next version of a dataset (see the module docstring).

    Parameters
    ----------
    store
        Where the dataset lives.
    dataset_uuid
        The dataset.
    build
        Turns a base (None for create/overwrite) into the new header. Called again on a
        newer base after losing a race; its errors then become ``CommitConflictError``.
    base
        The version the change was planned on (None for create and overwrite).
    intent
        Mode, removals, application transaction, commit information.

    Returns
    -------
    CommitResult

    Raises
    ------
    CommitConflictError
        A concurrent commit conflicts with this one, or the commit lost the race
        ``intent.max_attempts`` times.
    HeaderPublishError
        The version is committed but its header could not be written (see there).
    StorageError
        The store failed; the dataset is unchanged.
    """
    check_atomic(store)
    naming.validate_uuid(dataset_uuid)
    if intent.mode == "update":
        if base is None:
            raise InvalidInputError("An update commit needs a base version.")
        parent = parent_of_base(store, base)
    else:
        state = log.current_state(store, dataset_uuid)
        parent = parent_of_state(store, dataset_uuid, state)
        if intent.mode == "create" and parent.header is not None:
            raise CommitConflictError(
                f"Dataset {dataset_uuid!r} was created by another writer during this write."
            )
    builder_base = base if intent.mode == "update" else None
    if intent.mode == "create_or_update" and parent.header is not None:
        builder_base = loaded_base(store, parent)
    built: Built | None = None
    changes_schema: bool | None = None
    writer = writer_name()
    attempt = 0
    while True:
        attempt += 1
        if attempt > max(1, intent.max_attempts):
            raise CommitConflictError(
                f"Gave up committing to dataset {dataset_uuid!r} after {intent.max_attempts} "
                "attempts: other writers kept committing first."
            )
        if attempt > 1:
            time.sleep(random.uniform(0, min(0.25, 0.002 * 2**attempt)))
        if intent.app_id is not None and already_committed(
            parent.header, intent.app_id, intent.app_version
        ):
            if built is not None:
                discard_built(store, built)
            _log.info(
                "dataset %r: app transaction %r version %s is already committed; skipped",
                dataset_uuid,
                intent.app_id,
                intent.app_version,
            )
            return CommitResult(parent.header, parent.version, skipped=True, attempts=attempt)
        if built is None:
            try:
                built = build(builder_base)
            except (CommitConflictError, StorageError):
                raise
            except KartoframeError as e:
                if attempt == 1:
                    raise
                raise CommitConflictError(
                    f"Dataset {dataset_uuid!r} changed during this write (now version "
                    f"{parent.version}) and the change cannot be applied to it: {e}"
                ) from e
            if changes_schema is None:
                changes_schema = built.schema_bytes is not None and builder_base is not None
        if parent.pending is not None:
            if not store.put_if_absent(
                txlog.entry_key(dataset_uuid, parent.pending.version),
                txlog.encode_entry(parent.pending),
            ):
                parent, builder_base, built = rebase(
                    store, dataset_uuid, parent, builder_base, built, intent, bool(changes_schema)
                )
                continue
            parent.pending = None
        version = parent.version + 1
        ts = max(txlog.now_ms(), parent.timestamp + 1)
        txn = dict(parent.txn)
        if intent.app_id is not None and intent.app_version is not None:
            txn[intent.app_id] = intent.app_version
        sealed = header_stamp.seal_header(header_stamp.stamp_header(built.header, version, ts, txn))
        header, header_bytes = sealed.header, sealed.data
        schema_bytes = built.schema_bytes
        entry = log_diff.make_entry(
            version=version,
            timestamp=ts,
            operation=(
                intent.update_operation
                if intent.mode == "create_or_update" and builder_base is not None
                else intent.operation
            ),
            parameters=intent.parameters,
            writer=writer,
            commit_info=intent.commit_info,
            app_id=intent.app_id,
            app_version=intent.app_version,
            previous=parent.header,
            header=header,
            schema=schema_bytes,
            changes=intent.changes,
            header_sha256=sealed.sha256,
        )
        if entry.reset and entry.schema is None:
            entry = dataclasses.replace(entry, schema=_state_schema(store, built))
        entry = dataclasses.replace(
            entry, header_file_sha256=header_stamp.bytes_digest(header_bytes)
        )
        data = txlog.encode_entry(entry)
        moved, stored_version = _stored_moved(store, dataset_uuid, parent)
        if moved or not _claim(store, txlog.entry_key(dataset_uuid, version), data, version):
            parent, builder_base, built = rebase(
                store, dataset_uuid, parent, builder_base, built, intent, bool(changes_schema)
            )
            continue
        break
    try:
        _after_claim(
            store,
            dataset_uuid,
            sealed,
            version,
            ts,
            entry,
            parent,
            builder_base,
            built,
            schema_bytes,
            stored_version,
        )
    except BaseException as e:
        if isinstance(e, HeaderPublishError) or not isinstance(e, Exception):
            mark_committed(e, version)
        raise
    return CommitResult(header, version, attempts=attempt)


def _claim(store: Store, key: str, data: bytes, version: int) -> bool:
    """Create log entry ``key``; True if this call created it.

    If the store fails after retries, the entry may still have been created (an answer
    lost on the way back): it is read back; holding our bytes means committed.
    """
    try:
        return store.put_if_absent(key, data)
    except Exception as e:
        try:
            current = store.get_or_none(key)
        except Exception:
            err = HeaderPublishError(
                f"Cannot tell whether version {version} was committed: creating its log entry "
                f"{key!r} failed ({e}) and reading it back failed too. Read the dataset (or "
                "its history) to find out."
            )
            err.version = version
            mark_committed(err, version)
            raise err from None
        if current is None:
            raise
        return current == data


def _after_claim(
    store: Store,
    dataset_uuid: str,
    sealed: header_stamp.SealedHeader,
    version: int,
    ts: int,
    entry: LogEntry,
    parent: Parent,
    builder_base: LoadedDataset | None,
    built: Built,
    schema_bytes: bytes | None,
    stored_version: int | None,
) -> None:
    """Publish the header of a committed version, settle, checkpoint."""
    header, header_bytes = sealed.header, sealed.data
    lag_schema = None
    if schema_bytes is None and parent.header is not None and stored_version != parent.version:
        # the stored header lags: the schema file may lag too (a committer stopped early)
        if parent.schema_known:
            lag_schema = parent.log_schema
        elif stored_version is not None:
            lag_schema = _lag_schema(store, dataset_uuid, stored_version, parent)
        else:  # no header yet (a create stopped before it): the schema file may be missing
            lag_schema = log.state_at(store, dataset_uuid, parent.version).schema
    _publish_or_revert(
        store,
        header,
        header_bytes,
        version,
        entry,
        parent,
        builder_base,
        schema_bytes if schema_bytes is not None else lag_schema,
    )
    _settle(store, dataset_uuid, version)
    if version % txlog.CHECKPOINT_INTERVAL == 0:
        with contextlib.suppress(Exception):
            cp_schema = entry.schema or _state_schema(store, built)
            store.put_if_absent(
                txlog.checkpoint_key(dataset_uuid, version),
                txlog.encode_checkpoint(version, ts, header, cp_schema, canonical=sealed.canonical),
            )


def _state_schema(store: Store, built: Built) -> bytes | None:
    """``_common_metadata`` bytes of the version being committed."""
    if built.schema_bytes is not None:
        return built.schema_bytes
    if built.schema is not None:
        return schema_to_bytes(built.schema)
    return store.get_or_none(_schema_key(built.header))


def _lag_schema(store: Store, uuid: str, stored: int, parent: Parent) -> bytes | None:
    """Newest schema of the entries between the stored header and the parent."""
    schema = None
    for v in range(stored + 1, parent.version + 1):
        entry = log.read_entry(store, uuid, v)
        if entry is not None and entry.schema is not None:
            schema = entry.schema
    return schema


def _publish_or_revert(
    store: Store,
    header: DatasetHeader,
    header_bytes: bytes,
    version: int,
    entry: LogEntry,
    parent: Parent,
    builder_base: LoadedDataset | None,
    schema_bytes: bytes | None,
) -> None:
    """Write ``_common_metadata`` and the header; undo the version if that fails."""
    uuid = header.uuid
    schema_key = _schema_key(header)
    old_schema: bytes | None = None
    schema_written = False
    try:
        if schema_bytes is not None:
            old_schema = store.get_or_none(schema_key)
            if old_schema != schema_bytes:
                store.put(schema_key, schema_bytes)
                schema_written = True
        store.put(naming.header_key(uuid, header.storage_format), header_bytes)
    except Exception as failure:
        if not isinstance(failure, OSError | KartoframeError):
            raise
        revert_version(
            store, header, version, entry, parent, builder_base, old_schema, schema_written
        )
        raise
    previous_format = parent.header.storage_format if parent.header is not None else None
    if previous_format != header.storage_format:
        other: naming.MetadataFormat = "msgpack" if header.storage_format == "json" else "json"
        with contextlib.suppress(Exception):
            store.delete(naming.header_key(uuid, other))


def _settle(store: Store, uuid: str, version: int) -> None:
    """Make sure the stored header is not older than the newest version (best effort).

    A committer whose header write was slow may overwrite a newer header; whoever sees a
    newer entry after publishing writes the newest header again.
    """
    try:
        for _ in range(_SETTLE_ROUNDS):
            if log.read_entry(store, uuid, version + 1) is None:
                return
            state = log.current_state(store, uuid)
            if state is None or state.version is None or state.header is None:
                return
            if state.file_version is not None and state.file_version >= state.version:
                return
            if state.schema is not None:
                store.put(_schema_key(state.header), state.schema)
            assert state.header_bytes is not None
            store.put(naming.header_key(uuid, state.header.storage_format), state.header_bytes)
            version = state.version
    except Exception as e:  # the commit itself is done; a later one settles the header
        _log.warning("dataset %r: could not settle the header: %s", uuid, e)


def publish_current(store: Store, uuid: str) -> State | None:
    """Write the header of the current version if the stored one lags (repair)."""
    state = log.current_state(store, uuid)
    if state is None or state.version is None or state.header is None:
        return state
    if state.file_version is None or state.file_version < state.version:
        if state.schema is not None:
            store.put(_schema_key(state.header), state.schema)
        assert state.header_bytes is not None
        store.put(naming.header_key(uuid, state.header.storage_format), state.header_bytes)
    return state
