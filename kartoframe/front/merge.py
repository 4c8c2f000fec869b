"""The first step of every merge (eager, dask, Spark): check, load and plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kartoframe.errors import InvalidTypeError
from kartoframe.execution.merge import MergePlan, load_merge
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.convert import frame_to_table
from kartoframe.front.args import dataset_args
from kartoframe.plan.merge import merge_options
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store import Store

__all__ = ["is_dask", "merge_delayed", "prepared_merge"]


def prepared_merge(args: Mapping[str, Any]) -> tuple[Store, MergePlan, CommitOptions]:
    """Check the arguments of ``merge_dataset`` (every keyword), load and plan."""
    uuid, st = dataset_args(args["dataset_uuid"], args["store"])
    if not isinstance(args["dry_run"], bool):
        raise InvalidTypeError("dry_run must be a bool.")
    source = args["source"]
    table = source if isinstance(source, pa.Table) else frame_to_table(source, what="source")
    commit = CommitOptions.of(args["app_id"], args["app_version"], args["commit_info"])
    loaded = load_dataset(st, uuid)
    options = merge_options(
        loaded.schema,
        on=args["on"],
        when_matched=args["when_matched"],
        when_not_matched=args["when_not_matched"],
        when_not_matched_by_source=args["when_not_matched_by_source"],
        schema_evolution=args["schema_evolution"],
    )
    plan = load_merge(st, uuid, table, options, predicates=args["predicates"], loaded=loaded)
    return st, plan, commit


def is_dask(source: object) -> bool:
    """Whether ``source`` is a dask collection (a dask DataFrame)."""
    return type(source).__module__.startswith("dask.") and hasattr(source, "npartitions")


def merge_delayed(args: Mapping[str, Any]) -> Any:
    """``merge_dataset``'s keywords (``args``, every one) with a dask DataFrame as the
    source: the source computed now, the dataset loaded and planned, and the graph
    (:func:`~kartoframe.execution.graph_delayed.merge_graph`) returned.
    """
    from kartoframe.execution.graph_delayed import merge_graph  # dask only when used

    ddf = args["source"]
    if not is_dask(ddf):
        raise InvalidTypeError(f"source must be a dask DataFrame, got {type(ddf).__name__}.")
    st, plan, commit = prepared_merge({**args, "source": ddf.compute()})
    return merge_graph(st, plan, commit, dry_run=args["dry_run"])
