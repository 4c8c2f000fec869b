"""The dask front: datasets and cubes as dask DataFrames, delayed objects and bags, and
writes, merges and optimizes as dask graphs (plateau's ``io.dask`` names and keywords).

Every function here plans with the same planner as the eager functions and hands the plan
to the delayed-graph builder (``kartoframe.execution.dask_*``,
``kartoframe.execution.graph_delayed``): one task per read task, partition or rewritten
unit, and one commit task. Importing this package does not import dask; each function
imports it when called. The names are also those of :mod:`kartoframe`::

    import kartoframe as kf

    ddf = kf.read_dataset_as_ddf("sales", "file:///data", predicates=[[("country", "==", "DE")]])
    kf.store_dataset_from_ddf(ddf, "file:///data", "sales_de", partition_on=["month"]).compute()

See ``docs/dask.md``.
"""

from __future__ import annotations

from kartoframe.dask import accessor as _accessor  # noqa: F401  (registers ddf.karto)
from kartoframe.dask.bag import (
    build_dataset_indices__bag,
    read_dataset_as_dataframe_bag,
    store_bag_as_dataset,
)
from kartoframe.dask.changes import read_changes_as_ddf
from kartoframe.dask.cube import (
    append_to_cube_from_dataframe,
    build_cube_from_dataframe,
    extend_cube_from_dataframe,
    query_cube_dataframe,
    update_cube_from_dataframe,
)
from kartoframe.dask.delayed import (
    delete_dataset__delayed,
    garbage_collect_dataset__delayed,
    read_dataset_as_delayed,
    store_delayed_as_dataset,
    update_dataset_from_delayed,
)
from kartoframe.dask.merge import merge_dataset_from_ddf
from kartoframe.dask.optimize import optimize_dataset_as_delayed
from kartoframe.dask.read import read_dataset_as_ddf
from kartoframe.dask.stats import collect_dataset_metadata, hash_dataset
from kartoframe.dask.write import store_dataset_from_ddf, update_dataset_from_ddf

__all__ = [
    "append_to_cube_from_dataframe",
    "build_cube_from_dataframe",
    "build_dataset_indices__bag",
    "collect_dataset_metadata",
    "delete_dataset__delayed",
    "extend_cube_from_dataframe",
    "garbage_collect_dataset__delayed",
    "hash_dataset",
    "merge_dataset_from_ddf",
    "optimize_dataset_as_delayed",
    "query_cube_dataframe",
    "read_changes_as_ddf",
    "read_dataset_as_dataframe_bag",
    "read_dataset_as_ddf",
    "read_dataset_as_delayed",
    "store_bag_as_dataset",
    "store_dataset_from_ddf",
    "store_delayed_as_dataset",
    "update_cube_from_dataframe",
    "update_dataset_from_ddf",
    "update_dataset_from_delayed",
]
