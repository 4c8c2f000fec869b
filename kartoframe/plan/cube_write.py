"""Cube write planning: validate a write and describe it per dataset (pure).

Every rule of kartothek's cube write path is checked here, before any byte is written:
input shape, ``partition_on`` (fixed for the seed), the metadata dict, missing seed /
dimension / partition columns, duplicate column names, NULLs in dimension, partition and
index columns, duplicate cells, payload columns already owned by another dataset,
unspecified cube partition columns, and finally the cube consistency rules on the cube as
it will be after the write (:func:`kartoframe.format.cube.check_datasets`).

The result is a :class:`CubeWritePlan`: one :class:`DatasetWrite` per touched dataset,
in commit order (non-seed datasets sorted by id, the seed last).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa

from kartoframe.errors import (
    DatasetExistsError,
    EmptyInputError,
    InvalidInputError,
    SchemaError,
)
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.cube import (
    CUBE_TABLE,
    Cube,
    CubeMember,
    check_datasets,
    cube_metadata,
    member_from_loaded,
)
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import (
    SchemaEvolution,
    compatible_merge,
    merge_into_stored,
    normalize_schema,
)
from kartoframe.plan import predicates as preds
from kartoframe.plan.conditions import Conjunction
from kartoframe.plan.cube_rules import (
    InputData,
    check_frame_columns,
    check_metadata,
    check_user_frame,
    duplicate_mask,
    normalize_columns,
    normalize_input,
    prepare_frame,
    prepare_partition_on,
)
from kartoframe.plan.pruning import prune

__all__ = [
    "CubeWritePlan",
    "DatasetWrite",
    "InputData",
    "Operation",
    "check_frame_columns",
    "check_metadata",
    "check_user_frame",
    "commit_order",
    "duplicate_mask",
    "normalize_columns",
    "normalize_input",
    "plan_write",
    "prepare_frame",
    "prepare_partition_on",
    "removal_labels",
    "write_indices",
]

Operation = Literal["build", "extend", "append", "update", "remove"]


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DatasetWrite:
    """The planned change of one dataset.

    Attributes
    ----------
    dataset_id, uuid
        Which dataset.
    table
        Validated rows to write (sorted by partition then dimension columns), or None
        when nothing is written (removal only, or a dask write whose rows are chunks).
    schema
        Normalised schema the dataset will have.
    partition_on
        Partition keys.
    index_columns
        Secondary indices the written files carry (all the dataset will have).
    metadata
        User metadata to merge into the header (with the ``ktk_cube_*`` keys).
    base
        The dataset before the write (None: created or overwritten).
    replaces
        The dataset as it was if it is overwritten (for undo), else None.
    remove_labels
        Partitions removed by this write.
    """

    dataset_id: str
    uuid: str
    table: pa.Table | None
    schema: pa.Schema
    partition_on: tuple[str, ...]
    index_columns: tuple[str, ...]
    metadata: Mapping[str, Any]
    base: LoadedDataset | None = None
    replaces: LoadedDataset | None = None
    remove_labels: frozenset[str] = frozenset()

    @property
    def creates(self) -> bool:
        """Whether the dataset is new or replaced (no base to update)."""
        return self.base is None

    def prepare_chunk(self, cube: Cube, data: Any, origin: str) -> pa.Table:
        """One chunk of this dataset's rows under the cube rules (:func:`prepare_frame`:
        NULLs and duplicate cells raise, rows sorted), checked against the planned schema.
        """
        table = prepare_frame(self.dataset_id, data, cube, self.partition_on)
        compatible_merge(
            self.schema,
            normalize_schema(table.schema, self.partition_on),
            dataset_uuid=self.uuid,
            origin=origin,
            reference_origin="the planned schema",
        )
        return table

    def chunk_arguments(self) -> dict[str, Any]:
        """The layout keywords of ``write_chunk`` (and ``write_sdf``) for this dataset."""
        return {
            "table_name": CUBE_TABLE,
            "partition_on": self.partition_on,
            "index_columns": self.index_columns,
        }


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class CubeWritePlan:
    """All datasets a cube write touches, in commit order (seed last)."""

    cube: Cube
    operation: Operation
    writes: tuple[DatasetWrite, ...]
    #: ``"add_columns"``: appended rows may add nullable payload columns (recorded events)
    schema_evolution: SchemaEvolution = "none"
    #: the application transaction and commit info every dataset commit records
    commit: CommitOptions = NO_COMMIT_OPTIONS

    @property
    def dataset_ids(self) -> list[str]:
        """Touched dataset ids in commit order."""
        return [w.dataset_id for w in self.writes]


def commit_order(cube: Cube, ids: Iterable[str]) -> list[str]:
    """Non-seed datasets sorted by id, then the seed."""
    ids = set(ids)
    return sorted(i for i in ids if i != cube.seed_dataset) + (
        [cube.seed_dataset] if cube.seed_dataset in ids else []
    )


def write_indices(
    cube: Cube, ds_id: str, columns: Iterable[str], partition_on: Sequence[str]
) -> tuple[str, ...]:
    """Secondary indices a cube write builds: index columns present, seed dimensions."""
    cols = set(columns)
    idx = set(cube.index_columns) & cols
    if ds_id == cube.seed_dataset:
        idx |= set(cube.dimension_columns) - set(cube.suppress_index_on)
    return tuple(sorted(idx - set(partition_on)))


def removal_labels(
    cube: Cube, loaded: LoadedDataset, conditions: Conjunction | None
) -> frozenset[str]:
    """Partitions of a dataset selected by conditions on cube partition columns.

    A dataset without partition keys is removed entirely; conditions on cube partition
    columns the dataset is not partitioned by are ignored for it.
    """
    md = loaded.metadata
    labels = list(md.partitions)
    if not md.partition_keys or conditions is None:
        return frozenset(labels)
    local = conditions.restrict(md.partition_keys)
    if not len(local):
        return frozenset(labels)
    pred = preds.bind(local.to_predicates(), loaded.schema)
    kept, _ = prune(pred, labels, md.partition_keys, loaded.schema, {})
    return frozenset(kept)


def check_removal_conditions(cube: Cube, conditions: object) -> Conjunction:
    """Removal conditions may only use cube partition columns."""
    conj = Conjunction(conditions)
    if conj.columns - set(cube.partition_columns):
        raise InvalidInputError(
            "Can only remove partitions with conditions concerning cubes physical partition "
            "columns."
        )
    return conj


def _planned_member(
    ds_id: str, schema: pa.Schema, partition_on: Sequence[str], indices: Sequence[str]
) -> CubeMember:
    return CubeMember(ds_id, schema, tuple(partition_on), frozenset(indices), {}, CUBE_TABLE)


def plan_write(
    cube: Cube,
    operation: Operation,
    inputs: Mapping[str, InputData | None],
    *,
    existing: Mapping[str, LoadedDataset],
    partition_on: Mapping[str, tuple[str, ...]],
    metadata: Mapping[str, Mapping[str, Any]],
    overwrite: bool = False,
    remove_conditions: Conjunction | None = None,
    touched: Iterable[str] | None = None,
    schema_evolution: SchemaEvolution = "none",
    done: Iterable[str] = (),
    commit: CommitOptions = NO_COMMIT_OPTIONS,
) -> CubeWritePlan:
    """Check the operation rules and the resulting cube; describe the write per dataset.

    Parameters
    ----------
    cube
        The cube spec.
    operation
        ``build``, ``extend``, ``append``, ``update`` or ``remove``.
    inputs
        Dataset id -> prepared input (None: no rows for that dataset).
    existing
        The cube's datasets before the write.
    partition_on
        Partition keys of the written datasets (from :func:`prepare_partition_on`, or the
        stored keys for appends).
    metadata
        Checked user metadata per dataset.
    overwrite
        build/extend: replace existing datasets.
    remove_conditions
        update/remove: which partitions to remove (cube partition columns only).
    touched
        update/remove: the datasets affected (default: the inputs' ids / all datasets).
    schema_evolution
        append/update: ``"add_columns"`` lets the rows add nullable payload columns (and
        safe widenings) to a dataset; dimension and partition columns cannot be added.
    done
        Datasets an earlier attempt of the same application transaction already
        committed: they stay as they are (not rewritten, not "partially overwritten").
    commit
        Recorded by every dataset commit of the plan (application transaction, info).

    Raises
    ------
    DatasetExistsError
        A dataset exists and ``overwrite`` is False.
    EmptyInputError
        A written dataset has no rows (build, extend, append).
    InvalidInputError, SchemaError
        Any cube rule is broken by the write.
    """
    ids = set(inputs) if touched is None else set(touched)
    if operation in ("build", "extend", "append"):
        empty = sorted(i for i, v in inputs.items() if v is None)
        if empty:
            raise EmptyInputError(f"Cannot write empty datasets: {', '.join(empty)}")
    if operation == "build":
        if cube.seed_dataset not in inputs:
            raise InvalidInputError(f'Seed data ("{cube.seed_dataset}") is missing.')
        partial = sorted(set(existing) - set(inputs) - set(done))
        if partial:
            raise InvalidInputError(
                "Following datasets exists but are not overwritten (partial overwrite), this "
                f"is not allowed: {', '.join(partial)}"
            )
    if operation == "extend" and cube.seed_dataset in inputs:
        raise InvalidInputError(
            f'Seed data ("{cube.seed_dataset}") cannot be written during extension.'
        )
    if operation in ("build", "extend") and not overwrite:
        for ds_id in sorted(inputs):
            if ds_id in existing:
                raise DatasetExistsError(cube.ktk_dataset_uuid(ds_id))
    if operation in ("append", "update", "remove"):
        unknown = sorted(ids - set(existing))
        if unknown:
            if operation == "append":
                raise InvalidInputError(f"Unknown / non-existing datasets: {', '.join(unknown)}")
            raise InvalidInputError(f"Unknown ktk_cube_dataset_ids: {', '.join(unknown)}")
        outside = sorted(set(inputs) - ids)
        if outside:
            raise InvalidInputError(
                f'Ktk_cube Dataset ID "{outside[0]}" is present during pipeline execution but '
                f"was not specified in ktk_cube_dataset_ids ({', '.join(sorted(ids))})."
            )

    writes: dict[str, DatasetWrite] = {}
    members: dict[str, CubeMember] = {}
    if operation in ("build", "extend"):
        for ds_id, m in existing.items():
            if ds_id not in inputs:
                members[ds_id] = member_from_loaded(ds_id, m)
        for ds_id in sorted(inputs):
            inp = inputs[ds_id]
            assert inp is not None
            po = partition_on[ds_id]
            idx = write_indices(cube, ds_id, inp.schema.names, po)
            schema = normalize_schema(inp.schema, po)
            members[ds_id] = _planned_member(ds_id, schema, po, idx)
            writes[ds_id] = DatasetWrite(
                dataset_id=ds_id,
                uuid=cube.ktk_dataset_uuid(ds_id),
                table=inp.table,
                schema=schema,
                partition_on=po,
                index_columns=idx,
                metadata=cube_metadata(cube, ds_id, metadata.get(ds_id)),
                replaces=existing.get(ds_id),
            )
    else:
        for ds_id, m in existing.items():
            members[ds_id] = member_from_loaded(ds_id, m)
        for ds_id in sorted(ids):
            base = existing[ds_id]
            bmd = base.metadata
            inp = inputs.get(ds_id)
            po = tuple(bmd.partition_keys)
            idx = tuple(sorted((set(bmd.indices) | set(bmd.embedded_indices)) - set(po)))
            schema = base.schema
            if inp is not None:
                schema = _merged_schema(cube, ds_id, base, inp.schema, po, schema_evolution)
            remove = (
                removal_labels(cube, base, remove_conditions)
                if operation in ("update", "remove") and remove_conditions is not None
                else frozenset()
            )
            if operation == "remove" and remove_conditions is None:
                remove = frozenset(bmd.partitions)
            members[ds_id] = CubeMember(
                ds_id, schema, po, frozenset(idx), dict(bmd.metadata), bmd.table_name
            )
            writes[ds_id] = DatasetWrite(
                dataset_id=ds_id,
                uuid=base.uuid,
                table=inp.table if inp is not None else None,
                schema=schema,
                partition_on=po,
                index_columns=idx,
                metadata=cube_metadata(cube, ds_id, metadata.get(ds_id)),
                base=base,
                remove_labels=remove,
            )
    check_datasets(members, cube)
    order = commit_order(cube, writes)
    return CubeWritePlan(
        cube,
        operation,
        tuple(writes[i] for i in order),
        schema_evolution=schema_evolution,
        commit=commit,
    )


def _merged_schema(
    cube: Cube,
    ds_id: str,
    base: LoadedDataset,
    written: pa.Schema,
    partition_on: tuple[str, ...],
    schema_evolution: SchemaEvolution,
) -> pa.Schema:
    """The schema a dataset has after rows of schema ``written`` are added to it."""
    norm = normalize_schema(written, partition_on)
    if schema_evolution == "add_columns":
        added = [n for n in norm.names if n not in base.schema.names]
        structural = sorted(
            set(added) & (set(cube.dimension_columns) | set(cube.partition_columns))
        )
        if structural:
            raise SchemaError(
                f'Schema evolution of cube dataset "{ds_id}" can only add payload columns; '
                f"{', '.join(structural)} would be new dimension or partition columns."
            )
    return merge_into_stored(
        base.schema,
        norm,
        schema_evolution=schema_evolution,
        dataset_uuid=base.uuid,
        origin=f'the data of dataset "{ds_id}"',
        partition_keys=partition_on,
    )
