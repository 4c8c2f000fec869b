"""Load what planning needs from a store: header, schema, indices (the I/O half)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kartoframe.errors import (
    CorruptMetadataError,
    DatasetNotFoundError,
    FormatError,
    UnsafePathError,
)
from kartoframe.format import naming
from kartoframe.format.arrow_memory import reader
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, kartoframe_section
from kartoframe.format.index import index_from_bytes, index_from_embedded
from kartoframe.format.schema import schema_from_bytes
from kartoframe.format.statistics import (
    BASE_FIELDS,
    StatisticsRef,
    checked_statistics,
    merge_statistics,
    statistics_from_bytes,
)
from kartoframe.format.statistics_rows import groups_holding
from kartoframe.storage.io_map import io_map
from kartoframe.storage.log import State, current_state, historic_state, read_stored_header
from kartoframe.storage.null_types import fill_null_types
from kartoframe.storage.store import Store

__all__ = [
    "statistics_ref",
    "dataset_exists",
    "existing_header_formats",
    "load_dataset",
    "load_for_read",
    "load_indices",
    "load_statistics",
    "loaded_from_state",
    "read_header",
    "statistics_base_columns",
    "statistics_files",
    "statistics_rows",
]

#: A dataset with at least this many partitions has its index and statistics files loaded
#: on threads even from a local folder (large Parquet files decode outside the GIL; see
#: :mod:`kartoframe.storage.io_map`).
LOCAL_THREADS_PARTITIONS = 1000


def read_header(store: Store, dataset_uuid: str) -> tuple[DatasetHeader, bytes] | None:
    """Read and decode the header (JSON first, then msgpack), or None if absent."""
    return read_stored_header(store, dataset_uuid, "json")


def existing_header_formats(store: Store, dataset_uuid: str) -> list[naming.MetadataFormat]:
    """Which header files exist for a uuid (normally zero or one)."""
    found: list[naming.MetadataFormat] = []
    for fmt in ("json", "msgpack"):
        if store.exists(naming.header_key(dataset_uuid, fmt)):  # type: ignore[arg-type]
            found.append(fmt)  # type: ignore[arg-type]
    return found


def dataset_exists(store: Store, dataset_uuid: str) -> bool:
    """Whether the dataset exists: it has a header, and its current version (after any
    newer entries of the transaction log) does not delete it.
    """
    naming.validate_uuid(dataset_uuid)
    try:
        return current_state(store, dataset_uuid) is not None
    except (FormatError, UnsafePathError):
        return True  # a header exists, but it (or the log) is broken: not "absent"


def load_existing(store: Store, dataset_uuid: str) -> LoadedDataset | None:
    """The dataset as :func:`load_dataset` opens it (header, newer log entries, schema: one
    open), or None if it does not exist. A broken header still raises.
    """
    try:
        return load_dataset(store, dataset_uuid)
    except DatasetNotFoundError:
        return None


def _find_table(store: Store, dataset_uuid: str, preferred: str) -> str | None:
    if store.exists(naming.common_metadata_key(dataset_uuid, preferred)):
        return preferred
    for key in store.iter_keys(dataset_uuid + "/"):
        parts = key.split("/")
        if len(parts) == 3 and parts[2] == naming.COMMON_METADATA:
            return parts[1]
    return None


def _implicit_partitions(store: Store, md: DatasetHeader) -> dict[str, str]:
    prefix = naming.table_prefix(md.uuid, md.table_name)
    parts: dict[str, str] = {}
    depth: int | None = None
    for key in store.iter_keys(prefix):
        label = naming.label_from_data_key(key, md.uuid, md.table_name)
        if label is None:
            continue
        d = label.count("/")
        if depth is None:
            depth = d
        elif d != depth and not md.partition_keys:
            raise FormatError(
                f"Unknown file structure in implicit dataset {md.uuid!r}: labels of "
                f"different depths ({label!r})."
            )
        parts[label] = key
    return parts


def load_dataset(
    store: Store,
    dataset_uuid: str,
    *,
    index_columns: Iterable[str] = (),
    default_table: str = "table",
    version: int | None = None,
    as_of: object = None,
) -> LoadedDataset:
    """Load the header and schema (and the requested secondary indices).

    Without ``version``/``as_of`` this is the current version: the header, rolled forward
    over newer entries of the transaction log if it lags (see ``docs/transactions.md``).
    ``version`` (a log version) or ``as_of`` (a timestamp: ``datetime``, ``pandas.Timestamp``,
    ISO string or epoch milliseconds) select a past version, rebuilt from the log.

    Raises
    ------
    DatasetNotFoundError
        No header exists (or the selected version deletes the dataset).
    CorruptMetadataError, UnsupportedVersionError
        The header, the log or the schema cannot be decoded.
    InvalidInputError
        The requested version is not in the log.
    """
    naming.validate_uuid(dataset_uuid)
    state: State | None
    if version is not None or as_of is not None:
        state = historic_state(store, dataset_uuid, version=version, as_of=as_of)
    else:
        state = current_state(store, dataset_uuid)
    if state is None or state.header is None:
        raise DatasetNotFoundError(dataset_uuid, store.display_url)
    return loaded_from_state(store, state, index_columns=index_columns, default_table=default_table)


def loaded_from_state(
    store: Store,
    state: State,
    *,
    index_columns: Iterable[str] = (),
    default_table: str = "table",
) -> LoadedDataset:
    """A :class:`LoadedDataset` of a state: its header and schema (and some indices)."""
    assert state.header is not None
    md, raw = state.header, state.header_bytes
    dataset_uuid = md.uuid
    if not md.partitions:
        table = _find_table(
            store, md.uuid, md.table_name if md.explicit_partitions else default_table
        )
        if table is None and state.schema is None:
            raise FormatError(f"Dataset {dataset_uuid!r} has no table schema (_common_metadata).")
        if table is not None:  # else: a create not yet published; the log has its schema
            md = md.replace(table_name=table)
    if not md.explicit_partitions:
        parts = _implicit_partitions(store, md)
        md = md.replace(partitions=parts)
        if not md.partition_keys and parts:
            first = next(iter(parts))
            md = md.replace(partition_keys=tuple(c for c, _ in naming.parse_label(first)))
    schema_bytes = state.schema
    if schema_bytes is None:
        schema_bytes = store.get_or_none(naming.common_metadata_key(md.uuid, md.table_name))
    if schema_bytes is None:
        raise FormatError(
            f"Dataset {dataset_uuid!r} has no schema file "
            f"{naming.common_metadata_key(md.uuid, md.table_name)!r}."
        )
    schema = schema_from_bytes(schema_bytes, md.partition_keys, origin=f"of {dataset_uuid!r}")
    missing = [k for k in md.partition_keys if k not in schema.names]
    if missing:
        raise CorruptMetadataError(
            f"Partition keys {missing} of dataset {dataset_uuid!r} are not in its schema."
        )
    if not md.explicit_partitions:  # no commit upgraded its `null` columns: ask the files
        schema = fill_null_types(store, md, schema)
    loaded = LoadedDataset(md, schema, {}, raw)
    return load_indices(store, loaded, index_columns)


def load_indices(
    store: Store,
    loaded: LoadedDataset,
    columns: Iterable[str],
    only: Mapping[str, Sequence[Any]] | None = None,
) -> LoadedDataset:
    """Return ``loaded`` with the given secondary indices loaded (others untouched).

    ``only`` restricts the index files of some columns to the rows of a few values
    (see :func:`kartoframe.plan.query.index_lookups`): the result is then good for
    planning that one query only, never for writing or for other queries.
    """
    indices = dict(loaded.indices)
    only = only or {}
    for col in columns:
        if col not in indices:
            idx = _load_index(store, loaded, col, only.get(col))
            if idx is not None:
                indices[col] = idx
    return dataclasses.replace(loaded, indices=indices)


def _load_index(
    store: Store, loaded: LoadedDataset, col: str, only: Sequence[Any] | None
) -> pa.Table | None:
    md = loaded.metadata
    if col in md.indices:
        key = md.indices[col]
        data = store.get_or_none(key)
        if data is None:
            raise CorruptMetadataError(f"Index file {key!r} of dataset {md.uuid!r} is missing.")
        col_type = loaded.schema.field(col).type if col in loaded.schema.names else None
        return index_from_bytes(
            data, col, origin=f"{key!r} of dataset {md.uuid!r}", only=only, column_type=col_type
        )
    if col in md.embedded_indices:
        t = loaded.schema.field(col).type if col in loaded.schema.names else pa.string()
        return index_from_embedded(col, t, md.embedded_indices[col])
    return None


def load_for_read(
    store: Store,
    loaded: LoadedDataset,
    *,
    indices: Sequence[str] = (),
    lookups: Mapping[str, Sequence[Any]] | None = None,
    statistics: bool = False,
    optional_statistics: bool = False,
) -> LoadedDataset:
    """``loaded`` with exactly what a read needs (see :func:`kartoframe.plan.query.read_needs`):
    the ``indices`` (restricted to the ``lookups`` values where given) and the per-file
    statistics, loaded concurrently on a remote store when there are several files to read
    (:func:`~kartoframe.storage.io_map.io_map`).

    ``optional_statistics`` loads the statistics only to type integer columns: a file that
    is missing or cannot be decoded then reads as "no statistics" (every integer column
    that may hold nulls is read as a nullable integer), since typing must not fail a read
    that pruning does not need the statistics for.
    """
    only = lookups or {}
    jobs: list[str | None] = [c for c in indices if c not in loaded.indices]
    if statistics or optional_statistics:
        jobs.append(None)  # the statistics file
    if not jobs:
        return loaded

    def run(job: str | None) -> pa.Table | None:
        if job is None:
            return _statistics_or_none(store, loaded, required=statistics)
        return _load_index(store, loaded, job, only.get(job))

    large = len(loaded.metadata.partitions) >= LOCAL_THREADS_PARTITIONS
    results = io_map(store, run, jobs, threads_locally=large)
    found = dict(loaded.indices)
    stats = loaded.statistics
    for job, table in zip(jobs, results):
        if job is None:
            stats = table if table is not None else stats
        elif table is not None:
            found[job] = table
    return dataclasses.replace(loaded, indices=found, statistics=stats)


def _statistics_or_none(store: Store, loaded: LoadedDataset, *, required: bool) -> pa.Table | None:
    try:
        return load_statistics(store, loaded).statistics
    except CorruptMetadataError:
        if required:
            raise
        return None


def statistics_ref(md: DatasetHeader) -> StatisticsRef | None:
    """The header's statistics reference, or None (no statistics, or a malformed entry)."""
    ref = StatisticsRef.from_dict(kartoframe_section(md).get("statistics"), md.uuid)
    return ref if ref is not None and ref.key is not None else None


