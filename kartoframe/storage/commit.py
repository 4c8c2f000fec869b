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
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import orjson
import pyarrow as pa

from kartoframe.errors import (
    CommitConflictError,
    InvalidInputError,
    InvalidTypeError,
    KartoframeError,
    StorageError,
)
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, decode_header, encode_header
from kartoframe.format.schema import schema_to_bytes
from kartoframe.storage import log
from kartoframe.storage.log import LogEntry, State
from kartoframe.storage.resolve import loaded_from_state
from kartoframe.storage.store import Store

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "UNSAFE_COMMITS_ENV",
    "Built",
    "CommitResult",
    "HeaderPublishError",
    "Intent",
    "already_committed",
    "check_app_transaction",
    "commit",
    "committed_version",
    "commit_transaction",
    "delete_headers",
    "mark_deleted",
    "restore",
]

_log = logging.getLogger("kartoframe.commit")

Mode = Literal["create", "overwrite", "update"]
#: How many times a commit is rebuilt on a newer version before giving up.
DEFAULT_MAX_ATTEMPTS = 64
#: How often a committer re-publishes the newest header when it finds newer versions.
_SETTLE_ROUNDS = 8
#: Set to ``1`` to commit on a filesystem without an atomic put-if-absent (one writer only).
UNSAFE_COMMITS_ENV = "KARTOFRAME_ALLOW_UNSAFE_COMMITS"


_COMMITTED_ATTR = "_kartoframe_committed_version"


def committed_version(exc: BaseException | None) -> int | None:
    """The version an exception was raised *after* committing (None: nothing committed).

    Cleanup code must not delete the files of a write whose version is committed: the
    exception then came after the commit point (a header that could not be written, an
    interrupt), and the files are referenced.
    """
    if exc is None:
        return None
    value = getattr(exc, _COMMITTED_ATTR, None)
    return value if isinstance(value, int) else None


def _mark_committed(exc: BaseException, version: int) -> None:
    with contextlib.suppress(Exception):
        setattr(exc, _COMMITTED_ATTR, version)


class HeaderPublishError(StorageError):
    """The version is committed in the log, but its header could not be written.

    kartoframe readers already see the version (they apply the log); plateau sees it
    once a later commit (or :func:`kartoframe.vacuum_dataset`) writes the header.
    ``version`` is the committed version. The data files stay: they are referenced.
    """

    version: int


@dataclasses.dataclass(frozen=True, slots=True)
class Built:
    """What a builder made of a base version.

    Attributes
    ----------
    header
        The new header (without ``kartoframe.log``; the commit stamps it).
    schema
        The dataset schema of the new version.
    schema_bytes
        New ``_common_metadata`` content if the schema changed (None: unchanged).
    written
        Side files (index, statistics) the build wrote; deleted if the attempt is
        abandoned.
    """

    header: DatasetHeader
    schema: pa.Schema | None = None
    schema_bytes: bytes | None = None
    written: tuple[str, ...] = ()


Builder = Callable[[LoadedDataset | None], Built]


@dataclasses.dataclass(frozen=True, slots=True)
class Intent:
    """What a commit means, for conflict detection, idempotency and history.

    Attributes
    ----------
    mode
        ``"create"`` (the dataset must not exist), ``"overwrite"`` (replace whatever is
        there, blindly) or ``"update"`` (a change of the base version).
    operation, parameters
        Recorded in the log (``dataset_history``).
    removes
        Labels of the base this commit removes (``delete_scope``, replacements).
    scope
        Re-evaluates the removal on a newer version (serialisable deletes: data added
        concurrently inside the scope is a conflict). None: any concurrent change in the
        same partition directories is a conflict.
    app_id, app_version
        Application transaction id: the commit is skipped if the dataset already records
        ``app_version`` or a higher one for ``app_id``.
    commit_info
        The user's JSON-serialisable dict, recorded in the log.
    max_attempts
        Rebuilds on newer versions before giving up with ``CommitConflictError``.
    """

    mode: Mode
    operation: str
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    removes: frozenset[str] = frozenset()
    scope: Callable[[LoadedDataset], set[str]] | None = None
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS


