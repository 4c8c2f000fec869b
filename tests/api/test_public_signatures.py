"""The public signatures of the dataset fronts, pinned.

kartothek's and plateau's users call these functions positionally, so a parameter's name,
kind, order, default or annotation must not change by accident, in particular where one
function's parameters are written once and adopted by another
(:func:`kartoframe.front.args.same_parameters`, ``verb_like``). A deliberate change edits
the expected signature here.
"""

from __future__ import annotations

import importlib
import inspect
import typing

import pytest

from kartoframe.api import read
from kartoframe.front.args import Keywords, arguments_of, same_parameters

EXPECTED = {
    "kartoframe.read_table": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "columns: 'Sequence[str] | None' = None, "
        "predicate_pushdown_to_io: 'bool' = True, "
        "categoricals: 'Sequence[str] | None' = None, dates_as_object: 'bool' = True, "
        "predicates: 'object' = None, *, progress: 'bool' = False, "
        "version: 'int | None' = None, as_of: 'object' = None, "
        "factory: 'Any' = None) -> 'pd.DataFrame'"
    ),
    "kartoframe.read_dataset_as_dataframes": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "columns: 'Sequence[str] | None' = None, "
        "predicate_pushdown_to_io: 'bool' = True, "
        "categoricals: 'Sequence[str] | None' = None, dates_as_object: 'bool' = True, "
        "predicates: 'object' = None, dispatch_by: 'Sequence[str] | None' = None, "
        "version: 'int | None' = None, as_of: 'object' = None, "
        "factory: 'Any' = None) -> 'list[pd.DataFrame]'"
    ),
    "kartoframe.read_dataset_as_dataframes__iterator": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "columns: 'Sequence[str] | None' = None, "
        "predicate_pushdown_to_io: 'bool' = True, "
        "categoricals: 'Sequence[str] | None' = None, dates_as_object: 'bool' = True, "
        "predicates: 'object' = None, dispatch_by: 'Sequence[str] | None' = None, "
        "version: 'int | None' = None, as_of: 'object' = None, "
        "factory: 'Any' = None) -> 'Iterator[pd.DataFrame]'"
    ),
    "kartoframe.read_dataset_metadata": (
        "(dataset_uuid: 'str', store: 'StoreInput', version: 'int | None' = None, "
        "as_of: 'object' = None) -> 'DatasetMetadata'"
    ),
    "kartoframe.read_dataset_as_ddf": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, *, "
        "table: 'str | None' = None, columns: 'Sequence[str] | None' = None, "
        "predicates: 'object' = None, dispatch_by: 'Sequence[str] | None' = None, "
        "categoricals: 'Sequence[str] | None' = None, dates_as_object: 'bool' = True, "
        "predicate_pushdown_to_io: 'bool' = True, dask_index_on: 'str | None' = None, "
        "version: 'int | None' = None, as_of: 'object' = None, "
        "factory: 'Any' = None) -> 'Any'"
    ),
    "kartoframe.read_dataset_as_delayed": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "columns: 'Sequence[str] | None' = None, "
        "predicate_pushdown_to_io: 'bool' = True, "
        "categoricals: 'Sequence[str] | None' = None, dates_as_object: 'bool' = True, "
        "predicates: 'object' = None, factory: 'Any' = None, "
        "dispatch_by: 'Sequence[str] | None' = None) -> 'list[Any]'"
    ),
    "kartoframe.read_dataset_as_dataframe_bag": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "columns: 'Sequence[str] | None' = None, "
        "predicate_pushdown_to_io: 'bool' = True, "
        "categoricals: 'Sequence[str] | None' = None, dates_as_object: 'bool' = True, "
        "predicates: 'object' = None, factory: 'Any' = None, "
        "dispatch_by: 'Sequence[str] | None' = None, "
        "partition_size: 'int | None' = None) -> 'Any'"
    ),
    "kartoframe.store_dataframes_as_dataset": (
        "(store: 'StoreInput', dataset_uuid: 'str', dfs: 'Sequence[pd.DataFrame]', "
        "metadata: 'MetadataArg' = None, partition_on: 'Sequence[str] | None' = None, "
        "df_serializer: 'DataSerializer | None' = None, overwrite: 'bool' = False, "
        "secondary_indices: 'Sequence[str] | None' = None, "
        "metadata_storage_format: 'str' = 'json', metadata_version: 'int' = 4, "
        "table_name: 'str' = 'table', sort_partitions_by: 'Sequence[str] | None' = None, "
        "schema_evolution: 'SchemaEvolution' = 'none', app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.store_dataframes_as_dataset__iter": (
        "(df_generator: 'Iterable[Any]', store: 'StoreInput', dataset_uuid: 'str', "
        "metadata: 'MetadataArg' = None, partition_on: 'Sequence[str] | None' = None, "
        "df_serializer: 'DataSerializer | None' = None, overwrite: 'bool' = False, "
        "metadata_storage_format: 'str' = 'json', metadata_version: 'int' = 4, "
        "secondary_indices: 'Sequence[str] | None' = None, table_name: 'str' = 'table', "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "schema_evolution: 'SchemaEvolution' = 'none', app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.update_dataset_from_dataframes": (
        "(df_list: 'Sequence[pd.DataFrame]', store: 'StoreInput | None' = None, "
        "dataset_uuid: 'str | None' = None, delete_scope: 'Sequence[Mapping[str, "
        "Any]] | None' = None, metadata: 'MetadataArg' = None, "
        "df_serializer: 'DataSerializer | None' = None, metadata_merger: 'Callable[..., "
        "Any] | None' = None, default_metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, table_name: 'str' = 'table', "
        "metadata_storage_format: 'str' = 'json', "
        "schema_evolution: 'SchemaEvolution' = 'none', app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None, factory: 'Any' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.update_dataset_from_dataframes__iter": (
        "(df_generator: 'Iterable[Any]', store: 'StoreInput | None' = None, "
        "dataset_uuid: 'str | None' = None, delete_scope: 'Sequence[Mapping[str, "
        "Any]] | None' = None, metadata: 'MetadataArg' = None, "
        "df_serializer: 'DataSerializer | None' = None, metadata_merger: 'Callable[..., "
        "Any] | None' = None, default_metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, table_name: 'str' = 'table', "
        "metadata_storage_format: 'str' = 'json', "
        "schema_evolution: 'SchemaEvolution' = 'none', app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None, factory: 'Any' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.create_empty_dataset_header": (
        "(store: 'StoreInput', dataset_uuid: 'str', schema: 'pa.Schema | pd.DataFrame', "
        "partition_on: 'Sequence[str] | None' = None, metadata: 'MetadataArg' = None, "
        "overwrite: 'bool' = False, metadata_storage_format: 'str' = 'json', "
        "metadata_version: 'int' = 4, table_name: 'str' = 'table', "
        "app_id: 'str | None' = None, app_version: 'int | None' = None, "
        "commit_info: 'Mapping[str, Any] | None' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.write_single_partition": (
        "(store: 'StoreInput | None', dataset_uuid: 'str | None', data: 'pd.DataFrame', "
        "df_serializer: 'DataSerializer | None' = None, metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, "
        "table_name: 'str | None' = None, factory: 'Any' = None) -> 'MetaPartition'"
    ),
    "kartoframe.commit_dataset": (
        "(store: 'StoreInput | None' = None, dataset_uuid: 'str | None' = None, "
        "new_partitions: 'Sequence[MetaPartition] | None' = None, "
        "delete_scope: 'Sequence[Mapping[str, Any]] | None' = None, "
        "metadata: 'MetadataArg' = None, metadata_merger: 'Callable[..., "
        "Any] | None' = None, default_metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None, factory: 'Any' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.store_delayed_as_dataset": (
        "(delayed_tasks: 'Sequence[Any]', store: 'StoreInput', "
        "dataset_uuid: 'str | None' = None, metadata: 'Any' = None, "
        "df_serializer: 'DataSerializer | None' = None, overwrite: 'bool' = False, "
        "metadata_merger: 'Callable[..., Any] | None' = None, "
        "metadata_version: 'int' = 4, partition_on: 'Sequence[str] | None' = None, "
        "metadata_storage_format: 'str' = 'json', table_name: 'str' = 'table', "
        "secondary_indices: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None) -> 'Any'"
    ),
    "kartoframe.update_dataset_from_delayed": (
        "(delayed_tasks: 'Sequence[Any]', store: 'StoreInput | None' = None, "
        "dataset_uuid: 'str | None' = None, delete_scope: 'Sequence[Mapping[str, "
        "Any]] | None' = None, metadata: 'Any' = None, "
        "df_serializer: 'DataSerializer | None' = None, metadata_merger: 'Callable[..., "
        "Any] | None' = None, default_metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, factory: 'Any' = None, "
        "table_name: 'str' = 'table', metadata_storage_format: 'str' = 'json') -> 'Any'"
    ),
    "kartoframe.store_bag_as_dataset": (
        "(bag: 'Any', store: 'StoreInput', dataset_uuid: 'str | None' = None, "
        "metadata: 'Any' = None, df_serializer: 'DataSerializer | None' = None, "
        "overwrite: 'bool' = False, metadata_merger: 'Callable[..., Any] | None' = None, "
        "metadata_version: 'int' = 4, partition_on: 'Sequence[str] | None' = None, "
        "metadata_storage_format: 'str' = 'json', "
        "secondary_indices: 'Sequence[str] | None' = None, table_name: 'str' = 'table', "
        "sort_partitions_by: 'Sequence[str] | None' = None) -> 'Any'"
    ),
    "kartoframe.build_dataset_indices__bag": (
        "(store: 'StoreInput | None', dataset_uuid: 'str | None', "
        "columns: 'Sequence[str]', partition_size: 'int | None' = None, "
        "factory: 'Any' = None) -> 'Any'"
    ),
    "kartoframe.delete_dataset__delayed": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "factory: 'Any' = None) -> 'Any'"
    ),
    "kartoframe.garbage_collect_dataset__delayed": (
        "(dataset_uuid: 'str | None' = None, store: 'StoreInput | None' = None, "
        "chunk_size: 'int' = 100, factory: 'Any' = None, "
        "retention_hours: 'float' = 168.0, *, grace_hours: 'float' = 1.0, "
        "force: 'bool' = False) -> 'list[Any]'"
    ),
    "kartoframe.store_dataset_from_ddf": (
        "(ddf: 'Any', store: 'StoreInput', dataset_uuid: 'str', "
        "partition_on: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, shuffle: 'bool' = False, "
        "num_buckets: 'int' = 1, bucket_by: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "metadata: 'MetadataArg' = None, overwrite: 'bool' = False, "
        "table_name: 'str' = 'table', df_serializer: 'DataSerializer | None' = None, "
        "metadata_storage_format: 'str' = 'json', metadata_version: 'int' = 4, "
        "repartition_ratio: 'float | None' = None, "
        "schema_evolution: 'SchemaEvolution' = 'none', app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None, table: 'str | None' = None, "
        "metadata_merger: 'Callable[..., Any] | None' = None) -> 'Any'"
    ),
    "kartoframe.update_dataset_from_ddf": (
        "(ddf: 'Any', store: 'StoreInput | None' = None, "
        "dataset_uuid: 'str | None' = None, delete_scope: 'Sequence[Mapping[str, "
        "Any]] | None' = None, metadata: 'MetadataArg' = None, "
        "df_serializer: 'DataSerializer | None' = None, metadata_merger: 'Callable[..., "
        "Any] | None' = None, default_metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, shuffle: 'bool' = False, "
        "num_buckets: 'int' = 1, bucket_by: 'Sequence[str] | None' = None, "
        "table_name: 'str' = 'table', metadata_storage_format: 'str' = 'json', "
        "repartition_ratio: 'float | None' = None, "
        "schema_evolution: 'SchemaEvolution' = 'none', app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None, table: 'str | None' = None, factory: 'Any' = None) -> 'Any'"
    ),
    "kartoframe.build_cube": (
        "(data: 'Any', cube: 'Cube', store: 'StoreInput', metadata: 'Mapping[str, "
        "Mapping[str, Any]] | None' = None, overwrite: 'bool' = False, "
        "partition_on: 'Mapping[str, Iterable[str]] | None' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'dict[str, DatasetMetadataResult]'"
    ),
    "kartoframe.extend_cube": (
        "(data: 'Any', cube: 'Cube', store: 'StoreInput', metadata: 'Mapping[str, "
        "Mapping[str, Any]] | None' = None, overwrite: 'bool' = False, "
        "partition_on: 'Mapping[str, Iterable[str]] | None' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'dict[str, DatasetMetadataResult]'"
    ),
    "kartoframe.build_cube_from_dataframe": (
        "(data: 'Any', cube: 'Cube', store: 'StoreInput', metadata: 'Mapping[str, "
        "Mapping[str, Any]] | None' = None, overwrite: 'bool' = False, "
        "partition_on: 'Mapping[str, Iterable[str]] | None' = None, "
        "shuffle: 'bool' = False, num_buckets: 'int' = 1, "
        "bucket_by: 'Iterable[str] | None' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'Any'"
    ),
    "kartoframe.extend_cube_from_dataframe": (
        "(data: 'Any', cube: 'Cube', store: 'StoreInput', metadata: 'Mapping[str, "
        "Mapping[str, Any]] | None' = None, overwrite: 'bool' = False, "
        "partition_on: 'Mapping[str, Iterable[str]] | None' = None, "
        "shuffle: 'bool' = False, num_buckets: 'int' = 1, "
        "bucket_by: 'Iterable[str] | None' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'Any'"
    ),
    "kartoframe.spark.store_dataset_from_sdf": (
        "(sdf: 'DataFrame', store: 'StoreInput', dataset_uuid: 'str', "
        "partition_on: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, "
        "metadata: 'MetadataArg' = None, overwrite: 'bool' = False, "
        "df_serializer: 'ParquetSerializer | None' = None, "
        "metadata_storage_format: 'str' = 'json', metadata_version: 'int' = 4, "
        "table_name: 'str' = 'table', sort_partitions_by: 'Sequence[str] | None' = None, "
        "schema_evolution: 'SchemaEvolution' = 'none', *, repartition: 'bool' = True, "
        "app_id: 'str | None' = None, app_version: 'int | None' = None, "
        "commit_info: 'Mapping[str, Any] | None' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.spark.update_dataset_from_sdf": (
        "(sdf: 'DataFrame | None', store: 'StoreInput', dataset_uuid: 'str', "
        "delete_scope: 'Sequence[Mapping[str, Any]] | None' = None, "
        "metadata: 'MetadataArg' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, "
        "default_metadata_version: 'int' = 4, "
        "partition_on: 'Sequence[str] | None' = None, "
        "sort_partitions_by: 'Sequence[str] | None' = None, "
        "secondary_indices: 'Sequence[str] | None' = None, table_name: 'str' = 'table', "
        "metadata_storage_format: 'str' = 'json', "
        "schema_evolution: 'SchemaEvolution' = 'none', *, repartition: 'bool' = True, "
        "app_id: 'str | None' = None, app_version: 'int | None' = None, "
        "commit_info: 'Mapping[str, Any] | None' = None) -> 'DatasetMetadataResult'"
    ),
    "kartoframe.spark.build_cube_from_sdf": (
        "(data: 'Any', cube: 'Cube', store: 'StoreInput', metadata: 'Mapping[str, "
        "Mapping[str, Any]] | None' = None, overwrite: 'bool' = False, "
        "partition_on: 'Mapping[str, Iterable[str]] | None' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, *, "
        "repartition: 'bool' = True, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'dict[str, DatasetMetadataResult]'"
    ),
    "kartoframe.spark.extend_cube_from_sdf": (
        "(data: 'Any', cube: 'Cube', store: 'StoreInput', metadata: 'Mapping[str, "
        "Mapping[str, Any]] | None' = None, overwrite: 'bool' = False, "
        "partition_on: 'Mapping[str, Iterable[str]] | None' = None, "
        "df_serializer: 'ParquetSerializer | None' = None, *, "
        "repartition: 'bool' = True, app_id: 'str | None' = None, "
        "app_version: 'int | None' = None, commit_info: 'Mapping[str, "
        "Any] | None' = None) -> 'dict[str, DatasetMetadataResult]'"
    ),
}


@pytest.mark.parametrize("qualname", sorted(EXPECTED))
def test_public_signature_is_pinned(qualname: str) -> None:
    module, name = qualname.rsplit(".", 1)
    func = getattr(importlib.import_module(module), name)
    assert str(inspect.signature(func)) == EXPECTED[qualname]
    assert func.__name__ == name
    # help() and Sphinx read the annotations too: the same names as the signature
    assert set(func.__annotations__) == {*inspect.signature(func).parameters, "return"}
    assert set(typing.get_type_hints(func)) == set(func.__annotations__)  # they all resolve


def test_adopted_parameters_are_the_source_ones_with_the_own_return() -> None:
    frames, iterator = read.read_dataset_as_dataframes, read.read_dataset_as_dataframes__iterator
    assert inspect.signature(frames).parameters == inspect.signature(iterator).parameters
    assert inspect.signature(frames).return_annotation == "list[pd.DataFrame]"
    assert typing.get_type_hints(frames)["return"] == list[read.pd.DataFrame]
    assert frames.__module__ == "kartoframe.api.read"
    assert frames.__doc__ is not None and "one per partition or dispatch group" in frames.__doc__


def test_same_parameters_binds_positionally_and_by_name() -> None:
    def source(a: int, b: str = "x", *, c: float = 1.0) -> None:
        """Source."""

    @same_parameters(source)
    def adopted(*args: typing.Any, **kwargs: typing.Any) -> dict[str, typing.Any]:
        return arguments_of(adopted, args, kwargs)

    assert adopted(1, "y", c=2.0) == {"a": 1, "b": "y", "c": 2.0}
    assert adopted(a=3) == {"a": 3, "b": "x", "c": 1.0}
    with pytest.raises(TypeError):
        adopted(1, "y", 2.0)  # c is keyword-only in the source
    with pytest.raises(TypeError):
        adopted(1, d=4)


def test_a_dataclass_source_composes_its_groups_last_first() -> None:
    class First(Keywords):
        a: int
        b: str = "x"

    class Last(Keywords, kw_only=True):
        k: float = 1.0

    class Source(Last, First):
        c: bytes = b""  # after the groups' keywords (keyword-only ones go last of all)

    @same_parameters(Source)
    def adopted(*args: typing.Any, **kwargs: typing.Any) -> dict[str, typing.Any]:
        return arguments_of(adopted, args, kwargs)

    expected = "(a: 'int', b: 'str' = 'x', c: 'bytes' = b'', *, k: 'float' = 1.0)"
    assert str(inspect.signature(adopted)) == f"{expected} -> 'dict[str, typing.Any]'"
    assert typing.get_type_hints(adopted) == {
        "a": int,
        "b": str,
        "c": bytes,
        "k": float,
        "return": dict[str, typing.Any],
    }
    assert adopted(1, "y", b"z", k=2.0) == {"a": 1, "b": "y", "c": b"z", "k": 2.0}
