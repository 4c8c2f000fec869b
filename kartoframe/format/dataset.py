"""The loaded state of a dataset: header, schema and the indices loaded so far."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import pyarrow as pa

from kartoframe.format.header import DatasetHeader

__all__ = ["LoadedDataset"]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class LoadedDataset:
    """Everything planning needs, loaded by the storage layer.

    Attributes
    ----------
    metadata
        The header.
    schema
        The normalised dataset schema (partition columns included).
    indices
        Secondary indices loaded so far (column -> index table). Planning only uses the
        ones present; the resolver loads those a query needs.
    header_bytes
        The raw header as read, so a commit can detect a concurrent change.
    statistics
        Per-file statistics (see :mod:`kartoframe.format.statistics`), once the resolver
        loaded them for a predicate; None otherwise.
    """

    metadata: DatasetHeader
    schema: pa.Schema
    indices: Mapping[str, pa.Table] = dataclasses.field(default_factory=dict)
    header_bytes: bytes | None = None
    statistics: pa.Table | None = None

    @property
    def uuid(self) -> str:
        """The dataset uuid."""
        return self.metadata.uuid
