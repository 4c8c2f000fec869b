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

This module holds the format: key names, encoding and decoding entries, and checkpoints.
Describing a version as an entry and replaying it are :mod:`kartoframe.format.log_diff`;
the header's ``kartoframe.log`` and ``kartoframe.txn`` records, header digests and the header
file's seal :mod:`kartoframe.format.header_stamp`; the typed reading of the JSON documents
:mod:`kartoframe.format.log_doc`. Reading the log from a store and rebuilding
versions from it is :mod:`kartoframe.storage.log`.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import re
import time
from collections.abc import Sequence
from typing import Any

import msgspec
import orjson

from kartoframe.errors import (
    CorruptMetadataError,
    InvalidInputError,
    InvalidTypeError,
    UnsupportedVersionError,
)
from kartoframe.format import naming
from kartoframe.format.changes import is_change_file
from kartoframe.format.header import (
    DatasetHeader,
    decode_canonical,
    encode_header_parts,
    kartoframe_section,
)
from kartoframe.format.header_partitions import joined_keys_safe
from kartoframe.format.header_stamp import bytes_digest, header_digest
from kartoframe.format.log_doc import (
    PROTOCOL,
    SHA_RE,
    DocReader,
    b64_field,
    check_int,
    check_label,
    check_protocol,
    decode_doc,
    dump_doc,
    encode_doc,
)
from kartoframe.format.statistics import StatisticsRef

__all__ = [
    "CHECKPOINT_INTERVAL",
    "LOG_DIR",
    "MAX_LOG_BYTES",
    "PROTOCOL",
    "Checkpoint",
    "LogEntry",
    "as_of_ms",
    "changed_partitions",
    "checkpoint_key",
    "decode_checkpoint",
    "decode_entry",
    "encode_checkpoint",
    "encode_entry",
    "entry_key",
    "log_prefix",
    "now_ms",
    "parse_log_name",
    "referenced_keys",
    "versions_between",
]


#: Folder of the log below the dataset (``<uuid>/_kartoframe/log/``).
LOG_DIR = "_kartoframe/log"
#: A checkpoint is written for every version divisible by this.
CHECKPOINT_INTERVAL = 10
#: Refuse log files larger than this (they are plain JSON; nothing is decompressed).
MAX_LOG_BYTES = 1 << 30
_ENTRY_MARK = "kartoframe_log"
_CHECKPOINT_MARK = "kartoframe_checkpoint"
_NAME_RE = re.compile(r"^(\d{20})(\.checkpoint)?\.json$")


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
    changes
        Keys of the change files this commit wrote (:mod:`kartoframe.format.changes`):
        its exact change feed (None: derive the feed from ``add`` and ``remove``).
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
    changes: tuple[str, ...] | None = None

    @property
    def added_labels(self) -> tuple[str, ...]:
        """Labels this version added (a reset lists all partitions in ``add``)."""
        if self.reset and self.new is not None:
            return self.new
        return tuple(lb for lb, _ in self.add)


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
            encode_doc(entry.header_doc, entry.header_format)
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
    if entry.changes is not None:
        doc["changes"] = list(entry.changes)
    return dump_doc(doc, f"log entry {entry.version}")


