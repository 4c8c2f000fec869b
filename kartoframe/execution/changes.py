"""Reading the change data feed: load the log range, plan it, read its tasks.

:func:`load_changes` finds the versions to read (the current one by default), loads the
partitions of the version before the first and the log entries of the range, and plans
the feed (:func:`kartoframe.plan.changes.plan_changes`). :func:`read_change_task` is the
per-task read every engine runs: a commit's change files, or the data files it added or
removed, with the feed's columns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from kartoframe.errors import (
    ChangesUnavailableError,
    DatasetNotFoundError,
    InvalidInputError,
)
from kartoframe.execution.kernel import read_file_parts, read_whole_files
from kartoframe.format import changes
from kartoframe.format.header_partitions import partitions_dict
from kartoframe.plan.arguments import check_int
from kartoframe.plan.changes import ChangePlan, ChangeTask, plan_changes
from kartoframe.plan.predicates import to_expression
from kartoframe.plan.query import bound
from kartoframe.plan.scan import check_columns
from kartoframe.storage.log import current_state, list_log, read_entries, read_entry, state_at
from kartoframe.storage.resolve import load_dataset, loaded_from_state
from kartoframe.storage.store import Store

__all__ = ["iter_change_tables", "load_changes", "read_change_task", "read_changes_table"]


def _unavailable(uuid: str, version: int, oldest: int | None) -> ChangesUnavailableError:
    since = (
        f"the oldest version whose changes can be read is {oldest}"
        if oldest is not None
        else "its log holds no version any more"
    )
    return ChangesUnavailableError(
        f"The changes of version {version} of dataset {uuid!r} can no longer be read: "
        f"vacuum_dataset removed the log entries or files they need; {since}."
    )


def _oldest_readable(store: Store, uuid: str) -> int | None:
    versions, _ = list_log(store, uuid)
    if not versions:
        return None
    return versions[0] if versions[0] == 0 else versions[0] + 1


def load_changes(
    store: Store,
    dataset_uuid: str,
    *,
    start_version: object,
    end_version: object = None,
    columns: Sequence[str] | None = None,
    predicates: object = None,
) -> ChangePlan:
    """Plan a read of the changes of versions ``start_version`` to ``end_version``
    (default: the current version).

    ``start_version`` one past the current version gives an empty plan (nothing new:
    its ``next_version`` is ``start_version`` again).

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.
    InvalidInputError
        A version beyond the current one, or ``end_version`` before ``start_version - 1``.
    ChangesUnavailableError
        Vacuum removed what the changes of ``start_version`` need.
    """
    start = check_int(start_version, "start_version", 0)
    current = current_state(store, dataset_uuid)
    if current is None or current.header is None:
        raise DatasetNotFoundError(dataset_uuid, store.display_url)
    if current.version is None:
        raise InvalidInputError(
            f"Dataset {dataset_uuid!r} has no transaction log (written only by "
            "plateau/kartothek): there are no recorded changes to read."
        )
    latest = current.version
    end = latest if end_version is None else check_int(end_version, "end_version", 0)
    if end > latest:
        raise InvalidInputError(
            f"end_version {end} is beyond the current version {latest} of {dataset_uuid!r}."
        )
    if start > end + 1:
        raise InvalidInputError(
            f"start_version {start} is after end_version {end} (+1) of {dataset_uuid!r}."
        )
    loaded = (
        load_dataset(store, dataset_uuid, version=end)
        if end < latest
        else loaded_from_state(store, current)  # the header just read, not a second read
    )
    schema = loaded.schema
    cols = list(columns) if columns is not None else None
    if cols is not None:
        check_columns(cols, schema, "Columns")
    predicate = bound(predicates, schema)
    previous: dict[str, str] = {}
    entries = []
    if start <= end:
        if start > 0:
            previous = _partitions_before(store, dataset_uuid, start)
        # the range and the entry after it (a revert of the last version, if any)
        found = read_entries(store, dataset_uuid, range(start, end + 2))
        for v in range(start, end + 2):
            entry = found[v]
            if entry is None:
                if v <= end:
                    raise _unavailable(dataset_uuid, start, _oldest_readable(store, dataset_uuid))
                break
            entries.append(entry)
    return plan_changes(
        dataset_uuid,
        previous,
        entries,
        start_version=start,
        end_version=end,
        schema=schema,
        partition_keys=loaded.metadata.partition_keys,
        columns=cols,
        predicate=predicate,
    )


def _partitions_before(store: Store, uuid: str, start: int) -> dict[str, str]:
    """The partitions of the version before ``start`` (before a reverted one, the one
    before that).
    """
    version = start - 1
    while version >= 0:
        try:
            state = state_at(store, uuid, version)
        except InvalidInputError as e:
            following = read_entry(store, uuid, version + 1)
            if following is not None and following.reverts == version:
                version -= 1
                continue
            raise _unavailable(uuid, start, _oldest_readable(store, uuid)) from e
        return partitions_dict(state.header.partitions) if state.header is not None else {}
    return {}


def read_change_task(store: Store, plan: ChangePlan, task: ChangeTask) -> pa.Table:
    """The feed rows of one task: the dataset's requested columns, then ``_change_type``,
    ``_commit_version`` and ``_commit_timestamp``.
    """
    if task.change_type is None:
        schema = changes.change_file_schema(plan.schema)
        table = read_whole_files(store, [f.key for f in task.files], schema)
    else:
        table = read_file_parts(store, task.files, plan.schema, plan.partition_keys)
        table = changes.labelled(table, task.change_type)
    expr = to_expression(plan.predicate)
    if expr is not None:
        table = table.filter(expr)
    table = table.select([*plan.columns, changes.CHANGE_TYPE])
    n = table.num_rows
    table = table.append_column(
        changes.COMMIT_VERSION, pa.array([task.version] * n, type=pa.int64())
    )
    table = table.append_column(
        changes.COMMIT_TIMESTAMP,
        pa.array([task.timestamp] * n, type=pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
    )
    return table.cast(plan.output_schema)


def iter_change_tables(store: Store, plan: ChangePlan) -> Iterator[pa.Table]:
    """The feed task by task (memory: one task's files), in commit order."""
    for task in plan.tasks:
        yield read_change_task(store, plan, task)


def read_changes_table(store: Store, plan: ChangePlan) -> pa.Table:
    """The whole feed of a plan as one table, in commit order."""
    tables = list(iter_change_tables(store, plan))
    if not tables:
        return plan.output_schema.empty_table()
    return pa.concat_tables(tables)
