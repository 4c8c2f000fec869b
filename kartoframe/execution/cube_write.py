"""Execute a :class:`~kartoframe.plan.cube_write.CubeWritePlan`: files, then one commit per dataset.

1. Data files of every dataset are written first (:func:`write_dataset_chunk`, through
   :func:`kartoframe.execution.write.write_chunk`: ZSTD Parquet, fresh names). Nobody can
   see them: no header references them yet.
2. :func:`commit_all` commits the datasets one at a time (each commit is atomic: one
   header PUT), non-seed datasets in id order and **the seed last**.
3. If a commit fails, the datasets committed before it are restored (previous header and
   ``_common_metadata`` put back, or the new header removed) in reverse order, every file
   written by the operation is deleted, and the error is raised.

A reader running concurrently sees each dataset either before or after its commit; see
``docs/cubes.md`` for what that means for queries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from kartoframe.errors import EmptyInputError
from kartoframe.execution.write import ChunkResult, ParquetSerializer, commit_write, delete_files
from kartoframe.format import naming
from kartoframe.format.cube import CUBE_TABLE, Cube
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, encode_header
from kartoframe.plan.cube_write import CubeWritePlan, DatasetWrite
from kartoframe.storage.commit_values import committed_version
from kartoframe.storage.lifecycle import restore
from kartoframe.storage.log import current_state
from kartoframe.storage.resolve import bloom_columns_of, statistics_ref
from kartoframe.storage.store import Store

__all__ = [
    "ChunkFailure",
    "CubeWriteJob",
    "commit_all",
    "require_rows",
    "write_dataset_chunk",
    "write_plan_files",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkFailure:
    """A chunk that could not be validated or written (its files are already removed)."""

    dataset_id: str
    error: BaseException


def write_dataset_chunk(
    store: Store,
    cube: Cube,
    write: DatasetWrite,
    data: pd.DataFrame | pa.Table,
    serializer: ParquetSerializer,
    *,
    origin: str = "",
    validate: bool = True,
) -> ChunkResult:
    """Validate (NULLs, duplicate cells, schema) and write one chunk of a dataset."""
    chunk_origin = origin or f'a chunk of dataset "{write.dataset_id}"'
    table = write.prepare_chunk(cube, data, chunk_origin) if validate else data
    assert isinstance(table, pa.Table)
    from kartoframe.execution.write import write_chunk

    return write_chunk(
        store,
        write.uuid,
        table,
        serializer=serializer,
        origin=origin or f'dataset "{write.dataset_id}"',
        bloom_filter_columns=bloom_columns_of(write.base),
        **write.chunk_arguments(),
    )


def safe_write_chunk(
    store: Store,
    cube: Cube,
    write: DatasetWrite,
    data: Any,
    serializer: ParquetSerializer,
    origin: str = "",
) -> ChunkResult | ChunkFailure:
    """:func:`write_dataset_chunk` returning failures as values (for dask tasks)."""
    try:
        return write_dataset_chunk(store, cube, write, data, serializer, origin=origin)
    except Exception as e:  # reported to and re-raised by the commit task
        return ChunkFailure(write.dataset_id, e)


def require_rows(
    store: Store,
    plan: CubeWritePlan,
    chunks: Mapping[str, Sequence[ChunkResult | ChunkFailure]],
) -> None:
    """Refuse a build, extend or append whose data left a dataset without rows.

    Raises
    ------
    EmptyInputError
        A written dataset got no rows (and no failure to report); every file written for
        the operation is deleted first.
    """
    empty = sorted(
        w.dataset_id
        for w in plan.writes
        if not any(
            isinstance(c, ChunkResult) and c.partitions for c in chunks.get(w.dataset_id, ())
        )
        and not any(isinstance(c, ChunkFailure) for c in chunks.get(w.dataset_id, ()))
    )
    if empty:
        good = {k: [c for c in cs if isinstance(c, ChunkResult)] for k, cs in chunks.items()}
        delete_files(store, _chunk_keys(good))
        raise EmptyInputError(f"Cannot write empty datasets: {', '.join(empty)}")


def _chunk_keys(chunks: Mapping[str, Sequence[ChunkResult]]) -> list[str]:
    return [p.key for cs in chunks.values() for c in cs for p in c.partitions]


def write_plan_files(
    store: Store, plan: CubeWritePlan, serializer: ParquetSerializer
) -> dict[str, list[ChunkResult]]:
    """Write the files of every dataset of an eager plan (tables already validated).

    On failure every file written so far is deleted.
    """
    out: dict[str, list[ChunkResult]] = {}
    try:
        for w in plan.writes:
            if w.table is None:
                out[w.dataset_id] = []
                continue
            out[w.dataset_id] = [
                write_dataset_chunk(store, plan.cube, w, w.table, serializer, validate=False)
            ]
    except BaseException:
        delete_files(store, _chunk_keys(out))
        raise
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class _Committed:
    uuid: str
    written: bytes
    written_format: naming.MetadataFormat
    previous: bytes | None
    previous_format: naming.MetadataFormat | None
    previous_schema: bytes | None
    new_index_keys: tuple[str, ...]


def commit_all(
    store: Store,
    plan: CubeWritePlan,
    chunks: Mapping[str, Sequence[ChunkResult | ChunkFailure]],
) -> dict[str, DatasetHeader]:
    """Commit every dataset of a plan (seed last); undo on failure.

    Returns
    -------
    dict
        Dataset id -> committed header.

    Raises
    ------
    Exception
        The first chunk failure, or the commit error; the store is then as before.
    HeaderPublishError
        A dataset's version stands although its header could not be written (see
        :class:`kartoframe.storage.commit.HeaderPublishError`): that dataset is
        committed, so the remaining datasets are committed too and nothing is undone;
        the error is raised once all are.
    """
    failures = [c for cs in chunks.values() for c in cs if isinstance(c, ChunkFailure)]
    good: dict[str, list[ChunkResult]] = {
        k: [c for c in cs if isinstance(c, ChunkResult)] for k, cs in chunks.items()
    }
    if failures:
        delete_files(store, _chunk_keys(good))
        raise failures[0].error
    done: list[_Committed] = []
    out: dict[str, DatasetHeader] = {}
    standing: BaseException | None = None
    stood: set[str] = set()
    try:
        for w in plan.writes:
            before = w.base if w.base is not None else w.replaces
            previous_schema = (
                store.get_or_none(naming.common_metadata_key(w.uuid, before.metadata.table_name))
                if before is not None
                else None
            )
            try:
                header = _commit_dataset(store, plan, w, good.get(w.dataset_id, []), before)
            except BaseException as e:
                if committed_version(e) is None:
                    raise
                # the version stands (its header could not be written, nor its revert
                # recorded): the dataset is committed, so the others are committed too
                standing = standing or e
                stood.add(w.uuid)
                state = current_state(store, w.uuid)
                if state is None or state.header is None:
                    raise
                out[w.dataset_id] = state.header
                continue
            old_index = set(before.metadata.indices.values()) if before is not None else set()
            old_stats = statistics_ref(before.metadata) if before is not None else None
            if old_stats is not None:
                old_index.update(old_stats.keys)
            new_stats = statistics_ref(header)
            new_keys = list(header.indices.values())
            if new_stats is not None:
                new_keys.extend(new_stats.keys)
            done.append(
                _Committed(
                    uuid=w.uuid,
                    written=encode_header(header),
                    written_format=header.storage_format,
                    previous=before.header_bytes if before is not None else None,
                    previous_format=before.metadata.storage_format if before is not None else None,
                    previous_schema=previous_schema,
                    new_index_keys=tuple(k for k in new_keys if k not in old_index),
                )
            )
            out[w.dataset_id] = header
    except BaseException:
        kept: set[str] = set(stood)  # committed versions that stand keep their files
        for c in reversed(done):
            try:
                restore(
                    store,
                    c.uuid,
                    written=c.written,
                    written_format=c.written_format,
                    previous=c.previous,
                    previous_format=c.previous_format,
                    table=CUBE_TABLE,
                    previous_schema=c.previous_schema,
                )
            except Exception:  # another writer built on this commit: keep its files
                kept.add(c.uuid)
            else:
                delete_files(store, c.new_index_keys)
        by_uuid = {w.dataset_id: w.uuid for w in plan.writes}
        delete_files(
            store,
            _chunk_keys({k: v for k, v in good.items() if by_uuid.get(k) not in kept}),
        )
        raise
    if standing is not None:
        raise standing  # every dataset is committed; a header is not written yet
    return out


def _commit_dataset(
    store: Store,
    plan: CubeWritePlan,
    w: DatasetWrite,
    chunks: Sequence[ChunkResult],
    before: LoadedDataset | None,
) -> DatasetHeader:
    """Commit one dataset of the plan (one atomic commit of the transaction protocol)."""
    return commit_write(
        store,
        w.uuid,
        chunks,
        base=w.base,
        partition_on=w.partition_on,
        secondary_indices=w.index_columns if w.base is None else (),
        remove_labels=w.remove_labels,
        metadata=w.metadata,
        storage_format="json",
        table_name=CUBE_TABLE,
        expect_absent=before is None,
        empty_schema=w.schema,
        schema_evolution=plan.schema_evolution,
        commit=plan.commit,
        operation_parameters={"cube_operation": plan.operation},
    )


@dataclasses.dataclass(frozen=True)
class CubeWriteJob:
    """A planned cube write as the dask and Spark engines run it: the engine's frame per
    dataset, written with ``serializer``, then :meth:`commit` once (seed last).

    ``require_rows``: refuse a written dataset without rows (every operation but update).
    """

    store: Store
    plan: CubeWritePlan
    frames: Mapping[str, Any]
    serializer: ParquetSerializer
    require_rows: bool = True

    def commit(
        self, chunks: Mapping[str, Sequence[ChunkResult | ChunkFailure]]
    ) -> dict[str, DatasetHeader]:
        """Check the rows (``require_rows``), then commit every dataset or undo and raise."""
        if self.require_rows:
            require_rows(self.store, self.plan, chunks)
        return commit_all(self.store, self.plan, chunks)
