"""kartoframe: Kartothek (metadata v4) datasets on fsspec stores for pandas, dask and Spark.

The public functions keep the names and keywords of plateau/kartothek, so switching is a
matter of changing the import::

    import kartoframe as kf

    kf.store_dataframes_as_dataset(store="file:///data", dataset_uuid="sales",
                                   dfs=[df], partition_on=["country"])
    kf.read_table("sales", "file:///data", predicates=[[("country", "==", "DE")]])
"""

from __future__ import annotations

from kartoframe.api.maintenance import (
    build_dataset_indices,
    delete_dataset,
    garbage_collect_dataset,
)
from kartoframe.api.read import (
    DatasetMetadata,
    read_dataset_as_dataframes,
    read_dataset_as_dataframes__iterator,
    read_dataset_metadata,
    read_table,
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
from kartoframe.errors import (
    ColumnNotFoundError,
    CommitConflictError,
    CorruptMetadataError,
    DatasetExistsError,
    DatasetNotFoundError,
    EmptyInputError,
    FormatError,
    InvalidInputError,
    InvalidPredicateError,
    InvalidTypeError,
    InvalidUUIDError,
    KartoframeError,
    MissingDependencyError,
    NullPartitionValueError,
    SchemaError,
    StorageError,
    UnsafePathError,
    UnsupportedVersionError,
)
from kartoframe.execution.write import ParquetSerializer
from kartoframe.storage.store import Store

__version__ = "0.1.0"

__all__ = [
    "ColumnNotFoundError",
    "CommitConflictError",
    "CorruptMetadataError",
    "DatasetExistsError",
    "DatasetMetadata",
    "DatasetMetadataResult",
    "DatasetNotFoundError",
    "EmptyInputError",
    "FormatError",
    "InvalidInputError",
    "InvalidPredicateError",
    "InvalidTypeError",
    "InvalidUUIDError",
    "KartoframeError",
    "MetaPartition",
    "MissingDependencyError",
    "NullPartitionValueError",
    "ParquetSerializer",
    "SchemaError",
    "StorageError",
    "Store",
    "UnsafePathError",
    "UnsupportedVersionError",
    "__version__",
    "build_dataset_indices",
    "commit_dataset",
    "create_empty_dataset_header",
    "delete_dataset",
    "garbage_collect_dataset",
    "read_dataset_as_dataframes",
    "read_dataset_as_dataframes__iterator",
    "read_dataset_metadata",
    "read_table",
    "store_dataframes_as_dataset",
    "store_dataframes_as_dataset__iter",
    "update_dataset_from_dataframes",
    "update_dataset_from_dataframes__iter",
    "write_single_partition",
]
