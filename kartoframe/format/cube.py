"""Kartothek cubes: the cube spec, the ``ktk_cube_*`` metadata keys and the cube rules.

A cube is the set of datasets ``<uuid_prefix>++<dataset_id>`` (no cube-level metadata
file). One of them, the *seed*, defines which cells (unique tuples of the dimension
columns) exist; the others add payload columns. Everything in this module is pure: it
works on names, dicts, schemas and :class:`~kartoframe.format.dataset.LoadedDataset`
values and never touches a store.

The metadata keys and error messages follow kartothek 5.3 (``kartothek/core/cube`` and
``kartothek/api/consistency.py``) so that cubes move freely between the two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.errors import FormatError, InvalidInputError, InvalidTypeError, SchemaError
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import normalize_type

__all__ = [
    "CUBE_COMPRESSION",
    "CUBE_TABLE",
    "KEY_DIMENSION_COLUMNS",
    "KEY_IS_SEED",
    "KEY_PARTITION_COLUMNS",
    "KEY_SUPPRESS_INDEX_ON",
    "LEGACY_TIMESTAMP_COLUMN",
    "SEPARATOR",
    "Cube",
    "CubeMember",
    "check_datasets",
    "cube_from_members",
    "cube_metadata",
    "dataset_columns",
    "dataset_ids_from_listing",
    "member_from_loaded",
    "payload_subset",
    "str_tuple",
]

#: Separator between cube prefix and dataset id in a dataset uuid.
SEPARATOR = "++"
#: The single table of every cube member.
CUBE_TABLE = "table"
#: Parquet codec of data files written by cube functions.
CUBE_COMPRESSION = "ZSTD"
#: Metadata keys written into every member's user ``metadata``.
KEY_DIMENSION_COLUMNS = "ktk_cube_dimension_columns"
KEY_IS_SEED = "ktk_cube_is_seed"
KEY_PARTITION_COLUMNS = "ktk_cube_partition_columns"
KEY_SUPPRESS_INDEX_ON = "ktk_cube_suppress_index_on"
#: Pre-kartothek ("Klee") names, read as fallbacks.
LEGACY_DIMENSION_COLUMNS = "klee_dimension_columns"
LEGACY_IS_SEED = "klee_is_seed"
LEGACY_PARTITION_COLUMNS = "klee_partition_columns"
LEGACY_TIMESTAMP_KEY = "klee_timestamp_column"
#: The only legacy timestamp column that can be read; it is invisible to queries.
LEGACY_TIMESTAMP_COLUMN = "KLEE_TS"


def str_tuple(value: object, name: str, *, ordered: bool = True) -> tuple[str, ...]:
    """Normalise a column-list argument to a tuple of strings.

    ``None`` gives ``()``, a single string gives a 1-tuple. With ``ordered`` (dimension and
    partition columns, ``partition_by``, query dimension columns) sets and dicts are
    refused because their iteration order is unstable, and duplicates are refused.

    Raises
    ------
    InvalidTypeError
        A set/dict where order matters, or a non-string element.
    InvalidInputError
        Duplicates in an ordered list.
    """
    if value is None:
        return ()
    if isinstance(value, str | bytes):
        items: list[object] = [value]
    elif isinstance(value, dict | set | frozenset):
        if ordered:
            raise InvalidTypeError(
                f"{name} {sorted(map(str, value))} has type {type(value).__name__} which has "
                "an unstable iteration order; use a list or tuple."
            )
        items = sorted(value, key=str)
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise InvalidTypeError(f"{name} must be a list of column names, got {value!r}.")
    out: list[str] = []
    for item in items:
        if isinstance(item, bytes):
            item = item.decode("utf-8")
        if not isinstance(item, str):
            raise InvalidTypeError(
                f"Object of type {type(item).__name__} is not a string: {item!r} (in {name})."
            )
        out.append(item)
    if ordered and len(set(out)) != len(out):
        raise InvalidInputError(f"{name} contains duplicates: {', '.join(out)}")
    if not ordered:
        out = sorted(set(out))
    return tuple(out)


def _check_cube_uuid(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidTypeError(f"{name} must be a string, got {type(value).__name__}.")
    naming.validate_uuid(value, name)
    if SEPARATOR in value:
        raise InvalidInputError(f'{name} ("{value}") must not contain UUID separator {SEPARATOR}')
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class Cube:
    """An OLAP-like cube fusing several Kartothek datasets.

    Parameters
    ----------
    dimension_columns
        Ordered columns spanning the cube's dimensions; every cell (tuple of dimension
        values) is unique. The seed dataset gets a secondary index on each of them
        unless suppressed.
    partition_columns
        Ordered columns the seed is partitioned by (hive directories).
    uuid_prefix
        Datasets of the cube are named ``<uuid_prefix>++<dataset_id>``.
    seed_dataset
        Dataset id of the seed, the ground truth for which cells exist.
    index_columns
        Columns that get a secondary index in every dataset containing them.
    suppress_index_on
        Dimension columns whose automatic seed index is not built.

    Raises
    ------
    InvalidTypeError
        Sets given where order matters, non-string names.
    InvalidInputError
        Empty dimension/partition columns, overlaps, invalid uuids.

    Examples
    --------
    >>> import kartoframe as kf
    >>> cube = kf.Cube(dimension_columns=["COUNTRY_CODE", "DATE"],
    ...                partition_columns=["MONTH"], uuid_prefix="sales")
    >>> cube.ktk_dataset_uuid("weather")
    'sales++weather'
    """

    dimension_columns: tuple[str, ...]
    partition_columns: tuple[str, ...]
    uuid_prefix: str
    seed_dataset: str = "seed"
    index_columns: tuple[str, ...] = ()
    suppress_index_on: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        dims = str_tuple(self.dimension_columns, "dimension_columns")
        parts = str_tuple(self.partition_columns, "partition_columns")
        index = str_tuple(self.index_columns, "index_columns", ordered=False)
        suppress = str_tuple(self.suppress_index_on, "suppress_index_on", ordered=False)
        if not dims:
            raise InvalidInputError("dimension_columns must not be empty")
        if not parts:
            raise InvalidInputError("partition_columns must not be empty")
        _not_shared("partition_columns", parts, "dimension_columns", dims)
        _not_shared("index_columns", index, "dimension_columns", dims)
        _not_shared("index_columns", index, "partition_columns", parts)
        extra = sorted(set(suppress) - set(dims))
        if extra:
            raise InvalidInputError(
                "suppress_index_on must be a subset of dimension_columns, but it has "
                f"additional values: {', '.join(extra)}"
            )
        object.__setattr__(self, "dimension_columns", dims)
        object.__setattr__(self, "partition_columns", parts)
        object.__setattr__(self, "uuid_prefix", _check_cube_uuid(self.uuid_prefix, "uuid_prefix"))
        object.__setattr__(
            self, "seed_dataset", _check_cube_uuid(self.seed_dataset, "seed_dataset")
        )
        object.__setattr__(self, "index_columns", index)
        object.__setattr__(self, "suppress_index_on", suppress)

    def ktk_dataset_uuid(self, dataset_id: str) -> str:
        """Return ``<uuid_prefix>++<dataset_id>`` (the Kartothek dataset uuid)."""
        return f"{self.uuid_prefix}{SEPARATOR}{_check_cube_uuid(dataset_id, 'dataset id')}"

    @property
    def ktk_index_columns(self) -> set[str]:
        """All columns indexed by cube writes: partition, index and unsuppressed dimensions."""
        return (
            set(self.partition_columns)
            | set(self.index_columns)
            | (set(self.dimension_columns) - set(self.suppress_index_on))
        )

    def seed_index_columns(self) -> tuple[str, ...]:
        """Dimension columns that get a secondary index in the seed."""
        return tuple(c for c in self.dimension_columns if c not in self.suppress_index_on)

    def copy(self, **changes: Any) -> Cube:
        """Return a new spec with some attributes changed (no I/O)."""
        return dataclasses.replace(self, **changes)


def _not_shared(name: str, values: Sequence[str], other: str, others: Sequence[str]) -> None:
    share = sorted(set(values) & set(others))
    if share:
        raise InvalidInputError(
            f"{name} cannot share columns with {other}, but share the following: {', '.join(share)}"
        )


def cube_metadata(cube: Cube, dataset_id: str, user: Mapping[str, Any] | None) -> dict[str, Any]:
    """User metadata of a member plus the ``ktk_cube_*`` keys (user keys first)."""
    out = dict(user or {})
    out[KEY_DIMENSION_COLUMNS] = list(cube.dimension_columns)
    out[KEY_IS_SEED] = dataset_id == cube.seed_dataset
    out[KEY_PARTITION_COLUMNS] = list(cube.partition_columns)
    out[KEY_SUPPRESS_INDEX_ON] = list(cube.suppress_index_on)
    return out


def dataset_ids_from_listing(uuid_prefix: str, names: Iterable[str]) -> list[str]:
    """Dataset ids of a cube from a delimiter listing of the store root (sorted)."""
    prefix = uuid_prefix + SEPARATOR
    found: set[str] = set()
    for name in names:
        if not name.startswith(prefix):
            continue
        for suffix in naming.HEADER_SUFFIXES.values():
            if name.endswith(suffix) and len(name) > len(prefix) + len(suffix):
                found.add(name[len(prefix) : -len(suffix)])
    return sorted(found)


def dataset_columns(schema: pa.Schema) -> set[str]:
    """Columns visible to the cube (``__*`` and the legacy ``KLEE_TS`` are hidden)."""
    return {c for c in schema.names if not c.startswith("__") and c != LEGACY_TIMESTAMP_COLUMN}


def payload_subset(columns: Iterable[str], cube: Cube) -> set[str]:
    """Columns that are neither dimension nor partition columns."""
    return set(columns) - set(cube.dimension_columns) - set(cube.partition_columns)


@dataclasses.dataclass(frozen=True, slots=True)
class CubeMember:
    """What the cube rules need to know about one dataset (stored or planned)."""

    dataset_id: str
    schema: pa.Schema
    partition_keys: tuple[str, ...]
    secondary_indices: frozenset[str]
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    table_name: str = CUBE_TABLE

    @property
    def columns(self) -> set[str]:
        """Cube-visible columns."""
        return dataset_columns(self.schema)


def member_from_loaded(dataset_id: str, loaded: LoadedDataset) -> CubeMember:
    """The :class:`CubeMember` view of a loaded dataset."""
    md = loaded.metadata
    return CubeMember(
        dataset_id=dataset_id,
        schema=loaded.schema,
        partition_keys=tuple(md.partition_keys),
        secondary_indices=frozenset(md.indices) | frozenset(md.embedded_indices),
        metadata=dict(md.metadata),
        table_name=md.table_name,
    )


def _meta_get(meta: Mapping[str, Any], key: str, legacy: str, default: Any = None) -> Any:
    if key in meta:
        return meta[key]
    return meta.get(legacy, default)


def cube_from_members(uuid_prefix: str, members: Mapping[str, CubeMember]) -> Cube:
    """Rebuild the :class:`Cube` spec from the stored metadata of its datasets.

    Reads the ``ktk_cube_*`` keys (falling back to the legacy ``klee_*`` keys): the seed
    flag, dimension, partition and suppressed-index columns; index columns are all indexed
    columns that are neither dimension nor partition columns.

    Raises
    ------
    FormatError
        No seed or several seeds, or the seed lacks the information.
    """
    seeds = sorted(
        ds_id
        for ds_id, m in members.items()
        if bool(_meta_get(m.metadata, KEY_IS_SEED, LEGACY_IS_SEED, False))
    )
    if not seeds:
        raise FormatError(f'Could not find seed dataset for cube "{uuid_prefix}".')
    if len(seeds) > 1:
        raise FormatError(
            f'Found multiple possible seed datasets for cube "{uuid_prefix}": {", ".join(seeds)}'
        )
    seed_id = seeds[0]
    seed = members[seed_id]
    dims = _meta_get(seed.metadata, KEY_DIMENSION_COLUMNS, LEGACY_DIMENSION_COLUMNS)
    if dims is None:
        raise FormatError(
            f'Could not recover dimension columns from seed dataset ("{seed_id}") of cube '
            f'"{uuid_prefix}".'
        )
    parts = _meta_get(seed.metadata, KEY_PARTITION_COLUMNS, LEGACY_PARTITION_COLUMNS)
    timestamp = seed.metadata.get(LEGACY_TIMESTAMP_KEY)
    if parts is None:
        keys = list(seed.partition_keys)
        if not keys:
            raise FormatError(f'Seed dataset ("{seed_id}") has no partition keys.')
        if len(keys) < 2:
            raise FormatError(
                f'Seed dataset ("{seed_id}") has only a single partition key ({keys[0]}) but '
                "should have at least 2."
            )
        parts, timestamp = keys[:-1], keys[-1]
    if timestamp is not None and timestamp != LEGACY_TIMESTAMP_COLUMN:
        raise FormatError(
            "Can only read old cubes if the timestamp column is 'KLEE_TS', but "
            f"'{timestamp}' was detected."
        )
    hidden = set(dims) | set(parts) | ({timestamp} if timestamp else set())
    index: set[str] = set()
    for m in members.values():
        index |= set(m.secondary_indices) - hidden
    return Cube(
        dimension_columns=tuple(dims),
        partition_columns=tuple(parts),
        uuid_prefix=uuid_prefix,
        seed_dataset=seed_id,
        index_columns=tuple(sorted(index)),
        suppress_index_on=tuple(seed.metadata.get(KEY_SUPPRESS_INDEX_ON) or ()),
    )


def _types_compatible(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_null(a) or pa.types.is_null(b):
        return True
    return bool(normalize_type(a) == normalize_type(b))


def check_datasets(members: Mapping[str, CubeMember], cube: Cube) -> None:
    """Check the cube rules on a set of datasets (stored, planned, or both).

    The rules and their order follow kartothek's ``check_datasets``: the seed is present;
    each dataset has exactly the table ``table``; no payload column is in two datasets;
    shared columns have the same type; the seed is partitioned by all cube partition
    columns and no dataset holds a cube partition column it is not partitioned by; the
    seed has all dimension columns, the others at least one; the required indices exist.

    Raises
    ------
    InvalidInputError
        A rule is broken (the message names the dataset and columns).
    SchemaError
        A shared column has different types in two datasets.
    """
    if cube.seed_dataset not in members:
        raise InvalidInputError(f'Seed data ("{cube.seed_dataset}") is missing.')
    bad_tables = sorted(i for i, m in members.items() if m.table_name != CUBE_TABLE)
    if bad_tables:
        listing = ", ".join(f"{i} ({members[i].table_name})" for i in bad_tables)
        raise InvalidInputError(
            f"Invalid datasets because table is wrong. Expected {CUBE_TABLE}: {listing}"
        )
    owners: dict[str, list[str]] = {}
    for ds_id, m in members.items():
        for col in payload_subset(m.columns, cube):
            owners.setdefault(col, []).append(ds_id)
    multi = {c: sorted(ids) for c, ids in owners.items() if len(ids) > 1}
    if multi:
        lines = "\n".join(f" - {c}: {', '.join(multi[c])}" for c in sorted(multi))
        raise InvalidInputError(f"Found columns present in multiple datasets:{lines}")
    _check_shared_types(members)
    for ds_id in sorted(members):
        m = members[ds_id]
        if ds_id == cube.seed_dataset:
            missing = sorted(set(cube.partition_columns) - set(m.partition_keys))
            if missing:
                raise InvalidInputError(
                    f'Seed dataset "{ds_id}" has missing partition columns: {", ".join(missing)}'
                )
        unspecified = sorted((m.columns - set(m.partition_keys)) & set(cube.partition_columns))
        if unspecified:
            raise InvalidInputError(
                f"Unspecified but provided partition columns in {ds_id}: {', '.join(unspecified)}"
            )
    for ds_id in sorted(members):
        m = members[ds_id]
        if ds_id == cube.seed_dataset:
            missing = sorted(set(cube.dimension_columns) - m.columns)
            if missing:
                raise InvalidInputError(
                    f'Seed dataset "{ds_id}" has missing dimension columns: {", ".join(missing)}'
                )
        elif not set(cube.dimension_columns) & m.columns:
            raise InvalidInputError(
                f'Dataset "{ds_id}" must have at least 1 of the following dimension columns: '
                f"{', '.join(cube.dimension_columns)}"
            )
    for ds_id in sorted(members):
        _check_indices(ds_id, members[ds_id], cube)


def _check_shared_types(members: Mapping[str, CubeMember]) -> None:
    seen: dict[str, tuple[str, pa.DataType]] = {}
    for ds_id in sorted(members):
        schema = members[ds_id].schema
        for name in sorted(dataset_columns(schema)):
            t = schema.field(name).type
            if name in seen:
                other_id, other_t = seen[name]
                if not _types_compatible(other_t, t):
                    raise SchemaError(
                        f"Found incompatible entries for column {name}: {other_t} in dataset "
                        f'"{other_id}" but {t} in dataset "{ds_id}".'
                    )
                if pa.types.is_null(other_t):
                    seen[name] = (ds_id, t)
            else:
                seen[name] = (ds_id, t)


def _check_indices(ds_id: str, m: CubeMember, cube: Cube) -> None:
    secondary = set(m.secondary_indices)
    primary = set(m.partition_keys)
    required_secondary = (
        set(cube.dimension_columns) - set(cube.suppress_index_on)
        if ds_id == cube.seed_dataset
        else set()
    )
    for col in sorted(required_secondary):
        if col in primary:
            raise InvalidInputError(
                f'"{col}" in dataset "{ds_id}" is of type PartitionIndex but should be '
                "ExplicitSecondaryIndex."
            )
        if col not in secondary:
            raise InvalidInputError(
                f'ExplicitSecondaryIndex "{col}" is missing in dataset "{ds_id}".'
            )
    for col in sorted(set(cube.index_columns) & m.columns):
        if col not in secondary and col not in primary:
            raise InvalidInputError(
                f'ExplicitSecondaryIndex or PartitionIndex "{col}" is missing in dataset "{ds_id}".'
            )
