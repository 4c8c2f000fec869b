"""What a commit changes, computed from the written chunks and the base (pure).

:func:`plan_commit` validates the chunks against each other and the base (partition keys,
schemas and their evolution, indices) and says which of the base's side files the commit
merges into; :func:`index_tables` and :func:`merged_statistics` compute the new side
files from what storage loaded; :func:`header_changes` lists the header changes
(:mod:`kartoframe.format.fold`) once storage has written them. No function here does I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa

from kartoframe.errors import CommitConflictError, InvalidInputError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.fold import (
    AddPartitions,
    Change,
    CreateDataset,
    PlacePartitions,
    RecordOptimized,
    RemovePartitions,
    SetExplicitPartitions,
    SetIndices,
    SetMetadata,
    SetSchema,
    SetStatistics,
)
from kartoframe.format.header import DatasetHeader, kartoframe_section
from kartoframe.format.header_partitions import PatchedPartitions
from kartoframe.format.index_group import (
    GroupedIndex,
    IndexSource,
    empty_index,
    grouped_from_table,
    merge_grouped,
    merge_parts,
)
from kartoframe.format.naming import MetadataFormat
from kartoframe.format.schema import (
    SchemaChange,
    SchemaEvolution,
    merge_schema,
    normalize_schema,
    normalize_type,
)
from kartoframe.format.statistics import (
    MAX_STATISTICS_DELTAS,
    StatisticsRef,
    merge_statistics,
)
from kartoframe.plan.write import ChunkResult, WrittenPartition, index_parts, statistics_tables

__all__ = [
    "CommitPlan",
    "CommitShape",
    "StatisticsStep",
    "check_partition_keys",
    "header_changes",
    "index_tables",
    "merged_statistics",
    "plan_commit",
    "statistics_step",
]

#: Table name kartoframe cannot share with its own side files.
RESERVED_TABLE = "_kartoframe"


def check_partition_keys(uuid: str, stored: Sequence[str], requested: Sequence[str]) -> None:
    """The one "incompatible partition keys" rule: a write uses the dataset's keys.

    Raises
    ------
    InvalidInputError
        ``requested`` differs from the ``stored`` keys.
    """
    if tuple(stored) != tuple(requested):
        raise InvalidInputError(
            f"Incompatible set of partition keys encountered: dataset {uuid!r} is "
            f"partitioned on {list(stored)}, got {list(requested)}."
        )


@dataclasses.dataclass(frozen=True, slots=True)
class CommitShape:
    """The arguments of a commit that shape the new header (see ``commit_write``)."""

    partition_on: tuple[str, ...] | None = None
    secondary_indices: tuple[str, ...] = ()
    remove_labels: frozenset[str] = frozenset()
    metadata: Mapping[str, Any] | None = None
    storage_format: MetadataFormat = "json"
    table_name: str = "table"
    empty_schema: pa.Schema | None = None
    explicit_partitions: bool = True
    schema_evolution: SchemaEvolution = "none"
    extra_statistics: tuple[pa.Table, ...] = ()
    bloom_filter_columns: tuple[str, ...] | None = None
    #: files written by ``optimize`` and their sort order (recorded in the header)
    optimized: Mapping[str, tuple[str, ...]] | None = None
    #: added label -> removed label whose place in the header's order it takes
    placed: Mapping[str, str] | None = None


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class CommitPlan:
    """A validated commit on one base, before its side files are written."""

    uuid: str
    base: LoadedDataset | None
    chunks: tuple[ChunkResult, ...]
    shape: CommitShape
    partition_keys: tuple[str, ...]
    schema: pa.Schema
    change: SchemaChange
    #: whether ``_common_metadata`` is rewritten
    schema_changed: bool
    existing_indices: frozenset[str]
    all_indices: tuple[str, ...]
    new_parts: tuple[WrittenPartition, ...]
    #: labels of the base actually removed
    removed: frozenset[str]
    #: the partitions of the new header (label -> data file key)
    partitions: Mapping[str, str]
    #: index columns whose base index files the commit merges into (storage loads them)
    load_indices: tuple[str, ...]

    @property
    def table_name(self) -> str:
        """The table of the new header."""
        return self.base.metadata.table_name if self.base is not None else self.shape.table_name


def plan_commit(
    uuid: str, chunks: Sequence[ChunkResult], base: LoadedDataset | None, shape: CommitShape
) -> CommitPlan:
    """Validate the chunks against each other and ``base``; plan the new header.

    Raises
    ------
    SchemaError
        Chunks disagree with each other or with the stored schema.
    InvalidInputError
        Incompatible partition keys, indices that cannot be maintained, nothing to commit.
    """
    bmd = base.metadata if base is not None else None
    pkeys = (
        shape.partition_on
        if shape.partition_on is not None
        else (bmd.partition_keys if bmd else ())
    )
    if bmd is not None:
        check_partition_keys(uuid, bmd.partition_keys, pkeys)
    schema, change = _merged_schema(uuid, chunks, base, pkeys, shape.schema_evolution)
    if schema is None:
        schema = shape.empty_schema
    if schema is None:
        raise InvalidInputError(f"Nothing to commit for dataset {uuid!r}.")
    # an implicit base's schema may have been completed from its data files (null columns,
    # see storage/null_types.py): the commit that makes it explicit stores it
    schema_changed = (
        base is None
        or not base.metadata.explicit_partitions
        or not schema.equals(base.schema, check_metadata=True)
    )
    existing_idx = set(bmd.indices) | set(bmd.embedded_indices) if bmd else set()
    new_idx = set(shape.secondary_indices)
    if new_idx - existing_idx and _survivors(bmd, shape.remove_labels):
        missing = sorted(new_idx - existing_idx)
        raise InvalidInputError(
            f"Incorrect indices provided for dataset {uuid!r}: {missing} are not "
            "indexed yet; build them with build_dataset_indices first."
        )
    all_idx = sorted(existing_idx | new_idx)
    for col in all_idx:
        if col not in schema.names:
            raise InvalidInputError(f"Index column {col!r} is not in the schema of {uuid!r}.")
        if col in pkeys:
            raise InvalidInputError(
                f"Cannot create secondary index on partition columns: [{col!r}]."
            )
    new_parts = tuple(p for c in chunks for p in c.partitions)
    old_parts: Mapping[str, str] = bmd.partitions if bmd else {}
    removed = frozenset(lb for lb in shape.remove_labels if lb in old_parts)
    added: dict[str, str] = {}
    for p in new_parts:
        if p.label in added or (p.label in old_parts and p.label not in removed):
            raise CommitConflictError(f"Partition label {p.label!r} already exists.")
        added[p.label] = p.key
    partitions = PatchedPartitions.over(old_parts, removed, added) if old_parts else added
    load: tuple[str, ...] = ()
    if bmd is not None:
        load = tuple(
            c
            for c in all_idx
            if c in existing_idx and (new_parts or removed or c in bmd.embedded_indices)
        )
    return CommitPlan(
        uuid,
        base,
        tuple(chunks),
        shape,
        tuple(pkeys),
        schema,
        change,
        schema_changed,
        frozenset(existing_idx),
        tuple(all_idx),
        new_parts,
        removed,
        partitions,
        load,
    )


def _survivors(bmd: DatasetHeader | None, remove: frozenset[str]) -> bool:
    """Whether the base keeps any partition after ``remove``."""
    if bmd is None:
        return False
    return len(bmd.partitions) > len(remove) or any(lb not in remove for lb in bmd.partitions)


def _merged_schema(
    uuid: str,
    chunks: Sequence[ChunkResult],
    base: LoadedDataset | None,
    pkeys: Sequence[str],
    schema_evolution: SchemaEvolution,
) -> tuple[pa.Schema | None, SchemaChange]:
    """The schema of the base and every chunk merged, and the evolution step."""
    if schema_evolution not in ("none", "add_columns"):
        raise InvalidInputError(
            f"schema_evolution must be 'none' or 'add_columns', got {schema_evolution!r}."
        )
    schema = base.schema if base is not None else None
    origin_ref = "the stored schema" if base is not None else ""
    change = SchemaChange()
    for c in chunks:
        if c.schema is None:
            continue
        cs = normalize_schema(c.schema, pkeys) if tuple(pkeys) != () else c.schema
        origin = c.origin or "a written partition"
        schema, step = merge_schema(
            schema,
            cs,
            schema_evolution=schema_evolution,
            dataset_uuid=uuid,
            origin=origin,
            partition_keys=pkeys,
            required=base.schema.names if base is not None else (),
            reference_origin=origin_ref or "the first written partition",
        )
        change = change.then(step) if base is not None else change
        origin_ref = origin_ref or (c.origin or "the first written partition")
    return schema, change


def index_tables(
    plan: CommitPlan, loaded: Mapping[str, pa.Table]
) -> dict[str, str | pa.Table | IndexSource]:
    """Per index column: the base's index file key (unchanged) or the new index: a table,
    or an :data:`~kartoframe.format.index.IndexSource` (the base index and the written
    chunks' partial indices, merged row group by row group as the file is written).

    ``loaded`` holds the base index tables of ``plan.load_indices``.

    Raises
    ------
    InvalidInputError
        A written partition lacks the values of an index column.
    """
    bmd = plan.base.metadata if plan.base is not None else None
    out: dict[str, str | pa.Table | IndexSource] = {}
    for col in plan.all_indices:
        rows = [p.index_pairs[col] for p in plan.new_parts if col in p.index_pairs]
        if len(rows) != len(plan.new_parts):
            raise InvalidInputError(
                f"Written partitions lack index values for {col!r}; write chunks with all "
                "indexed columns."
            )
        if bmd is not None and col in bmd.indices and not rows and not plan.removed:
            out[col] = bmd.indices[col]
            continue
        t = normalize_type(plan.schema.field(col).type)
        parts = [_typed(p, t) for p in index_parts(col, rows)]
        current = loaded.get(col)
        if current is not None:
            base = merge_grouped(col, current, (), plan.removed)
            base = grouped_from_table(col, base) if isinstance(base, pa.Table) else base
            parts.insert(0, _typed(base, parts[0].values.type if parts else t))
        out[col] = merge_parts(col, parts) if parts else empty_index(col, t)
    return out


def _typed(part: GroupedIndex, t: pa.DataType) -> GroupedIndex:
    """``part`` with its values of type ``t`` (a null-typed column keeps its values)."""
    if part.values.type == t or pa.types.is_null(t):
        return part
    return dataclasses.replace(part, values=part.values.cast(t))


@dataclasses.dataclass(frozen=True, slots=True)
class StatisticsStep:
    """What the commit does with the statistics file.

    ``keep``: the reference stays; ``drop``: the header gets none; ``merge``: the rows of
    the base files (read if ``read_base``) and ``new`` are merged into a new file with
    bloom filters for ``blooms``; ``append``: ``new`` is written as one more delta file
    of ``base_ref`` (the base files are not read: the commit costs what it adds).
    """

    action: Literal["keep", "drop", "merge", "append"]
    blooms: tuple[str, ...] = ()
    read_base: bool = False
    new: tuple[pa.Table, ...] = ()
    base_ref: StatisticsRef | None = None


def statistics_step(plan: CommitPlan) -> StatisticsStep:
    """Decide whether the commit rewrites the statistics file.

    A commit that adds files (and maybe removes some) appends their rows as a delta file
    of the base's reference (:attr:`StatisticsRef.deltas`), unless the bloom-filter
    columns change, the reference already has :data:`MAX_STATISTICS_DELTAS` deltas, or
    more than half of its rows are stale: then one file with the rows of the base files
    the new header still lists with the same data file and the rows of the written
    chunks replaces them all. A commit that only removes files keeps a reference with
    deltas as it is (stale rows are never used) and rewrites a single file. A header
    without any described partition gets no statistics reference.
    """
    bmd = plan.base.metadata if plan.base is not None else None
    section = kartoframe_section(bmd) if bmd is not None else {}
    ref = StatisticsRef.from_dict(section.get("statistics"), plan.uuid)
    blooms = plan.shape.bloom_filter_columns
    new = statistics_tables(p.statistics for p in plan.new_parts if p.statistics is not None)
    new += list(plan.shape.extra_statistics)
    if plan.table_name == RESERVED_TABLE or not plan.partitions:
        return StatisticsStep("drop")
    changed = bool(plan.new_parts or plan.removed)
    if not changed and not new and (blooms is None or ref is None):
        return StatisticsStep("keep")
    same_blooms = ref is not None and (blooms is None or tuple(blooms) == ref.bloom_filter_columns)
    if blooms is None:
        blooms = ref.bloom_filter_columns if ref is not None else ()
    if (
        ref is not None
        and ref.key is not None
        and same_blooms
        and not plan.shape.extra_statistics  # a statistics build replaces every file
        and len(ref.deltas) < MAX_STATISTICS_DELTAS
        and ref.partitions <= 2 * len(plan.partitions)
    ):
        rows = sum(t.num_rows for t in new)
        if rows:
            return StatisticsStep("append", tuple(blooms), False, tuple(new), ref)
        if ref.deltas:
            return StatisticsStep("keep")
    return StatisticsStep("merge", tuple(blooms), ref is not None, tuple(new))


def merged_statistics(
    plan: CommitPlan, step: StatisticsStep, old: pa.Table | None
) -> pa.Table | None:
    """The statistics of the new header (None: it gets no reference)."""
    merged = merge_statistics(
        old, step.new, plan.partitions, plan.schema, plan.partition_keys, step.blooms
    )
    if merged.num_rows == 0 and not step.blooms:
        return None
    return merged


def header_changes(
    plan: CommitPlan,
    index_refs: Mapping[str, str],
    statistics: StatisticsRef | Literal["keep"] | None,
) -> list[Change]:
    """The header changes of the commit, its side files written (keys in the refs)."""
    shape = plan.shape
    changes: list[Change] = []
    if plan.base is None:
        changes.append(
            CreateDataset(plan.uuid, shape.table_name, plan.partition_keys, shape.storage_format)
        )
    changes += [
        SetExplicitPartitions(shape.explicit_partitions),
        RemovePartitions(plan.removed),
        AddPartitions({p.label: p.key for p in plan.new_parts}),
        SetIndices(index_refs),
        SetSchema(plan.schema, plan.change),
        SetMetadata(shape.metadata or {}),
    ]
    if statistics != "keep":
        changes.append(SetStatistics(statistics))
    if shape.optimized:
        changes.append(RecordOptimized(shape.optimized))
    if shape.placed:
        changes.append(PlacePartitions(shape.placed))
    return changes