def bloom_columns_of(loaded: LoadedDataset | None) -> tuple[str, ...]:
    """The dataset's bloom-filter columns (every write maintains them; () if none)."""
    ref = statistics_ref(loaded.metadata) if loaded is not None else None
    return ref.bloom_filter_columns if ref is not None else ()


def _missing_statistics(key: str, dataset_uuid: str) -> CorruptMetadataError:
    return CorruptMetadataError(
        f"Statistics file {key!r} of dataset {dataset_uuid!r} is missing; rebuild it with "
        "build_dataset_statistics."
    )


def _whole_file(store: Store, key: str, dataset_uuid: str) -> pa.Table | None:
    """Every row of one statistics file (None: a newer layout)."""
    data = store.get_or_none(key)
    if data is None:
        raise _missing_statistics(key, dataset_uuid)
    return statistics_from_bytes(data, origin=repr(key))


def _statistics_file(
    store: Store, key: str, dataset_uuid: str, read: Callable[[pq.ParquetFile], pa.Table]
) -> pa.Table | None:
    """``read`` of one opened statistics file, checked (None: a newer layout)."""
    try:
        if store.is_local:
            # plain reads of the needed column chunks into Arrow's pool (a memory map
            # or pre-buffering pulls neighbouring pages of other files' blooms)
            pf = pq.ParquetFile(pa.OSFile(store.path(key)), pre_buffer=False)
        else:
            data = store.get_or_none(key)
            if data is None:
                raise FileNotFoundError(key)
            pf = pq.ParquetFile(reader(data))  # Arrow-owned: safe at exit
        table = read(pf)
    except FileNotFoundError as e:
        raise _missing_statistics(key, dataset_uuid) from e
    except (pa.ArrowException, OSError, ValueError, KeyError) as e:
        raise CorruptMetadataError(f"Cannot read statistics file {key!r}: {e}") from e
    table = table.replace_schema_metadata(pf.schema_arrow.metadata)
    return checked_statistics(table, origin=repr(key))


