"""Load what planning needs from a store: header, schema, indices (the I/O half)."""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from kartoframe.errors import CorruptMetadataError, DatasetNotFoundError, FormatError
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader, decode_header
from kartoframe.format.index import index_from_bytes, index_from_embedded
from kartoframe.format.schema import schema_from_bytes
from kartoframe.storage.store import Store

__all__ = [
    "dataset_exists",
    "existing_header_formats",
    "load_dataset",
    "load_indices",
    "read_header",
]


def read_header(store: Store, dataset_uuid: str) -> tuple[DatasetHeader, bytes] | None:
    """Read and decode the header (JSON first, then msgpack), or None if absent."""
    naming.validate_uuid(dataset_uuid)
    for fmt in ("json", "msgpack"):
        data = store.get_or_none(naming.header_key(dataset_uuid, fmt))  # type: ignore[arg-type]
        if data is not None:
            return decode_header(data, dataset_uuid, fmt), data  # type: ignore[arg-type]
    return None


def existing_header_formats(store: Store, dataset_uuid: str) -> list[naming.MetadataFormat]:
    """Which header files exist for a uuid (normally zero or one)."""
    found: list[naming.MetadataFormat] = []
    for fmt in ("json", "msgpack"):
        if store.exists(naming.header_key(dataset_uuid, fmt)):  # type: ignore[arg-type]
            found.append(fmt)  # type: ignore[arg-type]
    return found


def dataset_exists(store: Store, dataset_uuid: str) -> bool:
    """Whether a dataset header exists."""
    naming.validate_uuid(dataset_uuid)
    return bool(existing_header_formats(store, dataset_uuid))


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
) -> LoadedDataset:
    """Load the header and schema (and the requested secondary indices).

    Raises
    ------
    DatasetNotFoundError
        No header exists.
    CorruptMetadataError, UnsupportedVersionError
        The header or schema cannot be decoded.
    """
    found = read_header(store, dataset_uuid)
    if found is None:
        raise DatasetNotFoundError(dataset_uuid, store.url)
    md, raw = found
    if not md.partitions:
        table = _find_table(
            store, md.uuid, md.table_name if md.explicit_partitions else default_table
        )
        if table is None:
            raise FormatError(f"Dataset {dataset_uuid!r} has no table schema (_common_metadata).")
        md = md.replace(table_name=table)
    if not md.explicit_partitions:
        parts = _implicit_partitions(store, md)
        md = md.replace(partitions=parts)
        if not md.partition_keys and parts:
            first = next(iter(parts))
            md = md.replace(partition_keys=tuple(c for c, _ in naming.parse_label(first)))
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
    loaded = LoadedDataset(md, schema, {}, raw)
    return load_indices(store, loaded, index_columns)


def load_indices(store: Store, loaded: LoadedDataset, columns: Iterable[str]) -> LoadedDataset:
    """Return ``loaded`` with the given secondary indices loaded (others untouched)."""
    md = loaded.metadata
    indices = dict(loaded.indices)
    for col in columns:
        if col in indices:
            continue
        if col in md.indices:
            key = md.indices[col]
            data = store.get_or_none(key)
            if data is None:
                raise CorruptMetadataError(f"Index file {key!r} of dataset {md.uuid!r} is missing.")
            idx = index_from_bytes(data, col, origin=repr(key))
        elif col in md.embedded_indices:
            t = loaded.schema.field(col).type if col in loaded.schema.names else pa.string()
            idx = index_from_embedded(col, t, md.embedded_indices[col])
        else:
            continue
        indices[col] = idx
    return LoadedDataset(md, loaded.schema, indices, loaded.header_bytes)
