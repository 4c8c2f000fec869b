"""Which files the versions inside a retention window need (vacuum and garbage collection).

A version is *retained* if it is the current version, or if it was current at some time
inside the window: the next version was committed less than ``retention`` ago. Reverted
versions (their header was never published) are never retained. Every file a retained
version references — data files, index files, the statistics file, ``_common_metadata`` —
is kept; the log is kept from the oldest retained version on (with a checkpoint there, so
those versions can still be rebuilt), and so are the change files its entries record (the
change feed of every retained version stays readable).

What maintenance deletes (:func:`collect_garbage`) must also be (1) a name a write of the
dataset generates (:mod:`kartoframe.format.generated`), never a key just because of its
folder; (2) older than a *grace window* by the store's modification time (files of writes
in progress, temp files being published, are newer); and (3) unreferenced by every version
committed after the snapshot the collection started from: the log is read again after the
listing, just before deleting.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import math
from collections.abc import Iterator
from typing import Any

from kartoframe.errors import DatasetNotFoundError, InvalidInputError
from kartoframe.format import generated, log_diff, naming, txlog
from kartoframe.format.changes import CHANGES_DIR
from kartoframe.format.header import DatasetHeader
from kartoframe.format.statistics import STATISTICS_DIR
from kartoframe.format.txlog import LogEntry
from kartoframe.storage import log
from kartoframe.storage.log import State
from kartoframe.storage.store import Store

__all__ = [
    "DEFAULT_RETENTION_HOURS",
    "GRACE_HOURS",
    "SAFE_MINIMUM_RETENTION_HOURS",
    "Collection",
    "Retained",
    "check_grace",
    "check_hours",
    "check_retention",
    "collect_garbage",
    "data_candidates",
    "dataset_keys",
    "key_ages",
    "newer_references",
    "retained_versions",
    "temp_candidates",
    "unsafe_warning",
]

_log = logging.getLogger("kartoframe.maintenance")

#: Default retention window of vacuum and garbage collection (Delta's default: 7 days).
DEFAULT_RETENTION_HOURS = 168.0
#: Vacuum refuses shorter windows unless forced: a reader or writer running longer than
#: the window could find its files gone.
SAFE_MINIMUM_RETENTION_HOURS = 24.0


#: Minimum age (by the store's modification time) of any file garbage collection or vacuum
#: deletes, unless forced: files of writes in progress and temp files being published are
#: younger. A write (or a read of an old version) running longer than this can lose files.
GRACE_HOURS = 1.0
#: Longest window accepted (windows are turned into milliseconds; ~114,000 years).
_MAX_HOURS = 1e9


def check_hours(value: object, name: str) -> float:
    """Validate a window in hours: a finite number >= 0 (at most 10**9).

    Raises
    ------
    InvalidInputError
        Not a number, negative, NaN, infinite or too large.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(f"{name} must be a number of hours, got {value!r}.")
    try:
        hours = float(value)
    except OverflowError:  # an int beyond float range
        hours = math.inf
    if math.isnan(hours) or hours < 0:
        raise InvalidInputError(f"{name} must be >= 0 hours, got {value!r}.")
    if hours > _MAX_HOURS:
        raise InvalidInputError(
            f"{name} must be a finite number of hours up to {_MAX_HOURS:g}, got {value!r}."
        )
    return hours


def check_retention(retention_hours: object, *, force: bool, what: str) -> float:
    """Validate a retention window in hours.

    Raises
    ------
    InvalidInputError
        Not a number, negative, NaN, infinite (or above 10**9 hours), or below the safe
        minimum without ``force``.
    """
    hours = check_hours(retention_hours, "retention_hours")
    if hours < SAFE_MINIMUM_RETENTION_HOURS and not force:
        raise InvalidInputError(
            f"{what} with retention_hours={hours:g} could delete files that readers of recent "
            f"versions or running writers still need; the safe minimum is "
            f"{SAFE_MINIMUM_RETENTION_HOURS:g} hours. Pass force=True if no reader or writer "
            "can be running."
        )
    if hours < GRACE_HOURS:
        unsafe_warning(what, "retention_hours", hours)
    return hours


def check_grace(grace_hours: object, *, force: bool, what: str) -> float:
    """Validate a grace window (minimum file age) in hours.

    Raises
    ------
    InvalidInputError
        Not a number, negative, NaN, infinite, or below :data:`GRACE_HOURS` without
        ``force``.
    """
    hours = check_hours(grace_hours, "grace_hours")
    if hours < GRACE_HOURS:
        if not force:
            raise InvalidInputError(
                f"{what} with grace_hours={hours:g} could delete files of writes in progress "
                f"(a commit would then reference missing files); the minimum is "
                f"{GRACE_HOURS:g} hour(s). Pass force=True if no writer can be running."
            )
        unsafe_warning(what, "grace_hours", hours)
    return hours


