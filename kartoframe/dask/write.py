"""Dask DataFrames written as datasets: graph-based writes (plateau ``io.dask`` names).

dask is imported only when one of these functions runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kartoframe.errors import InvalidTypeError
from kartoframe.execution.write_resolve import (
    Front,
    store_target,
    update_target,
    written_extras,
)
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import any_serializer_arg, arguments_of, same_parameters
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import str_list
from kartoframe.plan.write_request import check_update_input

__all__ = [
    "store_dataset_from_ddf",
    "update_dataset_from_ddf",
]


def _check_ddf(ddf: object, allow_none: bool) -> None:
    from kartoframe.execution.dask_engine import dask_modules

    _, dd = dask_modules()
    if ddf is None and allow_none:
        return
    if not isinstance(ddf, dd.DataFrame):
        raise InvalidTypeError(
            f"ddf must be a dask.dataframe.DataFrame, got {type(ddf).__name__}"
            + (" (use store_dataframes_as_dataset for pandas frames)." if ddf is not None else ".")
        )


@fill
@same_parameters(sig.StoreDdf)
def store_dataset_from_ddf(*args: Any, **kwargs: Any) -> Any:
    """Write a dask DataFrame as a new dataset; returns a lazy object that commits once.

    Computing the result writes one task per dask partition (each writes its files and
    returns a small summary), then one final task validates the schemas of all partitions,
    merges the secondary indices and publishes the header. If any partition fails, the
    files of the others are deleted and nothing is committed.

    Parameters
    ----------
    ddf
        The data; each dask partition becomes one file per partition value (empty
        partitions write nothing).
    store
        Store URL, :class:`kartoframe.Store` or factory; pickled into the graph.
    dataset_uuid
        Name of the new dataset.
    $store_layout
    shuffle
        Shuffle rows on ``partition_on`` (and the hash bucket of ``bucket_by``) first, so
        each partition value gets at most ``num_buckets`` files instead of one per dask
        partition. Needs ``partition_on``.
    num_buckets
        Files per partition value with ``shuffle=True``.
    bucket_by
        Columns whose hash picks the bucket (default: all non-partition columns).
    df_serializer
        :class:`kartoframe.ParquetSerializer` or :class:`kartoframe.CsvSerializer`.
    repartition_ratio
        Divide the number of dask partitions by this before writing.
    schema_evolution
        ``"none"`` (default): all partitions must have the same schema. ``"add_columns"``:
        partitions may add nullable columns (see :func:`kartoframe.store_dataframes_as_dataset`).
    $dask_txn
    $new_merger

    $returns_delayed

    Raises
    ------
    DatasetExistsError
        The dataset exists and ``overwrite`` is False (checked now, and again at commit).

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd, kartoframe as kf
    >>> pdf = pd.DataFrame({"country": ["DE", "FR", "DE", "FR"], "units": [1, 2, 3, 4]})
    >>> ddf = dd.from_pandas(pdf, npartitions=2)
    >>> job = kf.store_dataset_from_ddf(ddf, "memory://ddf-write-example", "sales",
    ...                                 partition_on=["country"], shuffle=True)
    >>> job.compute().uuid
    'sales'
    >>> len(kf.read_dataset_metadata("sales", "memory://ddf-write-example").partitions)
    2
    """
    arguments = arguments_of(store_dataset_from_ddf, args, kwargs)
    _check_ddf(arguments["ddf"], allow_none=False)
    return _graph(arguments["ddf"], store_target(arguments), arguments)


def _graph(ddf: Any, front: Front, args: Mapping[str, Any]) -> Any:
    """The write graph (:func:`kartoframe.execution.dask_write.ddf_write_graph`) of a
    front; a retried step (``front.target`` None) computes to the dataset as it is.
    """
    from dask.delayed import delayed

    from kartoframe.execution.dask_write import ddf_write_graph

    serializer = any_serializer_arg(args["df_serializer"])
    st, target = front.store, front.target
    if target is None:
        return delayed(DatasetMetadataResult, pure=False)(front.uuid, st)
    if ddf is None:
        check_update_input(target, False, args.get("delete_scope"), args.get("metadata"))
    return ddf_write_graph(
        ddf,
        st,
        target,
        result=DatasetMetadataResult,
        bucket_by=str_list(args["bucket_by"], "bucket_by") if ddf is not None else [],
        serializer=serializer,
        sort_partitions_by=str_list(args["sort_partitions_by"], "sort_partitions_by"),
        shuffle=args["shuffle"],
        num_buckets=args["num_buckets"],
        repartition_ratio=args["repartition_ratio"],
        **written_extras(st, target, args),
    )


@fill
@same_parameters(sig.UpdateDdf)
def update_dataset_from_ddf(*args: Any, **kwargs: Any) -> Any:
    """Add a dask DataFrame to a dataset and/or delete partitions; lazy, one commit.

    The dataset is created if it does not exist. The header is read now (for
    ``delete_scope``, the partition keys and the indices); the commit checks that it did not
    change in between and raises :class:`~kartoframe.errors.CommitConflictError` otherwise.

    Parameters
    ----------
    ddf
        The rows to add, or None for a delete-only (or metadata-only) update.
    store, dataset_uuid
        The dataset.
    $update_common
    secondary_indices
        New indices (only for a new dataset); existing indices are always maintained.
    shuffle, num_buckets, bucket_by, repartition_ratio
        As in :func:`store_dataset_from_ddf`.
    table_name
        Must match the dataset's table.
    metadata_storage_format
        Format of a new dataset's header.
    schema_evolution
        ``"none"`` (default) or ``"add_columns"`` (new nullable columns allowed; see
        :func:`kartoframe.update_dataset_from_dataframes`).
    $dask_txn
    factory
        plateau's ``DatasetFactory`` instead of ``dataset_uuid`` and ``store``.

    $returns_delayed

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd, kartoframe as kf
    >>> pdf = pd.DataFrame({"country": ["DE", "FR"], "units": [1, 2]})
    >>> _ = kf.store_dataframes_as_dataset(store="memory://ddf-update-example",
    ...     dataset_uuid="sales", dfs=[pdf], partition_on=["country"])
    >>> new = dd.from_pandas(pd.DataFrame({"country": ["IT"], "units": [9]}), npartitions=1)
    >>> kf.update_dataset_from_ddf(new, "memory://ddf-update-example", "sales",
    ...     delete_scope=[{"country": "FR"}]).compute().uuid
    'sales'
    >>> sorted(kf.read_table("sales", "memory://ddf-update-example")["country"])
    ['DE', 'IT']
    """
    arguments = arguments_of(update_dataset_from_ddf, args, kwargs)
    _check_ddf(arguments["ddf"], allow_none=True)
    return _graph(arguments["ddf"], update_target(arguments), arguments)
