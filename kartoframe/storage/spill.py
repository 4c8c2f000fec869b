"""Spill files: rows a job puts aside on the local disk and reads back (Arrow IPC).

A sort of more rows than a job should hold (:mod:`kartoframe.execution.external_sort`)
writes its sorted runs here and merges them back a batch at a time. The files live in a
private temporary folder (under ``TMPDIR``, the local disk of a dask worker or Spark
executor), are uncompressed (written and read at disk speed) and are removed when the
:class:`SpillFolder` closes, whether the job succeeded or failed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa

from kartoframe.errors import StorageError

__all__ = ["SpillFolder"]


class SpillFolder:
    """A temporary folder of spill files, removed on :meth:`close` (or leaving a ``with``).

    Parameters
    ----------
    prefix
        Starts the folder's name (to tell whose it is in ``TMPDIR``).
    """

    def __init__(self, prefix: str = "kartoframe-spill-") -> None:
        self._path = Path(tempfile.mkdtemp(prefix=prefix))
        self._count = 0

    def __enter__(self) -> SpillFolder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        """The folder."""
        return self._path

    def close(self) -> None:
        """Remove the folder and every file in it."""
        shutil.rmtree(self._path, ignore_errors=True)

    def discard(self, path: Path) -> None:
        """Remove one spill file (its rows are read and no longer needed)."""
        path.unlink(missing_ok=True)

    def write(self, tables: Iterable[pa.Table], *, batch_rows: int) -> Path:
        """Write the rows of ``tables`` (one schema) to a new spill file, in batches of at
        most ``batch_rows`` rows (what :meth:`read` yields at a time).

        Raises
        ------
        StorageError
            The local disk refused the file (full, or not writable).
        """
        path = self._path / f"run-{self._count:06d}.arrow"
        self._count += 1
        writer: pa.ipc.RecordBatchFileWriter | None = None
        try:
            with pa.OSFile(str(path), "wb") as sink:
                for table in tables:
                    if writer is None:
                        writer = pa.ipc.new_file(sink, table.schema)
                    writer.write_table(table, max_chunksize=batch_rows)
                if writer is not None:
                    writer.close()
        except OSError as exc:
            raise StorageError(f"Could not write the spill file {path}: {exc}") from exc
        return path

    def read(self, path: Path) -> Iterator[pa.Table]:
        """The rows of a spill file, one batch (as a table) at a time; nothing for a file
        no rows were written to.
        """
        try:
            with pa.OSFile(str(path), "rb") as source:
                if source.size() == 0:
                    return
                reader = pa.ipc.open_file(source)
                for i in range(reader.num_record_batches):
                    yield pa.Table.from_batches([reader.get_batch(i)])
        except OSError as exc:
            raise StorageError(f"Could not read the spill file {path}: {exc}") from exc
