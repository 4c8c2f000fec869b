"""The header fold: metadata changes are values, folded into the new header (pure).

A commit describes what it changes as a sequence of values — :class:`CreateDataset`
(no base: a new or overwritten dataset), :class:`AddPartitions`, :class:`RemovePartitions`,
:class:`SetIndices`, :class:`SetSchema`, :class:`SetMetadata`, :class:`SetStatistics`,
:class:`RecordOptimized`, :class:`PlacePartitions` — and
:func:`fold` applies them to the base dataset. Side files (index files, statistics files,
``_common_metadata``) are read and written by the storage layer before and after; the fold
only sees their keys. The clock is an argument (``now``), so the fold is a function of its
inputs.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from kartoframe.errors import CommitConflictError, InvalidInputError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, kartoframe_section, with_kartoframe_section
from kartoframe.format.header_partitions import PatchedPartitions, partitions_dict
from kartoframe.format.naming import MetadataFormat
from kartoframe.format.optimized import with_optimized
from kartoframe.format.schema import SchemaChange
from kartoframe.format.statistics import StatisticsRef

__all__ = [
    "AddPartitions",
    "Change",
    "CreateDataset",
    "PlacePartitions",
    "RecordOptimized",
    "RemovePartitions",
    "SetExplicitPartitions",
    "SetIndices",
    "SetMetadata",
    "SetSchema",
    "SetStatistics",
    "fold",
    "recorded_schema",
]


@dataclasses.dataclass(frozen=True, slots=True)
class CreateDataset:
    """The layout of a dataset without a base (created, or overwritten)."""

    uuid: str
    table_name: str
    partition_keys: tuple[str, ...]
    storage_format: MetadataFormat


@dataclasses.dataclass(frozen=True, slots=True)
class SetExplicitPartitions:
    """Whether the header lists its partitions (False: an implicit dataset, found by listing)."""

    explicit: bool


@dataclasses.dataclass(frozen=True, slots=True)
class AddPartitions:
    """New partitions (label -> data file key); a label the header lists is a conflict."""

    partitions: Mapping[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class RemovePartitions:
    """Partitions removed (labels the header does not list are ignored)."""

    labels: frozenset[str]


@dataclasses.dataclass(frozen=True, slots=True)
class SetIndices:
    """The complete map of secondary indices (column -> index file key)."""

    refs: Mapping[str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class SetSchema:
    """The schema after the commit and the evolution step that led to it."""

    schema: pa.Schema
    change: SchemaChange = dataclasses.field(default_factory=SchemaChange)


@dataclasses.dataclass(frozen=True, slots=True)
class SetMetadata:
    """User metadata merged key by key over the base's (``creation_time`` is kept)."""

    metadata: Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class SetStatistics:
    """The statistics reference of the new header (None: the header has none)."""

    ref: StatisticsRef | None


@dataclasses.dataclass(frozen=True, slots=True)
class RecordOptimized:
    """Files written by ``optimize`` and their order (:mod:`~kartoframe.format.optimized`)."""

    labels: Mapping[str, tuple[str, ...]]


@dataclasses.dataclass(frozen=True, slots=True)
class PlacePartitions:
    """Put added partitions where a removed one was in the header's order.

    ``anchors`` maps an added label to a label of the base; the added partitions take the
    anchor's place (in the order given), instead of going to the end. The header's order
    is the commit order readers rely on (a cube's keep-last overlay of appends): files
    that replace others (``optimize``) keep the place of the files they replace.
    """

    anchors: Mapping[str, str]


Change = (
    CreateDataset
    | SetExplicitPartitions
    | AddPartitions
    | RemovePartitions
    | SetIndices
    | SetSchema
    | SetMetadata
    | SetStatistics
    | RecordOptimized
    | PlacePartitions
)


