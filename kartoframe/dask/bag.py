"""plateau's ``dask.bag`` API on kartoframe's plans.

``read_dataset_as_dataframe_bag`` is a bag whose items are the DataFrames of
:func:`~kartoframe.dask.delayed.read_dataset_as_delayed` (one per planned read task);
``store_bag_as_dataset`` writes every bag partition in one task and commits once;
``build_dataset_indices__bag`` reads the index columns of each file in its own task and
commits the rebuilt indices in one final task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kartoframe.dask.delayed import read_dataset_as_delayed, store_delayed_as_dataset
from kartoframe.errors import InvalidTypeError
from kartoframe.execution.index_build import plan_index_build
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import StoreInput, arguments_of, dataset_args, same_parameters
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import str_list

__all__ = [
    "build_dataset_indices__bag",
    "read_dataset_as_dataframe_bag",
    "store_bag_as_dataset",
]


def _partition_size(partition_size: object) -> int | None:
    if partition_size is None:
        return None
    from kartoframe.execution.dask_engine import check_positive_int

    return check_positive_int(partition_size, "partition_size")


@fill
@same_parameters(sig.ReadBag)
def read_dataset_as_dataframe_bag(*args: Any, **kwargs: Any) -> Any:
    """A ``dask.bag.Bag`` of DataFrames, one per planned read task.

    Parameters are those of :func:`kartoframe.read_dataset_as_delayed`; ``partition_size``
    groups that many DataFrames into one bag partition.

    $examples
    >>> df = pd.DataFrame({"p": [1, 2], "x": [3, 4]})
    >>> _ = kf.store_dataframes_as_dataset("memory://bag-ex", "ds", [df], partition_on=["p"])
    >>> bag = kf.read_dataset_as_dataframe_bag("ds", "memory://bag-ex")
    >>> sorted(len(d) for d in bag.compute(scheduler="sync"))
    [1, 1]
    """
    from kartoframe.execution.graph_delayed import bag_of

    options = arguments_of(read_dataset_as_dataframe_bag, args, kwargs)
    size = _partition_size(options.pop("partition_size"))
    return bag_of(read_dataset_as_delayed(**options), size)


@fill
@same_parameters(sig.StoreBag)
def store_bag_as_dataset(*args: Any, **kwargs: Any) -> Any:
    """Write a bag of DataFrames as a new dataset: one task per bag partition, one commit.

    Items may be DataFrames, ``None`` or ``{"data": df}`` dicts (as in plateau). Parameters
    as in :func:`kartoframe.store_delayed_as_dataset`.

    $returns_delayed
    """
    from dask import bag as db

    options = arguments_of(store_bag_as_dataset, args, kwargs)
    bag = options.pop("bag")
    if not isinstance(bag, db.Bag):
        raise InvalidTypeError(f"bag must be a dask.bag.Bag, got {type(bag).__name__}.")
    return store_delayed_as_dataset(list(bag.to_delayed()), **options)  # type: ignore[no-untyped-call]


@fill
def build_dataset_indices__bag(
    store: StoreInput | None,
    dataset_uuid: str | None,
    columns: Sequence[str],
    partition_size: int | None = None,
    factory: Any = None,
) -> Any:
    """A ``Delayed`` (re)building secondary indices: one task per file, one commit.

    Same result as :func:`kartoframe.build_dataset_indices`; a write to the dataset between
    building the graph and its commit raises :class:`kartoframe.CommitConflictError`.

    Parameters
    ----------
    store, dataset_uuid, factory
        The dataset.
    columns
        Columns to index (not partition keys).
    partition_size
        Accepted for plateau compatibility (files per task is always one).

    $returns_delayed
    """
    from kartoframe.execution.graph_delayed import index_graph

    _partition_size(partition_size)
    uuid, st = dataset_args(dataset_uuid, store, factory)
    cols = str_list(columns, "columns")
    loaded, all_cols, plan = plan_index_build(st, uuid, cols)
    return index_graph(st, loaded, plan, all_cols, cols, DatasetMetadataResult)
