"""The parent of a commit: the version it builds on.

For an update that is the version its change was planned on; for a create or an overwrite,
the current version. A header written by another program (plateau, kartothek) is adopted:
recorded in the log as an ``external`` entry before the commit's own (see
:mod:`kartoframe.storage.commit`). Also the ``writer`` name every committer records.
"""

from __future__ import annotations

import dataclasses
import functools

from kartoframe.format import header_stamp, log_diff, naming, txlog
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, encode_header
from kartoframe.format.txlog import LogEntry
from kartoframe.storage import log
from kartoframe.storage.log import State
from kartoframe.storage.store import Store

__all__ = [
    "Parent",
    "latest_entry",
    "latest_version",
    "matches_log",
    "parent_of_base",
    "parent_of_state",
    "writer_name",
]


@functools.cache
def writer_name() -> str:
    """The ``writer`` recorded in log entries: ``kartoframe <version>``.

    Looked up once per process: reading the distribution's metadata took about 0.3 ms
    (``timeit``), on every commit before.
    """
    try:
        from importlib.metadata import version

        return f"kartoframe {version('kartoframe')}"
    except Exception:  # pragma: no cover - not installed as a distribution
        return "kartoframe"


@dataclasses.dataclass(slots=True)
class Parent:
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


def _adopt(store: Store, uuid: str, header: DatasetHeader, raw: bytes, *, roll: bool) -> Parent:
    """The parent for a header written by another program (plateau, kartothek).

    If the log already recorded this very header (an ``external`` entry with its digest),
    the parent is that version — or, with ``roll``, the newest version built on it (a
    committer that stopped before writing its header). Otherwise the header becomes a
    new ``external`` entry, created before the commit's own.
    """
    sha = header_stamp.bytes_digest(raw)
    versions, _ = log.list_log(store, uuid)
    for v in reversed(versions[-4:]):
        entry = log.read_entry(store, uuid, v)
        if entry is not None and entry.external and entry.foreign_sha256 == sha:
            at = versions[-1] if roll else v
            state = log.state_at(store, uuid, at)
            return Parent(
                at,
                state.header,
                state.header_bytes,
                state.timestamp or entry.timestamp,
                header_stamp.header_txn(state.header) if state.header else {},
                foreign_sha=sha,
                log_schema=state.schema,
                schema_known=True,
            )
    latest = versions[-1] if versions else -1
    previous = log.state_at(store, uuid, latest) if versions else None
    prev_header = previous.header if previous is not None else None
    txn = header_stamp.header_txn(prev_header) if prev_header is not None else {}
    prev_ts = previous.timestamp if previous is not None and previous.timestamp else 0
    ts = max(txlog.now_ms(), prev_ts + 1)
    stamped = header_stamp.stamp_header(header, latest + 1, ts, txn)
    schema = store.get_or_none(naming.common_metadata_key(header.uuid, header.table_name))
    entry = log_diff.make_entry(
        version=latest + 1,
        timestamp=ts,
        operation="EXTERNAL",
        parameters={"note": "header written by another program, recorded as found"},
        writer=writer_name(),
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
    return Parent(
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


def parent_of_state(store: Store, uuid: str, state: State | None) -> Parent:
    """The parent for a create, an overwrite or a rebase: the version ``state`` describes.

    No state (or a deleted one) gives the newest log version without a header; a header
    written by another program is adopted. If the newest log entry is not a deletion, the
    dataset was created after ``state`` was read (its header may not exist yet): the
    parent is that version, so that no second create can commit on top of it.
    """
    if state is None or state.header is None:
        latest, entry = latest_entry(store, uuid)
        if entry is not None and not entry.deleted:
            fresh = log.current_state(store, uuid)
            if fresh is not None and fresh.header is not None:
                return parent_of_state(store, uuid, fresh)
        return Parent(latest, None, None, entry.timestamp if entry is not None else 0, {})
    if state.version is None:
        assert state.header_bytes is not None
        return _adopt(store, uuid, state.header, state.header_bytes, roll=True)
    stored = not state.entries and state.file_version == state.version
    raw = state.header_bytes
    if (
        stored
        and raw is not None
        and not matches_log(store, uuid, state.version, state.header, raw)
    ):
        return _adopt(store, uuid, state.header, raw, roll=False)
    return Parent(
        state.version,
        state.header,
        state.header_bytes,
        state.timestamp or 0,
        header_stamp.header_txn(state.header),
        log_schema=state.schema,
        schema_known=True,
    )


def latest_entry(store: Store, uuid: str) -> tuple[int, LogEntry | None]:
    """The newest log version (-1 if none) and its entry (None if none)."""
    versions, _ = log.list_log(store, uuid)
    if not versions:
        return -1, None
    return versions[-1], log.read_entry(store, uuid, versions[-1])


def latest_version(store: Store, uuid: str) -> tuple[int, int]:
    """The newest log version (-1 if none) and its timestamp (0 if none)."""
    latest, entry = latest_entry(store, uuid)
    return latest, entry.timestamp if entry is not None else 0


def parent_of_base(store: Store, base: LoadedDataset) -> Parent:
    """The parent for an update: the version ``base`` was loaded at (a foreign one is adopted)."""
    md = base.metadata
    hlog = header_stamp.header_log(md)
    raw = base.header_bytes if base.header_bytes is not None else encode_header(md)
    if hlog is None or not matches_log(store, md.uuid, hlog.version, md, raw):
        return _adopt(store, md.uuid, md, raw, roll=False)
    return Parent(hlog.version, md, base.header_bytes, hlog.timestamp, header_stamp.header_txn(md))


def matches_log(store: Store, uuid: str, version: int, header: DatasetHeader, raw: bytes) -> bool:
    """Whether a header stamped with log ``version`` is that version as the log has it.

    A header edited by hand, or rewritten by another program that kept the
    ``kartoframe`` map, still says ``version`` but holds something else; a commit built
    on it as if it were that version would write an entry that no longer replays (its
    digest fails, and history, vacuum and time travel break). Such a header is adopted
    like a foreign one instead. Otherwise compares the file's bytes with the digest its
    committer recorded (one GET of the entry and one SHA-256 of the bytes); entries of older
    writers without that digest are compared by the header's own digest. A JSON header
    sealed with the digest of its own bytes (:func:`kartoframe.format.header_stamp.seal_header`)
    is checked without any request.
    """
    if header_stamp.sealed_intact(header, raw):
        return True  # the header file is byte for byte as its committer wrote it
    entry = log.read_entry(store, uuid, version)
    if entry is None or entry.deleted:
        return True  # nothing to compare with (the log was vacuumed or removed)
    digest = header_stamp.bytes_digest(raw)
    if entry.external and entry.foreign_sha256 == digest:
        return True
    if entry.header_file_sha256 is not None and entry.header_file_sha256 == digest:
        return True
    return header_stamp.header_digest(header) == entry.header_sha256
