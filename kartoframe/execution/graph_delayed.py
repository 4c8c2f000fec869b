"""plateau's ``dask.delayed`` and ``dask.bag`` API as graphs over kartoframe's plans.

The public fronts (:mod:`kartoframe.dask.delayed`, :mod:`kartoframe.dask.bag`) check their
arguments and resolve the dataset; these functions turn the plan into tasks: one read task
per planned read task, one write task per input and one commit task
(:mod:`kartoframe.execution.delayed_write`), one index task per file and one commit, one
``optimize`` task per rewrite unit and one commit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from kartoframe.execution import dask_engine as de
from kartoframe.execution.index_build import commit_index_build, index_file
from kartoframe.execution.merge import (
    FileOutcome,
    MergePlan,
    finish_merge,
    merge_one,
    settled_merge,
)
from kartoframe.execution.optimize import chunks_or_raise, commit_optimize, rewrite_unit
from kartoframe.execution.write import ChunkResult, WrittenPartition
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.file_part import FilePart
from kartoframe.plan.optimize import OptimizePlan, OptimizeResult, RewriteUnit
from kartoframe.plan.scan import ReadTask, ScanPlan
from kartoframe.plan.write_request import ResolvedWrite
from kartoframe.storage.store import Store

__all__ = [
    "bag_of",
    "delete_graph",
    "index_graph",
    "merge_graph",
    "optimize_graph",
    "read_graph",
    "write_graph",
]

Result = Callable[[str, Store], Any]


def read_graph(
    plan: ScanPlan, st: Store, loaded: LoadedDataset, output: list[str], *, dates_as_object: bool
) -> list[Any]:
    """One ``Delayed`` per planned read task, each computing to a DataFrame."""
    from dask.delayed import delayed

    cats = de.known_categories(loaded, plan.categoricals, dates_as_object=dates_as_object)
    token = de.plan_token(plan, st, loaded.header_bytes, None, de.categories_token(cats))
    reader = de.PartitionReader(plan, st, output_columns=output, categories=cats, token=token)
    read = delayed(reader, pure=True)
    return [
        read(task, dask_key_name=(f"kartoframe-read-{token}", i))
        for i, task in enumerate(plan.tasks)
    ]


def write_graph(parts: list[Any], st: Store, target: ResolvedWrite, **options: Any) -> Any:
    """One write task per input and one commit task of a resolved write (options: the
    rest of :func:`kartoframe.execution.dask_write.writer_and_committer`'s arguments).
    """
    from kartoframe.execution.dask_write import resolved_writer_and_committer
    from kartoframe.execution.delayed_write import write_delayed_graph

    writer, committer = resolved_writer_and_committer(st, target, **options)
    return write_delayed_graph(parts, writer, committer)


def _delete_keys(store: Store, keys: list[str]) -> list[str]:
    store.delete_many(keys)
    return keys


def delete_graph(st: Store, keys: list[str], size: int) -> list[Any]:
    """Tasks deleting ``keys`` in chunks of ``size``; each computes to its keys."""
    from dask.delayed import delayed

    chunks = [keys[i : i + size] for i in range(0, len(keys), size)]
    return [delayed(_delete_keys, pure=False)(st, chunk) for chunk in chunks]


def _one_item(df: Any) -> list[Any]:
    return [df]


def bag_of(tasks: list[Any], size: int | None) -> Any:
    """A bag of the results of ``tasks``; ``size`` of them per bag partition."""
    from dask import bag as db
    from dask.delayed import delayed

    if not tasks:
        return db.from_sequence([], npartitions=1)  # type: ignore[no-untyped-call]
    bag = db.from_delayed([delayed(_one_item, pure=True)(t) for t in tasks])  # type: ignore[no-untyped-call]
    if size is not None:
        bag = bag.repartition(npartitions=max(1, math.ceil(len(tasks) / size)))
    return bag


def _index_file(
    plan: ScanPlan, task: ReadTask, store: Store, columns: Sequence[str]
) -> WrittenPartition:
    return index_file(plan, task, store, columns)  # its task keys name _index_file


def _commit_indices(
    store: Store,
    loaded: LoadedDataset,
    parts: list[WrittenPartition],
    all_columns: list[str],
    requested: list[str],
    result: Result,
) -> Any:
    commit_index_build(store, loaded, parts, all_columns, requested)
    return result(loaded.metadata.uuid, store)


def index_graph(
    st: Store,
    loaded: LoadedDataset,
    plan: ScanPlan,
    all_columns: list[str],
    requested: list[str],
    result: Result,
) -> Any:
    """One index task per planned file and one commit task computing to ``result``."""
    from dask.delayed import delayed

    index = delayed(_index_file, pure=False)
    parts = [index(plan, task, st, all_columns) for task in plan.tasks]
    commit = delayed(_commit_indices, pure=False)
    return commit(st, loaded, parts, all_columns, requested, result)


def _rewrite(store: Store, plan: OptimizePlan, unit: RewriteUnit) -> ChunkResult | BaseException:
    """One unit of an optimize graph; a failure is returned, so the commit task sees every
    outcome and can remove the files the other units wrote.
    """
    try:
        return rewrite_unit(store, plan, unit)
    except Exception as e:
        return e


def _commit_optimize(
    store: Store,
    plan: OptimizePlan,
    base: LoadedDataset,
    outcomes: list[ChunkResult | BaseException],
    commit: CommitOptions,
) -> OptimizeResult:
    return commit_optimize(store, plan, base, chunks_or_raise(store, outcomes), commit)


def optimize_graph(
    st: Store, plan: OptimizePlan, base: LoadedDataset, commit: CommitOptions
) -> Any:
    """One task per rewrite unit and one commit task computing to an ``OptimizeResult``."""
    from dask.delayed import delayed

    rewrite = delayed(_rewrite, pure=False)
    outcomes = [rewrite(st, plan, unit) for unit in plan.units]
    return delayed(_commit_optimize, pure=False)(st, plan, base, outcomes, commit)


def _merge_one(store: Store, plan: MergePlan, part: FilePart) -> FileOutcome | BaseException:
    """One candidate file of a merge graph; a failure is returned, so the commit task
    sees every outcome and can remove the files the other tasks wrote.
    """
    try:
        return merge_one(store, plan, part, dry_run=False)
    except Exception as e:
        return e


def merge_graph(st: Store, plan: MergePlan, commit: CommitOptions, *, dry_run: bool = False) -> Any:
    """One task per candidate file and one commit task computing to a ``MergeResult``
    (the plan, with the source, enters the graph once). A dry run or a retried step runs
    now (:func:`~kartoframe.execution.merge.settled_merge`) and the graph computes to its
    result.
    """
    from dask.delayed import delayed

    settled = settled_merge(st, plan, commit, dry_run=dry_run)
    if settled is not None:
        return delayed(settled, traverse=False)
    shared = delayed(plan, traverse=False)
    one = delayed(_merge_one, pure=False)
    outcomes = [one(st, shared, part) for part in plan.candidates]
    return delayed(finish_merge, pure=False)(st, shared, outcomes, commit=commit)
