"""The public signatures of the cube fronts (eager, dask, Spark), pinned.

They are kartothek's API: names, order, kinds, defaults and annotations must not change
when the fronts are refactored (several are built from one signature source, see
:mod:`kartoframe.front.cube_args`). Each block is ``qualified name -> return annotation``
then one parameter a line, as :func:`inspect.signature` reports it (``*`` where the
keyword-only parameters start).
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest

EXPECTED = """
kartoframe.api.cube.discover_cube -> Cube
    uuid_prefix: 'str'
    store: 'StoreInput'
    filter_ktk_cube_dataset_ids: 'object' = None
kartoframe.api.cube.discover_datasets -> dict[str, DatasetMetadata]
    cube: 'Cube'
    store: 'StoreInput'
    filter_ktk_cube_dataset_ids: 'object' = None
kartoframe.api.cube.discover_datasets_unchecked -> dict[str, DatasetMetadata]
    uuid_prefix: 'str'
    store: 'StoreInput'
    filter_ktk_cube_dataset_ids: 'object' = None
kartoframe.api.cube.plan_cube_query -> tuple[CubeQueryPlan, Store]
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    datasets: 'Iterable[str] | None' = None
    dimension_columns: 'Iterable[str] | None' = None
    partition_by: 'Iterable[str] | None' = None
    payload_columns: 'Iterable[str] | None' = None
    consistent_integers: 'bool' = False
    *
    loaded: 'Mapping[str, DatasetMetadata] | None' = None
kartoframe.api.cube.query_cube -> list[pd.DataFrame]
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    datasets: 'Iterable[str] | None' = None
    dimension_columns: 'Iterable[str] | None' = None
    partition_by: 'Iterable[str] | None' = None
    payload_columns: 'Iterable[str] | None' = None
kartoframe.dask.cube.query_cube_dataframe -> dd.DataFrame
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    datasets: 'Iterable[str] | None' = None
    dimension_columns: 'Iterable[str] | None' = None
    partition_by: 'Iterable[str] | None' = None
    payload_columns: 'Iterable[str] | None' = None
kartoframe.api.cube_write.append_to_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.api.cube_write.build_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.api.cube_write.extend_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.api.cube_write.remove_partitions -> dict[str, DatasetMetadataResult]
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.api.cube_write.update_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    remove_conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.dask.cube.append_to_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.dask.cube.build_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.dask.cube.extend_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.dask.cube.update_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    remove_conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.api.cube_admin.cleanup_cube -> list[str]
    cube: 'Cube'
    store: 'StoreInput'
    *
    dry_run: 'bool' = False
    grace_hours: 'float' = 1.0
    force: 'bool' = False
kartoframe.api.cube_admin.collect_stats -> dict[str, dict[str, int]]
    cube: 'Cube'
    store: 'StoreInput'
    datasets: 'Iterable[str] | None' = None
kartoframe.api.cube_admin.copy_cube -> dict[str, str]
    cube: 'Cube'
    src_store: 'StoreInput'
    tgt_store: 'StoreInput'
    overwrite: 'bool' = False
    datasets: 'Iterable[str] | None' = None
    renamed_cube_prefix: 'str | None' = None
    renamed_datasets: 'Mapping[str, str] | None' = None
kartoframe.api.cube_admin.delete_cube -> None
    cube: 'Cube'
    store: 'StoreInput'
    datasets: 'Iterable[str] | None' = None
kartoframe.spark.append_to_cube_from_sdf -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    *
    repartition: 'bool' = True
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.spark.build_cube_from_sdf -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    *
    repartition: 'bool' = True
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.spark.extend_cube_from_sdf -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    *
    repartition: 'bool' = True
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.spark.local_session -> SparkSession
    app_name: 'str' = 'kartoframe'
    cores: 'int' = 2
    *
    driver_memory: 'str' = '1g'
    java_options: 'str' = ''
    quiet: 'bool' = True
    conf: 'Mapping[str, object] | None' = None
kartoframe.spark.optimize_dataset -> OptimizeResult
    spark: 'SparkSession'
    dataset_uuid: 'str'
    store: 'StoreInput'
    **options: 'Any'
kartoframe.spark.query_cube_sdf -> DataFrame
    spark: 'SparkSession'
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    dimension_columns: 'Iterable[str] | None' = None
    partition_by: 'Iterable[str] | None' = None
    payload_columns: 'Iterable[str] | None' = None
    datasets: 'Iterable[str] | None' = None
    *
    sort: 'bool' = True
kartoframe.spark.read_dataset_as_sdf -> DataFrame
    spark: 'SparkSession'
    dataset_uuid: 'str'
    store: 'StoreInput'
    columns: 'Sequence[str] | None' = None
    predicates: 'object' = None
    *
    reader: 'ReaderChoice' = 'auto'
    version: 'int | None' = None
    as_of: 'object' = None
kartoframe.spark.update_cube_from_sdf -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    remove_conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    *
    repartition: 'bool' = True
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.append_to_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.append_to_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.build_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.build_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.check_cube -> CheckReport
    cube: 'Cube | str'
    store: 'StoreInput'
    *
    deep: 'bool' = False
    max_workers: 'int' = 16
kartoframe.cleanup_cube -> list[str]
    cube: 'Cube'
    store: 'StoreInput'
    *
    dry_run: 'bool' = False
    grace_hours: 'float' = 1.0
    force: 'bool' = False
