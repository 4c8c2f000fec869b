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

import pickle
import uuid as _uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kartoframe import errors
from kartoframe.execution import spark_write
from kartoframe.execution.optimize import (
    chunks_or_raise,
    commit_optimize,
    rewrite_unit,
    settled_without_work,
)
from kartoframe.execution.spark_engine import check_python_workers, check_store, require_pyspark
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.optimize import OptimizePlan, OptimizeResult, RewriteUnit
from kartoframe.plan.write import ChunkResult
from kartoframe.storage.store import Store

__all__ = ["optimize_with_spark", "rewrite_units_with_spark"]

#: What a unit's task returns: the unit's number and its pickled outcome.
Outcome = tuple[int, bytes]


def _outcome(store: Store, plan: OptimizePlan, unit: RewriteUnit, job_id: str) -> bytes:
    """The pickled :class:`ChunkResult` of one unit, or the exception it raised (an
    exception that cannot be pickled is replaced by a :class:`KartoframeError` naming it).
    """
    try:
        value: ChunkResult | BaseException = rewrite_unit(store, plan, unit, file_prefix=job_id)
    except Exception as e:
        value = e
    try:
        return pickle.dumps(value, protocol=5)
    except Exception:
        text = f"optimize of {unit.partition or 'the dataset'} failed: {type(value).__name__}: "
        return pickle.dumps(errors.KartoframeError(text + str(value)), protocol=5)


def _unpickled(payload: bytes) -> ChunkResult | BaseException:
    value = pickle.loads(payload)
    if not isinstance(value, ChunkResult | BaseException):
        raise errors.CorruptMetadataError("A Spark optimize task returned an unexpected value.")
    return value


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
    require_pyspark()
    check_store(store)
    check_python_workers(spark)
    units = list(enumerate(plan.units))
    if not units:
        return []

    job_id = _uuid.uuid4().hex[:16]  # starts every file name the job writes

    def run(items: Iterable[tuple[int, RewriteUnit]]) -> Iterator[Outcome]:
        for i, unit in items:
            yield i, _outcome(store, plan, unit, job_id)

    def delete_job_files(keep: Sequence[str] = ()) -> None:
        spark_write.delete_job_files(store, plan.uuid, plan.table_name, job_id, keep=keep)

    sc = spark.sparkContext
    group = f"kartoframe-optimize-{job_id}"
    rdd = sc.parallelize(units, numSlices=len(units)).mapPartitions(run)
    with spark_write._job_group(sc, group, f"kartoframe: optimize {plan.uuid!r}"):
        try:
            rows: list[Outcome] = rdd.collect()
        except Exception as e:
            delete_job_files()
            spark_write._wait_for_tasks(sc, group)
            delete_job_files()
            mapped = spark_write._worker_error(e)
            if mapped is not None:
                raise mapped from e
            raise
        outcomes = [_unpickled(payload) for _, payload in sorted(rows, key=lambda r: r[0])]
        try:
            chunks = chunks_or_raise(store, outcomes)
        except BaseException:
            delete_job_files()
            raise
        if any(s.numFailedTasks > 0 for s in spark_write._job_stages(sc, group)):
            # retried task attempts may have left files nobody will commit
            delete_job_files(keep=[p.key for c in chunks for p in c.partitions])
    return chunks


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