@dataclasses.dataclass(frozen=True, slots=True)
class CommitResult:
    """The outcome of :func:`commit_transaction`.

    ``skipped``: the application transaction was already committed; nothing changed and
    ``header``/``version`` describe the current version.
    """

    header: DatasetHeader | None
    version: int
    skipped: bool = False
    attempts: int = 1


# ------------------------------------------------------------------------------ helpers
def _writer() -> str:
    try:
        from importlib.metadata import version

        return f"kartoframe {version('kartoframe')}"
    except Exception:  # pragma: no cover - not installed as a distribution
        return "kartoframe"


def check_app_transaction(app_id: object, app_version: object) -> tuple[str | None, int | None]:
    """Validate ``app_id`` / ``app_version`` (both or neither).

    Raises
    ------
    InvalidInputError, InvalidTypeError
    """
    if app_id is None and app_version is None:
        return None, None
    if app_id is None or app_version is None:
        raise InvalidInputError("app_id and app_version must be given together.")
    if not isinstance(app_id, str) or not app_id or len(app_id) > 1000:
        raise InvalidTypeError("app_id must be a non-empty string (at most 1000 characters).")
    if not isinstance(app_version, int) or isinstance(app_version, bool) or app_version < 0:
        raise InvalidTypeError("app_version must be a non-negative integer.")
    return app_id, app_version


def check_commit_info(commit_info: object) -> dict[str, Any] | None:
    """Validate a user ``commit_info`` (a JSON-serialisable dict with string keys)."""
    if commit_info is None:
        return None
    if not isinstance(commit_info, Mapping) or not all(isinstance(k, str) for k in commit_info):
        raise InvalidTypeError("commit_info must be a dict with string keys.")
    try:
        orjson.dumps(dict(commit_info))
    except TypeError as e:
        raise InvalidTypeError(f"commit_info must be JSON-serialisable: {e}") from e
    return dict(commit_info)


def already_committed(
    header: DatasetHeader | None, app_id: str | None, version: int | None
) -> bool:
    """Whether ``header`` records ``app_id`` at ``version`` or later."""
    if header is None or app_id is None or version is None:
        return False
    recorded = log.header_txn(header).get(app_id)
    return recorded is not None and recorded >= version


def _check_atomic(store: Store) -> None:
    if store.supports_conditional_put or os.environ.get(UNSAFE_COMMITS_ENV) == "1":
        return
    raise StorageError(
        f"The store {store.display_url} (protocol {store.protocol!r}) has no atomic "
        "put-if-absent, so concurrent commits could overwrite each other. kartoframe refuses "
        f"to commit to it; if only one process ever writes this store, set {UNSAFE_COMMITS_ENV}=1."
    )


def _dirs(labels: Iterable[str]) -> set[str]:
    return {lb.rsplit("/", 1)[0] if "/" in lb else "" for lb in labels}


def _schema_key(header: DatasetHeader) -> str:
    return naming.common_metadata_key(header.uuid, header.table_name)


# ------------------------------------------------------------------------------ parents
@dataclasses.dataclass(slots=True)
class _Parent:
    """The version a commit builds on."""

    version: int  # -1: nothing yet
    header: DatasetHeader | None
    raw: bytes | None  # stored bytes of that version's header (or its encoding)
    timestamp: int
    txn: dict[str, int]
    foreign_sha: str | None = None  # the stored header is this foreign header
    pending: LogEntry | None = None  # external entry to create first
    log_schema: bytes | None = None  # schema bytes of this version from the log
    schema_known: bool = False  # log_schema is authoritative (None: the stored file is)


