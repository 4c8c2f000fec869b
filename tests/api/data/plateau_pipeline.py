"""A plateau 4.6.2 pipeline; the test runs it with plateau's imports and with kartoframe's.

Only the block between the IMPORTS markers differs between the two runs.
"""

import sys
from functools import partial

import dask
import dask.bag as db
import pandas as pd
from dask import delayed
from minimalkv import get_store_from_url

# IMPORTS-BEGIN
from plateau.api.dataset import (
    build_dataset_indices__bag,
    delete_dataset__delayed,
    garbage_collect_dataset__delayed,
    read_dataset_as_dataframe_bag,
    read_dataset_as_ddf,
    read_dataset_as_delayed,
    read_table,
    store_bag_as_dataset,
    store_dataframes_as_dataset,
    store_dataset_from_ddf,
    store_delayed_as_dataset,
    update_dataset_from_delayed,
)
from plateau.serialization import ParquetSerializer

# IMPORTS-END

dask.config.set(scheduler="synchronous")
store = partial(get_store_from_url, "hfs://" + sys.argv[1])
COLUMNS = ["country", "day", "product", "units", "price"]


def day(i: int) -> pd.DataFrame:
    n = 12
    return pd.DataFrame(
        {
            "country": [["DE", "FR", "IT"][(i + k) % 3] for k in range(n)],
            "day": [i] * n,
            "product": [(k * 7 + i) % 5 for k in range(n)],
            "units": [(k * 3 + i * 5) % 11 for k in range(n)],
            "price": [round(1.5 * k + i, 2) for k in range(n)],
        }
    )


def show(title: str, df: pd.DataFrame) -> None:
    df = df[[c for c in COLUMNS if c in df.columns]]
    df = df.sort_values(list(df.columns)).reset_index(drop=True)
    print(f"== {title}: {len(df)} rows")
    print(df.to_string(index=False))


# eager write with a secondary index and an explicit serializer
store_dataframes_as_dataset(
    store=store,
    dataset_uuid="sales",
    dfs=[day(0), day(1)],
    partition_on=["country"],
    secondary_indices=["product"],
    df_serializer=ParquetSerializer(compression="ZSTD"),
)
# delayed append (one task per day, one commit)
update_dataset_from_delayed(
    [delayed(day)(2), delayed(day)(3)],
    store=store,
    dataset_uuid="sales",
    partition_on=["country"],
    df_serializer=ParquetSerializer(),
).compute()
show("all", read_table("sales", store))

# dask DataFrame with plateau's table= keyword, index and partition predicates
ddf = read_dataset_as_ddf(
    "sales",
    store,
    table="table",
    columns=COLUMNS,
    predicates=[[("product", "in", [1, 3]), ("country", "!=", "IT")]],
)
show("ddf product in (1, 3), not IT", ddf.compute())
store_dataset_from_ddf(
    ddf, store, "sales_copy", table="table", partition_on=["country"], metadata_merger=None
).compute()
show("copy", read_table("sales_copy", store))

# delayed reads: one task per file
parts = read_dataset_as_delayed(
    "sales", store, predicates=[[("country", "==", "DE"), ("units", ">", 5)], [("day", "==", 3)]]
)
show("delayed DE units > 5 or day 3", pd.concat(dask.compute(*parts)))

# a new dataset from delayed frames, then a bag round trip with an index built on the bag
store_delayed_as_dataset(
    [delayed(day)(i) for i in range(4, 7)],
    store,
    dataset_uuid="later",
    partition_on=["day"],
    secondary_indices=["country"],
).compute()
show("later, FR", read_table("later", store, predicates=[[("country", "==", "FR")]]))
bag = read_dataset_as_dataframe_bag("later", store, predicates=[[("units", "<=", 4)]])
store_bag_as_dataset(bag, store, "from_bag", partition_on=["country"]).compute()
build_dataset_indices__bag(store, "from_bag", ["product"]).compute()
show("from_bag product 2", read_table("from_bag", store, predicates=[[("product", "==", 2)]]))
bag2 = db.from_sequence([day(7), day(8)], npartitions=2)
store_bag_as_dataset(bag2, store, "bag_days", partition_on=["day"]).compute()
show("bag_days day 8", read_table("bag_days", store, predicates=[[("day", "==", 8)]]))

# delete a partition, garbage-collect, delete a dataset
update_dataset_from_delayed(
    [], store=store, dataset_uuid="sales", delete_scope=[{"country": "FR"}]
).compute()
dask.compute(*garbage_collect_dataset__delayed("sales", store))
show("after deleting FR", read_table("sales", store))
delete_dataset__delayed("sales_copy", store).compute()
print("copy header left:", "sales_copy.by-dataset-metadata.json" in store())
