"""Eager and iterator writes (plateau ``io.eager`` / ``io.iter`` names and keywords).

Each function checks its arguments and resolves its request against the dataset once
(:func:`~kartoframe.execution.write_resolve.store_target` / ``update_target``, shared by every
engine), runs the chunk kernel over its frames and commits once
(:func:`~kartoframe.execution.eager_write.write_frames`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from kartoframe.errors import (
    DatasetNotFoundError,
    EmptyInputError,
    InvalidTypeError,
)
from kartoframe.execution.eager_write import (
    commit_empty,
    commit_partitions,
    delete_scope_labels,
    write_frames,
    write_partition,
)
from kartoframe.execution.write import (
    DataSerializer,
)
from kartoframe.execution.write_resolve import Front, store_target, update_target
from kartoframe.format.commit_args import CommitOptions
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import (
    StoreInput,
    any_serializer_arg,
    arguments_of,
    dataset_args,
    same_parameters,
)
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult, MetaPartition
from kartoframe.plan.arguments import check_metadata_version, str_list
from kartoframe.plan.write_request import MetadataArg, WriteRequest, resolve_metadata, resolve_write
from kartoframe.storage.resolve import load_existing

__all__ = [
    "DatasetMetadataResult",
    "MetaPartition",
    "commit_dataset",
    "create_empty_dataset_header",
    "delete_scope_labels",
    "store_dataframes_as_dataset",
    "store_dataframes_as_dataset__iter",
    "update_dataset_from_dataframes",
    "update_dataset_from_dataframes__iter",
    "write_single_partition",
]


def _frames(dfs: object, name: str) -> list[Any]:
    if isinstance(dfs, pd.DataFrame):
        raise InvalidTypeError(f"{name} must be a list of DataFrames; wrap a single frame as [df].")
    if not isinstance(dfs, list | tuple):
        raise InvalidTypeError(f"{name} must be a list of DataFrames, got {type(dfs).__name__}.")
    return list(dfs)


def _write(front: Front, frames: Iterable[Any], args: Mapping[str, Any]) -> DatasetMetadataResult:
    """Run the eager engine (:func:`~kartoframe.execution.eager_write.write_frames`)."""
    serializer = any_serializer_arg(args["df_serializer"])
    if front.target is not None:
        write_frames(
            front.store,
            front.target,
            frames,
            serializer=serializer,
            sort_partitions_by=str_list(args["sort_partitions_by"], "sort_partitions_by"),
            metadata=args["metadata"],
            delete_scope=args.get("delete_scope"),
        )
    return DatasetMetadataResult(front.uuid, front.store)


@same_parameters(sig.StoreFramesIter)
def store_dataframes_as_dataset__iter(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Write frames from an iterable as a new dataset, committing once at the end.

    Each frame is written as soon as it is produced (one file per frame and partition
    value), so memory stays bounded by one frame. See
    :func:`store_dataframes_as_dataset` for the parameters.
    """
    arguments = arguments_of(store_dataframes_as_dataset__iter, args, kwargs)
    return _write(store_target(arguments), arguments["df_generator"], arguments)