def _adopt(store: Store, uuid: str, header: DatasetHeader, raw: bytes, *, roll: bool) -> _Parent:
    """The parent for a header written by another program (plateau, kartothek).

    If the log already recorded this very header (an ``external`` entry with its digest),
    the parent is that version — or, with ``roll``, the newest version built on it (a
    committer that stopped before writing its header). Otherwise the header becomes a
    new ``external`` entry, created before the commit's own.
    """
    sha = log.bytes_digest(raw)
    versions, _ = log.list_log(store, uuid)
    for v in reversed(versions[-4:]):
        entry = log.read_entry(store, uuid, v)
        if entry is not None and entry.external and entry.foreign_sha256 == sha:
            at = versions[-1] if roll else v
            state = log.state_at(store, uuid, at)
            return _Parent(
                at,
                state.header,
                state.header_bytes,
                state.timestamp or entry.timestamp,
                log.header_txn(state.header) if state.header else {},
                foreign_sha=sha,
                log_schema=state.schema,
                schema_known=True,
            )
    latest = versions[-1] if versions else -1
    previous = log.state_at(store, uuid, latest) if versions else None
    prev_header = previous.header if previous is not None else None
    txn = log.header_txn(prev_header) if prev_header is not None else {}
    prev_ts = previous.timestamp if previous is not None and previous.timestamp else 0
    ts = max(log.now_ms(), prev_ts + 1)
    stamped = log.stamp_header(header, latest + 1, ts, txn)
    schema = store.get_or_none(_schema_key(header))
    entry = log.make_entry(
        version=latest + 1,
        timestamp=ts,
        operation="EXTERNAL",
        parameters={"note": "header written by another program, recorded as found"},
        writer=_writer(),
        commit_info=None,
        app_id=None,
        app_version=None,
        previous=prev_header,
        header=stamped,
        schema=schema,
        force_reset=True,
        external=True,
        foreign_sha256=sha,
    )
    return _Parent(
        latest + 1,
        stamped,
        raw,
        ts,
        txn,
        foreign_sha=sha,
        pending=entry,
        log_schema=schema,
        schema_known=True,
    )


def _parent_of_state(store: Store, uuid: str, state: State | None) -> _Parent:
    if state is None or state.header is None:
        latest, ts = _latest_version(store, uuid)
        return _Parent(latest, None, None, ts, {})
    if state.version is None:
        assert state.header_bytes is not None
        return _adopt(store, uuid, state.header, state.header_bytes, roll=True)
    return _Parent(
        state.version,
        state.header,
        state.header_bytes,
        state.timestamp or 0,
        log.header_txn(state.header),
        log_schema=state.schema,
        schema_known=True,
    )


def _latest_version(store: Store, uuid: str) -> tuple[int, int]:
    """The newest log version (-1 if none) and its timestamp (0 if none)."""
    versions, _ = log.list_log(store, uuid)
    if not versions:
        return -1, 0
    entry = log.read_entry(store, uuid, versions[-1])
    return versions[-1], entry.timestamp if entry is not None else 0


def _parent_of_base(store: Store, base: LoadedDataset) -> _Parent:
    md = base.metadata
    hlog = log.header_log(md)
    if hlog is None:
        raw = base.header_bytes if base.header_bytes is not None else encode_header(md)
        return _adopt(store, md.uuid, md, raw, roll=False)
    return _Parent(hlog.version, md, base.header_bytes, hlog.timestamp, log.header_txn(md))


# ------------------------------------------------------------------------------ checks
def _stored_moved(store: Store, uuid: str, parent: _Parent) -> tuple[bool, int | None]:
    """Re-read the stored header: (moved past the parent?, its log version)."""
    prefer = parent.header.storage_format if parent.header is not None else "json"
    found = log.read_stored_header(store, uuid, prefer)
    if found is None:
        return parent.header is not None, None
    header, raw = found
    hlog = log.header_log(header)
    if hlog is None:
        return parent.foreign_sha != log.bytes_digest(raw), None
    if parent.header is None and parent.pending is None:
        # a header appeared; fine only if its version is an old one (a deleted state)
        return hlog.version > parent.version or parent.version < 0, hlog.version
    return hlog.version > parent.version, hlog.version


