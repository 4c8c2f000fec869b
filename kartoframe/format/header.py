"""The dataset header (``<uuid>.by-dataset-metadata.{json,msgpack.zstd}``).

:class:`DatasetHeader` is the in-memory value of a header; :func:`decode_header` and
:func:`encode_header` convert it from and to bytes. Both directions keep the key order
and value types plateau 4.6 and kartothek 5.3 write, so either reads what we write.
"""

from __future__ import annotations

import dataclasses
import gc
import operator
import uuid as uuid_mod
from collections.abc import Mapping
from typing import Any

import msgpack
import msgspec
import orjson
import zstandard

from kartoframe.errors import CorruptMetadataError, UnsupportedVersionError
from kartoframe.format.header_partitions import (
    columnar_partitions,
    joined_keys_safe,
    json_partitions,
    msgpack_partitions,
)
from kartoframe.format.naming import (
    MetadataFormat,
    check_key_inside,
    reserved_table_reason,
    validate_uuid,
)

__all__ = [
    "KARTOFRAME_KEY",
    "MAX_HEADER_BYTES",
    "DatasetHeader",
    "decode_canonical",
    "decode_header",
    "encode_header",
    "encode_header_parts",
    "kartoframe_section",
    "with_kartoframe_section",
]

METADATA_VERSION = 4
#: Refuse to decompress a msgpack header beyond this size (decompression bombs).
MAX_HEADER_BYTES = 1 << 30

#: Top-level header key of kartoframe's own metadata (schema record, statistics reference,
#: ...): one map with sub-keys, see ``docs/format.md``. plateau and kartothek ignore it
#: on read and drop it when they rewrite a header.
KARTOFRAME_KEY = "kartoframe"

_KNOWN_KEYS = frozenset(
    {
        "dataset_metadata_version",
        "dataset_uuid",
        "indices",
        "metadata",
        "partitions",
        "partition_keys",
    }
)


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class DatasetHeader:
    """An immutable view of one dataset header.

    Attributes
    ----------
    uuid
        The dataset uuid.
    partitions
        Partition label -> data file key, in header order (commit order).
    table_name
        The single table of the dataset (``"table"`` unless chosen otherwise).
    partition_keys
        Ordered hive partition columns.
    indices
        Secondary index column -> storage key of its index file.
    embedded_indices
        Legacy indices embedded in the header (``{column: {value: [labels]}}``).
    metadata
        User metadata (including ``creation_time``).
    explicit_partitions
        False for implicit datasets whose header lists no partitions (they are found
        by listing the store).
    storage_format
        ``"json"`` or ``"msgpack"``: how the header is (or will be) stored.
    extra
        Unknown top-level keys, preserved on rewrite.
    """

    uuid: str
    partitions: Mapping[str, str]
    table_name: str = "table"
    partition_keys: tuple[str, ...] = ()
    indices: Mapping[str, str] = dataclasses.field(default_factory=dict)
    embedded_indices: Mapping[str, Mapping[Any, list[str]]] = dataclasses.field(
        default_factory=dict
    )
    metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    explicit_partitions: bool = True
    storage_format: MetadataFormat = "json"
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def index_columns(self) -> set[str]:
        """All indexed columns: partition keys and secondary indices."""
        return set(self.partition_keys) | set(self.indices) | set(self.embedded_indices)

    @property
    def secondary_indices(self) -> list[str]:
        """Columns with a secondary (explicit) index."""
        return sorted(set(self.indices) | set(self.embedded_indices))

    def replace(self, **changes: Any) -> DatasetHeader:
        """Return a copy with some fields changed."""
        return dataclasses.replace(self, **changes)

    def to_dict(self, *, partitions: bool = True) -> dict[str, Any]:
        """Return the header dict in the key order plateau writes (``partitions`` False:
        without the ``partitions`` map, which is most of a large header).
        """
        out: dict[str, Any] = {"dataset_metadata_version": METADATA_VERSION}
        out["dataset_uuid"] = self.uuid
        indices: dict[str, Any] = dict(self.embedded_indices)
        indices.update(self.indices)
        if indices:
            out["indices"] = indices
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        if self.explicit_partitions and partitions:
            table = self.table_name
            out["partitions"] = {
                label: {"files": {table: key}} for label, key in self.partitions.items()
            }
        out["partition_keys"] = list(self.partition_keys)
        for k, v in self.extra.items():
            out[k] = v
        return out


