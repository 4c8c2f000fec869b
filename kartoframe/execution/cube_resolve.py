"""The cube write front's loads: the cube's datasets and the transaction, then the pure resolve.

:func:`resolve_cube_operation` checks what it can before loading (the datasets an update or
removal touches, the removal conditions), loads the cube's datasets (storage) and the
datasets that already record the application transaction, and resolves the operation
(:func:`kartoframe.plan.cube_front.resolve_cube_write`, pure). Every engine's cube verbs go
through it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kartoframe.execution.write import already_recorded
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.cube import Cube
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.cube_front import (
    FrameWrite,
    checked_metadata,
    cube_targets,
    resolve_cube_write,
)
from kartoframe.plan.cube_write import Operation
from kartoframe.storage.cube_members import load_checked, load_cube_datasets
from kartoframe.storage.store import Store

__all__ = ["frames_by_dataset", "resolve_cube_operation"]


def resolve_cube_operation(
    st: Store,
    cube: Cube,
    operation: Operation,
    frames: Mapping[str, Any],
    *,
    schema_evolution: SchemaEvolution,
    commit: CommitOptions,
    metadata: object = None,
    overwrite: bool = False,
    partition_on: object = None,
    remove_conditions: object = None,
    ktk_cube_dataset_ids: object = None,
) -> FrameWrite:
    """Load what a cube operation needs and resolve it (see the module doc)."""
    touched, conds = cube_targets(
        cube, operation, frames, ktk_cube_dataset_ids, remove_conditions, schema_evolution
    )
    if operation == "build":
        existing = load_cube_datasets(st, cube.uuid_prefix)
    else:
        existing = load_checked(cube, st)
        if operation == "remove" and touched is None:
            touched = set(existing)
    meta = checked_metadata(metadata, frames, touched)
    done = _done(st, cube, set(frames) | (touched or set()), commit)
    return resolve_cube_write(
        cube,
        operation,
        frames,
        existing=existing,
        touched=touched,
        conditions=conds,
        metadata=meta,
        done=done,
        partition_on=partition_on,
        overwrite=overwrite,
        schema_evolution=schema_evolution,
        commit=commit,
    )


def _done(st: Store, cube: Cube, ids: set[str], commit: CommitOptions) -> frozenset[str]:
    """The datasets among ``ids`` that already record the application transaction."""
    if commit.app_id is None or not ids:
        return frozenset()
    ordered = sorted(ids)
    uuids = [cube.ktk_dataset_uuid(i) for i in ordered]
    with ThreadPoolExecutor(max_workers=min(8, len(ordered))) as pool:
        flags = list(pool.map(lambda u: already_recorded(st, u, commit), uuids))
    return frozenset(i for i, f in zip(ordered, flags) if f)


def frames_by_dataset(data: object, cube: Cube, check: Callable[[str, Any], Any]) -> dict[str, Any]:
    """An engine's cube input as ``{dataset_id: frame}``.

    ``data`` is a dict, a single frame (the seed's) or None (nothing); every id is
    validated, then every frame goes through ``check(dataset_id, frame)`` (the engine's
    checks and conversions; None stays a possible frame).
    """
    if data is None:
        return {}
    given = data if isinstance(data, dict) else {cube.seed_dataset: data}
    out: dict[str, Any] = {}
    for ds_id, frame in given.items():
        cube.ktk_dataset_uuid(ds_id)  # validates the id
        out[ds_id] = check(ds_id, frame)
    return out
