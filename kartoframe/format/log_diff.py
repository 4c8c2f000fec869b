"""Log entries as header diffs (pure: no I/O): describe a new version, replay an entry.

:func:`make_entry` turns the header of a new version into the entry that describes it
relative to the previous header (partitions removed and added, or a reset listing all of
them); :func:`apply_entry` is its inverse: the previous header plus the entry gives the new
header, checked against the digest its committer recorded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kartoframe.errors import CorruptMetadataError, UnsupportedVersionError
from kartoframe.format import naming
from kartoframe.format.header import DatasetHeader, encode_header_parts, metadata_from_dict
from kartoframe.format.header_partitions import (
    PatchedPartitions,
    joined_keys_safe,
    partitions_dict,
)
from kartoframe.format.header_stamp import bytes_digest, header_digest
from kartoframe.format.txlog import LogEntry

__all__ = ["apply_entry", "make_entry", "verify_replayed"]


def _header_doc(header: DatasetHeader) -> dict[str, Any]:
    return header.to_dict(partitions=False)


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
    changes: tuple[str, ...] | None = None,
    header_sha256: str | None = None,
) -> LogEntry:
    """Describe version ``version`` (``header``; None: deleted) relative to ``previous``.

    The entry is a diff (partitions removed and added) when replaying it on ``previous``
    gives exactly ``header``'s partitions in the same order; otherwise (a create, an
    overwrite, a reordering, an implicit previous header) it is a reset. A header whose
    partitions are a :class:`~kartoframe.format.header_partitions.PatchedPartitions` of
    ``previous``'s gives its diff without comparing the two maps. ``header_sha256`` is
    :func:`~kartoframe.format.header_stamp.header_digest` of ``header`` if the caller
    has it already (it encoded the header).
    """
    reset, added, removed, fresh = _diff(previous, header, force_reset)
    if header is None:  # deleted
        fmt: naming.MetadataFormat = previous.storage_format if previous is not None else "json"
        doc, explicit, sha, schema = None, True, None, None
    else:
        fmt, doc, explicit = header.storage_format, _header_doc(header), header.explicit_partitions
        sha = header_sha256 if header_sha256 is not None else header_digest(header)
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
        header is None,
        fmt,
        doc,
        explicit,
        sha,
        schema,
        reverts,
        external,
        foreign_sha256,
        fresh,
        changes=changes,
    )


def _diff(
    previous: DatasetHeader | None, header: DatasetHeader | None, force_reset: bool
) -> tuple[bool, list[tuple[str, str]], list[str], tuple[str, ...] | None]:
    """``(reset, added, removed, fresh)`` of an entry: the patch of a derived header, else
    the comparison of the two maps (a deletion removes every partition).
    """
    if previous is not None and header is not None and not force_reset:
        patch = _patch_of(previous, header)
        if patch is not None:
            removed, added = patch
            return False, added, removed, None
    prev_parts: dict[str, str] = (
        partitions_dict(previous.partitions)
        if previous is not None and previous.explicit_partitions
        else {}
    )
    if header is None:
        return True, [], list(prev_parts), None
    new_parts = partitions_dict(header.partitions) if header.explicit_partitions else {}
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
    return reset, added, removed, fresh


def _patch_of(
    previous: DatasetHeader, header: DatasetHeader
) -> tuple[list[str], list[tuple[str, str]]] | None:
    """``(removed, added)`` of a header whose partitions patch ``previous``'s (None: not
    derived that way, or a partition list appears or disappears).
    """
    parts = header.partitions
    if not (
        isinstance(parts, PatchedPartitions)
        and previous.explicit_partitions
        and header.explicit_partitions
    ):
        return None
    return parts.change_of(previous.partitions)


def _partition_map(partitions: Mapping[str, str]) -> dict[str, Any]:
    # the table of a data file is the second component of its key: <uuid>/<table>/...
    return {lb: {"files": {key.split("/")[1]: key}} for lb, key in partitions.items()}


def _rebuild(
    doc: Mapping[str, Any],
    partitions: Mapping[str, str] | None,
    dataset_uuid: str,
    fmt: naming.MetadataFormat,
    where: str,
    table: str | None = None,
) -> DatasetHeader:
    """The header of ``doc`` with ``partitions`` (None: implicit). ``table`` is their
    table if the caller knows it; otherwise it is found from the keys.
    """
    checked: tuple[Mapping[str, str], str] | None = None
    if partitions:
        # keys were checked when decoded (the entry, or the previous header): only the
        # table, the second component of every key, is left to agree
        table = table if table is not None else _table_of(partitions.values())
        if table is not None:
            checked = partitions, table
    raw: dict[str, Any] = {}
    for k, v in doc.items():
        if k == "partition_keys" and partitions is not None and checked is None:
            raw["partitions"] = _partition_map(partitions)
        raw[k] = v
    if partitions is not None and checked is None and "partitions" not in raw:
        raw["partitions"] = _partition_map(partitions)
    try:
        return metadata_from_dict(raw, dataset_uuid, fmt, checked_partitions=checked)
    except (CorruptMetadataError, UnsupportedVersionError) as e:
        raise type(e)(f"{e} (rebuilt from {where})") from e


def _patched(
    previous: DatasetHeader, entry: LogEntry, dataset_uuid: str, where: str
) -> DatasetHeader | None:
    """The header of a diff entry on an explicit ``previous`` built as a patch of its
    partitions, only the added keys checked (O(change)); None when the entry needs the
    whole-map rebuild (another table, a key the fast check refuses, an added label still
    listed, no partition left): that path checks everything and names what is wrong.
    """
    table = previous.table_name
    added = dict(entry.add)
    if added:
        keys = list(added.values())
        if _table_of(keys) != table:
            return None
        if not joined_keys_safe("\n".join(keys).encode("utf-8"), len(keys), dataset_uuid):
            return None
    try:
        parts = PatchedPartitions.over(previous.partitions, frozenset(entry.remove), added)
    except KeyError:
        return None
    if not parts:  # no partition left: the table name comes from the rebuild's default
        return None
    assert entry.header_doc is not None
    return _rebuild(entry.header_doc, parts, dataset_uuid, entry.header_format, where, table)


def _table_of(keys: Iterable[str]) -> str | None:
    """The one table of data file keys (``<uuid>/<table>/...``: the second component);
    None if they name more than one or a key has no second component.
    """
    tables = {key.split("/", 2)[1] if "/" in key else None for key in keys}
    return tables.pop() if len(tables) == 1 and None not in tables else None


def apply_entry(
    previous: DatasetHeader | None, entry: LogEntry, dataset_uuid: str, *, verify: bool = True
) -> DatasetHeader | None:
    """The header of ``entry.version``: ``entry`` replayed on ``previous`` (None: deleted).

    A diff on a header that lists its partitions costs what the entry changes: the new
    header's partitions patch the previous ones. ``verify`` checks the result against
    the digest the committer recorded (an encoding of the whole header); a replay of
    several entries checks the last one only (:func:`verify_replayed`), whose header
    depends on every entry before it.

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
    header: DatasetHeader | None = None
    if (
        not entry.reset
        and previous is not None
        and previous.explicit_partitions
        and entry.explicit_partitions
    ):
        header = _patched(previous, entry, dataset_uuid, where)
    if header is None:
        header = _rebuilt(previous, entry, dataset_uuid, where)
    if verify:
        verify_replayed(header, entry, dataset_uuid)
    return header