def _expect(cond: bool, dataset_uuid: str, key: str, expected: str, got: object) -> None:
    if not cond:
        raise CorruptMetadataError(
            f"Corrupt header of dataset {dataset_uuid!r}: key {key!r} must be {expected}, "
            f"got {type(got).__name__} {_short(got)}."
        )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def metadata_from_dict(
    raw: object,
    dataset_uuid: str,
    storage_format: MetadataFormat,
    default_table: str = "table",
    checked_partitions: tuple[Mapping[str, str], str] | None = None,
) -> DatasetHeader:
    """Validate a decoded header dict and build a :class:`DatasetHeader`.

    ``checked_partitions`` (labels -> keys, table name) replaces the ``partitions`` entry
    of ``raw`` when the decoder has already validated it (see :func:`decode_header`).

    Raises
    ------
    CorruptMetadataError
        If a key is missing or has the wrong type (the message names the key).
    UnsupportedVersionError
        If ``dataset_metadata_version`` is not 4.
    """
    _expect(isinstance(raw, dict), dataset_uuid, "<root>", "a map", raw)
    assert isinstance(raw, dict)
    version = raw.get("dataset_metadata_version")
    _expect(
        isinstance(version, int) and not isinstance(version, bool),
        dataset_uuid,
        "dataset_metadata_version",
        "an integer",
        version,
    )
    if version != METADATA_VERSION:
        raise UnsupportedVersionError(
            f"Dataset {dataset_uuid!r} has dataset_metadata_version {version}; "
            f"kartoframe reads version {METADATA_VERSION} only."
        )
    uuid = raw.get("dataset_uuid")
    _expect(isinstance(uuid, str), dataset_uuid, "dataset_uuid", "a string", uuid)
    if uuid != dataset_uuid:
        raise CorruptMetadataError(
            f"Corrupt header of dataset {dataset_uuid!r}: key 'dataset_uuid' is {uuid!r}."
        )
    validate_uuid(uuid)

    meta = raw.get("metadata", {})
    meta = {} if meta is None else meta
    _expect(isinstance(meta, dict), dataset_uuid, "metadata", "a map", meta)

    pkeys = raw.get("partition_keys")
    if pkeys is not None:
        _expect(
            isinstance(pkeys, list) and all(isinstance(k, str) for k in pkeys),
            dataset_uuid,
            "partition_keys",
            "a list of strings",
            pkeys,
        )

    indices: dict[str, str] = {}
    embedded: dict[str, dict[Any, list[str]]] = {}
    raw_indices = raw.get("indices", {}) or {}
    _expect(isinstance(raw_indices, dict), dataset_uuid, "indices", "a map", raw_indices)
    for col, ref in raw_indices.items():
        if isinstance(ref, str):
            indices[col] = check_key_inside(ref, dataset_uuid)
        elif isinstance(ref, dict):
            for labels in ref.values():
                _expect(
                    isinstance(labels, list) and all(isinstance(x, str) for x in labels),
                    dataset_uuid,
                    f"indices.{col}",
                    "a map of value -> list of partition labels",
                    labels,
                )
            embedded[col] = {v: list(labels) for v, labels in ref.items()}
        else:
            _expect(False, dataset_uuid, f"indices.{col}", "a storage key or a map", ref)

    partitions: Mapping[str, str] = {}
    table_name = default_table
    explicit = "partitions" in raw or checked_partitions is not None
    if checked_partitions is not None:
        partitions, table_name = checked_partitions
    elif explicit:
        raw_parts = raw["partitions"]
        raw_parts = {} if raw_parts is None else raw_parts
        _expect(isinstance(raw_parts, dict), dataset_uuid, "partitions", "a map", raw_parts)
        tables: set[str] = set()
        fast = _partitions_from_dicts(raw_parts, dataset_uuid) if raw_parts else None
        if fast is not None:
            partitions, fast_table = fast
            tables = {fast_table}
        else:
            checked: dict[str, str] = {}
            partitions = checked
            for label, part in raw_parts.items():
                files = part.get("files") if isinstance(part, dict) else None
                _expect(
                    isinstance(files, dict) and len(files) >= 1,
                    dataset_uuid,
                    f"partitions.{label}.files",
                    "a non-empty map",
                    files,
                )
                assert isinstance(files, dict)
                if len(files) != 1:
                    raise CorruptMetadataError(
                        f"Dataset {dataset_uuid!r} has several tables ({sorted(files)}) in "
                        f"partition {label!r}; only single-table datasets are supported."
                    )
                ((table, key),) = files.items()
                _expect(isinstance(key, str), dataset_uuid, f"partitions.{label}.files", "str", key)
                tables.add(table)
                checked[label] = check_key_inside(key, dataset_uuid)
        if len(tables) > 1:
            raise CorruptMetadataError(
                f"Dataset {dataset_uuid!r} has several tables: {sorted(tables)}; only "
                "single-table datasets are supported."
            )
        if tables:
            table_name = tables.pop()

    reserved = reserved_table_reason(table_name)
    if reserved is not None:
        raise CorruptMetadataError(
            f"Corrupt header of dataset {dataset_uuid!r}: its partitions use the table name "
            f"{table_name!r}, which no write generates ({reserved})."
        )

    if pkeys is None:
        pkeys = _infer_partition_keys(partitions)

    extra = {k: v for k, v in raw.items() if k not in _KNOWN_KEYS}
    return DatasetHeader(
        uuid=uuid,
        partitions=partitions,
        table_name=table_name,
        partition_keys=tuple(pkeys),
        indices=indices,
        embedded_indices=embedded,
        metadata=meta,
        explicit_partitions=explicit,
        storage_format=storage_format,
        extra=extra,
    )