def _check_size(data: object, where: str) -> None:
    """A log document must be bytes, at most :data:`MAX_LOG_BYTES` of them."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise CorruptMetadataError(f"Corrupt {where}: not bytes.")
    if len(data) > MAX_LOG_BYTES:
        raise CorruptMetadataError(
            f"Corrupt {where}: {len(data)} bytes, over the {MAX_LOG_BYTES}-byte limit."
        )


def _loads(data: bytes, where: str) -> Any:
    _check_size(data, where)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        raise CorruptMetadataError(f"Cannot decode {where}: {e}") from e


#: Pairs from which :func:`_plain_pairs` checks an entry's additions all at once.
PLAIN_PAIRS_MIN = 64


def _plain_pairs(pairs: list[Any], dataset_uuid: str) -> list[tuple[str, str]] | None:
    """An entry's ``add`` list checked with C-level passes over all of it (a reset entry
    lists every partition of the dataset), or None: the caller checks pair by pair.

    Every pair is ``[label, key]`` of two strings; labels are non-empty, without NUL and
    not absolute; keys keep the header decoders' rules
    (:func:`~kartoframe.format.header_partitions.joined_keys_safe`).
    """
    n = len(pairs)
    if n < PLAIN_PAIRS_MIN or set(map(type, pairs)) != {list} or set(map(len, pairs)) != {2}:
        return None
    labels, keys = [p[0] for p in pairs], [p[1] for p in pairs]
    if set(map(type, labels)) != {str} or set(map(type, keys)) != {str}:
        return None
    joined = "\n".join(labels)
    if "" in labels or "\x00" in joined or joined.startswith("/") or "\n/" in joined:
        return None
    if joined.count("\n") != n - 1:  # a label holding a newline: checked one by one
        return None
    try:
        if not joined_keys_safe("\n".join(keys).encode("utf-8"), n, dataset_uuid):
            return None
    except UnicodeEncodeError:
        return None
    return list(zip(labels, keys, strict=True))


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
    r = DocReader(_loads(data, where), where)
    check_protocol(r.doc.get(_ENTRY_MARK), where, _ENTRY_MARK)
    got = check_int(r.doc.get("version"), where, "version")
    if got != version:
        raise CorruptMetadataError(f"Corrupt {where}: it says it is version {got}.")
    timestamp = check_int(r.doc.get("timestamp"), where, "timestamp")
    operation = r.get("operation", str, "a string")
    parameters = r.get("parameters", dict, "a JSON object")
    writer = r.get("writer", str, "a string")
    commit_info = r.opt("commit_info", dict, "a JSON object or null")
    txn = r.opt("txn", dict, "a JSON object or null")
    app_id = app_version = None
    if txn is not None:
        t = DocReader(txn, where + " (txn)")
        app_id = t.get("app_id", str, "a string")
        app_version = check_int(txn.get("app_version"), where, "txn.app_version")
    reset = r.get("reset", bool, "a boolean")
    deleted = r.get("deleted", bool, "a boolean")
    remove = tuple(check_label(lb, r, "remove") for lb in r.get("remove", list, "a list"))
    pairs = r.get("add", list, "a list")
    add = _plain_pairs(pairs, dataset_uuid)
    if add is None:  # the checked path: names the bad pair
        add = []
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str)):
                r.fail("add", "a list of [label, key] pairs", pair)
            label = check_label(pair[0], r, "add")
            add.append((label, naming.check_key_inside(pair[1], dataset_uuid)))
    fmt = r.get("header_format", str, "'json' or 'msgpack'")
    if fmt not in ("json", "msgpack"):
        r.fail("header_format", "'json' or 'msgpack'", fmt)
    explicit = r.get("explicit_partitions", bool, "a boolean")
    doc = sha = None
    if not deleted:
        doc = decode_doc(r, "header", fmt)
        sha = r.get("header_sha256", str, "a hex digest")
        if not SHA_RE.match(sha):
            r.fail("header_sha256", "a hex SHA-256 digest", sha)
    schema = r.opt("schema", str, "base64 or null")
    reverts = check_int(r.doc.get("reverts"), where, "reverts", optional=True)
    external = r.doc.get("external", False)
    if not isinstance(external, bool):
        r.fail("external", "a boolean", external)
    foreign = r.opt("foreign_sha256", str, "a hex digest or null")
    new = r.opt("new", list, "a list of labels or null")
    file_sha = r.opt("header_file_sha256", str, "a hex digest or null")
    if file_sha is not None and not SHA_RE.match(file_sha):
        r.fail("header_file_sha256", "a hex SHA-256 digest", file_sha)
    changes = r.opt("changes", list, "a list of change file keys or null")
    if changes is not None:
        for key in changes:
            if not (isinstance(key, str) and is_change_file(key, dataset_uuid)):
                r.fail("changes", "a list of change file keys of the dataset", key)
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
        schema=b64_field(schema, r, "schema") if schema is not None else None,
        reverts=reverts,
        external=external,
        foreign_sha256=foreign,
        new=tuple(check_label(lb, r, "new") for lb in new) if new is not None else None,
        header_file_sha256=file_sha,
        changes=tuple(changes) if changes is not None else None,
    )


# ---------------------------------------------------------------------------- checkpoints
@dataclasses.dataclass(frozen=True, slots=True)
class Checkpoint:
    """The complete state at ``version``: header (None if deleted) and schema bytes."""

    version: int
    timestamp: int
    header: DatasetHeader | None
    schema: bytes | None


def encode_checkpoint(
    version: int,
    timestamp: int,
    header: DatasetHeader | None,
    schema: bytes | None,
    *,
    canonical: bytes | None = None,
) -> bytes:
    """Encode a checkpoint as JSON.

    ``canonical`` is the header's canonical encoding if the caller has it
    (:attr:`~kartoframe.format.header_stamp.SealedHeader.canonical`): it goes in as it is,
    instead of the header being encoded once more.
    """
    if header is not None and canonical is None:
        canonical = encode_header_parts(header)[0]
    splice: bytes | None = None
    encoded: Any = None
    if header is not None and canonical is not None:
        if header.storage_format == "json":
            splice = canonical  # a JSON object: goes in as it is
            encoded = _SPLICE
        else:
            encoded = base64.b64encode(canonical).decode("ascii")
    doc = {
        _CHECKPOINT_MARK: PROTOCOL,
        "version": version,
        "timestamp": timestamp,
        "deleted": header is None,
        "header_format": header.storage_format if header is not None else "json",
        "header": encoded,
        "table": header.table_name if header is not None else None,
        "header_sha256": bytes_digest(canonical) if canonical is not None else None,
        "schema": base64.b64encode(schema).decode("ascii") if schema else None,
    }
    data = dump_doc(doc, f"checkpoint {version}")
    if splice is None:
        return data
    placeholder = b'"header":"' + _SPLICE.encode() + b'"'
    at = data.index(placeholder)  # the first: "header" comes before any user content
    return b"".join((data[:at], b'"header":', splice, data[at + len(placeholder) :]))


#: Where :func:`encode_checkpoint` splices a JSON header into the checkpoint.
_SPLICE = "kartoframe-checkpoint-header"


def decode_checkpoint(data: bytes, dataset_uuid: str, version: int) -> Checkpoint:
    """Decode and validate the checkpoint of ``version``.

    Raises
    ------
    CorruptMetadataError, UnsupportedVersionError
        As :func:`decode_entry`.
    """
    where = f"checkpoint {version} of dataset {dataset_uuid!r}"
    fields = _loads_fields(data, where)
    header_raw = fields.pop("header", None)
    try:
        r = DocReader({k: orjson.loads(memoryview(v)) for k, v in fields.items()}, where)
    except orjson.JSONDecodeError as e:  # pragma: no cover - msgspec checked the syntax
        raise CorruptMetadataError(f"Cannot decode {where}: {e}") from e
    check_protocol(r.doc.get(_CHECKPOINT_MARK), where, _CHECKPOINT_MARK)
    if check_int(r.doc.get("version"), where, "version") != version:
        raise CorruptMetadataError(f"Corrupt {where}: wrong version number.")
    timestamp = check_int(r.doc.get("timestamp"), where, "timestamp")
    schema_raw = r.opt("schema", str, "base64 or null")
    schema = b64_field(schema_raw, r, "schema") if schema_raw is not None else None
    if r.get("deleted", bool, "a boolean"):
        return Checkpoint(version, timestamp, None, schema)
    fmt = r.get("header_format", str, "'json' or 'msgpack'")
    if fmt not in ("json", "msgpack"):
        r.fail("header_format", "'json' or 'msgpack'", fmt)
    canonical = _checkpoint_header(header_raw, r, fmt)
    table = r.opt("table", str, "a string") or "table"
    try:
        header = decode_canonical(canonical, dataset_uuid, fmt, default_table=table)
    except (CorruptMetadataError, UnsupportedVersionError) as e:
        raise type(e)(f"{e} (in {where})") from e
    sha = r.get("header_sha256", str, "a hex digest")
    # the bytes as written are the canonical encoding (checked without encoding again);
    # a checkpoint written with other spacing is checked by encoding the decoded header
    if bytes_digest(canonical) != sha and header_digest(header) != sha:
        raise CorruptMetadataError(f"Corrupt {where}: the header does not match its digest.")
    if schema is None:
        r.fail("schema", "base64", None)
    return Checkpoint(version, timestamp, header, schema)


_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _loads_fields(data: bytes, where: str) -> dict[str, msgspec.Raw]:
    """A JSON document's top-level fields, their values undecoded."""
    _check_size(data, where)
    try:
        return _FIELDS.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise CorruptMetadataError(f"Cannot decode {where}: {e}") from e


def _checkpoint_header(raw: msgspec.Raw | None, r: DocReader, fmt: str) -> bytes:
    """The canonical bytes of a checkpoint's header: the JSON object as written, or the
    msgpack bytes its base64 string holds.
    """
    if fmt == "json":
        data = bytes(raw) if raw is not None else b"null"
        if not data.lstrip().startswith(b"{"):
            r.fail("header", "a JSON object", orjson.loads(data))
        return data
    r.doc["header"] = orjson.loads(bytes(raw)) if raw is not None else None
    return b64_field(r.get("header", str, "base64 msgpack"), r, "header")


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
    if ref is not None:
        keys.update(ref.keys)
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
