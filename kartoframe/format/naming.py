"""Key layout of a Kartothek v4 dataset and the quoting of partition labels.

Pure string functions: no I/O, no pandas.

Layout (all keys ``/``-separated and relative to the store root)::

    <uuid>.by-dataset-metadata.json | .msgpack.zstd       header
    <uuid>/<table>/_common_metadata                        schema
    <uuid>/<table>/<col>=<val>/.../<file-uuid>.parquet     data
    <uuid>/indices/<col>/<timestamp>.by-dataset-index.parquet
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import quote as _quote
from urllib.parse import unquote as _unquote

from kartoframe.errors import InvalidUUIDError, UnsafePathError

__all__ = [
    "COMMON_METADATA",
    "DATA_SUFFIXES",
    "HEADER_SUFFIXES",
    "INDEX_SUFFIX",
    "JSON_SUFFIX",
    "MSGPACK_SUFFIX",
    "PARQUET_SUFFIX",
    "MetadataFormat",
    "common_metadata_key",
    "data_key",
    "header_key",
    "index_key",
    "label_directory",
    "label_from_data_key",
    "make_label",
    "parse_label",
    "quote",
    "reserved_table_reason",
    "table_prefix",
    "unquote",
    "validate_name",
    "validate_uuid",
]

MetadataFormat = Literal["json", "msgpack"]

JSON_SUFFIX = ".by-dataset-metadata.json"
MSGPACK_SUFFIX = ".by-dataset-metadata.msgpack.zstd"
HEADER_SUFFIXES: dict[MetadataFormat, str] = {"json": JSON_SUFFIX, "msgpack": MSGPACK_SUFFIX}
INDEX_SUFFIX = ".by-dataset-index.parquet"
PARQUET_SUFFIX = ".parquet"
#: Suffixes of data files: Parquet, and CSV as plateau's ``CsvSerializer`` writes it.
DATA_SUFFIXES = (PARQUET_SUFFIX, ".csv.gz", ".csv")
COMMON_METADATA = "_common_metadata"

_UUID_RE = re.compile(r"[A-Za-z0-9+_-]+")
_TABLE_RE = re.compile(r"[A-Za-z0-9+_-]+")


def validate_uuid(dataset_uuid: object, what: str = "dataset_uuid") -> str:
    """Check a dataset uuid against the Kartothek naming rule ``[A-Za-z0-9+_-]+``.

    Parameters
    ----------
    dataset_uuid
        The candidate name.
    what
        How to call the value in the error message.

    Returns
    -------
    str
        The validated uuid.

    Raises
    ------
    InvalidUUIDError
        If the value is not a string or contains other characters (``.``, ``/``,
        backslash, NUL, ``..`` are therefore always rejected).
    """
    if not isinstance(dataset_uuid, str):
        raise InvalidUUIDError(f"{what} must be a string, got {type(dataset_uuid).__name__}.")
    if not _UUID_RE.fullmatch(dataset_uuid):
        raise InvalidUUIDError(
            f"Invalid {what} {dataset_uuid!r}: only letters, digits, '+', '-' and '_' are allowed."
        )
    return dataset_uuid


#: Table names that would put data files among kartoframe's side files
#: (``<uuid>/_kartoframe/``: transaction log, statistics; ``<uuid>/indices/``: index
#: files). Refused on write and in headers read (:mod:`kartoframe.format.generated`).
RESERVED_TABLE_NAMES = frozenset({"_kartoframe", "indices"})


def reserved_table_reason(name: object) -> str | None:
    """Why ``name`` cannot be a table name (None: a write may generate it).

    A table name is a single key component of letters, digits, ``+``, ``-`` and ``_``,
    and not one of the folder names kartoframe uses itself (``_kartoframe``,
    ``indices``): data files there would be mistaken for log, statistics or index files,
    and maintenance would take those for data.
    """
    if not isinstance(name, str) or not _TABLE_RE.fullmatch(name):
        return "only letters, digits, '+', '-' and '_' are allowed"
    if name in RESERVED_TABLE_NAMES:
        return f"reserved for kartoframe's own files (<uuid>/{name}/)"
    return None


def validate_name(name: object, what: str) -> str:
    """Validate a table name (uuid characters; ``_kartoframe`` and ``indices`` are reserved)."""
    if not isinstance(name, str) or not _TABLE_RE.fullmatch(name):
        raise InvalidUUIDError(
            f"Invalid {what} {name!r}: only letters, digits, '+', '-' and '_' are allowed."
        )
    if name in RESERVED_TABLE_NAMES:
        raise InvalidUUIDError(
            f"Invalid {what} {name!r}: reserved for kartoframe's own files (<uuid>/{name}/)."
        )
    return name


def header_key(dataset_uuid: str, fmt: MetadataFormat) -> str:
    """Return the key of the dataset header in the given storage format."""
    return dataset_uuid + HEADER_SUFFIXES[fmt]


def table_prefix(dataset_uuid: str, table: str) -> str:
    """Return ``<uuid>/<table>/``."""
    return f"{dataset_uuid}/{table}/"


def common_metadata_key(dataset_uuid: str, table: str) -> str:
    """Return ``<uuid>/<table>/_common_metadata``."""
    return f"{dataset_uuid}/{table}/{COMMON_METADATA}"


def data_key(dataset_uuid: str, table: str, label: str) -> str:
    """Return the data file key of a partition label."""
    return f"{dataset_uuid}/{table}/{label}{PARQUET_SUFFIX}"


def index_key(dataset_uuid: str, column: str, timestamp_iso: str) -> str:
    """Return the key of a secondary index file."""
    return f"{dataset_uuid}/indices/{quote(column)}/{quote(timestamp_iso)}{INDEX_SUFFIX}"


def quote(value: str) -> str:
    """Percent-encode a column name or partition value for a key component.

    Unlike the reference implementations, ``/`` is escaped too, so a value can never
    add a directory level. Decoding is standard percent-decoding, so keys written by
    plateau and kartothek decode identically.
    """
    return _quote(value, safe="")


def unquote(value: str) -> str:
    """Percent-decode a key component (UTF-8)."""
    return _unquote(value)


def make_label(pairs: list[tuple[str, str]], file_uuid: str) -> str:
    """Build a partition label ``col=val/.../<file_uuid>`` from rendered values."""
    parts = [f"{quote(col)}={quote(val)}" for col, val in pairs]
    parts.append(file_uuid)
    return "/".join(parts)


def label_directory(label: str) -> str:
    """The partition directory of a label (``""`` for an unpartitioned dataset)."""
    return label.rsplit("/", 1)[0] if "/" in label else ""


def _check_component(component: str, key: str) -> None:
    if component in ("", ".", "..") or "\\" in component or "\x00" in component:
        raise UnsafePathError(f"Unsafe path component {component!r} in key {key!r}.")


def parse_label(label: str, partition_keys: list[str] | None = None) -> list[tuple[str, str]]:
    """Split a label into decoded ``(column, value)`` pairs.

    Parameters
    ----------
    label
        ``col=val/.../<file uuid>``.
    partition_keys
        The dataset's partition keys, if known. They let the parser read legacy keys
        written by plateau/kartothek whose values contained an unescaped ``/`` (such a
        value spans several components; the components are joined back).

    Returns
    -------
    list of (str, str)
        Decoded column names and value strings, in key order.
    """
    components = label.split("/")[:-1]
    pairs: list[tuple[str, str]] = []
    quoted_keys = {quote(k): k for k in partition_keys} if partition_keys else None
    for comp in components:
        col, sep, val = comp.partition("=")
        starts_pair = bool(sep) and (quoted_keys is None or col in quoted_keys)
        if starts_pair:
            pairs.append((unquote(col), unquote(val)))
        elif pairs and quoted_keys is not None:
            # legacy: an unescaped "/" inside the previous value
            prev_col, prev_val = pairs[-1]
            pairs[-1] = (prev_col, prev_val + "/" + unquote(comp))
        # components without "=" before any pair are ignored, like the reference
    return pairs


def label_from_data_key(key: str, dataset_uuid: str, table: str) -> str | None:
    """Return the partition label of a data key, or None if the key is not a data file.

    Data files are Parquet (``.parquet``) or CSV (``.csv``, ``.csv.gz``: plateau's
    ``CsvSerializer``).
    """
    prefix = table_prefix(dataset_uuid, table)
    suffix = next((s for s in DATA_SUFFIXES if key.endswith(s)), None)
    if not key.startswith(prefix) or suffix is None:
        return None
    label = key[len(prefix) : -len(suffix)]
    if not label or label == COMMON_METADATA:
        return None
    return label


def check_key_inside(key: str, dataset_uuid: str) -> str:
    """Ensure a key read from a header addresses a file of that dataset.

    Raises
    ------
    UnsafePathError
        If the key is absolute, contains "..", backslash or NUL components, or does not start
        with ``<uuid>/`` or ``<uuid>.``.
    """
    if key.startswith("/") or "://" in key:
        raise UnsafePathError(f"Key {key!r} of dataset {dataset_uuid!r} is absolute.")
    for comp in key.split("/"):
        _check_component(comp, key)
    if not key.startswith((dataset_uuid + "/", dataset_uuid + ".")):
        raise UnsafePathError(f"Key {key!r} does not belong to dataset {dataset_uuid!r}.")
    return key
