"""The dask cube engine: query plans become ``dd.from_map`` graphs, writes a graph of chunk
writes followed by one task that commits each dataset (the seed last).

Imported lazily (only by the dask cube functions), so ``import kartoframe`` works
without dask.

Queries
    One dask partition per :class:`~kartoframe.plan.cube_query.QueryGroup` (one per
    ``partition_by`` value, or per cube partition), each running
    :func:`kartoframe.execution.cube_join.load_group`. ``meta`` is
    :func:`~kartoframe.execution.cube_join.empty_result`: the exact dtypes of every
    partition. dask's ``string[pyarrow]`` conversion is disabled for these collections.

Writes
    Every partition of every input frame is validated (NULLs, duplicate cells within the
    chunk, schema) and written by its own task, which returns a small
    :class:`~kartoframe.execution.write.ChunkResult` (or a
    :class:`~kartoframe.execution.cube_write.ChunkFailure`). The final task runs
    :func:`~kartoframe.execution.cube_write.commit_all`: on any failure it deletes every file
    the graph wrote and raises, so no header changes.
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from kartoframe.errors import EmptyInputError, MissingDependencyError

try:
    import dask.dataframe as dd
    from dask.delayed import delayed
except ImportError as _error:  # pragma: no cover - exercised without dask
    raise MissingDependencyError("dask[dataframe]", "dask") from _error

from kartoframe.execution.cube_join import empty_result, load_group
from kartoframe.execution.cube_write import ChunkFailure, commit_all, safe_write_chunk
from kartoframe.execution.dask_engine import no_string_conversion
from kartoframe.execution.dask_write import BUCKET_COLUMN, shuffle_for_write
from kartoframe.execution.write import ChunkResult, ParquetSerializer, delete_files
from kartoframe.format.cube import Cube
from kartoframe.format.header import DatasetHeader
from kartoframe.plan.cube_query import CubeQueryPlan, QueryGroup
from kartoframe.plan.cube_write import CubeWritePlan, DatasetWrite
from kartoframe.storage.store import Store

__all__ = ["CubeCommitter", "GroupLoader", "plan_to_dataframe", "write_graph"]


@dataclasses.dataclass(frozen=True)
class _Group:
    """A query group as a ``from_map`` argument (cheap to tokenize)."""

    group: QueryGroup
    token: str

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("kartoframe-cube-group", self.token)


@dataclasses.dataclass(frozen=True)
class GroupLoader:
    """Loads one query group into pandas (the function of ``dd.from_map``)."""

    plan: CubeQueryPlan
    store: Store
    token: str

    def __call__(self, item: _Group) -> pd.DataFrame:
        """Run the group's scans and joins."""
        return load_group(self.plan, item.group, self.store, threads=False)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("kartoframe-cube-loader", self.token)


def _slim(plan: CubeQueryPlan) -> CubeQueryPlan:
    """The plan without what tasks do not need (header label order, other groups)."""
    reads = tuple(dataclasses.replace(r, label_order={}) for r in plan.reads)
    return dataclasses.replace(plan, reads=reads, groups=())


#: Without ``partition_by``, about this many cube partitions form one dask partition.
PARTITIONS_PER_TASK = 8


def plan_to_dataframe(plan: CubeQueryPlan, store: Store) -> Any:
    """A dask DataFrame of a query plan (unknown divisions).

    With ``partition_by`` every query group is one partition. Without, the groups are the
    cube partitions; neighbouring ones are combined (about :data:`PARTITIONS_PER_TASK` per
    task) so that per-task costs — reading lower-dimensional datasets, scan set-up — are
    shared.
    """
    meta = empty_result(plan)
    token = _uuid.uuid4().hex
    groups = plan.groups
    if not plan.intention.partition_by and len(groups) > 1:
        groups = plan.coalesced(-(-len(groups) // PARTITIONS_PER_TASK))
    with no_string_conversion():
        if not groups:
            return dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
        items = [_Group(g, f"{token}-{i}") for i, g in enumerate(groups)]
        return dd.from_map(  # type: ignore[no-untyped-call]
            GroupLoader(_slim(plan), store, token),
            items,
            meta=meta,
            label="query-cube",
            enforce_metadata=False,
        )


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

    store: Store
    plan: CubeWritePlan
    require_rows: bool
    token: str

    def __call__(
        self, outcomes: Sequence[tuple[str, list[ChunkResult | ChunkFailure]]]
    ) -> dict[str, DatasetHeader]:
        """Collect the chunk outcomes per dataset and commit."""
        chunks: dict[str, list[ChunkResult | ChunkFailure]] = {
            w.dataset_id: [] for w in self.plan.writes
        }
        for ds_id, results in outcomes:
            chunks[ds_id].extend(results)
        if self.require_rows:
            empty = sorted(
                w.dataset_id
                for w in self.plan.writes
                if not any(
                    isinstance(c, ChunkResult) and c.partitions for c in chunks[w.dataset_id]
                )
                and not any(isinstance(c, ChunkFailure) for c in chunks[w.dataset_id])
            )
            if empty:
                delete_files(
                    self.store,
                    [
                        p.key
                        for cs in chunks.values()
                        for c in cs
                        if isinstance(c, ChunkResult)
                        for p in c.partitions
                    ],
                )
                raise EmptyInputError(f"Cannot write empty datasets: {', '.join(empty)}")
        return commit_all(self.store, self.plan, chunks)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("kartoframe-cube-committer", self.token)


def _tagged(ds_id: str, results: list[ChunkResult | ChunkFailure]) -> tuple[str, list[Any]]:
    return ds_id, results


def write_graph(
    store: Store,
    plan: CubeWritePlan,
    frames: Mapping[str, Any],
    serializer: ParquetSerializer,
    *,
    shuffle: bool = False,
    num_buckets: int = 1,
    bucket_by: Sequence[str] = (),
    require_rows: bool = True,
) -> Any:
    """A ``Delayed`` writing every partition of every frame, then committing each dataset."""
    token = _uuid.uuid4().hex
    outcomes = []
    for w in plan.writes:
        ddf = frames.get(w.dataset_id)
        if ddf is None:
            continue
        if shuffle and w.partition_on:
            ddf = shuffle_for_write(ddf, w.partition_on, list(bucket_by), num_buckets)
        with no_string_conversion():
            parts = ddf.to_delayed(optimize_graph=True)
        writer = delayed(ChunkWriter(store, plan.cube, w, serializer, token), pure=True)
        tag = delayed(_tagged, pure=True)
        for i, p in enumerate(parts):
            result = writer(
                p, i, dask_key_name=(f"kartoframe-cube-write-{token}-{w.dataset_id}", i)
            )
            outcomes.append(tag(w.dataset_id, result))
    committer = CubeCommitter(store, plan, require_rows, token)
    return delayed(committer, pure=True)(outcomes, dask_key_name=f"kartoframe-cube-commit-{token}")
