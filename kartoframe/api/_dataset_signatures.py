"""The keyword lists of the dataset fronts (plateau's and kartothek's API), each keyword
declared once per type and default.

The read and write functions of every engine take largely the same keywords in different
orders. A group below declares some keywords (name, type, default) once; a function's
signature source is a dataclass made of its groups, which
:func:`kartoframe.api._args.same_parameters` gives the public function: mypy
(``ParamSpec``), :func:`inspect.signature`, ``help()`` and Sphinx then see exactly these
parameters. The cube verbs do the same in :mod:`kartoframe.api._cube_signatures`.

Dataclass fields come in reverse MRO order: a source lists its groups **last first**
(``class ReadDelayed(_Dispatch, _Factory, _ReadOptions, _Dataset)`` takes
``dataset_uuid, store, columns, ..., predicates, factory, dispatch_by``); keyword-only
groups (``kw_only=True``) go after all the others, in the same order.
``tests/api/test_public_signatures.py`` pins every resulting signature.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.api._args import StoreInput
from kartoframe.execution.write import DataSerializer, ParquetSerializer
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.write_request import MetadataArg

#: ``pyspark.sql.DataFrame`` (pyspark is imported by the Spark engine only).
DataFrame = Any

# -- reads -------------------------------------------------------------------------------


@dataclasses.dataclass
class _Dataset:
    dataset_uuid: str | None = None
    store: StoreInput | None = None


@dataclasses.dataclass
class _ReadOptions:
    columns: Sequence[str] | None = None
    predicate_pushdown_to_io: bool = True
    categoricals: Sequence[str] | None = None
    dates_as_object: bool = True
    predicates: object = None


@dataclasses.dataclass
class _Dispatch:
    dispatch_by: Sequence[str] | None = None


@dataclasses.dataclass
class _Version:
    version: int | None = None
    as_of: object = None


@dataclasses.dataclass
class _Factory:
    factory: Any = None


@dataclasses.dataclass(kw_only=True)
class _KwProgress:
    progress: bool = False


@dataclasses.dataclass(kw_only=True)
class _KwVersion:
    version: int | None = None
    as_of: object = None


@dataclasses.dataclass(kw_only=True)
class _KwFactory:
    factory: Any = None


@dataclasses.dataclass(kw_only=True)
class _KwDdfOptions:  # read_dataset_as_ddf's own order, all keyword-only
    table: str | None = None
    columns: Sequence[str] | None = None
    predicates: object = None
    dispatch_by: Sequence[str] | None = None
    categoricals: Sequence[str] | None = None
    dates_as_object: bool = True
    predicate_pushdown_to_io: bool = True
    dask_index_on: str | None = None


@dataclasses.dataclass
class ReadTable(_KwFactory, _KwVersion, _KwProgress, _ReadOptions, _Dataset):
    pass


@dataclasses.dataclass
class ReadFrames(_Factory, _Version, _Dispatch, _ReadOptions, _Dataset):
    pass


@dataclasses.dataclass
class ReadDelayed(_Dispatch, _Factory, _ReadOptions, _Dataset):
    pass


@dataclasses.dataclass
class ReadBag(ReadDelayed):
    partition_size: int | None = None


@dataclasses.dataclass
class ReadDdf(_KwFactory, _KwVersion, _KwDdfOptions, _Dataset):
    pass


# -- writes: the data and the dataset ----------------------------------------------------


@dataclasses.dataclass
class _Frames:
    dfs: Sequence[pd.DataFrame]


@dataclasses.dataclass
class _FrameList:
    df_list: Sequence[pd.DataFrame]


@dataclasses.dataclass
class _Generator:
    df_generator: Iterable[Any]


@dataclasses.dataclass
class _Tasks:
    delayed_tasks: Sequence[Any]


@dataclasses.dataclass
class _Bag:
    bag: Any


@dataclasses.dataclass
class _Ddf:
    ddf: Any


@dataclasses.dataclass
class _Sdf:
    sdf: DataFrame


@dataclasses.dataclass
class _UpdateSdf:
    sdf: DataFrame | None


@dataclasses.dataclass
class _NewDataset:  # store_* (required)
    store: StoreInput
    dataset_uuid: str


@dataclasses.dataclass
class _SomeDataset:  # update_* (optional: plateau's factory= may name it)
    store: StoreInput | None = None
    dataset_uuid: str | None = None


@dataclasses.dataclass
class _Schema:
    schema: pa.Schema | pd.DataFrame


# -- writes: the options -----------------------------------------------------------------


@dataclasses.dataclass
class _Metadata:
    metadata: MetadataArg = None


@dataclasses.dataclass
class _PartitionOn:
    partition_on: Sequence[str] | None = None


@dataclasses.dataclass
class _Overwrite:
    overwrite: bool = False


@dataclasses.dataclass
class _Indices:
    secondary_indices: Sequence[str] | None = None


@dataclasses.dataclass
class _PartitionIndices(_Indices, _PartitionOn):
    pass


@dataclasses.dataclass
class _Format:
    metadata_storage_format: str = "json"
    metadata_version: int = 4


@dataclasses.dataclass
class _TableName:
    table_name: str = "table"


@dataclasses.dataclass
class _TableFormat(_TableName):  # table_name, metadata_storage_format
    metadata_storage_format: str = "json"


@dataclasses.dataclass
class _SortBy:
    sort_partitions_by: Sequence[str] | None = None


@dataclasses.dataclass
class _Evolution:
    schema_evolution: SchemaEvolution = "none"


@dataclasses.dataclass
class _Txn:
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


@dataclasses.dataclass
class _Serializer:
    df_serializer: DataSerializer | None = None


@dataclasses.dataclass
class _ParquetSerializer:
    df_serializer: ParquetSerializer | None = None


@dataclasses.dataclass
class _Layout(_Overwrite, _Serializer, _PartitionOn, _Metadata):
    pass


@dataclasses.dataclass
class _Merger:
    metadata_merger: Callable[..., Any] | None = None


@dataclasses.dataclass
class _UpdateLayout:  # what an update may restate of the dataset
    default_metadata_version: int = 4
    partition_on: Sequence[str] | None = None
    sort_partitions_by: Sequence[str] | None = None
    secondary_indices: Sequence[str] | None = None


@dataclasses.dataclass
class _DeleteScope:
    delete_scope: Sequence[Mapping[str, Any]] | None = None


@dataclasses.dataclass
class _Update(_UpdateLayout, _Merger, _Serializer, _Metadata, _DeleteScope):
    pass


@dataclasses.dataclass
class _Shuffle:
    shuffle: bool = False
    num_buckets: int = 1
    bucket_by: Sequence[str] | None = None


@dataclasses.dataclass
class _RepartitionRatio:
    repartition_ratio: float | None = None


@dataclasses.dataclass
class _Table:  # plateau's dask name of table_name
    table: str | None = None


@dataclasses.dataclass
class _DelayedStore:  # plateau's delayed and bag writes
    store: StoreInput
    dataset_uuid: str | None = None
    metadata: Any = None
    df_serializer: DataSerializer | None = None
    overwrite: bool = False
    metadata_merger: Callable[..., Any] | None = None
    metadata_version: int = 4
    partition_on: Sequence[str] | None = None
    metadata_storage_format: str = "json"


@dataclasses.dataclass
class _AnyMetadata:
    metadata: Any = None


@dataclasses.dataclass(kw_only=True)
class _KwSpark:  # Spark's writes take these by keyword only
    repartition: bool = True
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


# -- the write fronts (groups last first) ------------------------------------------------


@dataclasses.dataclass
class StoreFrames(
    _Txn, _Evolution, _SortBy, _TableName, _Format, _Indices, _Layout, _Frames, _NewDataset
):
    pass


@dataclasses.dataclass
class StoreFramesIter(
    _Txn, _Evolution, _SortBy, _TableName, _Indices, _Format, _Layout, _NewDataset, _Generator
):
    pass


@dataclasses.dataclass
class UpdateFrames(_Factory, _Txn, _Evolution, _TableFormat, _Update, _SomeDataset, _FrameList):
    pass


@dataclasses.dataclass
class UpdateFramesIter(_Factory, _Txn, _Evolution, _TableFormat, _Update, _SomeDataset, _Generator):
    pass


@dataclasses.dataclass
class CreateEmpty(
    _Txn, _TableName, _Format, _Overwrite, _Metadata, _PartitionOn, _Schema, _NewDataset
):
    pass


@dataclasses.dataclass
class StoreDelayed(_SortBy, _Indices, _TableName, _DelayedStore, _Tasks):
    pass


@dataclasses.dataclass
class UpdateDelayed(
    _TableFormat,
    _Factory,
    _UpdateLayout,
    _Merger,
    _Serializer,
    _AnyMetadata,
    _DeleteScope,
    _SomeDataset,
    _Tasks,
):
    pass


@dataclasses.dataclass
class StoreBag(_SortBy, _TableName, _Indices, _DelayedStore, _Bag):
    pass


@dataclasses.dataclass
class StoreDdf(
    _Merger,
    _Table,
    _Txn,
    _Evolution,
    _RepartitionRatio,
    _Format,
    _Serializer,
    _TableName,
    _Overwrite,
    _Metadata,
    _SortBy,
    _Shuffle,
    _PartitionIndices,
    _NewDataset,
    _Ddf,
):
    pass


@dataclasses.dataclass
class UpdateDdf(
    _Factory,
    _Table,
    _Txn,
    _Evolution,
    _RepartitionRatio,
    _TableFormat,
    _Shuffle,
    _Update,
    _SomeDataset,
    _Ddf,
):
    pass


@dataclasses.dataclass
class StoreSdf(
    _KwSpark,
    _Evolution,
    _SortBy,
    _TableName,
    _Format,
    _ParquetSerializer,
    _Overwrite,
    _Metadata,
    _PartitionIndices,
    _NewDataset,
    _Sdf,
):
    pass


@dataclasses.dataclass
class UpdateSdf(
    _KwSpark,
    _Evolution,
    _TableFormat,
    _UpdateLayout,
    _ParquetSerializer,
    _Metadata,
    _DeleteScope,
    _NewDataset,
    _UpdateSdf,
):
    pass
