"""The header's transaction-log stamp, header digests and the header file's seal (pure).

A header written by kartoframe records the log version it is in ``kartoframe.log``
(:func:`stamp_header`, read back by :func:`header_log`) and the application transactions in
``kartoframe.txn`` (:func:`header_txn`). Each log entry records the SHA-256 of the header of
its version (:func:`header_digest`), so a replayed chain of entries is checked against what
its committer wrote. A JSON header file also carries the digest of its own bytes in
``kartoframe.log.file_sha256`` (:func:`seal_header`): a committer notices a header edited by
hand without reading the log (:func:`sealed_intact`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping

from kartoframe.errors import CorruptMetadataError
from kartoframe.format.header import (
    DatasetHeader,
    encode_header,
    encode_header_parts,
    kartoframe_section,
    with_kartoframe_section,
)
from kartoframe.format.log_doc import PROTOCOL, SHA_RE, check_int, check_protocol

__all__ = [
    "FILE_DIGEST_KEY",
    "HeaderLog",
    "SealedHeader",
    "bytes_digest",
    "header_digest",
    "header_log",
    "header_txn",
    "header_version",
    "seal_header",
    "sealed_intact",
    "stamp_header",
]


def header_digest(header: DatasetHeader) -> str:
    """SHA-256 of a header's canonical encoding (JSON, or msgpack before compression)."""
    return bytes_digest(encode_header_parts(header)[0])


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
    check_protocol(raw.get("protocol"), where, "kartoframe.log.protocol")
    version = check_int(raw.get("version"), where, "kartoframe.log.version")
    ts = check_int(raw.get("timestamp"), where, "kartoframe.log.timestamp")
    return HeaderLog(version, ts)


def header_version(header: DatasetHeader) -> int | None:
    """The log version a header records (None: no transaction log)."""
    stamp = header_log(header)
    return stamp.version if stamp is not None else None


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


@dataclasses.dataclass(frozen=True, slots=True)
class SealedHeader:
    """A header ready to be written, encoded once.

    Attributes
    ----------
    header
        The stamped header with its file digest.
    data
        Its file bytes.
    canonical
        Its canonical encoding (``data`` itself for JSON, msgpack before compression).
    sha256
        :func:`header_digest` of ``header`` (the digest of ``canonical``).
    """

    header: DatasetHeader
    data: bytes
    canonical: bytes
    sha256: str


def _encoded(header: DatasetHeader) -> SealedHeader:
    canonical, data = encode_header_parts(header)
    return SealedHeader(header, data, canonical, bytes_digest(canonical))


def seal_header(header: DatasetHeader) -> SealedHeader:
    """The stamped header with its file digest, encoded.

    JSON headers carry the SHA-256 of their own bytes (taken with the digest empty) in
    ``kartoframe.log.file_sha256``; msgpack headers (compressed) are encoded as they are.
    """
    section = kartoframe_section(header)
    stamp = section.get("log")
    if header.storage_format != "json" or not isinstance(stamp, Mapping):
        return _encoded(header)
    section["log"] = {**stamp, FILE_DIGEST_KEY: ""}
    blank = with_kartoframe_section(header, section)
    data = encode_header(blank)
    if data.count(_EMPTY_DIGEST) != 1:  # the pattern also occurs in user content
        return _encoded(header)
    digest = bytes_digest(data)
    section["log"] = {**stamp, FILE_DIGEST_KEY: digest}
    # the sealed header encodes to these bytes: only the digest's value differs
    sealed = data.replace(_EMPTY_DIGEST, _digest_field(digest), 1)
    return SealedHeader(
        with_kartoframe_section(header, section), sealed, sealed, bytes_digest(sealed)
    )


def sealed_intact(header: DatasetHeader, raw: bytes) -> bool | None:
    """Whether header file bytes ``raw`` are exactly as sealed by their committer.

    None: the header carries no file digest (msgpack, or an older writer).
    """
    stamp = kartoframe_section(header).get("log")
    digest = stamp.get(FILE_DIGEST_KEY) if isinstance(stamp, Mapping) else None
    if not isinstance(digest, str) or not SHA_RE.match(digest):
        return None
    field = _digest_field(digest)
    if raw.count(field) != 1:
        return False
    return bytes_digest(raw.replace(field, _EMPTY_DIGEST, 1)) == digest
