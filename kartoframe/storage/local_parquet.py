"""Local Parquet files opened one after the other, a few columns read from each.

``pyarrow.parquet.ParquetFile`` wraps its reader in Python work of its own on every
file: a directory check of the path, the column paths indexed by every prefix, and the
Arrow schema converted again for each question about the columns (23 µs a time).
:class:`LocalParquetFiles` opens each file's reader directly and works out the columns
once for every run of files with the same Parquet schema (a dataset's files are
written alike), which a comparison of the schemas checks in under a microsecond. The
filtered scan of 249 files of 192 rows (an equality read through an index) ran 10 %
fewer instructions (callgrind: 443 -> 397 M).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow._parquet import ParquetReader

__all__ = ["LocalParquetFiles", "OpenedFile"]


@dataclasses.dataclass(frozen=True, slots=True)
class _Layout:
    """The top-level columns of files with one Parquet schema, and each one's leaves."""

    schema: pq.ParquetSchema
    leaves: dict[str, list[int]]


@dataclasses.dataclass(frozen=True, slots=True)
class OpenedFile:
    """One open file: its size in bytes, its footer and its columns."""

    size: int
    reader: ParquetReader
    layout: _Layout

    @property
    def metadata(self) -> pq.FileMetaData:
        """The file's footer."""
        return self.reader.metadata

    def holds(self, columns: Sequence[str]) -> bool:
        """Whether the file has every one of ``columns``."""
        return all(c in self.layout.leaves for c in columns)

    def holds_any(self, columns: Sequence[str]) -> bool:
        """Whether the file has one of ``columns`` at least."""
        return any(c in self.layout.leaves for c in columns)

    def read(self, columns: Sequence[str], *, use_threads: bool = False) -> pa.Table:
        """The file's ``columns`` (which it must hold), in that order."""
        leaves = self.layout.leaves
        table = self.reader.read_all(
            column_indices=[i for c in columns for i in leaves[c]], use_threads=use_threads
        )
        return table if table.column_names == list(columns) else table.select(list(columns))


class LocalParquetFiles:
    """Opens local Parquet files one after the other (a scan's files, on one thread)."""

    def __init__(self) -> None:
        self._layout: _Layout | None = None

    @contextmanager
    def open(self, path: str) -> Iterator[OpenedFile]:
        """The open file at ``path``, closed on leaving the block.

        Raises
        ------
        OSError, pyarrow.ArrowException
            The file cannot be opened, or its footer cannot be decoded.
        """
        fd = os.open(path, os.O_RDONLY)
        try:
            source = pa.OSFile(fd)  # owns the descriptor from here on
        except BaseException:
            os.close(fd)
            raise
        with source:
            reader = ParquetReader()
            reader.open(source, pre_buffer=False, arrow_extensions_enabled=True)
            yield OpenedFile(source.size(), reader, self._layout_of(reader))

    def _layout_of(self, reader: ParquetReader) -> _Layout:
        """The columns of ``reader``'s file: the last file's, if its schema is the same."""
        schema = reader.metadata.schema
        last = self._layout
        if last is not None and schema.equals(last.schema):
            return last
        leaves: dict[str, list[int]] = {}
        for i, path in enumerate(reader.column_paths):
            leaves.setdefault(path[0], []).append(i)
        self._layout = _Layout(schema, leaves)
        return self._layout
