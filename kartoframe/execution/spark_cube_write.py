"""Cube writes from Spark: a Spark job per dataset, one commit on the driver (seed last)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kartoframe.execution import spark_write
from kartoframe.execution.cube_write import commit_all
from kartoframe.execution.cube_write import require_rows as check_rows
from kartoframe.execution.write import ChunkResult, ParquetSerializer, delete_files
from kartoframe.format.cube import Cube
from kartoframe.format.header import DatasetHeader
from kartoframe.plan.cube_write import CubeWritePlan, DatasetWrite
from kartoframe.storage.store import Store

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


def write_cube_sdfs(
    store: Store,
    plan: CubeWritePlan,
    frames: Mapping[str, Any],
    serializer: ParquetSerializer,
    *,
    repartition: bool = True,
    require_rows: bool = True,
) -> dict[str, DatasetHeader]:
    """Write every dataset's Spark DataFrame, then commit the datasets (seed last).

    Raises
    ------
    EmptyInputError
        ``require_rows`` and a written dataset got no rows.
    KartoframeError
        A cube rule broken by the data (found by an executor) or a commit conflict;
        every file written for the operation is deleted and no header changes.
    """
    chunks: dict[str, list[ChunkResult]] = {w.dataset_id: [] for w in plan.writes}
    try:
        for w in plan.writes:
            sdf = frames.get(w.dataset_id)
            if sdf is None:
                continue
            slim = dataclasses.replace(w, table=None, base=None, replaces=None)
            chunks[w.dataset_id] = spark_write.write_sdf(
                sdf,
                store,
                w.uuid,
                serializer=serializer,
                timezones=_zones(w.schema),
                repartition=repartition,
                prepare=CubeChunk(plan.cube, slim),
                **w.chunk_arguments(),
            )
        if require_rows:
            check_rows(store, plan, chunks)
    except BaseException:
        delete_files(store, [p.key for cs in chunks.values() for c in cs for p in c.partitions])
        raise
    return commit_all(store, plan, chunks)
