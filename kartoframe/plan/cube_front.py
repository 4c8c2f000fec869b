"""The cube write front: a cube operation's arguments resolved into one value (pure).

Every cube verb (build, extend, append, update, remove; eager, dask and Spark) resolves
its arguments the same way: :func:`cube_targets` (the datasets an update or removal
touches, the removal conditions), storage loads the cube's datasets and the datasets that
already record the application transaction, and :func:`resolve_cube_write` applies the
operation rules and returns a :class:`FrameWrite`, which plans the write of the prepared
inputs (:func:`kartoframe.plan.cube_write.plan_write`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pyarrow as pa

from kartoframe.errors import InvalidInputError
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.cube import Cube, dataset_columns, payload_subset, str_tuple
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.conditions import Conjunction
from kartoframe.plan.cube_rules import check_frame_columns, check_metadata, prepare_partition_on
from kartoframe.plan.cube_write import (
    CubeWritePlan,
    InputData,
    Operation,
    check_removal_conditions,
    plan_write,
)

__all__ = ["FrameWrite", "checked_metadata", "cube_targets", "resolve_cube_write"]

#: The rules of a :class:`FrameWrite` that ``plan_write`` takes under the same keyword.
_PLAN_RULES = (
    "existing",
    "partition_on",
    "metadata",
    "overwrite",
    "touched",
    "schema_evolution",
    "done",
    "commit",
)


@dataclasses.dataclass(frozen=True, slots=True)
class FrameWrite:
    """The resolved arguments of a cube write (eager, dask or Spark)."""

    operation: Operation
    touched: set[str] | None
    metadata: dict[str, dict[str, Any]]
    conditions: Conjunction | None
    partition_on: dict[str, tuple[str, ...]]
    existing: dict[str, LoadedDataset]
    payload: set[str]
    #: the data to write, without the datasets ``done`` already holds
    frames: dict[str, Any]
    overwrite: bool = False
    #: datasets that already record the application transaction (an earlier attempt)
    done: frozenset[str] = frozenset()
    schema_evolution: SchemaEvolution = "none"
    commit: CommitOptions = NO_COMMIT_OPTIONS

    def plan(self, cube: Cube, inputs: Mapping[str, InputData | None]) -> CubeWritePlan:
        """Plan the write of the prepared ``inputs`` (rows or schemas) under these rules."""
        rules = {name: getattr(self, name) for name in _PLAN_RULES}
        return plan_write(cube, self.operation, inputs, remove_conditions=self.conditions, **rules)

    def schema_inputs(
        self,
        cube: Cube,
        columns: Callable[[Any], Iterable[str]],
        schema: Callable[[str, Any], pa.Schema],
    ) -> dict[str, InputData | None]:
        """Check the columns of lazy frames (dask, Spark) and describe them by schema.

        ``columns(frame)`` names a frame's columns, ``schema(dataset_id, frame)`` gives its
        Arrow schema; the rows are checked later, where the engine writes them.
        """
        inputs: dict[str, InputData | None] = {}
        for ds_id in sorted(self.frames):
            frame = self.frames[ds_id]
            if frame is None:
                inputs[ds_id] = None
                continue
            if ds_id in self.partition_on:
                cols = [str(c) for c in columns(frame)]
                check_frame_columns(ds_id, cols, cube, self.payload, self.partition_on[ds_id])
            inputs[ds_id] = InputData(schema(ds_id, frame), None)
        return inputs

    @property
    def complete(self) -> bool:
        """Every dataset of the operation is done: a retried step, nothing to write."""
        return bool(self.done) and not self.frames and not self.touched


def cube_targets(
    cube: Cube,
    operation: Operation,
    frames: Mapping[str, Any],
    dataset_ids: object,
    remove_conditions: object,
    schema_evolution: SchemaEvolution,
) -> tuple[set[str] | None, Conjunction | None]:
    """The datasets an update or removal touches (None: decided by the data / all) and the
    removal conditions, checked before the cube is loaded.
    """
    if schema_evolution != "none" and operation not in ("append", "update"):
        raise InvalidInputError(
            "schema_evolution applies to appends and updates of a cube; "
            f"{operation} defines the schemas."
        )
    touched: set[str] | None = None
    if operation in ("update", "remove"):
        touched = set(str_tuple(dataset_ids, "ktk_cube_dataset_ids", ordered=False))
        if dataset_ids is None:
            touched = set(frames) if operation == "update" else None
    conds = None
    if operation == "remove" or (operation == "update" and remove_conditions is not None):
        conds = check_removal_conditions(cube, remove_conditions)
    return touched, conds


def resolve_cube_write(
    cube: Cube,
    operation: Operation,
    frames: Mapping[str, Any],
    *,
    existing: dict[str, LoadedDataset],
    touched: set[str] | None,
    conditions: Conjunction | None,
    metadata: dict[str, dict[str, Any]],
    done: frozenset[str],
    partition_on: object,
    overwrite: bool,
    schema_evolution: SchemaEvolution,
    commit: CommitOptions,
) -> FrameWrite:
    """The operation rules of a cube write, before any data is looked at (pure).

    Raises for a missing seed (build), a seed written by extend, and unknown datasets
    (append). Datasets in ``done`` (they already record the application transaction)
    are left out: a retried step whose every dataset is done writes nothing
    (``complete``); after a crash between two dataset commits the retry writes only the
    datasets still missing, so no rows are appended twice.
    """
    frames = {k: v for k, v in frames.items() if k not in done}
    common: dict[str, Any] = {
        "operation": operation,
        "conditions": conditions,
        "existing": existing,
        "overwrite": overwrite,
        "done": done,
        "schema_evolution": schema_evolution,
        "commit": commit,
    }
    if done:
        if isinstance(partition_on, Mapping):
            partition_on = {k: v for k, v in partition_on.items() if k not in done}
        metadata = {k: v for k, v in metadata.items() if k not in done}
        touched = None if touched is None else touched - done
        if not frames and not touched:
            return FrameWrite(
                touched=touched,
                metadata=metadata,
                partition_on={},
                payload=set(),
                frames={},
                **common,
            )
    payload: set[str] = set()
    if operation == "build":
        pon = prepare_partition_on(cube, frames, partition_on)
        if cube.seed_dataset not in frames:
            raise InvalidInputError(f'Seed data ("{cube.seed_dataset}") is missing.')
    elif operation == "extend":
        pon = prepare_partition_on(cube, frames, partition_on)
        if cube.seed_dataset in frames:
            raise InvalidInputError(
                f'Seed data ("{cube.seed_dataset}") cannot be written during extension.'
            )
        for k, v in existing.items():
            if not (overwrite and k in frames):
                payload |= payload_subset(dataset_columns(v.schema), cube)
    else:
        unknown = sorted(set(frames) - set(existing))
        if unknown and operation == "append":
            raise InvalidInputError(f"Unknown / non-existing datasets: {', '.join(unknown)}")
        pon = {k: tuple(v.metadata.partition_keys) for k, v in existing.items()}
    return FrameWrite(
        touched=touched,
        metadata=metadata,
        partition_on=pon,
        payload=payload,
        frames=frames,
        **common,
    )


def checked_metadata(
    metadata: object, frames: Mapping[str, Any], touched: set[str] | None
) -> dict[str, dict[str, Any]]:
    """The metadata of the datasets the write names (see :func:`check_metadata`)."""
    return check_metadata(metadata, set(frames) | (touched or set()))
