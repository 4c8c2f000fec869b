"""Keys of a store: which names are safe, and the error for a folder where a key belongs.

Keys are ``/``-separated and relative to the store root; :func:`check_key` refuses any name
that could address a file outside the root (absolute, ``..``, backslashes, NUL, a URL).
"""

from __future__ import annotations

from kartoframe.errors import CorruptMetadataError, UnsafePathError

__all__ = ["check_key", "directory_at"]


def check_key(key: str, allow_trailing: bool = False) -> None:
    """Raise :class:`~kartoframe.errors.UnsafePathError` unless key is a safe relative key."""
    if not isinstance(key, str) or not key:
        raise UnsafePathError(f"Invalid key {key!r}.")
    if key.startswith("/") or "\\" in key or "\x00" in key or "://" in key:
        raise UnsafePathError(f"Unsafe key {key!r}: absolute or with forbidden characters.")
    parts = key.split("/")
    if allow_trailing and parts and parts[-1] == "":
        parts = parts[:-1]
    for p in parts:
        if p in ("", ".", ".."):
            raise UnsafePathError(f"Unsafe key {key!r}: empty, '.' or '..' component.")


def directory_at(key: str, where: str) -> CorruptMetadataError:
    """The error for a folder found where a key must be created (a corrupt layout)."""
    return CorruptMetadataError(
        f"Cannot create {key!r} in {where}: a directory exists at that key. No writer "
        "creates directories there, so the dataset's layout is corrupt; remove it by hand."
    )