def unsafe_warning(what: str, name: str, hours: float) -> None:
    """Log that a forced window shorter than :data:`GRACE_HOURS` is unsafe."""
    _log.warning(
        "%s with force=True and %s=%g: files of writes in progress (and temp files being "
        "published) may be deleted; run it only when no writer can be running.",
        what,
        name,
        hours,
    )


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
            header = log_diff.apply_entry(header, entry, dataset_uuid)
        following = entries.get(k + 1)
        if following is None and k < top:
            following = log.read_entry(store, dataset_uuid, k + 1)
            if following is not None:
                entries[k + 1] = following
        if k not in kept or (following is not None and following.reverts == k):
            continue  # outside the window, or never published
        referenced |= txlog.referenced_keys(header)
        recorded = entries.get(k)
        if recorded is not None and recorded.changes:
            referenced |= set(recorded.changes)
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
        found = store.with_retry("list", prefix, lambda: store.find_details(start))
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
    """Temp files of local publications of the dataset's keys (``.<name>.tmp-<hex>``).

    Only temp files of names a write generates (:func:`generated.is_temp_file`): a
    ``.<uuid>.notes.tmp-backup`` next to the header is not one.
    """
    out = {
        k: t
        for k, t in key_ages(store, f"{dataset_uuid}/").items()
        if generated.is_temp_file(k, dataset_uuid)
    }
    if store.is_local:
        for key in store.iter_prefixes(f".{dataset_uuid}."):
            if not key.endswith("/") and generated.is_temp_file(key, dataset_uuid):
                out[key] = _local_mtime(store, key)
    return out


def dataset_keys(store: Store, dataset_uuid: str) -> dict[str, int | None]:
    """Every key a write of the dataset generates that exists, with its modification time
    (headers, schema, data of any table, index, statistics, log and temp files).
    """
    out = {
        k: t
        for k, t in key_ages(store, f"{dataset_uuid}/").items()
        if generated.is_dataset_file(k, dataset_uuid)
    }
    for fmt in naming.HEADER_SUFFIXES:
        key = naming.header_key(dataset_uuid, fmt)
        if store.exists(key):
            out[key] = _local_mtime(store, key)
    out.update(temp_candidates(store, dataset_uuid))
    return out


def newer_references(store: Store, dataset_uuid: str, snapshot: State) -> set[str] | None:
    """Keys the versions committed after ``snapshot`` reference (read again now).

    Every version after the snapshot's is replayed from the log, and the current header
    (which may be one written by another program) is included. None if the dataset no
    longer exists (then nothing may be deleted).

    Raises
    ------
    CorruptMetadataError
        A newer log entry is broken (the caller deletes nothing).
    """
    now = log.current_state(store, dataset_uuid)
    if now is None or now.header is None:
        return None
    refs = set(txlog.referenced_keys(now.header))
    if snapshot.version is None:
        return refs
    header = snapshot.header
    version = snapshot.version
    while True:
        entry = log.read_entry(store, dataset_uuid, version + 1)
        if entry is None:
            break
        header = log_diff.apply_entry(header, entry, dataset_uuid)
        refs |= txlog.referenced_keys(header)
        refs |= set(entry.changes or ())
        version += 1
    return refs


@dataclasses.dataclass(frozen=True, slots=True)
class Collection:
    """What a garbage collection or vacuum deletes.

    Attributes
    ----------
    retained
        The retained versions (the snapshot the collection started from).
    garbage
        Data, index and statistics files: generated names, older than the grace window,
        referenced by no retained version nor any version committed since (sorted).
    temps
        Temp files of local publications older than the grace window (sorted).
    """

    retained: Retained
    garbage: tuple[str, ...]
    temps: tuple[str, ...]


def collect_garbage(
    store: Store, dataset_uuid: str, retention_hours: float, min_age_hours: float
) -> Collection:
    """Find what garbage collection (or vacuum) may delete; deletes nothing.

    ``min_age_hours`` is the grace window: a file younger than it by the store's
    modification time is kept (0: no age check at all — only when no writer runs). A file
    whose time the store does not report counts as young unless the window is 0.

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.
    """
    kept = retained_versions(store, dataset_uuid, retention_hours)
    header = kept.current.header
    assert header is not None
    cutoff = txlog.now_ms() - int(min_age_hours * 3_600_000)

    def old(mtime: int | None) -> bool:
        if min_age_hours == 0:
            return True
        return mtime is not None and mtime < cutoff

    ages: dict[str, int | None] = {}
    prefixes = [
        f"{dataset_uuid}/indices/",
        f"{dataset_uuid}/{STATISTICS_DIR}/",
        f"{dataset_uuid}/{CHANGES_DIR}/",
    ]
    if header.explicit_partitions:  # implicit datasets: every data file is live
        prefixes.append(naming.table_prefix(dataset_uuid, header.table_name))
    for prefix in prefixes:
        ages.update(key_ages(store, prefix))
    garbage = [
        k
        for k, t in ages.items()
        if generated.is_collectable(k, dataset_uuid, header.table_name)
        and k not in kept.referenced
        and old(t)
    ]
    temps = [k for k, t in temp_candidates(store, dataset_uuid).items() if old(t)]
    if garbage:
        # commits since the snapshot may reference files it did not (a revert, a header
        # written by another program): read the log again, after the listing
        needed = newer_references(store, dataset_uuid, kept.current)
        garbage = [] if needed is None else [k for k in garbage if k not in needed]
    return Collection(kept, tuple(sorted(garbage)), tuple(sorted(temps)))


def _local_mtime(store: Store, key: str) -> int | None:
    try:
        info = store.with_retry("info", key, lambda: store.fs.info(store.path(key)))
    except FileNotFoundError:
        return None
    return _mtime_ms(info)
