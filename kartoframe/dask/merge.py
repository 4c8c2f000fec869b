"""Row-level upserts from dask: :func:`merge_dataset_from_ddf`."""

from __future__ import annotations

from typing import Any

from kartoframe.api.merge import merge_dataset
from kartoframe.front.args import arguments_of, same_parameters
from kartoframe.front.merge import merge_delayed

__all__ = ["merge_dataset_from_ddf"]


@same_parameters(merge_dataset)
def merge_dataset_from_ddf(*args: Any, **kwargs: Any) -> Any:
    """:func:`~kartoframe.merge_dataset` as a dask graph: one task per candidate file, one commit.

    The source (a dask DataFrame: the change set, small beside the dataset) is computed
    now, and the dataset loaded and the candidate files found; computing the result
    merges into each candidate file in its own task (any scheduler: threads, processes, a
    ``distributed`` cluster; each task holds the source and one file) and writes the
    inserts and commits once in a final task. If a task fails, the files the others wrote
    are deleted and nothing is committed. Parameters as in :func:`~kartoframe.merge_dataset`.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a :class:`~kartoframe.MergeResult`.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd, kartoframe as kf
    >>> store = "memory://merge-ddf-example"
    >>> df = pd.DataFrame({"day": [1, 2], "id": [1, 2], "v": [1.0, 2.0]})
    >>> _ = kf.store_dataframes_as_dataset(store=store, dataset_uuid="t", dfs=[df],
    ...                                    partition_on=["day"])
    >>> changes = dd.from_pandas(pd.DataFrame({"day": [2], "id": [2], "v": [-2.0]}),
    ...                          npartitions=1)
    >>> kf.merge_dataset_from_ddf(changes, store, "t", on="id").compute().rows_updated
    1
    """
    return merge_delayed(arguments_of(merge_dataset, args, kwargs))
