"""Demo steps beyond the eager API: history, dask, cubes and Spark (see ``run.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd

import kartoframe as kf


@contextmanager
def _timed(what: str) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    print(f"  {what:<58} {time.perf_counter() - t0:7.3f} s")


def history_step(store: kf.Store, df: pd.DataFrame) -> None:
    """Every commit is a version: list the history and read an earlier one."""
    history = kf.dataset_history("sales", store)
    print(f"- history: {len(history)} commits")
    for rec in history:
        print(
            f"  v{rec.version} {rec.operation}: +{len(rec.added)} / -{len(rec.removed)} partitions"
        )
    first = min(rec.version for rec in history)
    with _timed(f"read_table(version={first}) (time travel)"):
        old = kf.read_table("sales", store, version=first, columns=["units"])
    now = kf.read_table("sales", store, columns=["units"])
    print(
        f"  -> sum(units) = {int(old['units'].sum()):,} at version {first}, "
        f"{int(now['units'].sum()):,} now"
    )
    print(f"  vacuum_dataset dry run: {len(kf.vacuum_dataset('sales', store, dry_run=True))} files")


def dask_step(store: kf.Store, df: pd.DataFrame) -> None:
    """Read the dataset as a dask DataFrame and write a derived dataset with dask."""
    import dask

    with dask.config.set(scheduler="threads"):
        with _timed("read_dataset_as_ddf (graph only: no data file opened)"):
            ddf = kf.read_dataset_as_ddf("sales", store, columns=["country", "month", "revenue"])
        print(f"  -> {ddf.npartitions} dask partitions")
        with _timed("ddf.groupby('country').revenue.sum().compute()"):
            totals = ddf.groupby("country")["revenue"].sum().compute()
        print(f"  -> top country {totals.idxmax()} ({totals.max():,.0f})")
        big = ddf[ddf["revenue"] > 300]
        with _timed("store_dataset_from_ddf(...).compute() (one commit)"):
            kf.store_dataset_from_ddf(
                big, store, "big_sales", partition_on=["country"], overwrite=True
            ).compute()
    n = len(kf.read_table("big_sales", store, columns=["revenue"]))
    files = len(kf.read_dataset_metadata("big_sales", store).partitions)
    print(f"  -> big_sales: {n:,} rows in {files} files")


#: The demo cube: sales cells by country and product, partitioned by month.
CUBE = kf.Cube(
    dimension_columns=("country", "product_id"),
    partition_columns=("month",),
    uuid_prefix="salescube",
    index_columns=("category",),
)


def _cube_frames(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    cells = (
        df.groupby(["country", "product_id", "month"], observed=True)
        .agg(units=("units", "sum"), revenue=("revenue", "sum"))
        .reset_index()
    )
    seed = cells[cells["month"] <= "2024-06"].reset_index(drop=True)
    enrich = seed[["country", "product_id", "month"]].copy()
    enrich["forecast"] = (seed["units"] * 1.1).round(1)
    enrich = enrich.sample(frac=0.6, random_state=1).reset_index(drop=True)
    products = pd.DataFrame({"product_id": sorted(df["product_id"].unique())})
    products["category"] = products["product_id"].map(lambda p: f"cat{p % 12}")
    return seed, enrich, products


def cube_step(store: kf.Store, df: pd.DataFrame) -> None:
    """Build a cube (seed + enrichment), extend it, query it with conditions."""
    cube = CUBE
    seed, enrich, products = _cube_frames(df)
    dims, parts = list(cube.dimension_columns), list(cube.partition_columns)
    print(f"- cube {cube.uuid_prefix}: dimensions {dims}, partitions {parts}")
    with _timed(f"build_cube (seed {len(seed):,} cells + enrich {len(enrich):,})"):
        kf.build_cube({"seed": seed, "enrich": enrich}, cube, store, overwrite=True)
    with _timed("extend_cube (lower-dimensional 'products')"):
        kf.extend_cube({"products": products}, cube, store, partition_on={"products": []})
    with _timed("query_cube(conditions: category == cat3 & units > 40)"):
        hits = kf.query_cube(
            cube, store, conditions=(kf.C("category") == "cat3") & (kf.C("units") > 40)
        )
    rows = sum(len(h) for h in hits)
    print(f"  -> {rows:,} cells, columns {list(hits[0].columns) if hits else []}")
    with _timed("query_cube(partition_by=['month'], payload forecast)"):
        groups = kf.query_cube(cube, store, partition_by=["month"], payload_columns=["forecast"])
    print(
        f"  -> {len(groups)} groups, first {groups[0]['month'].iloc[0]}: {len(groups[0]):,} cells "
        f"({int(groups[0]['forecast'].isna().sum()):,} without forecast: left join)"
    )


def _spark_session() -> Any:
    import kartoframe.spark as ks

    # workers run this interpreter (PYSPARK_PYTHON), Arrow, UTC, quiet logs
    return ks.local_session("kartoframe-demo", cores=2)


def spark_step(store: kf.Store, df: pd.DataFrame) -> None:
    """Datasets and cube queries as Spark DataFrames, and a dataset written from Spark."""
    import warnings

    from pyspark.sql import functions as F

    import kartoframe.spark as ks

    print("- Spark (local[2])")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark warns about pandas 3
        with _timed("SparkSession start"):
            spark = _spark_session()
        try:
            with _timed("read_dataset_as_sdf(country == FR) + groupBy(month).sum"):
                sdf = ks.read_dataset_as_sdf(
                    spark, "sales", store, predicates=[[("country", "==", "FR")]]
                )
                per_month = (
                    sdf.groupBy("month").agg(F.sum("revenue").alias("revenue")).orderBy("month")
                )
                rows = per_month.collect()
            print(f"  -> {len(rows)} months, {rows[0]['month']}: {rows[0]['revenue']:,.0f}")
            cube = CUBE
            with _timed("query_cube_sdf(category == cat3).count()"):
                n = ks.query_cube_sdf(
                    spark, cube, store, conditions=kf.C("category") == "cat3"
                ).count()
            print(f"  -> {n:,} cells")
            with _timed("store_dataset_from_sdf (monthly totals, partition_on month)"):
                totals = sdf.groupBy("month", "channel").agg(F.sum("units").alias("units"))
                ks.store_dataset_from_sdf(
                    totals, store, "fr_totals", partition_on=["month"], overwrite=True
                )
            back = kf.read_table("fr_totals", store)
            print(f"  -> fr_totals read back by pandas: {len(back)} rows")
        finally:
            spark.stop()
