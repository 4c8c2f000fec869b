"""Datasets written from Spark DataFrames: Spark jobs write chunks, the driver commits once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kartoframe.errors import InvalidTypeError
from kartoframe.execution import spark_engine
from kartoframe.execution.spark_write import write_and_commit
from kartoframe.execution.write_resolve import (
    Front,
    store_target,
    update_target,
    written_extras,
)
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import arguments_of, same_parameters, serializer_arg
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import str_list
from kartoframe.plan.write_request import check_update_input

#: ``pyspark.sql.DataFrame`` / ``SparkSession`` (pyspark is imported by the engine only).
DataFrame = Any
SparkSession = Any


__all__ = ["store_dataset_from_sdf", "update_dataset_from_sdf"]


def _check_sdf(sdf: object, name: str = "sdf") -> None:
    if not hasattr(sdf, "mapInArrow") or not hasattr(sdf, "schema"):
        raise InvalidTypeError(f"{name} must be a pyspark.sql.DataFrame, got {type(sdf).__name__}.")


def _commit(sdf: DataFrame | None, front: Front, args: Mapping[str, Any]) -> DatasetMetadataResult:
    """Run the Spark engine (:func:`~kartoframe.execution.spark_write.write_and_commit`)."""
    serializer = serializer_arg(args["df_serializer"])
    st, target = front.store, front.target
    if target is not None:
        check_update_input(target, sdf is not None, args.get("delete_scope"), args.get("metadata"))
        write_and_commit(
            sdf,
            st,
            target,
            serializer=serializer,
            sort_partitions_by=str_list(args["sort_partitions_by"], "sort_partitions_by"),
            repartition=args["repartition"],
            **written_extras(st, target, args),
        )
    return DatasetMetadataResult(front.uuid, st)


@fill
@same_parameters(sig.StoreSdf)
def store_dataset_from_sdf(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Write a Spark DataFrame as a new dataset, committing once on the driver.

    Executors write the Parquet files (``mapInArrow`` over the DataFrame's partitions,
    hash-partitioned on ``partition_on`` first) and return one small record per file;
    the driver validates the schemas of all files, builds the secondary indices and
    publishes the header. If the job or the commit fails, the files written for it are
    deleted and an existing dataset is unchanged.

    Parameters
    ----------
    sdf
        The data. Spark ``timestamp`` columns are stored as UTC instants,
        ``timestamp_ntz`` as naive timestamps (both in microseconds).
    store
        Store URL, :class:`kartoframe.Store` or factory (not ``memory://``).
    dataset_uuid
        Name of the dataset.
    $store_layout
    df_serializer
        :class:`kartoframe.ParquetSerializer` (compression, row-group size).
    schema_evolution
        ``"none"`` (default) or ``"add_columns"``, as in
        :func:`kartoframe.store_dataframes_as_dataset` (one DataFrame has one schema, so
        this only matters for the commit record); see ``docs/schema.md``.
    repartition
        Hash-partition the rows on ``partition_on`` before writing, so that each
        partition value is written as one file per flush (default). False keeps the
        DataFrame's partitioning: one file per Spark partition and value.
    app_id, app_version
        Application transaction id (as in Delta): if the dataset already records
        ``app_version`` (or a higher one) for ``app_id``, nothing is written, so a
        retried pipeline step commits once.
    commit_info
        User data recorded with the commit in the dataset's history.

    Returns
    -------
    DatasetMetadataResult

    Raises
    ------
    DatasetExistsError
        The dataset exists and ``overwrite`` is False.
    NullPartitionValueError, SchemaError, InvalidInputError
        Invalid data (raised on the driver, also when an executor found it).
    SparkPythonWorkerError
        A local session's Python workers cannot import kartoframe (checked before any
        file is written; see :func:`local_session`).

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> kfs.store_dataset_from_sdf(sdf, "file:///data", "sales",
    ...                            partition_on=["country"]).uuid  # doctest: +SKIP
    'sales'
    """
    arguments = arguments_of(store_dataset_from_sdf, args, kwargs)
    spark_engine.require_pyspark()
    _check_sdf(arguments["sdf"])
    return _commit(
        arguments["sdf"], store_target(arguments, check_store=spark_engine.check_store), arguments
    )


@same_parameters(sig.UpdateSdf)
def update_dataset_from_sdf(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Add a Spark DataFrame's rows to a dataset and/or delete partitions, in one commit.

    Creates the dataset if it does not exist. The DataFrame's schema is checked against
    the stored one before Spark runs; tz-aware columns are stored in the dataset's
    time zone. All existing secondary indices are maintained.

    Parameters
    ----------
    sdf
        Rows to add, or None for a delete/metadata-only update.
    store
        Store URL, :class:`kartoframe.Store` or factory (not ``memory://``).
    dataset_uuid
        The dataset.
    delete_scope
        ``[{column: value, ...}, ...]``: partitions matching any dict are removed
        (columns must be partition keys or indexed).
    metadata
        User metadata merged over the existing metadata.
    df_serializer
        :class:`kartoframe.ParquetSerializer`.
    default_metadata_version
        Must be 4.
    partition_on
        Must equal the dataset's partition keys (default: the dataset's).
    sort_partitions_by
        Sort each written file by these columns.
    secondary_indices
        Indices to create (a new dataset) or a subset of the existing ones.
    table_name
        Must match the dataset's table.
    metadata_storage_format
        Format of a new dataset.
    schema_evolution
        ``"none"`` (default): the DataFrame must match the stored schema.
        ``"add_columns"``: it may add nullable columns and widen decimals; the change is
        recorded in the header (see :func:`kartoframe.schema_history`). Files written
        before read the new columns as nulls. Dropping or retyping a column is always
        refused. Checked on the driver before Spark runs anything.
    repartition
        See :func:`store_dataset_from_sdf`.
    app_id, app_version, commit_info
        As in :func:`store_dataset_from_sdf`.

    Returns
    -------
    DatasetMetadataResult
    """
    arguments = arguments_of(update_dataset_from_sdf, args, kwargs)
    spark_engine.require_pyspark()
    if arguments["sdf"] is not None:
        _check_sdf(arguments["sdf"])
    return _commit(
        arguments["sdf"], update_target(arguments, check_store=spark_engine.check_store), arguments
    )