kartoframe.collect_stats -> dict[str, dict[str, int]]
    cube: 'Cube'
    store: 'StoreInput'
    datasets: 'Iterable[str] | None' = None
kartoframe.copy_cube -> dict[str, str]
    cube: 'Cube'
    src_store: 'StoreInput'
    tgt_store: 'StoreInput'
    overwrite: 'bool' = False
    datasets: 'Iterable[str] | None' = None
    renamed_cube_prefix: 'str | None' = None
    renamed_datasets: 'Mapping[str, str] | None' = None
kartoframe.delete_cube -> None
    cube: 'Cube'
    store: 'StoreInput'
    datasets: 'Iterable[str] | None' = None
kartoframe.discover_cube -> Cube
    uuid_prefix: 'str'
    store: 'StoreInput'
    filter_ktk_cube_dataset_ids: 'object' = None
kartoframe.extend_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.extend_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    overwrite: 'bool' = False
    partition_on: 'Mapping[str, Iterable[str]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.optimize_cube -> dict[str, OptimizeResult]
    cube: 'Cube'
    store: 'StoreInput'
    *
    datasets: 'str | Sequence[str] | None' = None
    sort_by: 'str | Sequence[str] | None' = None
    **options: 'Any'
kartoframe.query_cube -> list[pd.DataFrame]
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    datasets: 'Iterable[str] | None' = None
    dimension_columns: 'Iterable[str] | None' = None
    partition_by: 'Iterable[str] | None' = None
    payload_columns: 'Iterable[str] | None' = None
kartoframe.query_cube_dataframe -> dd.DataFrame
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    datasets: 'Iterable[str] | None' = None
    dimension_columns: 'Iterable[str] | None' = None
    partition_by: 'Iterable[str] | None' = None
    payload_columns: 'Iterable[str] | None' = None
kartoframe.remove_partitions -> dict[str, DatasetMetadataResult]
    cube: 'Cube'
    store: 'StoreInput'
    conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.update_cube -> dict[str, DatasetMetadataResult]
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    remove_conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None
kartoframe.update_cube_from_dataframe -> Any
    data: 'Any'
    cube: 'Cube'
    store: 'StoreInput'
    remove_conditions: 'ConditionsArg' = None
    ktk_cube_dataset_ids: 'Iterable[str] | None' = None
    metadata: 'Mapping[str, Mapping[str, Any]] | None' = None
    shuffle: 'bool' = False
    num_buckets: 'int' = 1
    bucket_by: 'Iterable[str] | None' = None
    df_serializer: 'ParquetSerializer | None' = None
    schema_evolution: 'SchemaEvolution' = 'none'
    app_id: 'str | None' = None
    app_version: 'int | None' = None
    commit_info: 'Mapping[str, Any] | None' = None

"""


def _blocks() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in EXPECTED.strip().splitlines():
        if not line.startswith(" "):
            name = line.split(" -> ")[0]
            out[name] = line
        else:
            out[name] += "\n" + line
    return out


def _function(qualname: str) -> Callable[..., Any]:
    module_name, name = qualname.rsplit(".", 1)
    func: Callable[..., Any] = getattr(importlib.import_module(module_name), name)
    return func


def _render(qualname: str) -> str:
    sig = inspect.signature(_function(qualname))
    lines = [f"{qualname} -> {sig.return_annotation}"]
    keyword_only = False
    for p in sig.parameters.values():
        assert p.kind is not p.POSITIONAL_ONLY
        if p.kind is p.KEYWORD_ONLY and not keyword_only:
            lines.append("    *")
        keyword_only = keyword_only or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        lines.append(f"    {p}")
    return "\n".join(lines)


BLOCKS = _blocks()


@pytest.mark.parametrize("qualname", sorted(BLOCKS))
def test_public_signature_is_pinned(qualname: str) -> None:
    assert _render(qualname) == BLOCKS[qualname]
    func = _function(qualname)
    assert func.__name__ == qualname.rsplit(".", 1)[1]
    assert func.__doc__ and func.__doc__.strip() and "$" not in func.__doc__


#: the verbs built from one signature source (kartoframe.front.cube_signatures)
COMPOSED = [
    f"kartoframe.{name}"
    for verb in ("build", "extend", "append_to", "update")
    for name in (f"{verb}_cube", f"{verb}_cube_from_dataframe", f"spark.{verb}_cube_from_sdf")
] + ["kartoframe.remove_partitions", "kartoframe.query_cube", "kartoframe.spark.query_cube_sdf"]


@pytest.mark.parametrize("qualname", COMPOSED)
def test_type_hints_resolve(qualname: str) -> None:
    """The verbs built from one signature source keep resolvable annotations."""
    assert qualname in BLOCKS
    hints = typing.get_type_hints(_function(qualname))
    assert set(hints) >= set(inspect.signature(_function(qualname)).parameters)


def test_the_expected_blocks_parse() -> None:
    assert len(BLOCKS) == 45
    assert BLOCKS["kartoframe.spark.build_cube_from_sdf"].count("\n") == 12


def test_every_public_cube_function_is_pinned() -> None:
    modules = ["kartoframe.api.cube", "kartoframe.api.cube_write", "kartoframe.dask.cube"]
    for module_name in [*modules, "kartoframe.api.cube_admin"]:
        for name in importlib.import_module(module_name).__all__:
            assert f"{module_name}.{name}" in BLOCKS
