"""Spark ``optimize``: a Spark job rewrites the plan's units, the driver commits once.

The driver loads and plans (:func:`~kartoframe.execution.optimize.load_optimize`), ships
each :class:`~kartoframe.plan.optimize.RewriteUnit` to an executor task that runs the
shared per-unit kernel :func:`~kartoframe.execution.optimize.rewrite_unit`, collects one
outcome per unit and publishes one commit
(:func:`~kartoframe.execution.optimize.commit_optimize`), exactly as the eager and dask
engines do. A unit that fails returns its exception as a value: the task succeeds, Spark
does not retry it, and the driver sees every outcome, deletes the files the other units
wrote and re-raises the failure; nothing is committed.
"""

from __future__ import annotations

from typing import Any

from kartoframe.execution.optimize import (
    chunks_or_raise,
    commit_optimize,
    rewrite_unit,
    settled_without_work,
)
from kartoframe.execution.spark_tasks import run_spark_tasks
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.optimize import OptimizePlan, OptimizeResult, RewriteUnit
from kartoframe.plan.write import ChunkResult
from kartoframe.storage.store import Store

__all__ = ["optimize_with_spark", "rewrite_units_with_spark"]


def rewrite_units_with_spark(spark: Any, store: Store, plan: OptimizePlan) -> list[ChunkResult]:
    """Rewrite every unit of ``plan`` in a Spark job, one task per unit (no commit).

    Returns
    -------
    list of ChunkResult
        One per unit, in the plan's order, for
        :func:`~kartoframe.execution.optimize.commit_optimize`.

    Raises
    ------
    Exception
        The first failure (in unit order) a unit raised, or the job's own failure;
        the files every unit wrote have been deleted.
    """

    def work(unit: RewriteUnit, job_id: str) -> ChunkResult:
        return rewrite_unit(store, plan, unit, file_prefix=job_id)

    outcomes = run_spark_tasks(
        spark,
        store,
        dataset_uuid=plan.uuid,
        table_name=plan.table_name,
        items=plan.units,
        work=work,
        written=lambda chunk: [p.key for p in chunk.partitions],
        what=f"optimize {plan.uuid!r}",
        result_type=ChunkResult,
    )
    return chunks_or_raise(store, outcomes)


def optimize_with_spark(
    spark: Any,
    store: Store,
    plan: OptimizePlan,
    base: LoadedDataset,
    *,
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    dry_run: bool = False,
) -> OptimizeResult:
    """The Spark engine of ``optimize``: rewrite the units in a Spark job, commit once.

    A dry run, a plan with nothing to rewrite and an application transaction the dataset
    already records (a retried step) run no Spark job.

    Raises
    ------
    CommitConflictError
        A concurrent commit removed or replaced a file the plan rewrote (the new files
        are deleted).
    """
    settled = settled_without_work(store, plan, commit, dry_run=dry_run)
    if settled is not None:
        return settled
    chunks = rewrite_units_with_spark(spark, store, plan)
    return commit_optimize(store, plan, base, chunks, commit)
