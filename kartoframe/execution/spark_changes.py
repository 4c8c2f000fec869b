"""The change feed on Spark: the tasks of a :class:`~kartoframe.plan.changes.ChangePlan`
(a commit's change files, or the data files it added or removed) read by Spark's Python
workers with :func:`kartoframe.execution.changes.read_change_task` (``mapInArrow``, one
task at a time, through the store), as the arrow reader of
:mod:`~kartoframe.execution.spark_read` does for scans.

``_commit_timestamp`` (``timestamp[ms, UTC]``) becomes a Spark ``timestamp`` (an instant,
microseconds); the dataset's columns get the types of
:mod:`kartoframe.format.spark_types`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from kartoframe.execution.changes import read_change_task
from kartoframe.execution.spark_engine import (
    check_python_workers,
    check_store,
    require_pyspark,
    spark_type,
)
from kartoframe.format.spark_types import spark_arrow_schema, to_spark_schema, to_spark_table
from kartoframe.plan.changes import ChangePlan
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["changes_to_sdf"]

#: Rows per Arrow batch a worker hands to Spark.
_BATCH_ROWS = 65536


def changes_to_sdf(spark: SparkSession, plan: ChangePlan, store: Store) -> DataFrame:
    """The feed of ``plan`` as a lazy Spark DataFrame.

    Each Spark task reads planned tasks (a commit's change files, or the data files it
    added or removed) in a Python worker, so a worker holds one planned task's rows at a
    time. Row order is not defined (as for every Spark DataFrame); order by
    ``_commit_version`` to get commit order.

    Parameters
    ----------
    spark
        The active SparkSession.
    plan
        The planned feed (:func:`kartoframe.execution.changes.load_changes`).
    store
        The store of the dataset.

    Returns
    -------
    pyspark.sql.DataFrame
        The dataset's requested columns, then ``_change_type`` (string),
        ``_commit_version`` (long) and ``_commit_timestamp`` (timestamp); empty with that
        schema when the plan has no task.

    Raises
    ------
    InvalidInputError
        A ``memory://`` store (executors cannot see it).
    SparkPythonWorkerError
        A local session's Python workers cannot import kartoframe.
    """
    require_pyspark()
    check_store(store)
    schema = plan.output_schema
    struct = spark_type(to_spark_schema(schema))
    n = len(plan.tasks)
    if n == 0:
        return spark.createDataFrame([], struct)
    check_python_workers(spark)
    out_schema = spark_arrow_schema(schema)
    slices = max(1, min(n, spark.sparkContext.defaultParallelism * 4))

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for i in b.column(0).to_pylist():
                table = read_change_task(store, plan, plan.tasks[i])
                yield from to_spark_table(table, out_schema).to_batches(_BATCH_ROWS)

    return spark.range(0, n, 1, slices).mapInArrow(read, struct)
