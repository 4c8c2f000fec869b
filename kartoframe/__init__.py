"""kartoframe: Kartothek (metadata v4) datasets on fsspec stores for pandas, dask and Spark.

The public functions keep the names and keywords of plateau/kartothek, so switching is a
matter of changing the import::

    import kartoframe as kf

    kf.store_dataframes_as_dataset(store="file:///data", dataset_uuid="sales",
                                   dfs=[df], partition_on=["country"])
    kf.read_table("sales", "file:///data", predicates=[[("country", "==", "DE")]])
"""

from __future__ import annotations

from kartoframe import errors as _errors
from kartoframe.api import accessor as _accessor  # noqa: F401  (registers df.karto)
from kartoframe.api.changes import Changes, read_changes, read_changes__iterator
from kartoframe.api.check import CheckReport, Finding, check_cube, check_dataset
from kartoframe.api.copy import copy_dataset
from kartoframe.api.cube import (
    discover_cube,
    discover_datasets,
    discover_datasets_unchecked,
    query_cube,
)
from kartoframe.api.cube_admin import cleanup_cube, collect_stats, copy_cube, delete_cube
from kartoframe.api.cube_changes import CubeChanges, read_cube_changes
from kartoframe.api.cube_write import (
    append_to_cube,
    build_cube,
    extend_cube,
    remove_partitions,
    update_cube,
)
from kartoframe.api.history import CommitRecord, dataset_history, vacuum_dataset
from kartoframe.api.maintenance import (
    build_dataset_indices,
    delete_dataset,
    garbage_collect_dataset,
)
from kartoframe.api.merge import MergeResult, merge_dataset
from kartoframe.api.optimize import OptimizeResult, optimize_cube, optimize_dataset
from kartoframe.api.read import (
    DatasetMetadata,
    read_dataset_as_dataframes,
    read_dataset_as_dataframes__iterator,
    read_dataset_metadata,
    read_table,
)
from kartoframe.api.schema import SchemaEvent, read_dataset_schema, schema_history
from kartoframe.api.statistics import build_dataset_statistics, dataset_statistics
from kartoframe.api.utils import (
    empty_dataframe_from_schema,
    ensure_store,
    lazy_store,
    make_meta,
    normalize_column_order,
    normalize_type,
    validate_compatible,
)
from kartoframe.api.write import (
    DatasetMetadataResult,
    MetaPartition,
    commit_dataset,
    create_empty_dataset_header,
    store_dataframes_as_dataset,
    store_dataframes_as_dataset__iter,
    update_dataset_from_dataframes,
    update_dataset_from_dataframes__iter,
    write_single_partition,
)
from kartoframe.dask import (
    append_to_cube_from_dataframe,
    build_cube_from_dataframe,
    build_dataset_indices__bag,
    collect_dataset_metadata,
    delete_dataset__delayed,
    extend_cube_from_dataframe,
    garbage_collect_dataset__delayed,
    hash_dataset,
    merge_dataset_from_ddf,
    optimize_dataset_as_delayed,
    query_cube_dataframe,
    read_changes_as_ddf,
    read_dataset_as_dataframe_bag,
    read_dataset_as_ddf,
    read_dataset_as_delayed,
    store_bag_as_dataset,
    store_dataset_from_ddf,
    store_delayed_as_dataset,
    update_cube_from_dataframe,
    update_dataset_from_ddf,
    update_dataset_from_delayed,
)
from kartoframe.errors import *  # noqa: F403  (every error class, as errors.__all__ lists them)
from kartoframe.execution.huge_pages import disable_transparent_huge_pages
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.plan.conditions import C, Condition, Conjunction
from kartoframe.storage.csv_files import CsvSerializer
from kartoframe.storage.store import Store

__version__ = "0.1.0"

__all__ = [
    *_errors.__all__,
    "CsvSerializer",
    "DatasetMetadata",
    "DatasetMetadataResult",
    "MetaPartition",
    "ParquetSerializer",
    "Store",
    "__version__",
    "build_dataset_indices",
    "collect_dataset_metadata",
    "commit_dataset",
    "copy_dataset",
    "create_empty_dataset_header",
    "delete_dataset",
    "disable_transparent_huge_pages",
    "garbage_collect_dataset",
    "CheckReport",
    "Finding",
    "check_cube",
    "check_dataset",
    "Changes",
    "CommitRecord",
    "CubeChanges",
    "dataset_history",
    "vacuum_dataset",
    "OptimizeResult",
    "merge_dataset",
    "merge_dataset_from_ddf",
    "MergeResult",
    "optimize_cube",
    "optimize_dataset",
    "optimize_dataset_as_delayed",
    "hash_dataset",
    "read_changes",
    "read_cube_changes",
    "read_changes__iterator",
    "read_changes_as_ddf",
    "read_dataset_as_dataframes",
    "read_dataset_as_dataframes__iterator",
    "read_dataset_as_ddf",
    "read_dataset_metadata",
    "read_table",
    "store_dataframes_as_dataset",
    "store_dataframes_as_dataset__iter",
    "store_dataset_from_ddf",
    "update_dataset_from_dataframes",
    "update_dataset_from_dataframes__iter",
    "update_dataset_from_ddf",
    "write_single_partition",
    "SchemaEvent",
    "build_dataset_statistics",
    "dataset_statistics",
    "read_dataset_schema",
    "schema_history",
    "C",
    "Condition",
    "Conjunction",
    "Cube",
    "append_to_cube",
    "append_to_cube_from_dataframe",
    "build_cube",
    "build_cube_from_dataframe",
    "cleanup_cube",
    "collect_stats",
    "copy_cube",
    "delete_cube",
    "discover_cube",
    "discover_datasets",
    "discover_datasets_unchecked",
    "extend_cube",
    "extend_cube_from_dataframe",
    "query_cube",
    "query_cube_dataframe",
    "remove_partitions",
    "update_cube",
    "update_cube_from_dataframe",
    # plateau's delayed and bag API and utilities (plateau.api.dataset)
    "build_dataset_indices__bag",
    "delete_dataset__delayed",
    "empty_dataframe_from_schema",
    "ensure_store",
    "garbage_collect_dataset__delayed",
    "lazy_store",
    "make_meta",
    "normalize_column_order",
    "normalize_type",
    "read_dataset_as_dataframe_bag",
    "read_dataset_as_delayed",
    "store_bag_as_dataset",
    "store_delayed_as_dataset",
    "update_dataset_from_delayed",
    "validate_compatible",
]