def _partitions_from_dicts(
    raw_parts: dict[Any, Any], dataset_uuid: str
) -> tuple[dict[str, str], str] | None:
    """Vectorised validation of a decoded ``partitions`` map (None: use the slow path).

    Opening a header with 100k partitions must not cost Python-level work per key, so
    the common case is validated with C-level passes; anything unusual falls back to the
    checked slow path, which names the bad entry.
    """
    parts = list(raw_parts.values())
    if type(parts[0]) is not dict:
        return None
    try:
        # decoded JSON/msgpack values support string subscripts only if they are maps
        files = list(map(operator.itemgetter("files"), parts))
    except (KeyError, TypeError, IndexError):
        return None
    if set(map(type, files)) != {dict} or set(map(type, raw_parts)) != {str}:
        return None
    return _partition_keys(raw_parts, files, dataset_uuid)


def _partition_keys(
    labels: Mapping[str, Any], files: list[dict[str, Any]], dataset_uuid: str
) -> tuple[dict[str, str], str] | None:
    """Labels -> keys and the table, if every ``files`` map is ``{table: safe key}``."""
    if not files or set(map(len, files)) != {1}:
        return None
    (table,) = files[0]
    try:
        keys = list(map(operator.itemgetter(table), files))
        joined = "\n".join(keys).encode("utf-8")  # TypeError: a key is not a string
    except (KeyError, TypeError, UnicodeEncodeError):
        return None
    if not joined_keys_safe(joined, len(keys), dataset_uuid):
        return None
    return dict(zip(labels, keys)), table


class _Partition(msgspec.Struct, gc=False):
    """A ``partitions`` entry as plateau writes it: ``{"files": {table: key}}``."""

    files: dict[str, str]


_FILES = operator.attrgetter("files")
_TOP_DECODERS: dict[str, Any] = {
    "json": msgspec.json.Decoder(dict[str, msgspec.Raw]),
    "msgpack": msgspec.msgpack.Decoder(dict[str, msgspec.Raw]),
}
_PARTITION_DECODERS: dict[str, Any] = {
    "json": msgspec.json.Decoder(dict[str, _Partition]),
    "msgpack": msgspec.msgpack.Decoder(dict[str, _Partition]),
}


