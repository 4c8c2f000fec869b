"""The on-disk format of a dataset's transaction log (pure: no I/O).

Layout (below the dataset, next to the Kartothek files)::

    <uuid>/_kartoframe/log/00000000000000000000.json              version 0
    <uuid>/_kartoframe/log/00000000000000000001.json              version 1
    ...
    <uuid>/_kartoframe/log/00000000000000000010.checkpoint.json   state at version 10

An **entry** ``<N>.json`` describes version ``N`` relative to version ``N - 1``: the
partitions removed and added (``remove``, ``add``), the complete rest of the Kartothek
header of version ``N`` (everything but ``partitions``: indices, user metadata, the
``kartoframe`` map), the new ``_common_metadata`` bytes if the schema changed, and the
commit information (timestamp, operation, parameters, writer, user ``commit_info``,
application transaction id). A *reset* entry lists every partition of its version (a
create, an overwrite, a revert, a snapshot of a header written by another program), a
*deleted* entry ends the dataset. Entries are created with ``put_if_absent`` and never
changed: whoever creates entry ``N`` is the committer of version ``N``.

A **checkpoint** ``<N>.checkpoint.json`` holds the complete header and schema of version
``N`` (written for every tenth version), so any version is rebuilt from at most ten
entries. The Kartothek header itself carries its version in ``kartoframe.log``; opening
the current version is: read the header, check that entry ``version + 1`` does not exist
(if it does, the header lags: apply the entries that follow).

Everything read from the log is validated: a truncated, corrupt, oversized or mistyped
entry raises :class:`~kartoframe.errors.CorruptMetadataError`, one from a newer protocol
:class:`~kartoframe.errors.UnsupportedVersionError`, and every file key in it must lie
inside the dataset.

This module holds the format: key names, digests, the header's ``kartoframe.log`` and
``kartoframe.txn`` records, encoding, decoding and replaying entries, and checkpoints.
Reading the log from a store and rebuilding versions from it is
:mod:`kartoframe.storage.log`.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import hashlib
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import msgpack
import orjson

from kartoframe.errors import (
    CorruptMetadataError,
    InvalidInputError,
    InvalidTypeError,
    UnsupportedVersionError,
)
from kartoframe.format import naming
from kartoframe.format.header import (
    DatasetHeader,
    encode_header,
    kartoframe_section,
    metadata_from_dict,
    with_kartoframe_section,
)
from kartoframe.format.statistics import StatisticsRef

__all__ = [
    "CHECKPOINT_INTERVAL",
    "LOG_DIR",
    "MAX_LOG_BYTES",
    "PROTOCOL",
    "Checkpoint",
    "HeaderLog",
    "LogEntry",
    "apply_entry",
    "as_of_ms",
    "bytes_digest",
    "changed_partitions",
    "checkpoint_key",
    "decode_checkpoint",
    "decode_entry",
    "encode_checkpoint",
    "encode_entry",
    "entry_key",
    "header_digest",
    "header_log",
    "header_txn",
    "log_prefix",
    "make_entry",
    "now_ms",
    "parse_log_name",
    "referenced_keys",
    "stamp_header",
    "versions_between",
]


#: Folder of the log below the dataset (``<uuid>/_kartoframe/log/``).
LOG_DIR = "_kartoframe/log"
#: Protocol version written in entries, checkpoints and the header's ``kartoframe.log``.
PROTOCOL = 1
#: A checkpoint is written for every version divisible by this.
CHECKPOINT_INTERVAL = 10
#: Refuse log files larger than this (they are plain JSON; nothing is decompressed).
MAX_LOG_BYTES = 1 << 30
_ENTRY_MARK = "kartoframe_log"
_CHECKPOINT_MARK = "kartoframe_checkpoint"
_NAME_RE = re.compile(r"^(\d{20})(\.checkpoint)?\.json$")
_SHA_RE = re.compile(r"^[0-9a-f]{64}$")
_MAX_VERSION = 10**19


# ---------------------------------------------------------------------------- naming
def log_prefix(dataset_uuid: str) -> str:
    """``<uuid>/_kartoframe/log/``."""
    return f"{dataset_uuid}/{LOG_DIR}/"


def entry_key(dataset_uuid: str, version: int) -> str:
    """Key of log entry ``version``."""
    return f"{log_prefix(dataset_uuid)}{version:020d}.json"


def checkpoint_key(dataset_uuid: str, version: int) -> str:
    """Key of the checkpoint of ``version``."""
    return f"{log_prefix(dataset_uuid)}{version:020d}.checkpoint.json"


def parse_log_name(name: str) -> tuple[int, bool] | None:
    """The version of a log file name and whether it is a checkpoint (None: not a log file).

    ``name`` is the key below :func:`log_prefix` (temp files and the like give None).
    """
    m = _NAME_RE.match(name)
    if m is None:
        return None
    return int(m.group(1)), bool(m.group(2))


# ---------------------------------------------------------------------------- digests
def _canonical(header: DatasetHeader) -> bytes:
    if header.storage_format == "json":
        return encode_header(header)
    return msgpack.packb(header.to_dict(), use_bin_type=True)  # type: ignore[no-any-return]


def header_digest(header: DatasetHeader) -> str:
    """SHA-256 of a header's canonical encoding (JSON, or msgpack before compression)."""
    return hashlib.sha256(_canonical(header)).hexdigest()


