"""A dataset's history as the public API returns it: one :class:`CommitRecord` per version."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from kartoframe.format import txlog

__all__ = ["CommitRecord", "commit_record"]


@dataclasses.dataclass(frozen=True, slots=True)
class CommitRecord:
    """One version of a dataset, as its transaction log records it.

    Attributes
    ----------
    version
        The version number (0, 1, 2, ...).
    timestamp
        When it was committed (UTC).
    operation
        ``CREATE``, ``OVERWRITE``, ``APPEND``, ``UPDATE``, ``DELETE_PARTITIONS``,
        ``SET_METADATA``, ``BUILD_INDEX``, ``BUILD_STATISTICS``, ``REVERT``, ``EXTERNAL``
        (a header written by another program, recorded when kartoframe next committed),
        ``DELETE``, ...
    parameters
        Operation parameters (partition keys, number of files, metadata keys, ...).
    added, removed
        Partition labels this version added and removed.
    commit_info
        The ``commit_info`` dict passed to the write, if any.
    app_id, app_version
        The application transaction id of the write, if any.
    writer
        The program and version that committed.
    reverts
        For a ``REVERT``: the version it undoes.
    reverted
        True if a later ``REVERT`` undid this version (it was never published).
    """

    version: int
    timestamp: dt.datetime
    operation: str
    parameters: dict[str, Any]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    commit_info: dict[str, Any] | None
    app_id: str | None
    app_version: int | None
    writer: str
    reverts: int | None = None
    reverted: bool = False


def commit_record(entry: txlog.LogEntry, reverted: bool) -> CommitRecord:
    """The record of a log entry (``reverted``: a later ``REVERT`` undid it)."""
    return CommitRecord(
        version=entry.version,
        timestamp=dt.datetime.fromtimestamp(entry.timestamp / 1000, tz=dt.UTC),
        operation=entry.operation,
        parameters=dict(entry.parameters),
        added=entry.added_labels,
        removed=tuple(entry.remove),
        commit_info=dict(entry.commit_info) if entry.commit_info is not None else None,
        app_id=entry.app_id,
        app_version=entry.app_version,
        writer=entry.writer,
        reverts=entry.reverts,
        reverted=reverted,
    )
