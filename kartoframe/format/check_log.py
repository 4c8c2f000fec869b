"""Consistency checks of a dataset's transaction log (pure: no I/O).

:func:`log_findings` replays the log entries that :func:`kartoframe.check_dataset` loaded,
compares the versions they give with the checkpoints and with the stored header, and
returns :class:`~kartoframe.format.check.Finding` values (the ``log_*`` and ``header_*``
kinds listed in :mod:`kartoframe.format.check`).
"""

from __future__ import annotations

from collections.abc import Mapping

from kartoframe.errors import CorruptMetadataError, FormatError
from kartoframe.format import header_stamp, log_diff, naming, txlog
from kartoframe.format.check import Finding
from kartoframe.format.header import DatasetHeader

__all__ = ["log_findings"]


# ---------------------------------------------------------------------------- the log
class _Unknown:
    """The header at a version whose replay failed."""


_UNKNOWN = _Unknown()


_Digest = str | None | _Unknown  # None: the dataset does not exist at that version


def log_findings(
    dataset_uuid: str,
    entries: Mapping[int, txlog.LogEntry | Exception],
    checkpoints: Mapping[int, txlog.Checkpoint | Exception],
    stored: DatasetHeader | None,
    stored_raw: bytes | None,
) -> list[Finding]:
    """Replay the transaction log and compare it with its checkpoints and the stored header.

    Parameters
    ----------
    entries, checkpoints
        Every listed entry and checkpoint by version: decoded, or the error decoding it.
    stored, stored_raw
        The stored header (decoded) and its bytes; None if it could not be read.
    """
    out: list[Finding] = []
    uuid = dataset_uuid

    def entry_finding(kind: str, version: int, message: str) -> None:
        out.append(Finding("error", kind, uuid, message, txlog.entry_key(uuid, version)))

    versions = sorted(entries)
    if not versions:
        hlog = _header_log(uuid, stored, out)
        if hlog is not None:
            out.append(
                Finding(
                    "error",
                    "header_ahead_of_log",
                    uuid,
                    f"The header says it is version {hlog.version} of the transaction log, "
                    "but the log has no entries.",
                    naming.header_key(uuid, stored.storage_format if stored else "json"),
                )
            )
        return out
    first, last = versions[0], versions[-1]
    for v in range(first, last + 1):
        if v not in entries:
            entry_finding(
                "log_entry_missing",
                v,
                f"Log entry {v} of dataset {uuid!r} is missing (the log has entries {first} "
                f"to {last}).",
            )
    for c, cp in sorted(checkpoints.items()):
        if isinstance(cp, Exception):
            out.append(
                Finding(
                    "error",
                    "log_checkpoint_unreadable",
                    uuid,
                    f"Checkpoint {c} of dataset {uuid!r} cannot be read: {cp}",
                    txlog.checkpoint_key(uuid, c),
                )
            )

    digests: dict[int, _Digest] = {}
    header: DatasetHeader | _Unknown | None = _UNKNOWN if first > 0 else None
    for v in range(first, last + 1):
        entry = entries.get(v)
        at_v = checkpoints.get(v)
        if isinstance(header, _Unknown) and isinstance(at_v, txlog.Checkpoint):
            header = at_v.header  # the state at v: entry v is already in it
            digests[v] = _digest(header)
            continue
        if entry is None or isinstance(entry, Exception):
            if isinstance(entry, Exception):
                entry_finding(
                    "log_entry_unreadable",
                    v,
                    f"Log entry {v} of dataset {uuid!r} cannot be read: {entry}",
                )
            header = _UNKNOWN
            digests[v] = _UNKNOWN
            continue
        if isinstance(header, _Unknown) and not (entry.reset or entry.deleted):
            if v == first:
                entry_finding(
                    "log_checkpoint_missing",
                    v,
                    f"The oldest log entry of dataset {uuid!r} ({v}) is neither a reset nor "
                    f"covered by a checkpoint: versions {v} to {last} cannot be rebuilt.",
                )
            digests[v] = _UNKNOWN
            continue
        try:
            header = log_diff.apply_entry(
                None if isinstance(header, _Unknown) else header, entry, uuid
            )
        except FormatError as e:
            digest_problem = "does not give the header its committer recorded" in str(e)
            entry_finding(
                "log_digest_mismatch" if digest_problem else "log_replay_failed",
                v,
                (
                    f"Replaying log entry {v} of dataset {uuid!r} does not give the header "
                    "digest its committer recorded (the entry, or one before it, was edited "
                    "or is missing)."
                    if digest_problem
                    else f"Log entry {v} of dataset {uuid!r} cannot be replayed: {e}"
                ),
            )
            header = _UNKNOWN
        digests[v] = _digest(header)

    for c, cp in sorted(checkpoints.items()):
        if isinstance(cp, Exception) or c not in digests or isinstance(digests[c], _Unknown):
            continue
        if _digest(cp.header) != digests[c]:
            out.append(
                Finding(
                    "error",
                    "log_checkpoint_mismatch",
                    uuid,
                    f"Checkpoint {c} of dataset {uuid!r} differs from version {c} as its log "
                    "entries replay to.",
                    txlog.checkpoint_key(uuid, c),
                )
            )
    out += _stored_header_findings(uuid, entries, digests, stored, stored_raw, first, last)
    return out


