"""The first step of every optimize (eager, dask, Spark): check, load and plan."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kartoframe.errors import InvalidTypeError
from kartoframe.execution.optimize import load_optimize
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.front.args import dataset_args
from kartoframe.plan.optimize import OptimizePlan
from kartoframe.storage.store import Store

__all__ = ["prepared_optimize"]

#: the keywords of ``optimize_dataset`` that are options of the plan
_OPTIONS = ("target_file_size", "sort_by", "sort_method", "min_files", "row_group_size")


def prepared_optimize(
    dataset_uuid: object,
    store: Any,
    args: Mapping[str, Any],
    loaded: LoadedDataset | None = None,
) -> tuple[Store, OptimizePlan, LoadedDataset, CommitOptions]:
    """Check the arguments of :func:`optimize_dataset` (``args``, every keyword), load
    (unless ``loaded`` is the dataset, just loaded) and plan: ``(store, plan, base,
    commit options)``; every engine's front starts here.
    """
    uuid, st = dataset_args(dataset_uuid, store)
    if not isinstance(args["dry_run"], bool):
        raise InvalidTypeError("dry_run must be a bool.")
    commit = CommitOptions.of(args["app_id"], args["app_version"], args["commit_info"])
    plan, base = load_optimize(
        st,
        uuid,
        predicates=args["predicates"],
        loaded=loaded,
        **{k: args[k] for k in _OPTIONS},
    )
    return st, plan, base, commit