def verify_replayed(header: DatasetHeader, entry: LogEntry, dataset_uuid: str) -> bytes:
    """Check a replayed ``header`` against the digest ``entry`` recorded; return its
    file bytes (encoded once for both).

    Raises
    ------
    CorruptMetadataError
        The digests differ: an entry is missing, was edited, or belongs to another
        history.
    """
    canonical, data = encode_header_parts(header)
    if bytes_digest(canonical) != entry.header_sha256:
        raise CorruptMetadataError(
            f"Corrupt transaction log of dataset {dataset_uuid!r}: replaying entry "
            f"{entry.version} does not give the header its committer recorded (an entry is "
            "missing, was edited, or belongs to another history)."
        )
    return data


def _rebuilt(
    previous: DatasetHeader | None, entry: LogEntry, dataset_uuid: str, where: str
) -> DatasetHeader:
    """The header of ``entry`` rebuilt from whole maps, every key checked."""
    assert entry.header_doc is not None
    if entry.reset:
        parts: dict[str, str] = {}
    else:
        if previous is None:
            raise CorruptMetadataError(
                f"Corrupt {where}: it changes version {entry.version - 1}, which does not exist."
            )
        parts = partitions_dict(previous.partitions) if previous.explicit_partitions else {}
        for lb in entry.remove:
            parts.pop(lb, None)
    parts.update(entry.add)
    return _rebuild(
        entry.header_doc,
        parts if entry.explicit_partitions else None,
        dataset_uuid,
        entry.header_format,
        where,
    )
