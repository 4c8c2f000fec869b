"""Which files the versions inside a retention window need (vacuum and garbage collection).

A version is *retained* if it is the current version, or if it was current at some time
inside the window: the next version was committed less than ``retention`` ago. Reverted
versions (their header was never published) are never retained. Every file a retained
version references — data files, index files, the statistics file, ``_common_metadata`` —
is kept; the log is kept from the oldest retained version on (with a checkpoint there, so
those versions can still be rebuilt).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from typing import Any

from kartoframe.errors import DatasetNotFoundError, InvalidInputError
from kartoframe.format import naming, txlog
from kartoframe.format.header import DatasetHeader
from kartoframe.format.statistics import STATISTICS_DIR
from kartoframe.format.txlog import LogEntry
from kartoframe.storage import log
from kartoframe.storage.log import State
from kartoframe.storage.store import Store

__all__ = [
    "DEFAULT_RETENTION_HOURS",
    "SAFE_MINIMUM_RETENTION_HOURS",
    "Retained",
    "check_retention",
    "data_candidates",
    "key_ages",
    "retained_versions",
    "temp_candidates",
]

#: Default retention window of vacuum and garbage collection (Delta's default: 7 days).
DEFAULT_RETENTION_HOURS = 168.0
#: Vacuum refuses shorter windows unless forced: a reader or writer running longer than
#: the window could find its files gone.
SAFE_MINIMUM_RETENTION_HOURS = 24.0


def check_retention(retention_hours: object, *, force: bool, what: str) -> float:
    """Validate a retention window in hours.

    Raises
    ------
    InvalidInputError
        Negative, not a number, or below the safe minimum without ``force``.
    """
    if isinstance(retention_hours, bool) or not isinstance(retention_hours, int | float):
        raise InvalidInputError(f"retention_hours must be a number, got {retention_hours!r}.")
    hours = float(retention_hours)
    if not hours >= 0:
        raise InvalidInputError(f"retention_hours must be >= 0, got {retention_hours!r}.")
    if hours < SAFE_MINIMUM_RETENTION_HOURS and not force:
        raise InvalidInputError(
            f"{what} with retention_hours={hours:g} could delete files that readers of recent "
            f"versions or running writers still need; the safe minimum is "
            f"{SAFE_MINIMUM_RETENTION_HOURS:g} hours. Pass force=True if no reader or writer "
            "can be running."
        )
    return hours


@dataclasses.dataclass(frozen=True, slots=True)
class Retained:
    """The versions inside a retention window and what they need.

    Attributes
    ----------
    current
        The current version.
    referenced
        Keys any retained version needs.
    oldest
        The oldest retained log version (None: the dataset has no log).
    oldest_state
        Its state (to write a checkpoint for it).
    has_checkpoint
        Whether the log can rebuild ``oldest`` without older entries.
    expired_log
        Log entries and checkpoints older than ``oldest`` (oldest first).
    cutoff_ms
        Start of the window (milliseconds since the epoch).
    """

    current: State
    referenced: frozenset[str]
    oldest: int | None
    oldest_state: State | None
    has_checkpoint: bool
    expired_log: tuple[str, ...]
    cutoff_ms: int


def retained_versions(
    store: Store, dataset_uuid: str, retention_hours: float, now_ms: int | None = None
) -> Retained:
    """Find the retained versions of a dataset and the files they reference.

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.
    """
    now = txlog.now_ms() if now_ms is None else now_ms
    cutoff = now - int(retention_hours * 3_600_000)
    current = log.current_state(store, dataset_uuid)
    if current is None or current.header is None:
        raise DatasetNotFoundError(dataset_uuid, store.display_url)
    referenced = set(txlog.referenced_keys(current.header))
    versions, checkpoints = log.list_log(store, dataset_uuid)
    if not versions:
        return Retained(current, frozenset(referenced), None, None, False, (), cutoff)
    present = set(versions)
    top = current.version if current.version is not None else versions[-1]
    # when a foreign header replaced the newest logged version is unknown: now
    successor_ts = now if current.version is None else None
    entries: dict[int, LogEntry] = {}
    kept: set[int] = set()
    v = top
    while v in present:
        entry = log.read_entry(store, dataset_uuid, v)
        if entry is None:
            break
        entries[v] = entry
        if not (v == current.version or (successor_ts is not None and successor_ts > cutoff)):
            break
        kept.add(v)
        successor_ts = entry.timestamp
        v -= 1
    oldest = min(kept) if kept else top  # the newest logged version stays in any case
    state = log.state_at(store, dataset_uuid, oldest)
    oldest_state = state
    header: DatasetHeader | None = state.header
    for k in range(oldest, top + 1):
        if k > oldest:
            entry = entries.get(k) or log.read_entry(store, dataset_uuid, k)
            if entry is None:
                break
            header = txlog.apply_entry(header, entry, dataset_uuid)
        following = entries.get(k + 1)
        if following is None and k < top:
            following = log.read_entry(store, dataset_uuid, k + 1)
            if following is not None:
                entries[k + 1] = following
        if k not in kept or (following is not None and following.reverts == k):
            continue  # outside the window, or never published
        referenced |= txlog.referenced_keys(header)
    expired = [txlog.checkpoint_key(dataset_uuid, c) for c in checkpoints if c < oldest]
    expired += [txlog.entry_key(dataset_uuid, e) for e in versions if e < oldest]
    oldest_entry = entries.get(oldest)
    has_checkpoint = oldest in checkpoints or (
        oldest_entry is not None and (oldest_entry.reset or oldest_entry.deleted)
    )
    return Retained(
        current,
        frozenset(referenced),
        oldest,
        oldest_state,
        has_checkpoint,
        tuple(expired),
        cutoff,
    )


def _mtime_ms(info: dict[str, Any]) -> int | None:
    for name in ("mtime", "LastModified", "last_modified", "created", "updated", "timeCreated"):
        value = info.get(name)
        if value is None:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value * 1000)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                value = value.replace(tzinfo=dt.UTC)
            return int(value.timestamp() * 1000)
        if isinstance(value, str):
            try:
                parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=dt.UTC)
            return int(parsed.timestamp() * 1000)
    return None


def key_ages(store: Store, prefix: str) -> dict[str, int | None]:
    """Keys below ``prefix`` (a folder, ending in ``/``) with their modification times.

    Times are milliseconds since the epoch (None if the filesystem does not report one).
    """
    start = store.path(prefix.rstrip("/"))
    try:
        found = store.with_retry(
            "list", prefix, lambda: store.fs.find(start, detail=True, withdirs=False)
        )
    except FileNotFoundError:
        return {}
    out: dict[str, int | None] = {}
    for path, info in found.items():
        key = store._key_of(path)
        if key is None or not key.startswith(prefix) or info.get("type") == "directory":
            continue
        out[key] = _mtime_ms(info)
    return out


def data_candidates(store: Store, header: DatasetHeader) -> Iterator[str]:
    """Keys below a dataset's data, index and statistics folders."""
    uuid = header.uuid
    if header.explicit_partitions:
        yield from store.iter_keys(naming.table_prefix(uuid, header.table_name))
    yield from store.iter_keys(f"{uuid}/indices/")
    yield from store.iter_keys(f"{uuid}/{STATISTICS_DIR}/")


def temp_candidates(store: Store, dataset_uuid: str) -> dict[str, int | None]:
    """Temp files of interrupted local publications (``.<name>.tmp-<hex>``) of a dataset."""
    out = {
        k: t
        for k, t in key_ages(store, f"{dataset_uuid}/").items()
        if k.rsplit("/", 1)[-1].startswith(".") and ".tmp-" in k
    }
    if store.is_local:
        for key in store.iter_prefixes(f".{dataset_uuid}."):
            if ".tmp-" in key and not key.endswith("/"):
                out[key] = _local_mtime(store, key)
    return out


def _local_mtime(store: Store, key: str) -> int | None:
    try:
        info = store.with_retry("info", key, lambda: store.fs.info(store.path(key)))
    except FileNotFoundError:
        return None
    return _mtime_ms(info)
