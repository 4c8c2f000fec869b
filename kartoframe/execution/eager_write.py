"""The eager engine: frames (a list or an iterator) -> chunks -> one commit.

:func:`write_frames` runs a resolved write request
(:func:`~kartoframe.plan.write_request.resolve_write`) over the frames with the chunk
kernel, each frame checked against the stored schema before its files are written, and
commits once; a failure removes every file written. :func:`delete_scope_labels` selects
the partitions a ``delete_scope`` removes (loading the indices it needs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.errors import EmptyInputError, InvalidInputError, InvalidTypeError
from kartoframe.execution.chunks import DataSerializer, delete_files, write_chunk
from kartoframe.execution.write import commit_resolved
from kartoframe.format.convert import frame_to_table
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.plan.predicates import bind
from kartoframe.plan.pruning import prune
from kartoframe.plan.scan import required_index_columns
from kartoframe.plan.write import ChunkResult, check_against_base
from kartoframe.plan.write_request import MetadataArg, ResolvedWrite, jsonable, resolve_metadata
from kartoframe.storage.resolve import bloom_columns_of, load_indices
from kartoframe.storage.store import Store

__all__ = ["delete_scope_labels", "precheck_frame", "write_frames"]


def delete_scope_labels(loaded: LoadedDataset, store: Store, delete_scope: object) -> set[str]:
    """Labels selected by a ``delete_scope`` (list of ``{column: value}`` dicts).

    Every column must be a partition key or carry a secondary index; a scope on any
    other column is refused (the reference deletes *everything* in that case).
    """
    if delete_scope is None:
        return set()
    if not isinstance(delete_scope, list | tuple):
        raise InvalidTypeError("delete_scope must be a list of {column: value} dicts.")
    md = loaded.metadata
    indexed = md.index_columns
    conjunctions = []
    for scope in delete_scope:
        if not isinstance(scope, Mapping):
            raise InvalidTypeError(f"delete_scope entries must be dicts, got {scope!r}.")
        if not scope:
            return set(md.partitions)
        bad = sorted(c for c in scope if c not in indexed)
        if bad:
            raise InvalidInputError(
                f"delete_scope columns {bad} are neither partition keys nor indexed in "
                f"dataset {md.uuid!r}; refusing to guess which partitions to delete."
            )
        nulls = sorted(c for c, v in scope.items() if v is None)
        if nulls:
            raise InvalidInputError(f"delete_scope values must not be null ({nulls}).")
        conjunctions.append([(c, "==", v) for c, v in scope.items()])
    if not conjunctions:
        return set()
    pred = bind(conjunctions, loaded.schema)
    loaded = load_indices(store, loaded, required_index_columns(loaded, conjunctions))
    indices = dict(loaded.indices)
    labels, _ = prune(pred, list(md.partitions), md.partition_keys, loaded.schema, indices)
    return set(labels)


def precheck_frame(
    base: LoadedDataset, df: Any, partition_on: Sequence[str], origin: str, evolution: Any = "none"
) -> None:
    """Refuse a frame incompatible with the stored schema before any file is written."""
    table = df if isinstance(df, pa.Table) else frame_to_table(df, what=origin)
    check_against_base(
        table.schema,
        base.schema,
        partition_on,
        [],
        dataset_uuid=base.uuid,
        origin=origin,
        schema_evolution=evolution,
    )


def _precheck(base: LoadedDataset, df: Any, target: ResolvedWrite, origin: str) -> None:
    precheck_frame(base, df, target.partition_on, origin, target.request.schema_evolution)


def write_frames(
    st: Store,
    target: ResolvedWrite,
    frames: Iterable[Any],
    *,
    serializer: DataSerializer,
    sort_partitions_by: Sequence[str],
    metadata: MetadataArg,
    delete_scope: Sequence[Mapping[str, Any]] | None = None,
) -> DatasetHeader:
    """Write every frame with the chunk kernel, then commit once (files removed on failure)."""
    base = target.base
    remove = delete_scope_labels(base, st, delete_scope) if base is not None else set()
    chunks: list[ChunkResult] = []
    try:
        for i, df in enumerate(frames):
            if df is None:
                continue
            if base is not None:
                _precheck(base, df, target, f"input frame {i}")
            chunks.append(
                write_chunk(
                    st,
                    target.uuid,
                    df,
                    table_name=target.table_name,
                    partition_on=target.partition_on,
                    index_columns=target.index_columns,
                    serializer=serializer,
                    sort_partitions_by=sort_partitions_by,
                    origin=f"input frame {i}",
                    bloom_filter_columns=bloom_columns_of(base),
                )
            )
        if target.request.verb == "store" and not chunks:
            raise EmptyInputError(
                "Cannot store empty datasets: no DataFrame was given (dfs must not be empty)."
            )
        if not chunks and base is None and target.request.verb == "update":
            raise EmptyInputError(f"Dataset {target.uuid!r} does not exist and no data was given.")
        if not chunks and delete_scope is None and metadata is None:
            raise EmptyInputError("Nothing to update: no data, no delete_scope, no metadata.")
        md = commit_resolved(
            st,
            target,
            chunks,
            metadata=resolve_metadata(metadata, base.metadata.metadata if base else {}),
            remove_labels=remove,
            remove_scope=(
                (lambda b: delete_scope_labels(b, st, delete_scope))
                if delete_scope is not None
                else None
            ),
            operation_parameters=(
                {"delete_scope": jsonable(delete_scope)} if delete_scope is not None else None
            ),
        )
    except BaseException:
        delete_files(st, [p.key for c in chunks for p in c.partitions])
        raise
    return md