def fold(base: LoadedDataset | None, changes: Iterable[Change], *, now: str) -> DatasetHeader:
    """The header after ``changes`` are applied to ``base`` (pure: no I/O).

    ``base`` None needs a :class:`CreateDataset`. The header lists its partitions unless a
    :class:`SetExplicitPartitions` says otherwise; embedded indices are dropped (a
    :class:`SetIndices` lists every index file). Every new header gets a
    ``creation_time`` (``now`` if the base has none) and a schema record (a
    :class:`SetSchema` is required).

    Raises
    ------
    CommitConflictError
        An added partition label is already listed.
    InvalidInputError
        No :class:`SetSchema`, or no base and no :class:`CreateDataset`.
    """
    bmd = base.metadata if base is not None else None
    header = bmd.replace(embedded_indices={}) if bmd is not None else None
    base_parts: Mapping[str, str] = bmd.partitions if bmd is not None else {}
    added: dict[str, str] = {}
    user_meta: dict[str, Any] = dict(bmd.metadata) if bmd is not None else {}
    if "creation_time" not in user_meta:
        user_meta = {"creation_time": now, **user_meta}
    section = kartoframe_section(bmd) if bmd is not None else {}
    schema_set = False
    explicit = True
    indices: Mapping[str, str] = dict(bmd.indices) if bmd is not None else {}
    removed: set[str] = set()
    optimized: Mapping[str, tuple[str, ...]] = {}
    anchors: Mapping[str, str] = {}
    for change in changes:
        if isinstance(change, CreateDataset):
            header = DatasetHeader(
                uuid=change.uuid,
                partitions={},
                table_name=change.table_name,
                partition_keys=change.partition_keys,
                storage_format=change.storage_format,
            )
            base_parts, added, removed = {}, {}, set()
        elif isinstance(change, SetExplicitPartitions):
            explicit = change.explicit
        elif isinstance(change, RemovePartitions):
            for label in change.labels:
                added.pop(label, None)
            removed |= change.labels
        elif isinstance(change, AddPartitions):
            for label, key in change.partitions.items():
                if label in added or (label in base_parts and label not in removed):
                    raise CommitConflictError(f"Partition label {label!r} already exists.")
                added[label] = key
        elif isinstance(change, SetIndices):
            indices = dict(change.refs)
        elif isinstance(change, SetSchema):
            _schema_record(section, change.schema, base, change.change, now)
            schema_set = True
        elif isinstance(change, SetMetadata):
            for k, v in change.metadata.items():
                if k == "creation_time" and "creation_time" in user_meta:
                    continue
                user_meta[k] = v
        elif isinstance(change, SetStatistics):
            if change.ref is None:
                section.pop("statistics", None)
            else:
                section["statistics"] = change.ref.to_dict()
        elif isinstance(change, RecordOptimized):
            optimized = change.labels
        elif isinstance(change, PlacePartitions):
            anchors = change.anchors
    if header is None or not schema_set:
        raise InvalidInputError("A header fold needs a base (or CreateDataset) and a schema.")
    with_optimized(section, removed, optimized)
    partitions: Mapping[str, str] = (
        PatchedPartitions.over(base_parts, frozenset(removed), added) if base_parts else added
    )
    if anchors and bmd is not None:
        partitions = _placed(bmd.partitions, partitions_dict(partitions), anchors)
    header = header.replace(
        partitions=partitions, indices=indices, metadata=user_meta, explicit_partitions=explicit
    )
    return with_kartoframe_section(header, section)


def _placed(
    base: Mapping[str, str], partitions: dict[str, str], anchors: Mapping[str, str]
) -> dict[str, str]:
    """``partitions`` reordered: each anchored label at its anchor's place in ``base``."""
    at: dict[str, list[str]] = {}
    for label, anchor in anchors.items():
        if label in partitions and anchor in base:
            at.setdefault(anchor, []).append(label)
    placed = {lb for labels in at.values() for lb in labels}
    out: dict[str, str] = {}
    for label in base:
        for new in at.get(label, ()):
            out[new] = partitions[new]
        if label in partitions and label not in placed:
            out[label] = partitions[label]
    for label, key in partitions.items():
        if label not in out:
            out[label] = key
    return out


def _schema_record(
    section: dict[str, Any],
    schema: pa.Schema,
    base: LoadedDataset | None,
    change: SchemaChange,
    now: str,
) -> None:
    """Update the schema record of the ``kartoframe`` map in place.

    ``schema`` is the schema as an Arrow IPC message (base64), ``schema_version`` counts
    the schema changes and ``schema_history`` lists them (``create``, ``adopt`` for a
    dataset first committed by kartoframe after another writer, ``add_columns``, and
    ``external`` when the stored schema differs from the recorded one).
    """
    history = section.get("schema_history")
    history = list(history) if isinstance(history, list) else []
    version = section.get("schema_version")
    version = version if isinstance(version, int) and not isinstance(version, bool) else None
    if base is None:
        version, history = 1, []
        history.append(
            {"version": 1, "timestamp": now, "change": "create", "columns": _types(schema)}
        )
    elif version is None:
        version, history = 1, []
        history.append(
            {"version": 1, "timestamp": now, "change": "adopt", "columns": _types(base.schema)}
        )
    else:
        recorded = recorded_schema(section)
        if recorded is not None and _types(recorded) != _types(base.schema):
            version += 1
            history.append(
                {
                    "version": version,
                    "timestamp": now,
                    "change": "external",
                    "columns": _types(base.schema),
                }
            )
    if change:
        version += 1
        event: dict[str, Any] = {"version": version, "timestamp": now, "change": "add_columns"}
        event["added"] = {n: str(t) for n, t in change.added}
        event["widened"] = {n: [str(a), str(b)] for n, a, b in change.widened}
        history.append(event)
    section["schema"] = base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")
    section["schema_version"] = version
    section["schema_history"] = history


def _types(schema: pa.Schema) -> dict[str, str]:
    return {f.name: str(f.type) for f in schema}


def recorded_schema(section: Mapping[str, Any]) -> pa.Schema | None:
    """The schema recorded in a ``kartoframe`` map (None if absent or undecodable)."""
    raw = section.get("schema")
    if not isinstance(raw, str):
        return None
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw, validate=True)))
    except (binascii.Error, ValueError, pa.ArrowException):
        return None
