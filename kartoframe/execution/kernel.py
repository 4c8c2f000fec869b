"""The per-task read kernel shared by every engine."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pandas as pd
import pyarrow as pa

from kartoframe.format.convert import pandas_read_schema, table_to_frame
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.scan import ReadTask, ScanPlan
from kartoframe.storage.csv_files import read_data_files
from kartoframe.storage.store import Store

__all__ = [
    "iter_plan_batches",
    "read_file_parts",
    "read_plan_table",
    "read_task_frame",
    "read_task_table",
    "read_whole_files",
    "to_frame",
]


def read_task_table(
    plan: ScanPlan,
    task: ReadTask,
    store: Store,
    columns: Sequence[str] | None = None,
    use_threads: bool = True,
    for_pandas: bool = False,
) -> pa.Table:
    """Read the files of one task as one Arrow table (projection and filter applied).

    ``for_pandas`` reads timestamps in the unit the writer's pandas frame had and strings
    as ``large_string`` (the scan converts them in parallel, so :func:`to_frame` needs no
    second pass; :func:`kartoframe.format.convert.pandas_read_schema`).
    """
    cols = list(columns) if columns is not None else list(plan.columns)
    pk = plan.partition_keys
    # categoricals (not partition keys, which come from paths) keep the files' dictionaries
    cats = tuple(c for c in plan.categoricals if c not in pk)
    return read_data_files(
        store,
        [f.key for f in task.files],
        pandas_read_schema(plan.schema, cats) if for_pandas else plan.schema,
        partition_values=[tuple(zip(pk, f.partition_values)) for f in task.files],
        columns=cols,
        filter=plan.filter_for(task),
        filter_columns=plan.filter_columns(task),
        covering=plan.covering_for(task),
        use_threads=use_threads,
    )


def read_file_parts(
    store: Store,
    files: Sequence[FilePart],
    schema: pa.Schema,
    partition_keys: Sequence[str],
    *,
    partition_columns: bool = True,
) -> pa.Table:
    """Every row and column of ``files`` with the dataset ``schema``, in order (partition
    columns from the files' keys, or none without ``partition_columns``): what
    ``optimize`` rewrites.
    """
    keys = [f.key for f in files]
    if not partition_columns:
        columns = [c for c in schema.names if c not in partition_keys]
        return read_data_files(store, keys, schema, columns=columns)
    pvs = [tuple(zip(partition_keys, f.partition_values)) for f in files]
    return read_data_files(store, keys, schema, partition_values=pvs)


def read_whole_files(store: Store, keys: Sequence[str], schema: pa.Schema) -> pa.Table:
    """Every row and column of files that hold all their columns (no partition values
    in their keys: the change feed's change files), with ``schema``, in order.
    """
    return read_data_files(store, list(keys), schema)


def read_plan_table(plan: ScanPlan, store: Store, *, for_pandas: bool = True) -> pa.Table:
    """Read every file of a plan in one multi-threaded scan (tasks must carry no extra).

    ``for_pandas`` scans in the types :func:`to_frame` converts fastest (see
    :func:`kartoframe.format.convert.pandas_read_schema`); else in the dataset's.
    """
    files = [f for t in plan.tasks for f in t.files]
    return read_task_table(plan, ReadTask(tuple(files)), store, for_pandas=for_pandas)


def iter_plan_batches(
    plan: ScanPlan, store: Store, *, batches: int = 100, min_files: int = 4
) -> Iterator[tuple[pa.Table, int]]:
    """Read the files of a plan in order, a few at a time (for progress and early stops).

    Yields ``(table, number of files read)``; concatenated, the tables equal
    :func:`read_plan_table`. Files are split into at most ``batches`` batches of at least
    ``min_files`` files, each read in one multi-threaded scan (tasks must carry no extra).
    """
    files = [f for t in plan.tasks for f in t.files]
    if not files:
        yield read_task_table(plan, ReadTask(()), store, for_pandas=True), 0
        return
    size = max(min_files, -(-len(files) // max(1, batches)))
    for start in range(0, len(files), size):
        part = tuple(files[start : start + size])
        yield read_task_table(plan, ReadTask(part), store, for_pandas=True), len(part)


def to_frame(plan: ScanPlan, table: pa.Table) -> pd.DataFrame:
    """Convert a scan result to pandas with the plan's dtype options (the same dtypes
    for every frame of a read: integer columns follow ``plan.nullable_integers``).
    """
    return table_to_frame(
        table,
        plan.schema,
        categoricals=plan.categoricals,
        dates_as_object=plan.dates_as_object,
        nullable_integers=plan.nullable_integers,
    )


def read_task_frame(
    plan: ScanPlan,
    task: ReadTask,
    store: Store,
    columns: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Read one task into pandas."""
    return to_frame(plan, read_task_table(plan, task, store, columns, for_pandas=True))
