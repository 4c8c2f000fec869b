"""The `make demo` job: write and read a realistic partitioned, indexed dataset.

Run with ``python -m demo --store ./demo-data`` from the repository's top folder. It generates
daily sales by country and product (>= 1M rows), stores them partitioned by country and month
with a secondary index on ``product_id``, then reads them back with column projection and
predicates that prune by partition and by index, printing what was pruned and timings.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

import kartoframe as kf
from kartoframe.api.read import plan_read

COUNTRIES = ["DE", "FR", "IT", "ES", "NL", "BE", "AT", "PL", "SE", "DK"]


def sales_table(n_rows: int, seed: int = 42) -> pd.DataFrame:
    """Daily sales by country and product for 2024."""
    rng = np.random.default_rng(seed)
    days = pd.date_range("2024-01-01", "2024-12-31", freq="D")
    date = days[rng.integers(0, len(days), n_rows)]
    units = rng.integers(1, 20, n_rows).astype("int16")
    price = np.round(rng.gamma(2.0, 10.0, n_rows), 2)
    df = pd.DataFrame(
        {
            "country": rng.choice(COUNTRIES, n_rows),
            "month": date.strftime("%Y-%m"),
            "date": date.as_unit("us"),
            "product_id": rng.integers(0, 5_000, n_rows),
            "store_id": rng.integers(0, 300, n_rows).astype("int32"),
            "units": units,
            "price": price,
            "revenue": np.round(units * price, 2),
            "channel": pd.Categorical(rng.choice(["web", "shop", "app"], n_rows)),
            "promo": rng.random(n_rows) < 0.1,
        }
    )
    return df.sort_values(["date", "country"], kind="stable").reset_index(drop=True)


@contextmanager
def timed(what: str) -> Iterator[None]:
    """Print how long a block took."""
    t0 = time.perf_counter()
    yield
    print(f"  {what:<58} {time.perf_counter() - t0:7.3f} s")


def _pruning(store: kf.Store, predicates: Any, columns: list[str] | None = None) -> str:
    plan, _ = plan_read("sales", store, predicates=predicates, columns=columns)
    s = plan.stats
    return (
        f"partitions: {s.total} total -> {s.after_partition_keys} after partition keys "
        f"-> {s.after_indices} after indices -> {s.after_statistics} after statistics"
    )


def statistics_step(store: kf.Store, df: pd.DataFrame) -> None:
    """Skip files by per-file statistics (a column that is neither a key nor indexed)."""
    lo, hi = pd.Timestamp("2024-03-10"), pd.Timestamp("2024-03-13")
    pred = [[("date", ">=", lo), ("date", "<", hi)]]
    print("- data skipping by statistics: 2024-03-10 <= date < 2024-03-13 (no key, no index)")
    print(f"  {_pruning(store, pred)}")
    stats = kf.dataset_statistics("sales", store, columns=["date"])
    first = stats.iloc[0]
    print(
        f"  per-file statistics of {len(stats)} files (metadata only), e.g. {first['label']}: "
        f"date {first['date.min']} .. {first['date.max']}, {first['rows']:,} rows"
    )
    with timed("read_table(columns=['country', 'date', 'revenue'])"):
        got = kf.read_table("sales", store, columns=["country", "date", "revenue"], predicates=pred)
    expected = int(((df["date"] >= lo) & (df["date"] < hi)).sum())
    assert len(got) == expected, (len(got), expected)
    print(f"  -> {len(got):,} rows")


def run(
    store_url: str, rows: int, extensions: Sequence[Callable[[kf.Store, pd.DataFrame], None]]
) -> None:
    """Run the demo against a store URL."""
    store = kf.Store(store_url)
    print(f"kartoframe {kf.__version__} demo on {store.url}")
    with timed(f"generate {rows:,} rows of daily sales"):
        df = sales_table(rows)
    with timed("store_dataframes_as_dataset (country x month, index product_id)"):
        kf.store_dataframes_as_dataset(
            store=store,
            dataset_uuid="sales",
            dfs=[df],
            partition_on=["country", "month"],
            secondary_indices=["product_id"],
            overwrite=True,
        )
    md = kf.read_dataset_metadata("sales", store)
    print(f"  -> {len(md.partitions)} partitions, indices {md.secondary_indices}")

    with timed("read_table (everything)"):
        full = kf.read_table("sales", store)
    assert len(full) == len(df)

    queries: list[tuple[str, Any, list[str] | None]] = [
        (
            "partition pruning: country == DE, month >= 2024-10",
            [[("country", "==", "DE"), ("month", ">=", "2024-10")]],
            ["date", "product_id", "revenue"],
        ),
        (
            "index pruning: product_id == 1234",
            [[("product_id", "==", 1234)]],
            ["country", "date", "units"],
        ),
        (
            "both: country in [FR, IT] and product_id in [7, 42]",
            [[("country", "in", ["FR", "IT"]), ("product_id", "in", [7, 42])]],
            None,
        ),
        (
            "row filter via statistics: revenue > 350",
            [[("revenue", ">", 350.0)]],
            ["country", "revenue"],
        ),
    ]
    for title, pred, cols in queries:
        print(f"- {title}")
        print(f"  {_pruning(store, pred, cols)}")
        with timed(f"read_table(columns={cols})"):
            got = kf.read_table("sales", store, columns=cols, predicates=pred)
        print(f"  -> {len(got):,} rows")

    with timed("update_dataset_from_dataframes (replace DE / 2024-12)"):
        new = df[(df.country == "DE") & (df.month == "2024-12")].assign(units=1)
        kf.update_dataset_from_dataframes(
            [new],
            store=store,
            dataset_uuid="sales",
            delete_scope=[{"country": "DE", "month": "2024-12"}],
        )
    check = kf.read_table(
        "sales", store, predicates=[[("country", "==", "DE"), ("month", "==", "2024-12")]]
    )
    assert (check["units"] == 1).all() and len(check) == len(new)
    with timed("garbage_collect_dataset"):
        # default retention (168 h): files of versions inside the window stay readable
        removed = kf.garbage_collect_dataset("sales", store)
    print(f"  -> removed {len(removed)} files (the replaced ones are kept for time travel)")
    statistics_step(store, df)
    for ext in extensions:
        ext(store, df)
    print("demo finished")


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m demo``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", default="./demo-data", help="store URL or folder")
    parser.add_argument("--rows", type=int, default=1_200_000)
    parser.add_argument("--keep", action="store_true", help="keep existing data")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark step")
    args = parser.parse_args(argv)
    if "://" not in args.store and not args.keep and os.path.isdir(args.store):
        shutil.rmtree(args.store)
    from demo.engines import cube_step, dask_step, history_step, spark_step

    steps = [history_step, dask_step, cube_step]
    if not args.no_spark:
        steps.append(spark_step)
    run(args.store, args.rows, steps)


if __name__ == "__main__":
    main()
