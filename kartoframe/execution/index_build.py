"""(Re)building secondary indices from the data: the eager build and the bag's tasks.

:func:`plan_index_build` checks the columns and plans one read task per file,
:func:`index_file` reads one file's index values, and :func:`commit_index_build` commits
every file's values at once (each partition removed and re-added, so a concurrent write to
any of them conflicts: the build read all of them).
"""

from __future__ import annotations

from collections.abc import Sequence

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.write import ChunkResult, WrittenPartition, commit_write
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.index import check_indexable, index_value_pairs
from kartoframe.plan.scan import ReadTask, ScanPlan, plan_scan
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store import Store

__all__ = ["commit_index_build", "index_file", "plan_index_build"]


def plan_index_build(
    store: Store, uuid: str, columns: list[str]
) -> tuple[LoadedDataset, list[str], ScanPlan]:
    """Load the dataset and plan reading every index column (new and existing ones).

    Returns the loaded dataset, all index columns (sorted) and the plan.

    Raises
    ------
    InvalidInputError
        No column, or a partition key among them.
    ColumnNotFoundError
        A column the dataset does not have.
    """
    if not columns:
        raise InvalidInputError("columns must name at least one column to index.")
    loaded = load_dataset(store, uuid)
    md = loaded.metadata
    missing = [c for c in columns if c not in loaded.schema.names]
    if missing:
        raise ColumnNotFoundError(f"Cannot index unknown columns {missing} of {uuid!r}.")
    bad = [c for c in columns if c in md.partition_keys]
    if bad:
        raise InvalidInputError(f"Cannot create secondary index on partition columns: {bad}.")
    for c in columns:
        check_indexable(c, loaded.schema.field(c).type)
    all_cols = sorted(set(columns) | set(md.indices))
    return loaded, all_cols, plan_scan(loaded, columns=all_cols)


def index_file(
    plan: ScanPlan, task: ReadTask, store: Store, columns: Sequence[str]
) -> WrittenPartition:
    """The index values of the file ``task`` reads, as an unchanged written partition."""
    table = read_task_table(plan, task, store)
    f = task.files[0]
    pairs = {c: index_value_pairs(c, table[c], f.label) for c in columns}
    return WrittenPartition(f.label, f.key, table.num_rows, 0, pairs)


def commit_index_build(
    store: Store,
    loaded: LoadedDataset,
    parts: Sequence[WrittenPartition],
    all_columns: list[str],
    requested: list[str],
) -> None:
    """Commit the rebuilt indices of every file (operation ``BUILD_INDEX``)."""
    md = loaded.metadata
    commit_write(
        store,
        md.uuid,
        [ChunkResult(tuple(parts), None, "index build")],
        base=loaded,
        remove_labels=set(md.partitions),
        secondary_indices=all_columns,
        storage_format=md.storage_format,
        table_name=md.table_name,
        owns_files=False,
        operation="BUILD_INDEX",
        operation_parameters={"columns": requested},
    )
