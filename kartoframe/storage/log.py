"""Reading a dataset's transaction log from a store, and the versions rebuilt from it.

Lists the log, reads entries and checkpoints, and gives the current version (the stored
header rolled forward over newer entries), a past version (rebuilt from the nearest
checkpoint or reset entry) and the version as of a time. The on-disk layout and the pure
encoding, decoding and replay of entries are in :mod:`kartoframe.format.txlog`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable

from kartoframe.errors import (
    CorruptMetadataError,
    FormatError,
    InvalidInputError,
    InvalidTypeError,
    UnsafePathError,
)
from kartoframe.format import naming
from kartoframe.format.header import DatasetHeader, decode_header, encode_header
from kartoframe.format.header_stamp import header_log
from kartoframe.format.log_diff import apply_entry, verify_replayed
from kartoframe.format.txlog import (
    CHECKPOINT_INTERVAL,
    Checkpoint,
    LogEntry,
    as_of_ms,
    checkpoint_key,
    decode_checkpoint,
    decode_entry,
    entry_key,
    log_prefix,
    parse_log_name,
)
from kartoframe.storage.io_map import thread_map
from kartoframe.storage.store import Store

__all__ = [
    "State",
    "current_state",
    "historic_state",
    "list_log",
    "read_checkpoint",
    "read_entries",
    "read_entry",
    "read_stored_header",
    "roll_forward",
    "state_at",
    "version_as_of",
]


# ---------------------------------------------------------------------------- files
def list_log(store: Store, dataset_uuid: str) -> tuple[list[int], list[int]]:
    """Versions that have an entry, and versions that have a checkpoint (sorted).

    One listing of the log folder; other files in it (temp files) are ignored.
    """
    entries: list[int] = []
    checkpoints: list[int] = []
    prefix = log_prefix(dataset_uuid)
    for key in store.iter_keys(prefix):
        parsed = parse_log_name(key[len(prefix) :])
        if parsed is None:
            continue
        version, is_checkpoint = parsed
        (checkpoints if is_checkpoint else entries).append(version)
    return sorted(entries), sorted(checkpoints)


def read_entry(store: Store, dataset_uuid: str, version: int) -> LogEntry | None:
    """Read and decode entry ``version`` (None if it does not exist)."""
    data = store.get_or_none(entry_key(dataset_uuid, version))
    return None if data is None else decode_entry(data, dataset_uuid, version)


def read_entries(
    store: Store, dataset_uuid: str, versions: Iterable[int], max_workers: int = 8
) -> dict[int, LogEntry | None]:
    """Read several entries in parallel."""
    todo = list(versions)
    return dict(
        zip(todo, thread_map(lambda v: read_entry(store, dataset_uuid, v), todo, max_workers))
    )


def read_checkpoint(store: Store, dataset_uuid: str, version: int) -> Checkpoint | None:
    """Read the checkpoint of ``version`` (None if there is none)."""
    data = store.get_or_none(checkpoint_key(dataset_uuid, version))
    return None if data is None else decode_checkpoint(data, dataset_uuid, version)


# ---------------------------------------------------------------------------- states
@dataclasses.dataclass(frozen=True, slots=True)
class State:
    """A version of a dataset as the log and the header describe it.

    Attributes
    ----------
    version
        Its log version; None for a header written by another program (plateau) that
        the log has not recorded yet, or a dataset without a log.
    header
        The header of that version (None: the dataset does not exist at that version).
    header_bytes
        The stored header bytes if ``header`` is the stored header, else its encoding.
    schema
        ``_common_metadata`` bytes of that version if known from the log (None: the
        stored ``_common_metadata`` is the schema).
    timestamp
        Commit time in milliseconds (None if unknown).
    file_version
        The log version the stored header file says it is (None: foreign or absent).
    entries
        The entries applied on top of the stored header to get here (roll-forward).
    """

    version: int | None
    header: DatasetHeader | None
    header_bytes: bytes | None
    schema: bytes | None
    timestamp: int | None
    file_version: int | None
    entries: tuple[LogEntry, ...] = ()


def read_stored_header(
    store: Store, dataset_uuid: str, prefer: naming.MetadataFormat = "json"
) -> tuple[DatasetHeader, bytes] | None:
    """Read and decode the stored header (``prefer``'s format first), or None if absent."""
    naming.validate_uuid(dataset_uuid)
    order: tuple[naming.MetadataFormat, ...] = (
        ("json", "msgpack") if prefer == "json" else ("msgpack", "json")
    )
    for fmt in order:
        data = store.get_or_none(naming.header_key(dataset_uuid, fmt))
        if data is not None:
            return decode_stored_header(data, dataset_uuid, fmt), data
    return None


def decode_stored_header(
    data: bytes, dataset_uuid: str, fmt: naming.MetadataFormat
) -> DatasetHeader:
    """Decode the bytes of a stored header file, errors naming the file."""
    try:
        return decode_header(data, dataset_uuid, fmt)
    except (FormatError, UnsafePathError) as e:
        # name the header file, keeping the error class
        raise type(e)(f"{e} (header file {naming.header_key(dataset_uuid, fmt)!r})") from e


def roll_forward(
    store: Store,
    dataset_uuid: str,
    header: DatasetHeader | None,
    version: int,
    *,
    stop: int | None = None,
) -> tuple[DatasetHeader | None, int, bytes | None, int | None, tuple[LogEntry, ...], bytes | None]:
    """Apply the entries after ``version`` (up to ``stop``) to ``header``.

    Returns the header, its version, the newest schema bytes met (or None), the
    timestamp of the last applied entry (or None), the applied entries and the encoded
    header (None if no entry was applied or the dataset was deleted). Only the last
    header is checked against its recorded digest: it depends on every entry.
    """
    entries: list[LogEntry] = []
    schema: bytes | None = None
    ts: int | None = None
    while stop is None or version < stop:
        entry = read_entry(store, dataset_uuid, version + 1)
        if entry is None:
            break
        header = apply_entry(header, entry, dataset_uuid, verify=False)
        version += 1
        entries.append(entry)
        ts = entry.timestamp
        if entry.schema is not None:
            schema = entry.schema
    data = None
    if header is not None and entries:  # the last header depends on every entry
        data = verify_replayed(header, entries[-1], dataset_uuid)
    return header, version, schema, ts, tuple(entries), data


def current_state(
    store: Store, dataset_uuid: str, prefer: naming.MetadataFormat = "json"
) -> State | None:
    """The current version: the stored header, rolled forward over newer entries.

    Costs one read of the header and one (failing) read of the next entry when the
    header is current; a header written by another program is taken as it is. None if
    the dataset does not exist: no header and no log, or its current version deletes it.

    Without a header the log decides (:func:`_state_from_log`): a create that has
    claimed its log entry but not yet written its header (or crashed in between) is
    committed, so the dataset exists; every other writer must see that, or a second
    create could commit on top of it and its writer's rows would be lost.
    """
    found = read_stored_header(store, dataset_uuid, prefer)
    if found is None:
        return _state_from_log(store, dataset_uuid)
    header, raw = found
    hlog = header_log(header)
    if hlog is None:
        return State(None, header, raw, None, None, None)
    try:
        new, version, schema, ts, entries, data = roll_forward(
            store, dataset_uuid, header, hlog.version
        )
    except CorruptMetadataError:
        # the stored header was edited (it no longer is the version it names), and newer
        # entries were committed on the log's version: the log decides
        return _state_from_log(store, dataset_uuid)
    if not entries:
        return State(hlog.version, header, raw, None, hlog.timestamp, hlog.version)
    if new is None:
        return None
    assert data is not None
    return State(version, new, data, schema, ts, hlog.version, entries)


def _state_from_log(store: Store, dataset_uuid: str) -> State | None:
    """The current version of a dataset without a stored header, from its log alone.

    One listing of the log (none: the dataset does not exist), then the newest version
    (entries created after the listing included) rebuilt from its nearest checkpoint or
    reset entry. None if that version deletes the dataset (a ``DELETE``, or the revert
    of a create whose header could not be written).
    """
    versions, _ = list_log(store, dataset_uuid)
    if not versions:
        return None
    latest = versions[-1]
    for attempt in range(2):
        while store.exists(entry_key(dataset_uuid, latest + 1)):
            latest += 1
        try:
            state = state_at(store, dataset_uuid, latest)
            break
        except InvalidInputError:
            if attempt:  # reverted by an entry created since the probe: look again, once
                raise
    if state.header is None:
        return None
    return dataclasses.replace(state, file_version=None)


def _vacuumed(dataset_uuid: str, version: int) -> InvalidInputError:
    return InvalidInputError(
        f"Version {version} of dataset {dataset_uuid!r} is not in its transaction log "
        "(never committed, or removed by vacuum_dataset); see kf.dataset_history for the "
        "versions that can be read."
    )


def state_at(store: Store, dataset_uuid: str, version: int) -> State:
    """The state at a past (or the current) ``version``, rebuilt from the log.

    Starts at the nearest checkpoint or reset entry at or below ``version`` (at most
    :data:`CHECKPOINT_INTERVAL` entries away unless a checkpoint is missing).

    Raises
    ------
    InvalidInputError
        The version does not exist (yet, or any more), or it was reverted.
    CorruptMetadataError
        The log is damaged.
    """
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise InvalidInputError(f"version must be a non-negative integer, got {version!r}.")
    following = read_entry(store, dataset_uuid, version + 1)
    if following is not None and following.reverts == version:
        raise InvalidInputError(
            f"Version {version} of dataset {dataset_uuid!r} was reverted by version "
            f"{version + 1} (its header could not be published); read version "
            f"{version - 1} or {version + 1}."
        )
    chain: list[LogEntry] = []
    base: DatasetHeader | None = None
    schema: bytes | None = None
    ts: int | None = None
    c = version
    while True:
        if c % CHECKPOINT_INTERVAL == 0:
            cp = read_checkpoint(store, dataset_uuid, c)
            if cp is not None:
                base, schema, ts = cp.header, cp.schema, cp.timestamp
                break
        entry = read_entry(store, dataset_uuid, c)
        if entry is None:
            if c == version:
                raise _vacuumed(dataset_uuid, c)
            # older entries were vacuumed: the oldest kept version has a checkpoint
            cp = read_checkpoint(store, dataset_uuid, c + 1)
            if cp is None:
                raise CorruptMetadataError(
                    f"The transaction log of dataset {dataset_uuid!r} misses entry {c} "
                    f"(needed to rebuild version {version}) and has no checkpoint to start from."
                )
            chain.pop()
            base, schema, ts = cp.header, cp.schema, cp.timestamp
            break
        chain.append(entry)
        if entry.reset or entry.deleted:
            break
        if c == 0:
            raise CorruptMetadataError(
                f"Corrupt transaction log of dataset {dataset_uuid!r}: entry 0 is not a reset."
            )
        c -= 1
    header = base
    for entry in reversed(chain):
        header = apply_entry(header, entry, dataset_uuid, verify=False)
        ts = entry.timestamp
        if entry.schema is not None:
            schema = entry.schema
    if header is None:
        return State(version, None, None, None, ts, None, tuple(reversed(chain)))
    # the header of the last entry depends on every entry before it: checked once
    data = verify_replayed(header, chain[0], dataset_uuid) if chain else encode_header(header)
    return State(version, header, data, schema, ts, None, tuple(reversed(chain)))


def version_as_of(store: Store, dataset_uuid: str, timestamp_ms: int) -> int:
    """The newest non-reverted version committed at or before ``timestamp_ms``.

    One listing of the log, then a binary search over the entries' timestamps.

    Raises
    ------
    InvalidInputError
        The dataset has no version that old in its log.
    """
    versions, _ = list_log(store, dataset_uuid)
    if not versions:
        raise InvalidInputError(f"Dataset {dataset_uuid!r} has no transaction log.")
    cache: dict[int, LogEntry] = {}

    def _entry(v: int) -> LogEntry:
        if v not in cache:
            e = read_entry(store, dataset_uuid, v)
            if e is None:
                raise _vacuumed(dataset_uuid, v)
            cache[v] = e
        return cache[v]

    lo, hi = 0, len(versions) - 1
    if _entry(versions[0]).timestamp > timestamp_ms:
        oldest = _entry(versions[0])
        raise InvalidInputError(
            f"Dataset {dataset_uuid!r} has no version at or before {_iso(timestamp_ms)}; its "
            f"oldest readable version is {oldest.version} from {_iso(oldest.timestamp)}."
        )
    while lo < hi:  # invariant: versions[lo] is at or before the timestamp
        mid = (lo + hi + 1) // 2
        if _entry(versions[mid]).timestamp <= timestamp_ms:
            lo = mid
        else:
            hi = mid - 1
    pos = lo
    while pos > 0:
        nxt = read_entry(store, dataset_uuid, versions[pos] + 1)
        if nxt is None or nxt.reverts != versions[pos]:
            break
        pos -= 1
    return versions[pos]


def historic_state(
    store: Store, dataset_uuid: str, *, version: object = None, as_of: object = None
) -> State:
    """The state selected by ``version`` or ``as_of`` (exactly one of them).

    Raises
    ------
    InvalidInputError
        Both or neither given, or no such version in the log.
    InvalidTypeError
        ``version`` is not an integer.
    """
    if version is not None and as_of is not None:
        raise InvalidInputError("Pass either version or as_of, not both.")
    if version is None:
        version = version_as_of(store, dataset_uuid, as_of_ms(as_of))
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidTypeError(f"version must be an integer, got {type(version).__name__}.")
    return state_at(store, dataset_uuid, version)


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"