@fill
@same_parameters(sig.StoreFrames)
def store_dataframes_as_dataset(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Write a list of DataFrames as a new dataset.

    Parameters
    ----------
    $store
    dataset_uuid
        Name of the dataset (``[A-Za-z0-9+_-]+``).
    dfs
        List of DataFrames; each becomes one file per partition value.
    $store_layout
    df_serializer
        :class:`kartoframe.ParquetSerializer` (compression, row-group size), or
        :class:`kartoframe.CsvSerializer` for CSV files as plateau's.
    schema_evolution
        ``"none"`` (default): all frames must have the same schema. ``"add_columns"``:
        frames may add nullable columns (missing in other frames, they read as nulls);
        see ``docs/schema.md``.
    $txn

    Returns
    -------
    $dataset_result

    Raises
    ------
    DatasetExistsError
        The dataset exists and ``overwrite`` is False.
    EmptyInputError
        ``dfs`` is empty.
    SchemaError
        Frames have incompatible schemas.

    $examples
    >>> df = pd.DataFrame({"country": ["DE", "FR"], "product": [1, 2], "units": [5, 7]})
    >>> kf.store_dataframes_as_dataset(store="memory://store-example", dataset_uuid="sales",
    ...     dfs=[df], partition_on=["country"], secondary_indices=["product"]).uuid
    'sales'
    """
    arguments = arguments_of(store_dataframes_as_dataset, args, kwargs)
    frames = _frames(arguments.pop("dfs"), "dfs")
    if not frames:
        raise EmptyInputError(
            "Cannot store empty datasets, partition_list must not be empty if in store mode."
        )
    return store_dataframes_as_dataset__iter(frames, **arguments)


@same_parameters(sig.UpdateFramesIter)
def update_dataset_from_dataframes__iter(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Add frames from an iterable (and delete ``delete_scope``) in one commit.

    Creates the dataset if it does not exist. Parameters as in
    :func:`update_dataset_from_dataframes`.
    """
    arguments = arguments_of(update_dataset_from_dataframes__iter, args, kwargs)
    return _write(update_target(arguments), arguments["df_generator"], arguments)


@fill
@same_parameters(sig.UpdateFrames)
def update_dataset_from_dataframes(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Add DataFrames to a dataset and/or delete partitions, in one atomic commit.

    Parameters
    ----------
    df_list
        Frames to add (may be empty for a delete-only update).
    $store
    dataset_uuid
        The dataset; created if missing.
    $update_common
    secondary_indices
        Must be a subset of the existing indices; all existing indices are maintained.
    table_name
        Must match the dataset's table.
    metadata_storage_format
        Format for a new dataset; an existing dataset keeps its format.
    schema_evolution
        ``"none"`` (default): frames must match the stored schema. ``"add_columns"``:
        frames may add nullable columns and widen decimals; the change is recorded in
        the header (see :func:`kartoframe.schema_history`). Files written before read
        the new columns as nulls. Dropping or retyping a column is always refused.
    $txn
    $factory

    Returns
    -------
    DatasetMetadataResult
    """
    arguments = arguments_of(update_dataset_from_dataframes, args, kwargs)
    frames = _frames(arguments.pop("df_list"), "df_list")
    return update_dataset_from_dataframes__iter(frames, **arguments)


@same_parameters(sig.CreateEmpty)
def create_empty_dataset_header(*args: Any, **kwargs: Any) -> DatasetMetadataResult:
    """Create a dataset with a schema and no partitions.

    Like plateau, the header lists no ``partitions`` (an *implicit* dataset): files
    written with :func:`write_single_partition` are found by listing until a
    :func:`commit_dataset` makes the partitions explicit.

    Parameters
    ----------
    schema
        A :class:`pyarrow.Schema` or an (empty or example) DataFrame.
    app_id, app_version, commit_info
        As in :func:`store_dataframes_as_dataset`.
    """
    arguments = arguments_of(create_empty_dataset_header, args, kwargs)
    st, uuid, target = store_target(arguments)
    if target is not None:
        meta = resolve_metadata(arguments["metadata"], {})
        commit_empty(st, target, arguments["schema"], target.partition_on, metadata=meta)
    return DatasetMetadataResult(uuid, st)


def write_single_partition(
    store: StoreInput | None,
    dataset_uuid: str | None,
    data: pd.DataFrame,
    df_serializer: DataSerializer | None = None,
    metadata_version: int = 4,
    partition_on: Sequence[str] | None = None,
    secondary_indices: Sequence[str] | None = None,
    table_name: str | None = None,
    factory: Any = None,
) -> MetaPartition:
    """Write data files for an existing dataset without committing them.

    The frame is validated against the stored schema before anything is written. Pass
    the result to :func:`commit_dataset` (``new_partitions``) to publish it.
    """
    uuid, st = dataset_args(dataset_uuid, store, factory, uuid_first=True)
    check_metadata_version(metadata_version)
    base = load_existing(st, uuid)
    if base is None:
        raise DatasetNotFoundError(uuid, st.url)
    request = WriteRequest(
        uuid,
        "append",
        tuple(partition_on) if partition_on is not None else None,
        tuple(str_list(secondary_indices, "secondary_indices")),
        table_name or "",
    )
    serializer = any_serializer_arg(df_serializer)
    return MetaPartition(write_partition(st, resolve_write(request, base), data, serializer))


def commit_dataset(
    store: StoreInput | None = None,
    dataset_uuid: str | None = None,
    new_partitions: Sequence[MetaPartition] | None = None,
    delete_scope: Sequence[Mapping[str, Any]] | None = None,
    metadata: MetadataArg = None,
    metadata_merger: Callable[..., Any] | None = None,
    default_metadata_version: int = 4,
    partition_on: Sequence[str] | None = None,
    secondary_indices: Sequence[str] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
    factory: Any = None,
) -> DatasetMetadataResult:
    """Commit partitions written by :func:`write_single_partition`.

    At least one of ``new_partitions``, ``delete_scope`` or ``metadata`` is required.
    Committing makes an implicit dataset explicit. ``app_id``, ``app_version`` and
    ``commit_info`` as in :func:`store_dataframes_as_dataset`.
    """
    uuid, st = dataset_args(dataset_uuid, store, factory, uuid_first=True)
    check_metadata_version(default_metadata_version)
    if not new_partitions and delete_scope is None and metadata is None:
        raise EmptyInputError("commit_dataset needs new_partitions, delete_scope or metadata.")
    parts = list(new_partitions or [])
    bad = [p for p in parts if not isinstance(p, MetaPartition)]
    if bad:
        raise InvalidTypeError("new_partitions must be MetaPartitions from write_single_partition.")
    commit = CommitOptions.of(app_id, app_version, commit_info)
    base = load_existing(st, uuid)
    if base is None:
        raise DatasetNotFoundError(uuid, st.url)
    if commit.recorded_in(base.metadata):
        return DatasetMetadataResult(uuid, st)
    md = commit_partitions(
        st,
        base,
        [p.result for p in parts],
        partition_on=partition_on,
        secondary_indices=str_list(secondary_indices, "secondary_indices"),
        delete_scope=delete_scope,
        metadata=resolve_metadata(metadata, base.metadata.metadata),
        commit=commit,
    )
    return DatasetMetadataResult(md.uuid, st)
