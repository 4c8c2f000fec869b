"""History, time travel and vacuum of datasets (the transaction log, ``docs/transactions.md``)."""

from __future__ import annotations

from kartoframe.errors import DatasetNotFoundError, InvalidInputError
from kartoframe.format.history import CommitRecord, commit_record
from kartoframe.front.args import StoreInput, ensure_store, maintenance_flags
from kartoframe.front.docs import fill
from kartoframe.plan.arguments import check_uuid
from kartoframe.storage.garbage import vacuum
from kartoframe.storage.log_history import history_entries
from kartoframe.storage.retention import DEFAULT_RETENTION_HOURS, check_retention

__all__ = ["CommitRecord", "dataset_history", "vacuum_dataset"]


@fill
def dataset_history(
    dataset_uuid: str, store: StoreInput, *, limit: int | None = None
) -> list[CommitRecord]:
    """The commits of a dataset, newest first.

    $params_dataset
    limit
        Return at most this many (the newest) records.

    Returns
    -------
    list of CommitRecord
        Versions still in the log (``vacuum_dataset`` removes those outside its retention
        window). A dataset written only by plateau/kartothek has no log yet: its history
        starts with the first kartoframe commit (an ``EXTERNAL`` record of the state it
        found, then the commit itself).

    $raises_not_found

    $examples
    >>> df = pd.DataFrame({"p": [1, 2], "v": [1.0, 2.0]})
    >>> _ = kf.store_dataframes_as_dataset("memory://history-example", "ds", [df],
    ...                                   partition_on=["p"])
    >>> _ = kf.update_dataset_from_dataframes([df], "memory://history-example", "ds",
    ...                                       commit_info={"job": "nightly"})
    >>> [(r.version, r.operation, len(r.added)) for r in
    ...  kf.dataset_history("ds", "memory://history-example")]
    [(1, 'APPEND', 2), (0, 'CREATE', 2)]
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise InvalidInputError(f"limit must be a positive integer or None, got {limit!r}.")
    found = history_entries(st, uuid, limit)
    if found is None:
        raise DatasetNotFoundError(uuid, st.display_url)
    return [commit_record(entry, reverted) for entry, reverted in found]


@fill
def vacuum_dataset(
    dataset_uuid: str,
    store: StoreInput,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
    dry_run: bool = False,
    *,
    force: bool = False,
) -> list[str]:
    """Delete files no version inside the retention window needs.

    Deleted: data, index and statistics files that neither the current version nor any
    version that was current during the last ``retention_hours`` references, and that
    are older than the window (files of running writes are newer); temp files of
    interrupted writes older than the window; log entries and checkpoints older than the
    oldest retained version (a checkpoint is written for it first). Never deleted:
    anything the current version references, anything a version committed while the
    vacuum runs references (the log is read again after the listing), a file whose name
    no write generates (:mod:`kartoframe.format.generated`), and ``_common_metadata``. A
    header that lags the log (a writer stopped after committing) is rewritten first.

    Safe to run at any time with the defaults, also while writes run: the retention
    window is also the grace window, so no file younger than it is deleted.

    $params_dataset
    retention_hours
        The window (default 168 hours = 7 days, as Delta Lake). Versions older than it
        can no longer be read with ``version=`` / ``as_of=``.
    dry_run
        Only return what would be deleted.
    force
        Allow a window shorter than the safe minimum (24 hours): only when no reader of an
        older version and no writer can be running. Under one hour it is **unsafe** while
        any write runs (its files can be deleted before it commits); a warning is logged
        (logger ``kartoframe.maintenance``).

    Returns
    -------
    list of str
        The deleted (or, with ``dry_run``, deletable) keys, sorted.

    Raises
    ------
    InvalidInputError
        ``retention_hours`` is not a finite number >= 0, or below the safe minimum
        without ``force``.
    $not_found
    CorruptMetadataError
        The header or the log is corrupt (nothing is deleted).

    $examples
    >>> url = "memory://vacuum-example"
    >>> df = pd.DataFrame({"p": [1, 2], "v": [1.0, 2.0]})
    >>> _ = kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    >>> _ = kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"], overwrite=True)
    >>> kf.vacuum_dataset("ds", url)  # version 0 was current a moment ago: kept
    []
    >>> gone = kf.vacuum_dataset("ds", url, retention_hours=0, force=True)
    >>> sorted({k.split("/")[1] for k in gone})  # version 0's files, stats and log entry
    ['_kartoframe', 'table']
    >>> [r.version for r in kf.dataset_history("ds", url)]
    [1]
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    maintenance_flags(dry_run, force)
    hours = check_retention(retention_hours, force=force, what="vacuum_dataset")
    return vacuum(st, uuid, hours, dry_run=dry_run)
