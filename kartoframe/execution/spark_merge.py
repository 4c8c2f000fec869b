"""Spark ``merge``: a Spark job merges into the candidate files, the driver commits once.

The driver plans (:func:`~kartoframe.execution.merge.load_merge`: the source, collected
from its Spark DataFrame, and the candidate files); each candidate file goes to an
executor task running the shared per-file kernel
(:func:`~kartoframe.execution.merge.merge_one`); the driver writes the inserts and
publishes one commit (:func:`~kartoframe.execution.merge.finish_merge`), as the eager and
dask engines do. If a task fails, the files the others wrote are deleted and its error is
raised on the driver; nothing is committed.
"""

from __future__ import annotations

from typing import Any

from kartoframe.execution.merge import (
    FileOutcome,
    MergePlan,
    finish_merge,
    merge_one,
    settled_merge,
)
from kartoframe.execution.spark_tasks import run_spark_tasks
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.merge import MergeResult
from kartoframe.storage.store import Store

__all__ = ["merge_with_spark"]


def merge_with_spark(
    spark: Any,
    store: Store,
    plan: MergePlan,
    *,
    commit: CommitOptions = NO_COMMIT_OPTIONS,
    dry_run: bool = False,
) -> MergeResult:
    """The Spark engine of ``merge``: one task per candidate file, one commit.

    A dry run (it only counts) and an application transaction the dataset already
    records run no Spark job.
    """
    settled = settled_merge(store, plan, commit, dry_run=dry_run)
    if settled is not None:
        return settled

    def work(part: FilePart, job_id: str) -> FileOutcome:
        return merge_one(store, plan, part, dry_run=False, file_prefix=job_id)

    outcomes = run_spark_tasks(
        spark,
        store,
        dataset_uuid=plan.uuid,
        table_name=plan.base.metadata.table_name,
        items=plan.candidates,
        work=work,
        written=lambda o: [p.key for p in o.chunk.partitions] if o.chunk else [],
        what=f"merge into {plan.uuid!r}",
        result_type=FileOutcome,
    )
    return finish_merge(store, plan, outcomes, commit=commit)