def _rows_of(store: Store, key: str, dataset_uuid: str, labels: Collection[str]) -> pa.Table | None:
    """The rows of ``labels`` in one statistics file (None: a newer layout): only the row
    groups whose label bounds (the footer's column statistics) admit one of them are
    decoded (their bloom filters are the bulk of the file).
    """

    def read(pf: pq.ParquetFile) -> pa.Table:
        md = pf.metadata
        at = pf.schema_arrow.get_field_index("label")
        bounds: list[tuple[str, str] | None] = []
        for i in range(md.num_row_groups):
            st = md.row_group(i).column(at).statistics if at >= 0 else None
            ok = st is not None and st.has_min_max
            bounds.append((st.min, st.max) if ok else None)  # type: ignore[union-attr]
        wanted = pa.array(list(labels), pa.string())
        parts = []
        for g in groups_holding(bounds, labels):  # one group at a time: only its wanted rows stay
            part = pf.read_row_group(g, use_threads=False)
            parts.append(part.filter(pc.is_in(part["label"], value_set=wanted)))
            del part
        return pa.concat_tables(parts) if parts else pf.schema_arrow.empty_table()

    return _statistics_file(store, key, dataset_uuid, read)


def _reference_files(
    loaded: LoadedDataset, read: Callable[[str], pa.Table | None]
) -> list[pa.Table] | None:
    """``read`` of every file of the statistics reference: the base file first, then the
    deltas (a later row of a label wins); None if there is no reference or a file has a
    newer layout.
    """
    ref = statistics_ref(loaded.metadata)
    if ref is None or ref.key is None:
        return None
    tables = []
    for key in ref.keys:
        part = read(key)
        if part is None:  # a newer layout: no statistics
            return None
        tables.append(part)
    return tables


