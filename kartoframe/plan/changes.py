"""Planning a read of the change data feed (pure: no I/O).

The storage layer gathers the header before the first requested version and the log
entries of the range; :func:`plan_changes` turns them into tasks, one per commit and
kind of row: the change files a commit recorded (its exact feed), or the data files it
removed (``delete``) and added (``insert``). Engines read each task with
:func:`kartoframe.execution.changes.read_change_task`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pyarrow as pa

from kartoframe.format import changes
from kartoframe.format.txlog import LogEntry
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.predicates import Predicate
from kartoframe.plan.pruning import partition_value_rows

__all__ = ["ChangePlan", "ChangeTask", "plan_changes"]


@dataclasses.dataclass(frozen=True, slots=True)
class ChangeTask:
    """The rows of one commit from one set of files.

    ``change_type`` None: the files are change files (each row has its own type);
    otherwise data files whose every row has that type (``insert`` or ``delete``).
    """

    version: int
    timestamp: int
    change_type: str | None
    files: tuple[FilePart, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class ChangePlan:
    """A planned read of the changes of versions ``start_version`` to ``end_version``.

    ``schema`` is the dataset's at ``end_version``; ``columns`` the requested dataset
    columns (the feed's columns follow them); ``predicate`` filters rows.
    """

    dataset_uuid: str
    schema: pa.Schema
    partition_keys: tuple[str, ...]
    columns: tuple[str, ...]
    predicate: Predicate | None
    start_version: int
    end_version: int
    tasks: tuple[ChangeTask, ...]

    @property
    def next_version(self) -> int:
        """The cursor of the next read: the first version this read did not cover."""
        return self.end_version + 1

    @property
    def output_schema(self) -> pa.Schema:
        """The schema of the feed's rows."""
        return changes.feed_schema(self.schema, self.columns)


def _parts(
    labels: Sequence[str],
    keys: Mapping[str, str],
    partition_keys: Sequence[str],
    schema: pa.Schema,
) -> tuple[FilePart, ...]:
    values = partition_value_rows(list(labels), list(partition_keys), schema)
    return tuple(FilePart(lb, keys[lb], v) for lb, v in zip(labels, values, strict=True))


def plan_changes(
    dataset_uuid: str,
    previous: Mapping[str, str],
    entries: Sequence[LogEntry],
    *,
    start_version: int,
    end_version: int,
    schema: pa.Schema,
    partition_keys: Sequence[str],
    columns: Sequence[str] | None = None,
    predicate: Predicate | None = None,
) -> ChangePlan:
    """Plan the feed of versions ``start_version`` to ``end_version``.

    Parameters
    ----------
    previous
        The partitions (label -> data file key) of version ``start_version - 1`` (empty
        for version 0, or when the dataset did not exist then).
    entries
        The log entries of ``start_version`` to ``end_version`` in order, and the entry
        after ``end_version`` if there is one (a revert of ``end_version``).

    A version that a later entry reverts (its header was never published) and the
    revert itself contribute nothing; so do commits that change no row
    (:data:`kartoframe.format.changes.NO_DATA_CHANGE`).
    """
    reverted = {e.reverts for e in entries if e.reverts is not None}
    parts = dict(previous)
    tasks: list[ChangeTask] = []
    for entry in entries:
        if entry.version > end_version:
            break
        before = parts
        if entry.deleted:
            parts = {}
        elif entry.reset:
            parts = dict(entry.add)
        else:
            gone = set(entry.remove)
            parts = {lb: k for lb, k in parts.items() if lb not in gone}
            parts.update(entry.add)
        if entry.version in reverted or entry.reverts is not None:
            continue
        if entry.changes is not None:
            files = tuple(FilePart("", key, ()) for key in entry.changes)
            if files:
                tasks.append(ChangeTask(entry.version, entry.timestamp, None, files))
            continue
        if entry.operation in changes.NO_DATA_CHANGE:
            continue
        removed = [lb for lb in entry.remove if lb in before]
        added = [lb for lb in entry.added_labels if lb in parts]
        if removed:
            files = _parts(removed, before, partition_keys, schema)
            tasks.append(ChangeTask(entry.version, entry.timestamp, "delete", files))
        if added:
            files = _parts(added, parts, partition_keys, schema)
            tasks.append(ChangeTask(entry.version, entry.timestamp, "insert", files))
    return ChangePlan(
        dataset_uuid,
        schema,
        tuple(partition_keys),
        tuple(columns) if columns is not None else tuple(schema.names),
        predicate,
        start_version,
        end_version,
        tuple(tasks),
    )
