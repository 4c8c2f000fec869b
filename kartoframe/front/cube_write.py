"""The first step of every cube write (eager, dask, Spark): check, load, resolve."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kartoframe.execution.cube_resolve import resolve_cube_operation
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.commit_args import CommitOptions, check_commit_info
from kartoframe.format.cube import CUBE_COMPRESSION, Cube
from kartoframe.format.header import DatasetHeader
from kartoframe.front.args import StoreInput, ensure_store, serializer_arg
from kartoframe.front.cube_args import check_cube
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import evolution_arg
from kartoframe.plan.cube_front import FrameWrite
from kartoframe.plan.cube_write import Operation
from kartoframe.storage.store import Store

__all__ = ["CUBE_SERIALIZER", "cube_serializer", "cube_write_front", "handles"]


#: The data file serializer of cube writes (kartothek's ``KTK_CUBE_DF_SERIALIZER``).
CUBE_SERIALIZER = ParquetSerializer(compression=CUBE_COMPRESSION)


def cube_serializer(df_serializer: object) -> ParquetSerializer:
    """The serializer of a cube write (default: :data:`CUBE_SERIALIZER`)."""
    return serializer_arg(df_serializer or CUBE_SERIALIZER)


def handles(
    store: Store,
    cube: Cube,
    done: Iterable[str],
    headers: Mapping[str, DatasetHeader] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """The result of a cube write: handles of the datasets an earlier attempt already
    committed (``done``, sorted), then of those this one committed (``headers``).
    """
    out = {i: DatasetMetadataResult(cube.ktk_dataset_uuid(i), store) for i in sorted(done)}
    return {**out, **{k: DatasetMetadataResult(h.uuid, store) for k, h in (headers or {}).items()}}


def cube_write_front(
    operation: Operation,
    cube: object,
    store: StoreInput,
    frames_of: Callable[[Cube], Mapping[str, Any]],
    *,
    check_store: Callable[[Store], None] | None = None,
    schema_evolution: object = "none",
    app_id: object = None,
    app_version: object = None,
    commit_info: object = None,
    **options: Any,
) -> tuple[Store, FrameWrite]:
    """The one front of every cube write (eager, dask, Spark): check the arguments, then
    load and resolve (:func:`kartoframe.execution.cube_resolve.resolve_cube_operation`).

    ``frames_of(cube)`` adapts the engine's input to ``{dataset_id: frame}``; ``options``
    are the verb's ``metadata``, ``overwrite``, ``partition_on``, ``remove_conditions`` and
    ``ktk_cube_dataset_ids``.
    """
    checked = check_cube(cube)
    st = ensure_store(store)
    if check_store is not None:
        check_store(st)
    frames = frames_of(checked)
    commit = CommitOptions.of(app_id, app_version)
    evolution = evolution_arg(schema_evolution)
    commit = CommitOptions(commit.app_id, commit.app_version, check_commit_info(commit_info))
    return st, resolve_cube_operation(
        st, checked, operation, frames, schema_evolution=evolution, commit=commit, **options
    )
