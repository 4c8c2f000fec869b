"""The values of the commit protocol (:mod:`kartoframe.storage.commit`); no I/O.

A caller describes a commit with an :class:`Intent` and a builder returning :class:`Built`;
:func:`~kartoframe.storage.commit.commit_transaction` returns a :class:`CommitResult`. A
version committed in the log whose header could not be written raises
:class:`HeaderPublishError`; :func:`committed_version` tells cleanup code whether an
exception came after the commit point.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Literal

import pyarrow as pa

from kartoframe.errors import StorageError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "Builder",
    "Built",
    "CommitResult",
    "HeaderPublishError",
    "Intent",
    "Mode",
    "committed_version",
    "mark_committed",
]


#: How a commit treats the dataset it finds (see :class:`Intent`).
Mode = Literal["create", "overwrite", "update", "create_or_update"]


#: How many times a commit is rebuilt on a newer version before giving up.
DEFAULT_MAX_ATTEMPTS = 64


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


def mark_committed(exc: BaseException, version: int) -> None:
    """Record on exc that it was raised after committing version."""
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
        there, blindly), ``"update"`` (a change of the base version) or
        ``"create_or_update"`` (an update of a dataset that did not exist when the write
        was planned: it creates the dataset, or, if another writer created it first,
        is rebuilt as an update of that version — concurrent "update or create" writers
        all land).
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
    update_operation
        The operation recorded when a ``"create_or_update"`` commit lands as an update
        of a version another writer created.
    changes
        Keys of the change files this commit wrote (recorded in its log entry: its exact
        change feed); None for a commit whose feed is derived from its files.
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
    update_operation: str = "APPEND"
    changes: tuple[str, ...] | None = None


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
