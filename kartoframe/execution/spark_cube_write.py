"""Cube writes from Spark: a Spark job per dataset, one commit on the driver (seed last)."""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from kartoframe.execution import spark_write
from kartoframe.execution.cube_write import CubeWriteJob
from kartoframe.execution.write import ChunkResult, delete_files
from kartoframe.format.cube import Cube
from kartoframe.format.header import DatasetHeader
from kartoframe.plan.cube_write import DatasetWrite

__all__ = ["write_cube_sdfs"]


@dataclasses.dataclass(frozen=True)
class CubeChunk:
    """Executor-side validation of one chunk of a cube dataset (the eager rules)."""

    cube: Cube
    write: DatasetWrite

    def __call__(self, table: pa.Table, origin: str) -> pa.Table:
        """NULLs and duplicate cells (raises), sort, check against the planned schema."""
        return self.write.prepare_chunk(
            self.cube, table, f'{origin} of dataset "{self.write.dataset_id}"'
        )


def _zones(schema: pa.Schema) -> dict[str, str | None]:
    return {
        f.name: f.type.tz for f in schema if pa.types.is_timestamp(f.type) and f.type.tz is not None
    }


def write_cube_sdfs(job: CubeWriteJob, *, repartition: bool = True) -> dict[str, DatasetHeader]:
    """Write every dataset's Spark DataFrame, then commit the datasets (seed last).

    Raises
    ------
    EmptyInputError
        ``require_rows`` and a written dataset got no rows.
    KartoframeError
        A cube rule broken by the data (found by an executor) or a commit conflict;
        every file written for the operation is deleted and no header changes.
    """
    chunks: dict[str, list[ChunkResult]] = {w.dataset_id: [] for w in job.plan.writes}
    try:
        for w in job.plan.writes:
            sdf = job.frames.get(w.dataset_id)
            if sdf is None:
                continue
            slim = dataclasses.replace(w, table=None, base=None, replaces=None)
            chunks[w.dataset_id] = spark_write.write_sdf(
                sdf,
                job.store,
                w.uuid,
                serializer=job.serializer,
                timezones=_zones(w.schema),
                repartition=repartition,
                prepare=CubeChunk(job.plan.cube, slim),
                **w.chunk_arguments(),
            )
    except BaseException:
        keys = [p.key for cs in chunks.values() for c in cs for p in c.partitions]
        delete_files(job.store, keys)
        raise
    return job.commit(chunks)  # require_rows deletes the files itself before it raises
