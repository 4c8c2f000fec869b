"""Table maintenance as a dask graph: :func:`optimize_dataset_as_delayed`."""

from __future__ import annotations

from typing import Any

from kartoframe.api.optimize import optimize_arguments
from kartoframe.execution.optimize import settled_without_work
from kartoframe.front.args import StoreInput
from kartoframe.front.optimize import prepared_optimize

__all__ = ["optimize_dataset_as_delayed"]


def optimize_dataset_as_delayed(
    dataset_uuid: str | None = None, store: StoreInput | None = None, **options: Any
) -> Any:
    """:func:`kartoframe.optimize_dataset` as a dask graph: one task per rewritten unit, one
    commit.

    The dataset is loaded and planned now; computing the result rewrites each unit in
    its own task (on any scheduler: threads, processes, a ``distributed`` cluster) and
    commits once in a final task. If a task fails, the files the others wrote are
    deleted and nothing is committed.

    Parameters
    ----------
    dataset_uuid, store
        The dataset (the store is pickled into the graph).
    **options
        The keywords of :func:`~kartoframe.optimize_dataset` (``progress`` excepted).

    Returns
    -------
    dask.delayed.Delayed
        Computes to an :class:`~kartoframe.OptimizeResult`.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> store = "memory://optimize-delayed-example"
    >>> for day in range(2):
    ...     df = pd.DataFrame({"country": ["DE", "FR"], "units": [day, day]})
    ...     _ = kf.update_dataset_from_dataframes([df], store=store, dataset_uuid="sales",
    ...                                           partition_on=["country"])
    >>> kf.optimize_dataset_as_delayed("sales", store).compute().files_added
    2
    """
    from dask.delayed import delayed

    from kartoframe.execution.graph_delayed import optimize_graph

    args = optimize_arguments(options, delayed=True)
    st, plan, base, commit = prepared_optimize(dataset_uuid, store, args)
    settled = settled_without_work(st, plan, commit, dry_run=args["dry_run"])
    if settled is not None:  # a dry run, nothing to rewrite, or a retried step
        return delayed(settled, traverse=False)
    return optimize_graph(st, plan, base, commit)