def _decode_value(raw: msgspec.Raw, storage_format: MetadataFormat) -> Any:
    if storage_format == "json":
        return orjson.loads(memoryview(raw))
    return msgpack.unpackb(memoryview(raw), raw=False, strict_map_key=False)


def _decode_typed(
    doc: bytes, storage_format: MetadataFormat, dataset_uuid: str
) -> tuple[dict[str, Any], tuple[Mapping[str, str], str]] | None:
    """Decode a well-formed header with its ``partitions`` checked while parsing.

    First column-wise: the entries stay undecoded and their keys are checked all at once
    (:func:`kartoframe.format.header_partitions.columnar_partitions`; a million partitions
    in about half the time of the next path, without a Python object per key). Failing
    that, ``msgspec`` decodes the partitions map against its schema (string labels, one
    ``files`` map of strings each) into slotted objects, about 1.5x faster than untyped
    parsing. Every other top-level value is decoded exactly as the untyped path does. None
    when anything does not fit: the caller then decodes untyped and validates step by
    step, with errors that name the key.
    """
    try:
        top = _TOP_DECODERS[storage_format].decode(doc)
        raw_parts = top.pop("partitions", None)
        if raw_parts is None:
            return None
        rest = {k: _decode_value(v, storage_format) for k, v in top.items()}
        columnar = columnar_partitions(
            _TOP_DECODERS[storage_format].decode(raw_parts), storage_format, dataset_uuid
        )
        if columnar is not None:
            return rest, columnar
        parts = _PARTITION_DECODERS[storage_format].decode(raw_parts)
    except Exception:  # any failure: the untyped path decodes again and reports it
        return None
    checked = _partition_keys(parts, list(map(_FILES, parts.values())), dataset_uuid)
    return None if checked is None else (rest, checked)


def _infer_partition_keys(partitions: Mapping[str, str]) -> list[str]:
    from kartoframe.format.naming import parse_label

    for label in partitions:
        return [col for col, _ in parse_label(label)]
    return []


def decode_header(
    data: bytes,
    dataset_uuid: str,
    storage_format: MetadataFormat,
    default_table: str = "table",
) -> DatasetHeader:
    """Decode header bytes (JSON or zstd-compressed msgpack).

    Raises
    ------
    CorruptMetadataError
        If the bytes are truncated, not JSON/msgpack, or decompress beyond
        :data:`MAX_HEADER_BYTES`.
    """
    # Decoding allocates one dict per partition; cyclic GC passes over them are pure
    # overhead (a 100k-partition header decodes ~2x faster without them).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _decode(data, dataset_uuid, storage_format, default_table)
    finally:
        if gc_was_enabled:
            gc.enable()


def _decode(
    data: bytes, dataset_uuid: str, storage_format: MetadataFormat, default_table: str
) -> DatasetHeader:
    try:
        if storage_format == "json":
            doc = data
        else:
            # a frame declaring its size is decompressed into a buffer of that size,
            # ignoring max_output_size: check the declared size first
            declared = zstandard.get_frame_parameters(data).content_size
            if declared != zstandard.CONTENTSIZE_UNKNOWN and declared > MAX_HEADER_BYTES:
                limit = MAX_HEADER_BYTES
                raise ValueError(f"it declares {declared} bytes, over the {limit}-byte limit")
            doc = zstandard.ZstdDecompressor().decompress(data, max_output_size=MAX_HEADER_BYTES)
    except (zstandard.ZstdError, ValueError) as e:
        raise CorruptMetadataError(
            f"Cannot decode the {storage_format} header of dataset {dataset_uuid!r}: {e}"
        ) from e
    return decode_canonical(doc, dataset_uuid, storage_format, default_table)


