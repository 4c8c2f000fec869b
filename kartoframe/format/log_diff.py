"""Log entries as header diffs (pure: no I/O): describe a new version, replay an entry.

:func:`make_entry` turns the header of a new version into the entry that describes it
relative to the previous header (partitions removed and added, or a reset listing all of
them); :func:`apply_entry` is its inverse: the previous header plus the entry gives the new
header, checked against the digest its committer recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kartoframe.errors import CorruptMetadataError, UnsupportedVersionError
from kartoframe.format import naming
from kartoframe.format.header import DatasetHeader, metadata_from_dict
from kartoframe.format.header_partitions import PatchedPartitions, partitions_dict
from kartoframe.format.header_stamp import header_digest
from kartoframe.format.txlog import LogEntry

__all__ = ["apply_entry", "make_entry"]


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
        parts = partitions_dict(previous.partitions) if previous.explicit_partitions else {}
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
