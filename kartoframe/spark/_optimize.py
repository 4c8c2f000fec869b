"""Table maintenance from Spark: ``optimize`` planned on the driver, rewritten by a Spark job."""

from __future__ import annotations

from typing import Any

from kartoframe.api.optimize import optimize_arguments
from kartoframe.execution import spark_engine
from kartoframe.execution.spark_optimize import optimize_with_spark
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.cube_args import fill
from kartoframe.front.optimize import prepared_optimize
from kartoframe.plan.optimize import (
    OptimizeResult,
)

#: ``pyspark.sql.SparkSession`` (pyspark is imported by the engine only).
SparkSession = Any

__all__ = ["optimize_dataset"]


@fill
def optimize_dataset(
    spark: SparkSession, dataset_uuid: str, store: StoreInput, **options: Any
) -> OptimizeResult:
    """Compact and cluster a dataset's files in a Spark job, committing once on the driver.

    The same operation as :func:`kartoframe.optimize_dataset`, with the same plan, rules
    and result: the driver loads the dataset and plans which files of which partitions
    are rewritten; each rewrite unit (a group of small files of one partition) is read,
    sorted and written by its own Spark task with the kernel of the other engines
    (statistics, bloom filters and index values included); the driver publishes one
    commit that removes exactly the files read and adds the new ones. If a unit fails,
    the files the others wrote are deleted, nothing is committed and the unit's error is
    raised on the driver. A dry run, a dataset with nothing to rewrite (an incremental run
    after an earlier one) and an application transaction the dataset already records run
    no Spark job.

    $spark_dataset
    **options
        The keywords of :func:`kartoframe.optimize_dataset` (``progress`` excepted):
        ``target_file_size``, ``sort_by``, ``sort_method``, ``predicates`` (on partition
        keys), ``min_files``, ``row_group_size``, ``dry_run``, ``app_id``,
        ``app_version``, ``commit_info``.

    Returns
    -------
    OptimizeResult
        Files and bytes removed and added, the partitions optimized and skipped, the
        new version.

    $spark_raises
    InvalidInputError, InvalidTypeError
        An invalid option (checked on the driver before Spark runs anything).
    CommitConflictError
        A concurrent commit removed or replaced a file this run rewrote (nothing of
        this run remains; run it again).
    SparkPythonWorkerError
        A local session's Python workers cannot import kartoframe (see
        :func:`local_session`).

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> result = kfs.optimize_dataset(spark, "sales", "file:///data",
    ...                               sort_by=["product_id"])  # doctest: +SKIP
    >>> result.files_removed, result.files_added  # doctest: +SKIP
    (6, 2)
    """
    spark_engine.require_pyspark()
    checked = ensure_store(store)
    spark_engine.check_store(checked)
    args = optimize_arguments(options, delayed=True)
    st, plan, base, commit = prepared_optimize(dataset_uuid, checked, args)
    return optimize_with_spark(spark, st, plan, base, commit=commit, dry_run=args["dry_run"])
