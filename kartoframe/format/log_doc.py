"""The documents of the transaction log (pure: no I/O): their encodings and typed reading.

Entries and checkpoints (:mod:`kartoframe.format.txlog`) are JSON objects; a header inside
them is JSON or base64 msgpack, as the header file. Everything read is validated: a value of
the wrong type raises :class:`~kartoframe.errors.CorruptMetadataError` naming the file and
the key, a newer protocol :class:`~kartoframe.errors.UnsupportedVersionError`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

import msgpack
import orjson

from kartoframe.errors import CorruptMetadataError, InvalidInputError, UnsupportedVersionError
from kartoframe.format import naming

__all__ = [
    "PROTOCOL",
    "SHA_RE",
    "DocReader",
    "b64_field",
    "check_int",
    "check_label",
    "check_protocol",
    "decode_doc",
    "dump_doc",
    "encode_doc",
]

#: Protocol version written in entries, checkpoints and the header's ``kartoframe.log``.
PROTOCOL = 1
#: A hex SHA-256 digest.
SHA_RE = re.compile(r"^[0-9a-f]{64}$")
#: Versions and timestamps are below this.
_MAX_VERSION = 10**19


def check_protocol(value: object, where: str, name: str) -> None:
    """Check a protocol number: an integer, and not newer than :data:`PROTOCOL`."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise CorruptMetadataError(f"Corrupt {where}: {name!r} must be an integer.")
    if value > PROTOCOL:
        raise UnsupportedVersionError(
            f"The {where} was written with transaction-log protocol {value}; this "
            f"kartoframe understands protocol {PROTOCOL} only. Upgrade kartoframe."
        )
    if value < 1:
        raise CorruptMetadataError(f"Corrupt {where}: {name!r} is {value}.")


def check_int(value: object, where: str, name: str, *, optional: bool = False) -> Any:
    """A non-negative integer (a version, a timestamp), or None if optional."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < _MAX_VERSION:
        raise CorruptMetadataError(
            f"Corrupt {where}: {name!r} must be a non-negative integer, got {type(value).__name__}."
        )
    return value


def encode_doc(doc: Mapping[str, Any], fmt: naming.MetadataFormat) -> Any:
    """A header document as the log stores it: JSON as is, msgpack as base64."""
    if fmt == "json":
        return doc
    return base64.b64encode(msgpack.packb(dict(doc), use_bin_type=True)).decode("ascii")


def dump_doc(doc: Mapping[str, Any], what: str) -> bytes:
    """Encode a log document as JSON (what names it in the error)."""
    try:
        return orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError as e:
        raise InvalidInputError(
            f"Cannot record {what} in the transaction log: {e} (user metadata, parameters "
            "and commit_info must be JSON-serialisable)."
        ) from e


class DocReader:
    """Typed access to a decoded JSON document, with errors naming the file and key."""

    def __init__(self, doc: object, where: str) -> None:
        self.where = where
        if not isinstance(doc, dict):
            self.fail("<root>", "a JSON object", doc)
        assert isinstance(doc, dict)
        self.doc = doc

    def fail(self, key: str, expected: str, got: object) -> None:
        """Raise the error for key key, which is not expected."""
        raise CorruptMetadataError(
            f"Corrupt {self.where}: {key!r} must be {expected}, got {type(got).__name__}."
        )

    def get(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        """The value of key, which must be of types (expected says so in words)."""
        value = self.doc.get(key)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in _tuple(types)):
            self.fail(key, expected, value)
        return value

    def opt(self, key: str, types: type | tuple[type, ...], expected: str) -> Any:
        """As :meth:`get`, or None if the key is missing or null."""
        if self.doc.get(key) is None:
            return None
        return self.get(key, types, expected)


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def b64_field(value: str, r: DocReader, key: str) -> bytes:
    """The bytes of the base64 value value of key key."""
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError) as e:
        raise CorruptMetadataError(f"Corrupt {r.where}: {key!r} is not base64 ({e}).") from e


def decode_doc(r: DocReader, key: str, fmt: naming.MetadataFormat) -> dict[str, Any]:
    """The header document of key key (the inverse of :func:`encode_doc`)."""
    if fmt == "json":
        doc = r.get(key, dict, "a JSON object")
    else:
        raw = b64_field(r.get(key, str, "base64 msgpack"), r, key)
        try:
            doc = msgpack.unpackb(raw, raw=False, strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException) as e:
            raise CorruptMetadataError(f"Cannot decode {key!r} of {r.where}: {e}") from e
        if not isinstance(doc, dict):
            r.fail(key, "a msgpack map", doc)
    return dict(doc)


def check_label(label: object, r: DocReader, key: str) -> str:
    """A partition label of the list of key key."""
    if not isinstance(label, str) or not label or "\x00" in label or label.startswith("/"):
        r.fail(key, "a list of partition labels", label)
    assert isinstance(label, str)
    return label