def _digest(header: DatasetHeader | _Unknown | None) -> _Digest:
    if header is None or isinstance(header, _Unknown):
        return header
    return header_stamp.header_digest(header)


def _header_log(
    uuid: str, stored: DatasetHeader | None, out: list[Finding]
) -> header_stamp.HeaderLog | None:
    if stored is None:
        return None
    try:
        return header_stamp.header_log(stored)
    except (CorruptMetadataError, FormatError) as e:
        out.append(
            Finding(
                "error",
                "header_unreadable",
                uuid,
                f"The header's log record cannot be read: {e}",
                naming.header_key(uuid, stored.storage_format),
            )
        )
        return None


def _stored_header_findings(
    uuid: str,
    entries: Mapping[int, txlog.LogEntry | Exception],
    digests: Mapping[int, _Digest],
    stored: DatasetHeader | None,
    stored_raw: bytes | None,
    first: int,
    last: int,
) -> list[Finding]:
    out: list[Finding] = []
    if stored is None:
        return out
    hkey = naming.header_key(uuid, stored.storage_format)
    try:
        hlog = header_stamp.header_log(stored)
    except FormatError:
        _header_log(uuid, stored, out)
        return out
    if hlog is None:
        sha = header_stamp.bytes_digest(stored_raw) if stored_raw is not None else None
        adopted = [
            v
            for v, e in entries.items()
            if isinstance(e, txlog.LogEntry) and e.external and e.foreign_sha256 == sha
        ]
        if not adopted:
            out.append(
                Finding(
                    "warning",
                    "header_external",
                    uuid,
                    f"The header was written by another program (plateau, kartothek) after "
                    f"log version {last}; kartoframe records it as an EXTERNAL version at "
                    "its next commit.",
                    hkey,
                )
            )
        elif max(adopted) < last:
            out.append(_lag(uuid, hkey, max(adopted), last))
        return out
    if hlog.version > last:
        out.append(
            Finding(
                "error",
                "header_ahead_of_log",
                uuid,
                f"The header says it is version {hlog.version}; the transaction log ends at "
                f"version {last}.",
                hkey,
            )
        )
        return out
    if hlog.version < first:
        out.append(
            Finding(
                "error",
                "header_mismatch",
                uuid,
                f"The header says it is version {hlog.version}, older than the oldest log "
                f"entry ({first}).",
                hkey,
            )
        )
        return out
    expected = digests.get(hlog.version, _UNKNOWN)
    if expected is None:
        out.append(
            Finding(
                "error",
                "header_mismatch",
                uuid,
                f"The header says it is version {hlog.version}, which deletes the dataset.",
                hkey,
            )
        )
    elif isinstance(expected, str) and expected != header_stamp.header_digest(stored):
        out.append(
            Finding(
                "error",
                "header_mismatch",
                uuid,
                f"The stored header differs from version {hlog.version} of the transaction "
                "log, which it says it is (edited by hand or by another program?).",
                hkey,
            )
        )
    if hlog.version < last:
        out.append(_lag(uuid, hkey, hlog.version, last))
    return out


def _lag(uuid: str, hkey: str, at: int, last: int) -> Finding:
    return Finding(
        "warning",
        "header_lags_log",
        uuid,
        f"The header is version {at}, the transaction log has versions up to {last} (a writer "
        "stopped after committing); readers roll forward, and the next commit or "
        "vacuum_dataset rewrites the header.",
        hkey,
    )
