"""Cubes written from Spark DataFrames (kartothek's cube verbs, one Spark job per dataset)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from kartoframe.api._args import (
    StoreInput,
    ensure_store,
    serializer_arg,
)
from kartoframe.api.write import (
    DatasetMetadataResult,
)
from kartoframe.errors import (
    InvalidTypeError,
)
from kartoframe.execution import spark_engine
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.format.schema import (
    SchemaEvolution,
)
from kartoframe.plan.conditions import ConditionsArg
from kartoframe.plan.cube_write import (
    Operation,
)
from kartoframe.spark._write import _check_sdf, _conformed_schema

#: ``pyspark.sql.DataFrame`` / ``SparkSession`` (pyspark is imported by the engine only).
DataFrame = Any
SparkSession = Any


__all__ = [
    "append_to_cube_from_sdf",
    "build_cube_from_sdf",
    "extend_cube_from_sdf",
    "update_cube_from_sdf",
]


def _cube_frames(data: object, cube: Cube) -> dict[str, DataFrame]:
    if data is None:
        return {}
    dct = data if isinstance(data, dict) else {cube.seed_dataset: data}
    out: dict[str, DataFrame] = {}
    for ds_id, sdf in dct.items():
        cube.ktk_dataset_uuid(ds_id)  # validates the id
        if sdf is not None:
            _check_sdf(sdf, f'the data of dataset "{ds_id}"')
        out[ds_id] = sdf
    return out


def _write_cube(
    operation: Operation,
    data: object,
    cube: Cube,
    store: StoreInput,
    *,
    metadata: object = None,
    overwrite: bool = False,
    partition_on: object = None,
    df_serializer: ParquetSerializer | None = None,
    remove_conditions: object = None,
    dataset_ids: object = None,
    repartition: bool = True,
    schema_evolution: object = "none",
    app_id: object = None,
    app_version: object = None,
    commit_info: object = None,
) -> dict[str, DatasetMetadataResult]:
    """Validate everything the schemas allow, plan, then let Spark write and commit."""
    from kartoframe.api.cube_write import CUBE_SERIALIZER, resolve_frame_operation
    from kartoframe.execution.spark_cube_write import write_cube_sdfs

    spark_engine.require_pyspark()
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    st = ensure_store(store)
    spark_engine.check_store(st)
    fw = resolve_frame_operation(
        cube,
        st,
        operation,
        _cube_frames(data, cube),
        partition_on=partition_on,
        overwrite=overwrite,
        metadata=metadata,
        dataset_ids=dataset_ids,
        remove_conditions=remove_conditions,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )
    if fw.complete:  # a retried step: every dataset already records the transaction
        return fw.handles(st, cube)

    def schema(ds_id: str, sdf: DataFrame) -> pa.Schema:
        base = fw.existing.get(ds_id) if operation in ("append", "update") else None
        return _conformed_schema(sdf, base.schema if base is not None else None)[0]

    inputs = fw.schema_inputs(cube, lambda sdf: sdf.columns, schema)
    plan = fw.plan(cube, operation, inputs, overwrite=overwrite)
    headers = write_cube_sdfs(
        st,
        plan,
        {k: v for k, v in fw.frames.items() if v is not None},
        serializer_arg(df_serializer or CUBE_SERIALIZER),
        repartition=repartition,
        require_rows=operation != "update",
    )
    return {
        **fw.handles(st, cube),
        **{k: DatasetMetadataResult(h.uuid, st) for k, h in headers.items()},
    }


def build_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    overwrite: bool = False,
    partition_on: Mapping[str, Iterable[str]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Build a cube from Spark DataFrames (a DataFrame for the seed, or ``{id: sdf}``).

    Everything the schemas allow is checked before Spark runs (columns, seed and
    dimension rules, payload ownership, the resulting cube); executors check the rows
    (NULLs in dimension/partition/index columns, duplicate cells within a task — with
    ``repartition`` every physical partition is written by one task) and write the
    files; the driver commits one dataset at a time, the seed last. On any failure no
    header changes and every file written is deleted.

    Parameters
    ----------
    data, cube, store, metadata, overwrite, partition_on, df_serializer
        As in :func:`kartoframe.build_cube`.
    repartition
        Hash-partition each DataFrame on its ``partition_on`` columns first (one file
        per physical partition and task; duplicate cells are then found across the
        whole input).
    app_id, app_version, commit_info
        As in :func:`kartoframe.build_cube`: every dataset commit records them, and a
        retried call whose datasets already record the transaction writes nothing.

    Returns
    -------
    dict
        Dataset id -> handle of the committed dataset.
    """
    return _write_cube(
        "build",
        data,
        cube,
        store,
        metadata=metadata,
        overwrite=overwrite,
        partition_on=partition_on,
        df_serializer=df_serializer,
        repartition=repartition,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def extend_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    overwrite: bool = False,
    partition_on: Mapping[str, Iterable[str]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Add (or with ``overwrite`` replace) non-seed datasets from Spark DataFrames.

    See :func:`kartoframe.extend_cube` and :func:`build_cube_from_sdf`.
    """
    return _write_cube(
        "extend",
        data,
        cube,
        store,
        metadata=metadata,
        overwrite=overwrite,
        partition_on=partition_on,
        df_serializer=df_serializer,
        repartition=repartition,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def append_to_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Append Spark DataFrames to existing cube datasets (newer rows win per cell).

    See :func:`kartoframe.append_to_cube` (``schema_evolution``) and
    :func:`build_cube_from_sdf` (``repartition``, ``app_id``, ``app_version``,
    ``commit_info``).
    """
    return _write_cube(
        "append",
        data,
        cube,
        store,
        metadata=metadata,
        df_serializer=df_serializer,
        repartition=repartition,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def update_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    remove_conditions: ConditionsArg = None,
    ktk_cube_dataset_ids: Iterable[str] | None = None,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Remove partitions and append Spark DataFrames, one commit per dataset.

    See :func:`kartoframe.update_cube` (``schema_evolution``) and
    :func:`build_cube_from_sdf` (``repartition``, ``app_id``, ``app_version``,
    ``commit_info``).
    """
    return _write_cube(
        "update",
        data,
        cube,
        store,
        metadata=metadata,
        df_serializer=df_serializer,
        remove_conditions=remove_conditions,
        dataset_ids=ktk_cube_dataset_ids,
        repartition=repartition,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )
