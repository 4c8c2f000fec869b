"""Cube writes as dask graphs: one writer task per input partition and dataset, one commit task."""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from collections.abc import Sequence
from typing import Any

import pandas as pd

from kartoframe.execution.cube_write import ChunkFailure, CubeWriteJob, safe_write_chunk
from kartoframe.execution.dask_engine import delayed, no_string_conversion
from kartoframe.execution.dask_write import BUCKET_COLUMN, shuffle_for_write
from kartoframe.execution.write import ChunkResult, ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.format.header import DatasetHeader
from kartoframe.plan.cube_write import DatasetWrite
from kartoframe.storage.store import Store

__all__ = ["CubeCommitter", "write_graph"]


@dataclasses.dataclass(frozen=True)
class ChunkWriter:
    """Validates and writes one partition of a dataset's input frame."""

    store: Store
    cube: Cube
    write: DatasetWrite
    serializer: ParquetSerializer
    token: str

    def __call__(self, df: pd.DataFrame, number: int) -> list[ChunkResult | ChunkFailure]:
        """Write the chunk (one call per bucket after a bucketed shuffle)."""
        origin = f'partition {number} of dataset "{self.write.dataset_id}"'
        if len(df) == 0:
            return []
        if BUCKET_COLUMN not in df.columns:
            return [
                safe_write_chunk(self.store, self.cube, self.write, df, self.serializer, origin)
            ]
        out: list[ChunkResult | ChunkFailure] = []
        for _, sub in df.groupby(BUCKET_COLUMN, sort=True):
            part = sub.drop(columns=[BUCKET_COLUMN]).reset_index(drop=True)
            out.append(
                safe_write_chunk(self.store, self.cube, self.write, part, self.serializer, origin)
            )
        return out

    def __dask_tokenize__(self) -> tuple[str, str, str]:
        return ("kartoframe-cube-writer", self.token, self.write.dataset_id)


@dataclasses.dataclass(frozen=True)
class CubeCommitter:
    """The final task: commit every dataset (seed last) or undo and raise."""

    job: CubeWriteJob  # without its frames (the graph carries them)
    token: str

    def __call__(
        self, outcomes: Sequence[tuple[str, list[ChunkResult | ChunkFailure]]]
    ) -> dict[str, DatasetHeader]:
        """Collect the chunk outcomes per dataset and commit."""
        chunks: dict[str, list[ChunkResult | ChunkFailure]] = {
            w.dataset_id: [] for w in self.job.plan.writes
        }
        for ds_id, results in outcomes:
            chunks[ds_id].extend(results)
        return self.job.commit(chunks)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("kartoframe-cube-committer", self.token)


def _tagged(ds_id: str, results: list[ChunkResult | ChunkFailure]) -> tuple[str, list[Any]]:
    return ds_id, results


def write_graph(
    job: CubeWriteJob,
    *,
    shuffle: bool = False,
    num_buckets: int = 1,
    bucket_by: Sequence[str] = (),
) -> Any:
    """A ``Delayed`` writing every partition of every frame, then committing each dataset."""
    token = _uuid.uuid4().hex
    outcomes = []
    for w in job.plan.writes:
        ddf = job.frames.get(w.dataset_id)
        if ddf is None:
            continue
        if shuffle and w.partition_on:
            ddf = shuffle_for_write(ddf, w.partition_on, list(bucket_by), num_buckets)
        with no_string_conversion():
            parts = ddf.to_delayed(optimize_graph=True)
        writer = ChunkWriter(job.store, job.plan.cube, w, job.serializer, token)
        write, tag = delayed(writer, pure=True), delayed(_tagged, pure=True)
        for i, p in enumerate(parts):
            result = write(p, i, dask_key_name=(f"kartoframe-cube-write-{token}-{w.dataset_id}", i))
            outcomes.append(tag(w.dataset_id, result))
    committer = CubeCommitter(dataclasses.replace(job, frames={}), token)
    return delayed(committer, pure=True)(outcomes, dask_key_name=f"kartoframe-cube-commit-{token}")