def bytes_digest(data: bytes) -> str:
    """SHA-256 of raw bytes (used for headers written by other programs)."""
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------- header map
@dataclasses.dataclass(frozen=True, slots=True)
class HeaderLog:
    """The ``kartoframe.log`` record of a header: which log version it is."""

    version: int
    timestamp: int


def header_log(header: DatasetHeader) -> HeaderLog | None:
    """The log version recorded in a header (None: written by another program).

    Raises
    ------
    CorruptMetadataError
        The record exists but is malformed.
    UnsupportedVersionError
        It was written with a newer log protocol.
    """
    raw = kartoframe_section(header).get("log")
    if raw is None:
        return None
    where = f"header of dataset {header.uuid!r}"
    if not isinstance(raw, Mapping):
        raise CorruptMetadataError(f"Corrupt {where}: 'kartoframe.log' must be a map.")
    _check_protocol(raw.get("protocol"), where, "kartoframe.log.protocol")
    version = _int(raw.get("version"), where, "kartoframe.log.version")
    ts = _int(raw.get("timestamp"), where, "kartoframe.log.timestamp")
    return HeaderLog(version, ts)


def header_txn(header: DatasetHeader) -> dict[str, int]:
    """Application transactions recorded in a header: ``{app_id: app_version}``."""
    raw = kartoframe_section(header).get("txn")
    if not isinstance(raw, Mapping):
        return {}
    return {
        k: v
        for k, v in raw.items()
        if isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
    }


def stamp_header(
    header: DatasetHeader, version: int, timestamp: int, txn: Mapping[str, int]
) -> DatasetHeader:
    """Return ``header`` with its ``kartoframe.log`` (and ``kartoframe.txn``) set."""
    section = kartoframe_section(header)
    section["log"] = {"protocol": PROTOCOL, "version": version, "timestamp": timestamp}
    if txn:
        section["txn"] = dict(sorted(txn.items()))
    else:
        section.pop("txn", None)
    return with_kartoframe_section(header, section)


#: Key of ``kartoframe.log`` holding the SHA-256 of the JSON header file's own bytes
#: (computed with the value empty): a committer notices a header edited by hand
#: without reading the log.
FILE_DIGEST_KEY = "file_sha256"
_EMPTY_DIGEST = b'"' + FILE_DIGEST_KEY.encode() + b'":""'


def _digest_field(digest: str) -> bytes:
    return b'"' + FILE_DIGEST_KEY.encode() + b'":"' + digest.encode("ascii") + b'"'


def seal_header(header: DatasetHeader) -> tuple[DatasetHeader, bytes]:
    """The stamped header with its file digest, and its encoded bytes.

    JSON headers carry the SHA-256 of their own bytes (taken with the digest empty) in
    ``kartoframe.log.file_sha256``; msgpack headers (compressed) are returned as they are.
    """
    section = kartoframe_section(header)
    stamp = section.get("log")
    if header.storage_format != "json" or not isinstance(stamp, Mapping):
        return header, encode_header(header)
    section["log"] = {**stamp, FILE_DIGEST_KEY: ""}
    blank = with_kartoframe_section(header, section)
    data = encode_header(blank)
    if data.count(_EMPTY_DIGEST) != 1:  # the pattern also occurs in user content
        return header, encode_header(header)
    digest = bytes_digest(data)
    section["log"] = {**stamp, FILE_DIGEST_KEY: digest}
    return with_kartoframe_section(header, section), data.replace(
        _EMPTY_DIGEST, _digest_field(digest), 1
    )