def decode_canonical(
    doc: bytes, dataset_uuid: str, storage_format: MetadataFormat, default_table: str = "table"
) -> DatasetHeader:
    """Decode a header's canonical bytes: JSON, or msgpack before compression (what a
    checkpoint holds).

    Raises
    ------
    CorruptMetadataError
        The bytes are not a valid header.
    """
    try:
        typed = _decode_typed(doc, storage_format, dataset_uuid)
        if typed is not None:
            raw, checked = typed
        elif storage_format == "json":
            raw, checked = orjson.loads(doc), None
        else:
            raw, checked = msgpack.unpackb(doc, raw=False, strict_map_key=False), None
    except (
        orjson.JSONDecodeError,
        ValueError,
        TypeError,  # msgpack: unhashable map key
        msgpack.UnpackException,
    ) as e:
        raise CorruptMetadataError(
            f"Cannot decode the {storage_format} header of dataset {dataset_uuid!r}: {e}"
        ) from e
    return metadata_from_dict(
        raw, dataset_uuid, storage_format, default_table, checked_partitions=checked
    )


_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY


def encode_header(meta: DatasetHeader) -> bytes:
    """Encode a header in its ``storage_format``.

    A JSON header of many partitions gets its ``partitions`` map built column-wise
    (:func:`kartoframe.format.header_partitions.json_partitions`) and spliced in: the
    same bytes as encoding the nested dicts, without a million of them.
    """
    return encode_header_parts(meta)[1]


def encode_header_parts(meta: DatasetHeader) -> tuple[bytes, bytes]:
    """``(canonical bytes, file bytes)`` of a header: the same object for JSON, msgpack
    before and after zstd compression (the digest of a header is taken before it).
    """
    packed: bytes | None = None
    if meta.explicit_partitions and meta.partitions:
        packed = _spliced(meta)
    if packed is None:
        doc = meta.to_dict()
        if meta.storage_format == "json":
            packed = orjson.dumps(doc, option=_JSON_OPTIONS)
        else:
            packed = msgpack.packb(doc, use_bin_type=True)
    if meta.storage_format == "json":
        return packed, packed
    return packed, zstandard.ZstdCompressor(write_content_size=True).compress(packed)


def _spliced(meta: DatasetHeader) -> bytes | None:
    """The canonical encoding with the partitions map encoded column-wise
    (:func:`~kartoframe.format.header_partitions.json_partitions`,
    :func:`~kartoframe.format.header_partitions.msgpack_partitions`), spliced in where
    a unique placeholder string was encoded; None for a map they leave to the dicts.
    """
    json = meta.storage_format == "json"
    if json:
        body = json_partitions(meta.partitions, meta.table_name)
    else:
        body = msgpack_partitions(meta.partitions, meta.table_name)
    if body is None:
        return None
    token = "kartoframe-partitions-" + uuid_mod.uuid4().hex
    doc: dict[str, Any] = {}
    for k, v in meta.to_dict(partitions=False).items():
        if k == "partition_keys":
            doc["partitions"] = token  # where to_dict puts the map
        doc[k] = v
    if json:
        data = orjson.dumps(doc, option=_JSON_OPTIONS)
        placeholder, body = (
            b'"partitions":"' + token.encode() + b'"',
            b'"partitions":{' + body + b"}",
        )
    else:
        data = msgpack.packb(doc, use_bin_type=True)
        placeholder = msgpack.packb("partitions") + msgpack.packb(token)
        body = msgpack.packb("partitions") + body
    if data.count(placeholder) != 1:
        return None
    at = data.index(placeholder)
    return b"".join((data[:at], body, data[at + len(placeholder) :]))


def kartoframe_section(header: DatasetHeader) -> dict[str, Any]:
    """A copy of the header's ``kartoframe`` map (empty if absent or not a map)."""
    raw = header.extra.get(KARTOFRAME_KEY)
    return dict(raw) if isinstance(raw, Mapping) else {}


def with_kartoframe_section(header: DatasetHeader, section: Mapping[str, Any]) -> DatasetHeader:
    """Return ``header`` with its ``kartoframe`` map replaced (removed if empty)."""
    extra = dict(header.extra)
    if section:
        extra[KARTOFRAME_KEY] = dict(section)
    else:
        extra.pop(KARTOFRAME_KEY, None)
    return header.replace(extra=extra)
