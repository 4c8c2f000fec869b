"""Cube queries on Spark (pyspark reached through :mod:`spark_engine`); cube writes are in
:mod:`kartoframe.execution.spark_cube_write`.

The :class:`~kartoframe.plan.cube_query.CubeQueryPlan` is cut into its query groups (one
per ``partition_by`` value, or per cube partition, neighbouring ones coalesced to a few
per core); a ``mapInArrow`` over the group numbers runs
:func:`kartoframe.execution.cube_join.load_group` — the dataset read kernel and the join
of the eager and dask engines, so seed cells, inner/left joins, the keep-last overlay and
the column order are the same by construction — and hands the rows to Spark as Arrow.
Rows then come in :func:`kartoframe.query_cube`'s order: with ``partition_by`` the groups
already are in order; without, a query reading at most eight files per core runs as one
group (in order), a larger one ends with a Spark ``orderBy`` on the query dimensions and
the cube partition columns (``sort=False`` skips it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from kartoframe.execution import spark_engine
from kartoframe.execution.cube_join import load_group
from kartoframe.format.spark_types import spark_arrow_schema, to_spark_schema, to_spark_table
from kartoframe.plan.cube_query import CubeQueryPlan
from kartoframe.storage.store import Store

__all__ = ["cube_output_schema", "cube_plan_to_sdf"]


def cube_output_schema(plan: CubeQueryPlan) -> pa.Schema:
    """Arrow schema of the query result: each column typed by the dataset providing it
    (the seed first, then the others in join order, as the join kernel does).
    """
    fields = []
    for c in plan.output_columns:
        for read in plan.reads:
            if c in read.scan_columns:
                fields.append(pa.field(c, read.schema.field(c).type))
                break
        else:  # pragma: no cover - the planner only outputs loaded columns
            raise AssertionError(f"no dataset provides column {c!r}")
    return pa.schema(fields)


def cube_plan_to_sdf(spark: Any, plan: CubeQueryPlan, store: Store, *, sort: bool = True) -> Any:
    """Run a cube query plan on Spark; return the (lazy) Spark DataFrame.

    Parameters
    ----------
    spark
        The SparkSession.
    plan
        The planned query.
    store
        The cube's store (not ``memory://``).
    sort
        Without ``partition_by``: sort rows like :func:`kartoframe.query_cube` (query
        dimensions, then cube partition columns). With ``partition_by`` the rows come in
        that order anyway (partition-by values first).
    """
    spark_engine.require_pyspark()
    spark_engine.check_store(store)
    schema = cube_output_schema(plan)
    target = spark_arrow_schema(schema)
    struct = spark_engine.spark_type(to_spark_schema(schema))
    if not plan.groups:
        return spark.createDataFrame([], struct)
    spark_engine.check_python_workers(spark)
    slices = max(1, spark.sparkContext.defaultParallelism * 4)
    groups = plan.coalesced(slices)
    if not plan.intention.partition_by and len(groups) > 1:
        merged = plan.merged()
        if sum(len(f) for f in merged.files.values()) <= 2 * slices:
            # few files: one task returns the rows in order; no sort, no second pass
            groups = (merged,)
    slim = plan.slim()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for i in b.column(0).to_pylist():
                df = load_group(slim, groups[i], store)
                if len(df) == 0:
                    continue
                table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
                yield from to_spark_table(table, target).to_batches(max_chunksize=65536)

    n = len(groups)
    sdf = spark.range(0, n, 1, min(n, slices)).mapInArrow(run, struct)
    if sort and not plan.intention.partition_by and n > 1:
        sdf = sdf.orderBy(*[spark_engine.column(c) for c in plan.sort_columns])
    return sdf