def sealed_intact(header: DatasetHeader, raw: bytes) -> bool | None:
    """Whether header file bytes ``raw`` are exactly as sealed by their committer.

    None: the header carries no file digest (msgpack, or an older writer).
    """
    stamp = kartoframe_section(header).get("log")
    digest = stamp.get(FILE_DIGEST_KEY) if isinstance(stamp, Mapping) else None
    if not isinstance(digest, str) or not _SHA_RE.match(digest):
        return None
    field = _digest_field(digest)
    if raw.count(field) != 1:
        return False
    return bytes_digest(raw.replace(field, _EMPTY_DIGEST, 1)) == digest


def _check_protocol(value: object, where: str, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptMetadataError(f"Corrupt {where}: {name!r} must be an integer.")
    if value > PROTOCOL:
        raise UnsupportedVersionError(
            f"The {where} was written with transaction-log protocol {value}; this "
            f"kartoframe understands protocol {PROTOCOL} only. Upgrade kartoframe."
        )
    if value < 1:
        raise CorruptMetadataError(f"Corrupt {where}: {name!r} is {value}.")


def _int(value: object, where: str, name: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _MAX_VERSION:
        raise CorruptMetadataError(
            f"Corrupt {where}: {name!r} must be a non-negative integer, got {type(value).__name__}."
        )
    return value


# ---------------------------------------------------------------------------- entries
@dataclasses.dataclass(frozen=True, slots=True)
class LogEntry:
    """One decoded log entry (version ``version`` relative to ``version - 1``).

    Attributes
    ----------
    version, timestamp
        The version and its commit time (milliseconds since the epoch, UTC).
    operation, parameters, writer, commit_info
        Commit information (``commit_info`` is the user's dict).
    app_id, app_version
        Application transaction identifier of the commit, if any.
    reset
        True if ``add`` lists every partition (the previous partitions do not carry over).
    add
        ``(label, data file key)`` pairs, in header order.
    remove
        Labels of the previous version that this version no longer has.
    deleted
        The dataset does not exist at this version.
    header_format
        ``"json"`` or ``"msgpack"``.
    header_doc
        The header of this version without ``partitions`` (None if deleted).
    explicit_partitions
        Whether the header lists its partitions (Kartothek's implicit datasets do not).
    header_sha256
        Digest of the complete header of this version (checked when it is rebuilt).
    schema
        New ``_common_metadata`` bytes, if this version changed (or set) the schema.
    reverts
        The version this entry undoes (its header could not be published), if any.
    external
        True for a snapshot of a header written by another program (plateau).
    foreign_sha256
        Digest of that foreign header's bytes.
    new
        For a reset: the labels this version added (None: all of ``add``).
    header_file_sha256
        Digest of the header file's bytes as the committer wrote them (None in entries
        of older writers and in external ones): a committer compares the stored header
        with it, cheaply, to notice a header edited by hand or by another program
        that kept the ``kartoframe`` map.
    """

    version: int
    timestamp: int
    operation: str
    parameters: dict[str, Any]
    writer: str
    commit_info: dict[str, Any] | None
    app_id: str | None
    app_version: int | None
    reset: bool
    add: tuple[tuple[str, str], ...]
    remove: tuple[str, ...]
    deleted: bool
    header_format: naming.MetadataFormat
    header_doc: dict[str, Any] | None
    explicit_partitions: bool
    header_sha256: str | None
    schema: bytes | None
    reverts: int | None = None
    external: bool = False
    foreign_sha256: str | None = None
    new: tuple[str, ...] | None = None
    header_file_sha256: str | None = None

    @property
    def added_labels(self) -> tuple[str, ...]:
        """Labels this version added (a reset lists all partitions in ``add``)."""
        if self.reset and self.new is not None:
            return self.new
        return tuple(lb for lb, _ in self.add)


def _header_doc(header: DatasetHeader) -> dict[str, Any]:
    doc = header.to_dict()
    doc.pop("partitions", None)
    return doc


def _encode_doc(doc: Mapping[str, Any], fmt: naming.MetadataFormat) -> Any:
    if fmt == "json":
        return doc
    return base64.b64encode(msgpack.packb(dict(doc), use_bin_type=True)).decode("ascii")


def make_entry(
    *,
    version: int,
    timestamp: int,
    operation: str,
    parameters: Mapping[str, Any],
    writer: str,
    commit_info: Mapping[str, Any] | None,
    app_id: str | None,
    app_version: int | None,
    previous: DatasetHeader | None,
    header: DatasetHeader | None,
    schema: bytes | None,
    force_reset: bool = False,
    reverts: int | None = None,
    external: bool = False,
    foreign_sha256: str | None = None,
) -> LogEntry:
    """Describe version ``version`` (``header``; None: deleted) relative to ``previous``.

    The entry is a diff (partitions removed and added) when replaying it on ``previous``
    gives exactly ``header``'s partitions in the same order; otherwise (a create, an
    overwrite, a reordering, an implicit previous header) it is a reset.
    """
    prev_parts: dict[str, str] = (
        dict(previous.partitions) if previous is not None and previous.explicit_partitions else {}
    )
    if header is None:
        return LogEntry(
            version,
            timestamp,
            operation,
            dict(parameters),
            writer,
            dict(commit_info) if commit_info is not None else None,
            app_id,
            app_version,
            True,
            (),
            tuple(prev_parts),
            True,
            previous.storage_format if previous is not None else "json",
            None,
            True,
            None,
            None,
            reverts,
            external,
            foreign_sha256,
        )
    new_parts = dict(header.partitions) if header.explicit_partitions else {}
    removed = [lb for lb, k in prev_parts.items() if new_parts.get(lb) != k]
    added = [(lb, k) for lb, k in new_parts.items() if prev_parts.get(lb) != k]
    reset = force_reset or previous is None or not previous.explicit_partitions
    if not reset:
        gone = set(removed)
        replay = {lb: k for lb, k in prev_parts.items() if lb not in gone}
        replay.update(added)
        reset = list(replay.items()) != list(new_parts.items())
    fresh: tuple[str, ...] | None = None
    if reset:
        fresh = tuple(lb for lb, _ in added)
        added = list(new_parts.items())
        if len(fresh) == len(added):
            fresh = None
    return LogEntry(
        version,
        timestamp,
        operation,
        dict(parameters),
        writer,
        dict(commit_info) if commit_info is not None else None,
        app_id,
        app_version,
        reset,
        tuple(added),
        tuple(removed),
        False,
        header.storage_format,
        _header_doc(header),
        header.explicit_partitions,
        header_digest(header),
        schema,
        reverts,
        external,
        foreign_sha256,
        fresh,
    )


def encode_entry(entry: LogEntry) -> bytes:
    """Encode an entry as JSON.

    Raises
    ------
    InvalidInputError
        Some value (user metadata, parameters, ``commit_info``) is not JSON-serialisable.
    """
    doc: dict[str, Any] = {
        _ENTRY_MARK: PROTOCOL,
        "version": entry.version,
        "timestamp": entry.timestamp,
        "operation": entry.operation,
        "parameters": entry.parameters,
        "writer": entry.writer,
        "commit_info": entry.commit_info,
        "txn": (
            {"app_id": entry.app_id, "app_version": entry.app_version}
            if entry.app_id is not None
            else None
        ),
        "reset": entry.reset,
        "deleted": entry.deleted,
        "remove": list(entry.remove),
        "add": [list(p) for p in entry.add],
        "header_format": entry.header_format,
        "explicit_partitions": entry.explicit_partitions,
        "header": (
            _encode_doc(entry.header_doc, entry.header_format)
            if entry.header_doc is not None
            else None
        ),
        "header_sha256": entry.header_sha256,
        "schema": base64.b64encode(entry.schema).decode("ascii") if entry.schema else None,
        "reverts": entry.reverts,
        "external": entry.external,
        "foreign_sha256": entry.foreign_sha256,
    }
    if entry.new is not None:
        doc["new"] = list(entry.new)
    if entry.header_file_sha256 is not None:
        doc["header_file_sha256"] = entry.header_file_sha256
    return _dumps(doc, f"log entry {entry.version}")


def _dumps(doc: Mapping[str, Any], what: str) -> bytes:
    try:
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError as e:
        raise InvalidInputError(
            f"Cannot record {what} in the transaction log: {e} (user metadata, parameters "
            "and commit_info must be JSON-serialisable)."
        ) from e


class _Reader:
    """Typed access to a decoded JSON document, with errors naming the file and key."""

    def __init__(self, doc: object, where: str) -> None:
        self.where = where
        if not isinstance(doc, dict):
            self.fail("<root>", "a JSON object", doc)
        assert isinstance(doc, dict)
        self.doc = doc

    def fail(self, key: str, expected: str, got: object) -> None:
        raise CorruptMetadataError(
            f"Corrupt {self.where}: {key!r} must be {expected}, got {type(got).__name__}."
        )

    def get(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        value = self.doc.get(key)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
            self.fail(key, expected, value)
        return value

    def opt(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        if self.doc.get(key) is None:
            return None
        return self.get(key, types, expected)


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _loads(data: bytes, where: str) -> Any:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CorruptMetadataError(f"Corrupt {where}: not bytes.")
    if len(data) > MAX_LOG_BYTES:
        raise CorruptMetadataError(
            f"Corrupt {where}: {len(data)} bytes, over the {MAX_LOG_BYTES}-byte limit."
        )
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise CorruptMetadataError(f"Cannot decode {where}: {e}") from e


def _b64(value: str, r: _Reader, key: str) -> bytes:
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise CorruptMetadataError(f"Corrupt {r.where}: {key!r} is not base64 ({e}).") from e


def _decode_doc(r: _Reader, key: str, fmt: naming.MetadataFormat) -> dict[str, Any]:
    if fmt == "json":
        doc = r.get(key, dict, "a JSON object")
    else:
        raw = _b64(r.get(key, str, "base64 msgpack"), r, key)
        try:
            doc = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise CorruptMetadataError(f"Cannot decode {key!r} of {r.where}: {e}") from e
        if not isinstance(doc, dict):
            r.fail(key, "a msgpack map", doc)
    return dict(doc)


def _check_label(label: object, r: _Reader, key: str) -> str:
    if not isinstance(label, str) or not label or "\x00" in label or label.startswith("/"):
        r.fail(key, "a list of partition labels", label)
    assert isinstance(label, str)
    return label


def decode_entry(data: bytes, dataset_uuid: str, version: int) -> LogEntry:
    """Decode and validate log entry ``version`` of a dataset.

    Raises
    ------
    CorruptMetadataError
        Truncated, not JSON, a key missing or of the wrong type, a file key outside the
        dataset, or a version number other than the file's.
    UnsupportedVersionError
        Written with a newer log protocol.
    """
    where = f"log entry {version} of dataset {dataset_uuid!r}"
    r = _Reader(_loads(data, where), where)
    _check_protocol(r.doc.get(_ENTRY_MARK), where, _ENTRY_MARK)
    got = _int(r.doc.get("version"), where, "version")
    if got != version:
        raise CorruptMetadataError(f"Corrupt {where}: it says it is version {got}.")
    timestamp = _int(r.doc.get("timestamp"), where, "timestamp")
    operation = r.get("operation", str, "a string")
    parameters = r.get("parameters", dict, "a JSON object")
    writer = r.get("writer", str, "a string")
    commit_info = r.opt("commit_info", dict, "a JSON object or null")
    txn = r.opt("txn", dict, "a JSON object or null")
    app_id = app_version = None
    if txn is not None:
        t = _Reader(txn, where + " (txn)")
        app_id = t.get("app_id", str, "a string")
        app_version = _int(txn.get("app_version"), where, "txn.app_version")
    reset = r.get("reset", bool, "a boolean")
    deleted = r.get("deleted", bool, "a boolean")
    remove = tuple(_check_label(lb, r, "remove") for lb in r.get("remove", list, "a list"))
    add: list[tuple[str, str]] = []
    for pair in r.get("add", list, "a list"):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
            r.fail("add", "a list of [label, key] pairs", pair)
        label = _check_label(pair[0], r, "add")
        add.append((label, naming.check_key_inside(pair[1], dataset_uuid)))
    fmt = r.get("header_format", str, "'json' or 'msgpack'")
    if fmt not in ("json", "msgpack"):
        r.fail("header_format", "'json' or 'msgpack'", fmt)
    explicit = r.get("explicit_partitions", bool, "a boolean")
    doc = sha = None
    if not deleted:
        doc = _decode_doc(r, "header", fmt)
        sha = r.get("header_sha256", str, "a hex digest")
        if not _SHA_RE.match(sha):
            r.fail("header_sha256", "a hex SHA-256 digest", sha)
    schema = r.opt("schema", str, "base64 or null")
    reverts = _int(r.doc.get("reverts"), where, "reverts", optional=True)
    external = r.doc.get("external", False)
    if not isinstance(external, bool):
        r.fail("external", "a boolean", external)
    foreign = r.opt("foreign_sha256", str, "a hex digest or null")
    new = r.opt("new", list, "a list of labels or null")
    file_sha = r.opt("header_file_sha256", str, "a hex digest or null")
    if file_sha is not None and not _SHA_RE.match(file_sha):
        r.fail("header_file_sha256", "a hex SHA-256 digest", file_sha)
    return LogEntry(
        version=version,
        timestamp=timestamp,
        operation=operation,
        parameters=parameters,
        writer=writer,
        commit_info=commit_info,
        app_id=app_id,
        app_version=app_version,
        reset=reset,
        add=tuple(add),
        remove=remove,
        deleted=deleted,
        header_format=fmt,
        header_doc=doc,
        explicit_partitions=explicit,
        header_sha256=sha,
        schema=_b64(schema, r, "schema") if schema is not None else None,
        reverts=reverts,
        external=external,
        foreign_sha256=foreign,
        new=tuple(_check_label(lb, r, "new") for lb in new) if new is not None else None,
        header_file_sha256=file_sha,
    )


def _partition_map(partitions: Mapping[str, str]) -> dict[str, Any]:
    # the table of a data file is the second component of its key: <uuid>/<table>/...
    return {lb: {"files": {key.split("/")[1]: key}} for lb, key in partitions.items()}


def _rebuild(
    doc: Mapping[str, Any],
    partitions: Mapping[str, str] | None,
    dataset_uuid: str,
    fmt: naming.MetadataFormat,
    where: str,
) -> DatasetHeader:
    raw: dict[str, Any] = {}
    for k, v in doc.items():
        if k == "partition_keys" and partitions is not None:
            raw["partitions"] = _partition_map(partitions)
        raw[k] = v
    if partitions is not None and "partitions" not in raw:
        raw["partitions"] = _partition_map(partitions)
    try:
        return metadata_from_dict(raw, dataset_uuid, fmt)
    except (CorruptMetadataError, UnsupportedVersionError) as e:
        raise type(e)(f"{e} (rebuilt from {where})") from e


def apply_entry(
    previous: DatasetHeader | None, entry: LogEntry, dataset_uuid: str
) -> DatasetHeader | None:
    """The header of ``entry.version``: ``entry`` replayed on ``previous`` (None: deleted).

    Raises
    ------
    CorruptMetadataError
        The rebuilt header does not match the digest the committer recorded (a broken
        chain of entries), or is not a valid header.
    """
    where = f"log entry {entry.version} of dataset {dataset_uuid!r}"
    if entry.deleted:
        return None
    assert entry.header_doc is not None
    if entry.reset:
        parts: dict[str, str] = {}
    else:
        if previous is None:
            raise CorruptMetadataError(
                f"Corrupt {where}: it changes version {entry.version - 1}, which does not exist."
            )
        parts = dict(previous.partitions) if previous.explicit_partitions else {}
        for lb in entry.remove:
            parts.pop(lb, None)
    parts.update(entry.add)
    header = _rebuild(
        entry.header_doc,
        parts if entry.explicit_partitions else None,
        dataset_uuid,
        entry.header_format,
        where,
    )
    if header_digest(header) != entry.header_sha256:
        raise CorruptMetadataError(
            f"Corrupt transaction log of dataset {dataset_uuid!r}: replaying entry "
            f"{entry.version} does not give the header its committer recorded (an entry is "
            "missing, was edited, or belongs to another history)."
        )
    return header


# ---------------------------------------------------------------------------- checkpoints
@dataclasses.dataclass(frozen=True, slots=True)
class Checkpoint:
    """The complete state at ``version``: header (None if deleted) and schema bytes."""

    version: int
    timestamp: int
    header: DatasetHeader | None
    schema: bytes | None


def encode_checkpoint(
    version: int, timestamp: int, header: DatasetHeader | None, schema: bytes | None
) -> bytes:
    """Encode a checkpoint as JSON."""
    doc = {
        _CHECKPOINT_MARK: PROTOCOL,
        "version": version,
        "timestamp": timestamp,
        "deleted": header is None,
        "header_format": header.storage_format if header is not None else "json",
        "header": _encode_doc(header.to_dict(), header.storage_format) if header else None,
        "table": header.table_name if header is not None else None,
        "header_sha256": header_digest(header) if header is not None else None,
        "schema": base64.b64encode(schema).decode("ascii") if schema else None,
    }
    return _dumps(doc, f"checkpoint {version}")


def decode_checkpoint(data: bytes, dataset_uuid: str, version: int) -> Checkpoint:
    """Decode and validate the checkpoint of ``version``.

    Raises
    ------
    CorruptMetadataError, UnsupportedVersionError
        As :func:`decode_entry`.
    """
    where = f"checkpoint {version} of dataset {dataset_uuid!r}"
    r = _Reader(_loads(data, where), where)
    _check_protocol(r.doc.get(_CHECKPOINT_MARK), where, _CHECKPOINT_MARK)
    if _int(r.doc.get("version"), where, "version") != version:
        raise CorruptMetadataError(f"Corrupt {where}: wrong version number.")
    timestamp = _int(r.doc.get("timestamp"), where, "timestamp")
    schema_raw = r.opt("schema", str, "base64 or null")
    schema = _b64(schema_raw, r, "schema") if schema_raw is not None else None
    if r.get("deleted", bool, "a boolean"):
        return Checkpoint(version, timestamp, None, schema)
    fmt = r.get("header_format", str, "'json' or 'msgpack'")
    if fmt not in ("json", "msgpack"):
        r.fail("header_format", "'json' or 'msgpack'", fmt)
    doc = _decode_doc(r, "header", fmt)
    table = r.opt("table", str, "a string") or "table"
    try:
        header = metadata_from_dict(doc, dataset_uuid, fmt, default_table=table)
    except (CorruptMetadataError, UnsupportedVersionError) as e:
        raise type(e)(f"{e} (in {where})") from e
    sha = r.get("header_sha256", str, "a hex digest")
    if header_digest(header) != sha:
        raise CorruptMetadataError(f"Corrupt {where}: the header does not match its digest.")
    if schema is None:
        r.fail("schema", "base64", None)
    return Checkpoint(version, timestamp, header, schema)


# ---------------------------------------------------------------------------- times
def as_of_ms(value: object) -> int:
    """Milliseconds since the epoch of an ``as_of`` argument.

    Accepts a :class:`datetime.datetime` (naive means UTC), a :class:`datetime.date`, a
    ``pandas.Timestamp``, an ISO 8601 string, or epoch milliseconds (``int``).

    Raises
    ------
    InvalidTypeError, InvalidInputError
        For anything else.
    """
    if isinstance(value, bool):
        raise InvalidTypeError("as_of must be a datetime, an ISO string or epoch milliseconds.")
    if isinstance(value, int):
        return value
    to_py = getattr(value, "to_pydatetime", None)
    if callable(to_py):
        value = to_py()
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise InvalidInputError(f"as_of {value!r} is not an ISO 8601 timestamp.") from e
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, dt.datetime):
        raise InvalidTypeError(
            f"as_of must be a datetime, an ISO string or epoch milliseconds, got "
            f"{type(value).__name__}."
        )
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return int(value.timestamp() * 1000)


# ---------------------------------------------------------------------------- references
def referenced_keys(header: DatasetHeader | None) -> set[str]:
    """Files a header version needs: data files, index files, statistics file, schema."""
    if header is None:
        return set()
    keys = set(header.partitions.values()) | set(header.indices.values())
    keys.add(naming.common_metadata_key(header.uuid, header.table_name))
    ref = StatisticsRef.from_dict(kartoframe_section(header).get("statistics"), header.uuid)
    if ref is not None and ref.key is not None:
        keys.add(ref.key)
    return keys


def changed_partitions(entry: LogEntry) -> tuple[set[str], set[str]]:
    """Labels an entry added and removed (for conflict checks and history)."""
    return {lb for lb, _ in entry.add}, set(entry.remove)


def versions_between(first: int, last: int) -> Sequence[int]:
    """``first .. last`` inclusive (empty if ``last < first``)."""
    return range(first, last + 1)


def now_ms() -> int:
    """The current time in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000
