"""Cubes written from Spark DataFrames (kartothek's cube verbs, one Spark job per dataset)."""

from __future__ import annotations

import functools
from typing import Any

import pyarrow as pa

from kartoframe.execution import spark_engine
from kartoframe.execution.cube_resolve import frames_by_dataset
from kartoframe.execution.cube_write import CubeWriteJob
from kartoframe.execution.spark_write import conformed_schema
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.front import cube_signatures as sig
from kartoframe.front.args import StoreInput, arguments_of, same_parameters, verb_like
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.cube_write import Operation
from kartoframe.spark._write import DataFrame, _check_sdf

__all__ = [
    "append_to_cube_from_sdf",
    "build_cube_from_sdf",
    "extend_cube_from_sdf",
    "update_cube_from_sdf",
]


def _spark_frame(ds_id: str, sdf: DataFrame | None) -> DataFrame | None:
    if sdf is not None:
        _check_sdf(sdf, f'the data of dataset "{ds_id}"')
    return sdf


def _write_cube(
    operation: Operation,
    data: object,
    cube: Cube,
    store: StoreInput,
    *,
    df_serializer: ParquetSerializer | None = None,
    repartition: bool = True,
    **options: Any,
) -> dict[str, DatasetMetadataResult]:
    """Validate everything the schemas allow, plan, then let Spark write and commit."""
    from kartoframe.execution.spark_cube_write import write_cube_sdfs
    from kartoframe.front.cube_write import cube_serializer, cube_write_front, handles

    spark_engine.require_pyspark()
    adapt = functools.partial(frames_by_dataset, data, check=_spark_frame)
    st, fw = cube_write_front(
        operation, cube, store, adapt, check_store=spark_engine.check_store, **options
    )
    if fw.complete:  # a retried step: every dataset already records the transaction
        return handles(st, cube, fw.done)

    def schema(ds_id: str, sdf: DataFrame) -> pa.Schema:
        base = fw.existing.get(ds_id) if operation in ("append", "update") else None
        return conformed_schema(sdf, base.schema if base is not None else None)[0]

    plan = fw.plan(cube, fw.schema_inputs(cube, lambda sdf: sdf.columns, schema))
    frames = {k: v for k, v in fw.frames.items() if v is not None}
    job = CubeWriteJob(st, plan, frames, cube_serializer(df_serializer), operation != "update")
    return handles(st, cube, fw.done, write_cube_sdfs(job, repartition=repartition))


@same_parameters(sig.SparkBuild)
def build_cube_from_sdf(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
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
    return _write_cube("build", **arguments_of(build_cube_from_sdf, args, kwargs))


extend_cube_from_sdf = verb_like(
    build_cube_from_sdf,
    "extend_cube_from_sdf",
    """Add (or with ``overwrite`` replace) non-seed datasets from Spark DataFrames.

See :func:`kartoframe.extend_cube` and :func:`build_cube_from_sdf`.
""",
    functools.partial(_write_cube, "extend"),
)


@same_parameters(sig.SparkAppend)
def append_to_cube_from_sdf(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
    """Append Spark DataFrames to existing cube datasets (newer rows win per cell).

    See :func:`kartoframe.append_to_cube` (``schema_evolution``) and
    :func:`build_cube_from_sdf` (``repartition``, ``app_id``, ``app_version``,
    ``commit_info``).
    """
    return _write_cube("append", **arguments_of(append_to_cube_from_sdf, args, kwargs))


@same_parameters(sig.SparkUpdate)
def update_cube_from_sdf(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
    """Remove partitions and append Spark DataFrames, one commit per dataset.

    See :func:`kartoframe.update_cube` (``schema_evolution``) and
    :func:`build_cube_from_sdf` (``repartition``, ``app_id``, ``app_version``,
    ``commit_info``).
    """
    return _write_cube("update", **arguments_of(update_cube_from_sdf, args, kwargs))