def _conflict(
    intent: Intent,
    base: LoadedDataset | None,
    new: LoadedDataset | None,
    changes_schema: bool,
    version: int,
) -> str | None:
    """Why this commit cannot be rebased from ``base`` onto ``new`` (None: it can)."""
    if intent.mode == "overwrite":
        return None
    if intent.mode == "create":
        return "it was created by another writer during this write" if new is not None else None
    if new is None:
        return "it was deleted by another writer during this write"
    assert base is not None
    old_parts, new_parts = base.metadata.partitions, new.metadata.partitions
    added = {lb for lb, k in new_parts.items() if old_parts.get(lb) != k}
    removed = {lb for lb, k in old_parts.items() if new_parts.get(lb) != k}
    hit = sorted(intent.removes & removed)
    if hit:
        return (
            f"partitions this commit removes were removed or replaced by version {version} "
            f"(e.g. {hit[0]!r})"
        )
    if intent.scope is not None:
        try:
            extra = sorted((intent.scope(new) - intent.removes) & added)
        except KartoframeError as e:
            return f"its delete scope cannot be evaluated on version {version}: {e}"
        if extra:
            return (
                f"version {version} added data inside this commit's delete scope (e.g. "
                f"{extra[0]!r})"
            )
    elif intent.removes:
        touched = sorted(_dirs(intent.removes) & _dirs(added | removed))
        if touched:
            where = touched[0] or "the dataset"
            return f"version {version} changed partition {where!r}, which this commit replaces"
    if changes_schema and not base.schema.equals(new.schema):
        return f"version {version} changed the schema concurrently"
    return None


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
    _check_atomic(store)
    naming.validate_uuid(dataset_uuid)
    if intent.mode == "update":
        if base is None:
            raise InvalidInputError("An update commit needs a base version.")
        parent = _parent_of_base(store, base)
    else:
        parent = _parent_of_state(store, dataset_uuid, log.current_state(store, dataset_uuid))
        if intent.mode == "create" and parent.header is not None:
            raise CommitConflictError(
                f"Dataset {dataset_uuid!r} was created by another writer during this write."
            )
    builder_base = base if intent.mode == "update" else None
    built: Built | None = None
    changes_schema: bool | None = None
    writer = _writer()
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
                _discard(store, built)
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
                changes_schema = built.schema_bytes is not None and intent.mode == "update"
        if parent.pending is not None:
            if not store.put_if_absent(
                log.entry_key(dataset_uuid, parent.pending.version),
                log.encode_entry(parent.pending),
            ):
                parent, builder_base, built = _rebase(
                    store, dataset_uuid, parent, builder_base, built, intent, bool(changes_schema)
                )
                continue
            parent.pending = None
        version = parent.version + 1
        ts = max(log.now_ms(), parent.timestamp + 1)
        txn = dict(parent.txn)
        if intent.app_id is not None and intent.app_version is not None:
            txn[intent.app_id] = intent.app_version
        header = log.stamp_header(built.header, version, ts, txn)
        schema_bytes = built.schema_bytes
        entry = log.make_entry(
            version=version,
            timestamp=ts,
            operation=intent.operation,
            parameters=intent.parameters,
            writer=writer,
            commit_info=intent.commit_info,
            app_id=intent.app_id,
            app_version=intent.app_version,
            previous=parent.header,
            header=header,
            schema=schema_bytes,
        )
        if entry.reset and entry.schema is None:
            entry = dataclasses.replace(entry, schema=_state_schema(store, built))
        data = log.encode_entry(entry)
        moved, stored_version = _stored_moved(store, dataset_uuid, parent)
        if moved or not _claim(store, log.entry_key(dataset_uuid, version), data, version):
            parent, builder_base, built = _rebase(
                store, dataset_uuid, parent, builder_base, built, intent, bool(changes_schema)
            )
            continue
        break
    try:
        _after_claim(
            store,
            dataset_uuid,
            header,
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
            _mark_committed(e, version)
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
            _mark_committed(err, version)
            raise err from None
        if current is None:
            raise
        return current == data


def _after_claim(
    store: Store,
    dataset_uuid: str,
    header: DatasetHeader,
    version: int,
    ts: int,
    entry: LogEntry,
    parent: _Parent,
    builder_base: LoadedDataset | None,
    built: Built,
    schema_bytes: bytes | None,
    stored_version: int | None,
) -> None:
    """Publish the header of a committed version, settle, checkpoint."""
    lag_schema = None
    if schema_bytes is None and parent.header is not None and stored_version != parent.version:
        # the stored header lags: the schema file may lag too (a committer stopped early)
        if parent.schema_known:
            lag_schema = parent.log_schema
        elif stored_version is not None:
            lag_schema = _lag_schema(store, dataset_uuid, stored_version, parent)
    _publish_or_revert(
        store,
        header,
        version,
        entry,
        parent,
        builder_base,
        schema_bytes if schema_bytes is not None else lag_schema,
    )
    _settle(store, dataset_uuid, version)
    if version % log.CHECKPOINT_INTERVAL == 0:
        with contextlib.suppress(Exception):
            cp_schema = entry.schema or _state_schema(store, built)
            store.put_if_absent(
                log.checkpoint_key(dataset_uuid, version),
                log.encode_checkpoint(version, ts, header, cp_schema),
            )


def _state_schema(store: Store, built: Built) -> bytes | None:
    """``_common_metadata`` bytes of the version being committed."""
    if built.schema_bytes is not None:
        return built.schema_bytes
    if built.schema is not None:
        return schema_to_bytes(built.schema)
    return store.get_or_none(_schema_key(built.header))


def _lag_schema(store: Store, uuid: str, stored: int, parent: _Parent) -> bytes | None:
    """Newest schema of the entries between the stored header and the parent."""
    schema = None
    for v in range(stored + 1, parent.version + 1):
        entry = log.read_entry(store, uuid, v)
        if entry is not None and entry.schema is not None:
            schema = entry.schema
    return schema


def _discard(store: Store, built: Built) -> None:
    if built.written:
        with contextlib.suppress(Exception):
            store.delete_many(list(built.written))


def _rebase(
    store: Store,
    uuid: str,
    parent: _Parent,
    builder_base: LoadedDataset | None,
    built: Built,
    intent: Intent,
    changes_schema: bool,
) -> tuple[_Parent, LoadedDataset | None, Built | None]:
    """Load the newest version, check for conflicts, prepare the next attempt."""
    new_parent = _parent_of_state(store, uuid, log.current_state(store, uuid))
    new_loaded = None
    if new_parent.header is not None:
        shown = State(
            new_parent.version,
            new_parent.header,
            new_parent.raw,
            new_parent.log_schema,
            new_parent.timestamp,
            None,
        )
        new_loaded = loaded_from_state(store, shown)
    reason = _conflict(intent, builder_base, new_loaded, changes_schema, new_parent.version)
    if reason is not None:
        _discard(store, built)
        raise CommitConflictError(f"Cannot commit to dataset {uuid!r}: {reason}.")
    if intent.mode != "update":
        return new_parent, None, built
    _discard(store, built)
    return new_parent, new_loaded, None


def _publish_or_revert(
    store: Store,
    header: DatasetHeader,
    version: int,
    entry: LogEntry,
    parent: _Parent,
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
        store.put(naming.header_key(uuid, header.storage_format), encode_header(header))
    except Exception as failure:
        if not isinstance(failure, OSError | KartoframeError):
            raise
        _undo(store, header, version, entry, parent, builder_base, old_schema, schema_written)
        raise
    previous_format = parent.header.storage_format if parent.header is not None else None
    if previous_format != header.storage_format:
        other: naming.MetadataFormat = "msgpack" if header.storage_format == "json" else "json"
        with contextlib.suppress(Exception):
            store.delete(naming.header_key(uuid, other))


def _undo(
    store: Store,
    header: DatasetHeader,
    version: int,
    entry: LogEntry,
    parent: _Parent,
    builder_base: LoadedDataset | None,
    old_schema: bytes | None,
    schema_written: bool,
) -> None:
    """The header of a committed version could not be written: revert the version.

    Returns normally if the version was reverted (the caller re-raises the failure and
    removes its files) or if another writer already built on it (then it stands and the
    caller's failure is re-raised too, but the files are referenced: see
    :class:`HeaderPublishError`).
    """
    uuid = header.uuid
    schema_key = _schema_key(header)

    def _restore_schema() -> None:
        if schema_written:
            with contextlib.suppress(Exception):
                if old_schema is None:
                    store.delete(schema_key)
                else:
                    store.put(schema_key, old_schema)

    if parent.header is None:
        # a create: no reader or writer builds on a version without a header
        with contextlib.suppress(Exception):
            store.delete(log.entry_key(uuid, version))
        _restore_schema()
        return
    try:
        if schema_written or old_schema is not None:
            previous_schema = old_schema
        elif builder_base is not None:
            previous_schema = schema_to_bytes(builder_base.schema)
        else:
            previous_schema = parent.log_schema or store.get_or_none(schema_key)
        revert = log.make_entry(
            version=version + 1,
            timestamp=entry.timestamp + 1,
            operation="REVERT",
            parameters={"reverts": version, "reason": "the header could not be written"},
            writer=entry.writer,
            commit_info=None,
            app_id=None,
            app_version=None,
            previous=header,
            header=log.stamp_header(parent.header, version + 1, entry.timestamp + 1, parent.txn),
            schema=previous_schema,
            force_reset=True,
            reverts=version,
        )
        won = store.put_if_absent(log.entry_key(uuid, version + 1), log.encode_entry(revert))
    except Exception as e:
        err = HeaderPublishError(
            f"Version {version} of dataset {uuid!r} is committed in the transaction log, but "
            f"its header could not be written and the version could not be reverted ({e}). "
            "kartoframe readers see the new version; plateau sees it after the next commit."
        )
        err.version = version
        raise err from None
    if not won:
        err = HeaderPublishError(
            f"Version {version} of dataset {uuid!r} is committed, but its header could not be "
            "written; a later commit already builds on it and will publish it."
        )
        err.version = version
        raise err from None
    _restore_schema()
    with contextlib.suppress(Exception):
        current = store.get_or_none(naming.header_key(uuid, parent.header.storage_format))
        if current is not None and current != parent.raw and parent.raw is not None:
            store.put(naming.header_key(uuid, parent.header.storage_format), parent.raw)


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


# ------------------------------------------------------------------------------ wrappers
def commit(
    store: Store,
    new: DatasetHeader,
    *,
    base_header: bytes | None,
    expect_absent: bool,
    schema_bytes: bytes | None = None,
    operation: str = "COPY",
) -> bytes:
    """Publish a complete header built without a base (a copy): create or overwrite.

    Returns the bytes of the published header.
    """
    del base_header  # kept for callers; a header without a base is an overwrite
    result = commit_transaction(
        store,
        new.uuid,
        lambda _: Built(new, None, schema_bytes),
        base=None,
        intent=Intent("create" if expect_absent else "overwrite", operation),
    )
    assert result.header is not None
    return encode_header(result.header)


def delete_headers(store: Store, dataset_uuid: str) -> None:
    """Delete the header in whichever format(s) it exists."""
    for fmt in ("json", "msgpack"):
        store.delete(naming.header_key(dataset_uuid, fmt))  # type: ignore[arg-type]


def mark_deleted(store: Store, dataset_uuid: str, *, operation: str = "DELETE") -> int | None:
    """Commit "the dataset is deleted" and remove its header; return that version.

    Writers that started before the deletion lose the race for the next version and see
    the dataset gone. The caller removes the files, then :func:`delete_log`.
    """
    _check_atomic(store)
    for attempt in range(DEFAULT_MAX_ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0, 0.01 * attempt))
        state = log.current_state(store, dataset_uuid)
        if state is None or state.header is None:
            delete_headers(store, dataset_uuid)
            return None
        if state.version is None:
            latest, prev_ts = _latest_version(store, dataset_uuid)
        else:
            latest, prev_ts = state.version, state.timestamp or 0
        ts = max(log.now_ms(), prev_ts + 1)
        entry = log.make_entry(
            version=latest + 1,
            timestamp=ts,
            operation=operation,
            parameters={},
            writer=_writer(),
            commit_info=None,
            app_id=None,
            app_version=None,
            previous=state.header,
            header=None,
            schema=None,
        )
        if store.put_if_absent(log.entry_key(dataset_uuid, latest + 1), log.encode_entry(entry)):
            delete_headers(store, dataset_uuid)
            return latest + 1
    raise CommitConflictError(f"Could not delete dataset {dataset_uuid!r}: too many writers.")


def delete_log(store: Store, dataset_uuid: str) -> list[str]:
    """Delete every log file of a dataset, oldest first (the newest entry last)."""
    entries, checkpoints = log.list_log(store, dataset_uuid)
    keys = [log.checkpoint_key(dataset_uuid, v) for v in checkpoints]
    keys += [log.entry_key(dataset_uuid, v) for v in entries]
    for key in keys:
        store.delete(key)
    return keys


def restore(
    store: Store,
    dataset_uuid: str,
    *,
    written: bytes,
    written_format: naming.MetadataFormat,
    previous: bytes | None,
    previous_format: naming.MetadataFormat | None,
    table: str,
    previous_schema: bytes | None,
) -> None:
    """Undo a commit: a revert entry, then the previous header and schema are put back.

    Used by multi-dataset writes (cubes) to compensate commits of datasets written before
    a later one failed. For a dataset that did not exist before, the dataset is deleted
    again (header, schema and its log).

    Raises
    ------
    CommitConflictError
        Another writer committed after the commit to undo; nothing is changed then.
    """
    done = decode_header(written, dataset_uuid, written_format)
    hlog = log.header_log(done)
    if hlog is None:
        raise CommitConflictError(f"Cannot undo a commit of {dataset_uuid!r}: no log version.")
    state = log.current_state(store, dataset_uuid)
    if state is None or state.version != hlog.version:
        raise CommitConflictError(
            f"Cannot undo the commit of dataset {dataset_uuid!r}: it was changed by another "
            "commit meanwhile."
        )
    version = hlog.version
    target = (
        decode_header(previous, dataset_uuid, previous_format or written_format)
        if previous is not None
        else None
    )
    ts = max(log.now_ms(), hlog.timestamp + 1)
    txn = log.header_txn(target) if target is not None else {}
    schema_key = naming.common_metadata_key(dataset_uuid, table)
    if target is not None and previous_schema is None:
        previous_schema = store.get_or_none(schema_key)
    entry = log.make_entry(
        version=version + 1,
        timestamp=ts,
        operation="REVERT",
        parameters={"reverts": version, "reason": "a later commit of the same write failed"},
        writer=_writer(),
        commit_info=None,
        app_id=None,
        app_version=None,
        previous=done,
        header=log.stamp_header(target, version + 1, ts, txn) if target is not None else None,
        schema=previous_schema if target is not None else None,
        force_reset=True,
        reverts=version,
    )
    if not store.put_if_absent(log.entry_key(dataset_uuid, version + 1), log.encode_entry(entry)):
        raise CommitConflictError(
            f"Cannot undo the commit of dataset {dataset_uuid!r}: another writer committed "
            "meanwhile."
        )
    if previous is None:
        delete_headers(store, dataset_uuid)
        store.delete(schema_key)
        delete_log(store, dataset_uuid)
        return
    if previous_schema is not None:
        store.put(schema_key, previous_schema)
    fmt = previous_format or written_format
    store.put(naming.header_key(dataset_uuid, fmt), previous)
    if fmt != written_format:
        store.delete(naming.header_key(dataset_uuid, written_format))
