"""Dataset metadata for inspection: :class:`DatasetMetadata` and
:func:`read_dataset_metadata` (plateau names; re-exported by :mod:`kartoframe.api.read`).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.errors import InvalidInputError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.format.header_partitions import partitions_dict
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.plan.arguments import check_uuid
from kartoframe.storage.resolve import load_dataset, load_indices
from kartoframe.storage.store import Store

__all__ = ["DatasetMetadata", "read_dataset_metadata"]


@fill
class DatasetMetadata:
    """A loaded dataset header plus its schema, for inspection.

    Obtain it with :func:`read_dataset_metadata` or :meth:`load_from_store`.

    $examples
    >>> _ = kf.store_dataframes_as_dataset(
    ...     store="memory://md-example", dataset_uuid="sales",
    ...     dfs=[pd.DataFrame({"country": ["DE", "FR"], "units": [1, 2]})],
    ...     partition_on=["country"])
    >>> md = kf.read_dataset_metadata("sales", "memory://md-example")
    >>> md.partition_keys, len(md.partitions)
    (['country'], 2)
    """

    def __init__(self, loaded: LoadedDataset, store: Store) -> None:
        self._loaded = loaded
        self._store = store

    @classmethod
    def load_from_store(cls, uuid: str, store: StoreInput) -> DatasetMetadata:
        """Load a dataset's metadata (plateau-compatible constructor)."""
        return read_dataset_metadata(uuid, store)

    @property
    def uuid(self) -> str:
        """Dataset uuid."""
        return self._loaded.metadata.uuid

    @property
    def header(self) -> DatasetHeader:
        """The raw header value."""
        return self._loaded.metadata

    @property
    def partitions(self) -> dict[str, str]:
        """Partition label -> data file key (commit order)."""
        return partitions_dict(self._loaded.metadata.partitions)

    @property
    def partition_keys(self) -> list[str]:
        """Hive partition columns."""
        return list(self._loaded.metadata.partition_keys)

    @property
    def indices(self) -> dict[str, str]:
        """Secondary index column -> index file key."""
        return dict(self._loaded.metadata.indices)

    @property
    def secondary_indices(self) -> list[str]:
        """Columns with a secondary index."""
        return self._loaded.metadata.secondary_indices

    @property
    def index_columns(self) -> set[str]:
        """Partition keys and secondary index columns."""
        return self._loaded.metadata.index_columns

    @property
    def metadata(self) -> dict[str, Any]:
        """User metadata (with ``creation_time``)."""
        return dict(self._loaded.metadata.metadata)

    @property
    def schema(self) -> pa.Schema:
        """The dataset schema (partition columns included)."""
        return self._loaded.schema

    @property
    def table_name(self) -> str:
        """The table directory name."""
        return self._loaded.metadata.table_name

    @property
    def explicit_partitions(self) -> bool:
        """False for implicit datasets (partitions found by listing)."""
        return self._loaded.metadata.explicit_partitions

    @property
    def metadata_storage_format(self) -> str:
        """``"json"`` or ``"msgpack"``."""
        return self._loaded.metadata.storage_format

    @property
    def metadata_version(self) -> int:
        """Always 4."""
        return 4

    def load_index(self, column: str) -> pd.DataFrame:
        """Return a secondary index as a DataFrame (value, list of partition labels)."""
        if column not in self._loaded.metadata.indices and column not in (
            self._loaded.metadata.embedded_indices
        ):
            raise InvalidInputError(f"Column {column!r} has no secondary index.")
        loaded = load_indices(self._store, self._loaded, [column])
        return loaded.indices[column].to_pandas()

    def __repr__(self) -> str:
        return (
            f"DatasetMetadata(uuid={self.uuid!r}, partitions={len(self.partitions)}, "
            f"partition_keys={self.partition_keys}, indices={self.secondary_indices})"
        )


@fill
def read_dataset_metadata(
    dataset_uuid: str,
    store: StoreInput,
    version: int | None = None,
    as_of: object = None,
) -> DatasetMetadata:
    """Load a dataset's header and schema.

    $params_dataset
    version, as_of
        A past version (time travel), as in :func:`read_table`.

    Returns
    -------
    DatasetMetadata

    Raises
    ------
    DatasetNotFoundError
        If the dataset does not exist.
    """
    st = ensure_store(store)
    loaded = load_dataset(st, check_uuid(dataset_uuid), version=version, as_of=as_of)
    return DatasetMetadata(loaded, st)
