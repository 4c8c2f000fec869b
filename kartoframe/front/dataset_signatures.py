"""The keyword lists of the dataset fronts (plateau's and kartothek's API), written once.

The reads and writes of every engine take mostly the same keywords, in different orders.
A group declares some keywords (name, type, default) once; a front's signature source
composes its groups (:class:`~kartoframe.front.args.Keywords` dataclasses) and
:func:`~kartoframe.front.args.same_parameters` gives it to the public function, so mypy,
:func:`inspect.signature`, ``help()`` and Sphinx see exactly these parameters. Fields
come in reverse MRO order: a source lists its groups **last first**, then declares its
own last keywords (``kw_only=True``: its own keywords are keyword-only).
``tests/api/test_public_signatures.py`` pins every resulting signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.execution.write import DataSerializer, ParquetSerializer
from kartoframe.format.schema import SchemaEvolution
from kartoframe.front.args import Keywords, StoreInput
from kartoframe.plan.write_request import MetadataArg

#: ``pyspark.sql.DataFrame`` (pyspark is imported by the Spark engine only).
DataFrame = Any

# -- reads -------------------------------------------------------------------------------


class _Dataset(Keywords):
    dataset_uuid: str | None = None
    store: StoreInput | None = None


class _ReadOptions(Keywords):
    columns: Sequence[str] | None = None
    predicate_pushdown_to_io: bool = True
    categoricals: Sequence[str] | None = None
    dates_as_object: bool = True
    predicates: object = None


class _Dispatch(Keywords):
    dispatch_by: Sequence[str] | None = None


class _Factory(Keywords):
    factory: Any = None


class ReadTable(_ReadOptions, _Dataset, kw_only=True):
    progress: bool = False
    version: int | None = None
    as_of: object = None
    factory: Any = None


class ReadFrames(_Dispatch, _ReadOptions, _Dataset):
    version: int | None = None
    as_of: object = None
    factory: Any = None


class ReadDelayed(_Dispatch, _Factory, _ReadOptions, _Dataset):
    pass


class ReadBag(ReadDelayed):
    partition_size: int | None = None


class ReadDdf(_Dataset, kw_only=True):  # its own order, all by keyword
    table: str | None = None
    columns: Sequence[str] | None = None
    predicates: object = None
    dispatch_by: Sequence[str] | None = None
    categoricals: Sequence[str] | None = None
    dates_as_object: bool = True
    predicate_pushdown_to_io: bool = True
    dask_index_on: str | None = None
    version: int | None = None
    as_of: object = None
    factory: Any = None


# -- writes ------------------------------------------------------------------------------


class _NewDataset(Keywords):  # store_*: both required
    store: StoreInput
    dataset_uuid: str


class _SomeDataset(Keywords):  # update_*: plateau's factory= may name it
    store: StoreInput | None = None
    dataset_uuid: str | None = None


class _Metadata(Keywords):
    metadata: MetadataArg = None


class _MetadataOverwrite(_Metadata):
    overwrite: bool = False


class _Layout(_Metadata):
    partition_on: Sequence[str] | None = None
    df_serializer: DataSerializer | None = None
    overwrite: bool = False


class _PartitionOn(Keywords):
    partition_on: Sequence[str] | None = None


class _PartitionIndices(_PartitionOn):
    secondary_indices: Sequence[str] | None = None


class _Indices(Keywords):
    secondary_indices: Sequence[str] | None = None


class _SortBy(Keywords):
    sort_partitions_by: Sequence[str] | None = None


class _Format(Keywords):
    metadata_storage_format: str = "json"
    metadata_version: int = 4


class _TableName(Keywords):
    table_name: str = "table"


class _TableFormat(_TableName):
    metadata_storage_format: str = "json"


class _Evolution(Keywords):
    schema_evolution: SchemaEvolution = "none"


class _Txn(Keywords):
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


class _Serializer(Keywords):
    df_serializer: DataSerializer | None = None


class _ParquetSerializer(Keywords):
    df_serializer: ParquetSerializer | None = None


class _DeleteScope(Keywords):
    delete_scope: Sequence[Mapping[str, Any]] | None = None


class _UpdateLayout(Keywords):  # what an update may restate of the dataset
    default_metadata_version: int = 4
    partition_on: Sequence[str] | None = None
    sort_partitions_by: Sequence[str] | None = None
    secondary_indices: Sequence[str] | None = None


class _Merger(Keywords):
    metadata_merger: Callable[..., Any] | None = None


class _UpdateOptions(_UpdateLayout, _Merger, _Serializer):
    pass


class _Update(_UpdateOptions, _Metadata, _DeleteScope):
    pass


class _UpdateTail(_Txn, _Evolution, _TableFormat):
    pass


class _StoreTail(_TableName):
    sort_partitions_by: Sequence[str] | None = None
    schema_evolution: SchemaEvolution = "none"


class _Shuffle(Keywords):
    shuffle: bool = False
    num_buckets: int = 1
    bucket_by: Sequence[str] | None = None


class _RepartitionRatio(Keywords):
    repartition_ratio: float | None = None


class _DaskTail(_Txn, _Evolution, _RepartitionRatio):
    table: str | None = None  # plateau's dask name of table_name


class _DelayedStore(Keywords):  # plateau's delayed and bag writes
    store: StoreInput
    dataset_uuid: str | None = None
    metadata: Any = None
    df_serializer: DataSerializer | None = None
    overwrite: bool = False
    metadata_merger: Callable[..., Any] | None = None
    metadata_version: int = 4
    partition_on: Sequence[str] | None = None
    metadata_storage_format: str = "json"


class _KwSpark(Keywords, kw_only=True):  # Spark's writes take these by keyword only
    repartition: bool = True
    app_id: str | None = None
    app_version: int | None = None
    commit_info: Mapping[str, Any] | None = None


# the first parameter: the data


class _Frames(Keywords):
    dfs: Sequence[pd.DataFrame]


class _FrameList(Keywords):
    df_list: Sequence[pd.DataFrame]


class _Generator(Keywords):
    df_generator: Iterable[Any]


class _Tasks(Keywords):
    delayed_tasks: Sequence[Any]


class _Bag(Keywords):
    bag: Any


class _Ddf(Keywords):
    ddf: Any


class _Sdf(Keywords):
    sdf: DataFrame


class _UpdateSdf(Keywords):
    sdf: DataFrame | None


class _Schema(Keywords):
    schema: pa.Schema | pd.DataFrame


class _AnyMetadata(Keywords):
    metadata: Any = None


# -- the write fronts (groups last first) ------------------------------------------------


class StoreFrames(_Txn, _StoreTail, _Format, _Indices, _Layout, _Frames, _NewDataset):
    pass


class StoreFramesIter(_Txn, _StoreTail, _Indices, _Format, _Layout, _NewDataset, _Generator):
    pass


class UpdateFrames(_UpdateTail, _Update, _SomeDataset, _FrameList):
    factory: Any = None


class UpdateFramesIter(_UpdateTail, _Update, _SomeDataset, _Generator):
    factory: Any = None


class CreateEmpty(
    _Txn, _TableName, _Format, _MetadataOverwrite, _PartitionOn, _Schema, _NewDataset
):
    pass


class StoreDelayed(_Indices, _TableName, _DelayedStore, _Tasks):
    sort_partitions_by: Sequence[str] | None = None


class UpdateDelayed(_Factory, _UpdateOptions, _AnyMetadata, _DeleteScope, _SomeDataset, _Tasks):
    table_name: str = "table"
    metadata_storage_format: str = "json"


class StoreBag(_TableName, _Indices, _DelayedStore, _Bag):
    sort_partitions_by: Sequence[str] | None = None


class StoreDdf(
    _DaskTail,
    _Format,
    _Serializer,
    _TableName,
    _MetadataOverwrite,
    _SortBy,
    _Shuffle,
    _PartitionIndices,
    _NewDataset,
    _Ddf,
):
    metadata_merger: Callable[..., Any] | None = None


class UpdateDdf(_DaskTail, _TableFormat, _Shuffle, _Update, _SomeDataset, _Ddf):
    factory: Any = None


class StoreSdf(
    _KwSpark,
    _StoreTail,
    _Format,
    _ParquetSerializer,
    _MetadataOverwrite,
    _PartitionIndices,
    _NewDataset,
    _Sdf,
):
    pass


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


# -- the change feed -------------------------------------------------------------------------


class _SparkSession(Keywords):
    spark: Any  # ``pyspark.sql.SparkSession``


class _FeedDataset(Keywords):
    dataset_uuid: str
    store: StoreInput


class _FeedRange(Keywords, kw_only=True):
    start_version: int
    end_version: int | None = None
    columns: Sequence[str] | None = None
    predicates: object = None


class ChangesFeed(_FeedRange, _FeedDataset):
    pass


class SparkChangesFeed(_FeedRange, _FeedDataset, _SparkSession):
    pass
