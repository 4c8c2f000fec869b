"""The values writes return: a lazy handle on the committed dataset, and the files of a
partition written now and committed later (plateau's ``MetaPartition``).
"""

from __future__ import annotations

from typing import Any

from kartoframe.execution.write import ChunkResult, WrittenPartition
from kartoframe.storage.store import Store

__all__ = ["DatasetMetadataResult", "MetaPartition"]


class MetaPartition:
    """Files written by :func:`write_single_partition`, to be committed later."""

    def __init__(self, result: ChunkResult) -> None:
        self.result = result

    @property
    def labels(self) -> list[str]:
        """Partition labels of the written files."""
        return [p.label for p in self.result.partitions]

    @property
    def files(self) -> list[WrittenPartition]:
        """The written files."""
        return list(self.result.partitions)

    def __repr__(self) -> str:
        return f"MetaPartition(labels={self.labels})"


class DatasetMetadataResult:
    """Lazy handle returned by writes: ``.uuid`` now, full metadata on demand."""

    def __init__(self, uuid: str, store: Store) -> None:
        self.uuid = uuid
        self._store = store

    def load(self) -> Any:
        """Load the committed dataset's metadata."""
        from kartoframe.front.metadata import read_dataset_metadata

        return read_dataset_metadata(self.uuid, self._store)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"<dataset {self.uuid!r} in {self._store!r}>"