def statistics_base_columns(store: Store, loaded: LoadedDataset) -> list[pa.Table] | None:
    """The base columns (``label``, ``key``, ``rows``, ``bytes``) of every file of the
    dataset's statistics reference, the base file first, then the deltas (a later row of
    a label wins); None if there is no reference or a file has a newer layout.

    No statistic is decoded: the bloom filters are the bulk of the files, and a planner
    that needs only the files' sizes (optimize) reads a few bytes per file.

    Raises
    ------
    CorruptMetadataError
        A referenced file is missing or cannot be decoded.
    """
    names = [f.name for f in BASE_FIELDS]

    def read(key: str) -> pa.Table | None:
        return _statistics_file(
            store, key, loaded.metadata.uuid, lambda pf: pf.read(columns=names, use_threads=False)
        )

    return _reference_files(loaded, read)


def statistics_files(store: Store, loaded: LoadedDataset) -> list[pa.Table] | None:
    """Every row of every file of the dataset's statistics reference, the base file
    first, then the deltas; None if there is no reference or a file has a newer layout.

    Raises
    ------
    CorruptMetadataError
        A referenced file is missing or cannot be decoded.
    """
    return _reference_files(loaded, lambda key: _whole_file(store, key, loaded.metadata.uuid))


def _statistics_of(
    loaded: LoadedDataset,
    read: Callable[[str], pa.Table | None],
    partitions: Mapping[str, str],
) -> pa.Table | None:
    """The statistics readers use for ``partitions`` (labels of ``loaded``): ``read`` of
    every file of the reference (base, then deltas), merged; None if there is no
    reference or a file has a newer layout.
    """
    tables = _reference_files(loaded, read)
    if tables is None:
        return None
    md = loaded.metadata
    if len(tables) == 1 and partitions is md.partitions:
        return tables[0]  # a single file describes only files of its header
    return merge_statistics(
        None, tables, partitions, loaded.schema, md.partition_keys, bloom_columns_of(loaded)
    )


def statistics_rows(
    store: Store, loaded: LoadedDataset, labels: Collection[str]
) -> pa.Table | None:
    """The statistics of the files of ``labels`` only (None: the dataset has none): what
    a reader of a few files needs, without decoding every file's bloom filters.

    Raises
    ------
    CorruptMetadataError
        A referenced file is missing or cannot be decoded.
    """
    if loaded.statistics is not None:
        return loaded.statistics
    if not labels:
        return None
    md = loaded.metadata
    wanted = {lb: md.partitions[lb] for lb in labels if lb in md.partitions}
    return _statistics_of(loaded, lambda key: _rows_of(store, key, md.uuid, labels), wanted)


def load_statistics(store: Store, loaded: LoadedDataset) -> LoadedDataset:
    """Return ``loaded`` with its per-file statistics (unchanged if it has none).

    A header without a statistics reference (written by plateau, or by a kartoframe
    version without statistics) and a file of a newer layout version read as "no
    statistics". Rows are only ever used for labels whose data file key they repeat.

    Raises
    ------
    CorruptMetadataError
        The referenced file is missing or cannot be decoded (rebuild it with
        ``build_dataset_statistics``).
    """
    if loaded.statistics is not None:
        return loaded
    md = loaded.metadata
    table = _statistics_of(loaded, lambda key: _whole_file(store, key, md.uuid), md.partitions)
    return loaded if table is None else dataclasses.replace(loaded, statistics=table)
