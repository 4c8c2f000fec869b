"""Operations on a dataset's lifetime, built on the commit protocol.

Publishing a complete header as a create or an overwrite (a copy), marking a dataset
deleted in its log and removing its header and log, and undoing a commit (cube writes
compensate the datasets they committed before a later one failed). The protocol itself is
:mod:`kartoframe.storage.commit`.
"""

from __future__ import annotations

import random
import time

from kartoframe.errors import CommitConflictError
from kartoframe.format import header_stamp, log_diff, naming, txlog
from kartoframe.format.header import DatasetHeader, decode_header, encode_header
from kartoframe.storage import log
from kartoframe.storage.commit import check_atomic, commit_transaction
from kartoframe.storage.commit_values import DEFAULT_MAX_ATTEMPTS, Built, Intent
from kartoframe.storage.parents import latest_version, writer_name
from kartoframe.storage.store import Store

__all__ = ["commit", "delete_headers", "delete_log", "mark_deleted", "restore"]


def commit(
    store: Store,
    new: DatasetHeader,
    *,
    base_header: bytes | None,
    expect_absent: bool,
    schema_bytes: bytes | None = None,
    operation: str = "COPY",
) -> bytes:
    """Publish a complete header built without a base (a copy): create or overwrite.

    Returns the bytes of the published header.
    """
    del base_header  # kept for callers; a header without a base is an overwrite
    result = commit_transaction(
        store,
        new.uuid,
        lambda _: Built(new, None, schema_bytes),
        base=None,
        intent=Intent("create" if expect_absent else "overwrite", operation),
    )
    assert result.header is not None
    return encode_header(result.header)


def delete_headers(store: Store, dataset_uuid: str) -> None:
    """Delete the header in whichever format(s) it exists."""
    for fmt in ("json", "msgpack"):
        store.delete(naming.header_key(dataset_uuid, fmt))  # type: ignore[arg-type]


def mark_deleted(store: Store, dataset_uuid: str, *, operation: str = "DELETE") -> int | None:
    """Commit "the dataset is deleted" and remove its header; return that version.

    Writers that started before the deletion lose the race for the next version and see
    the dataset gone. The caller removes the files, then :func:`delete_log`.
    """
    check_atomic(store)
    for attempt in range(DEFAULT_MAX_ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0, 0.01 * attempt))
        state = log.current_state(store, dataset_uuid)
        if state is None or state.header is None:
            delete_headers(store, dataset_uuid)
            return None
        if state.version is None:
            latest, prev_ts = latest_version(store, dataset_uuid)
        else:
            latest, prev_ts = state.version, state.timestamp or 0
        ts = max(txlog.now_ms(), prev_ts + 1)
        entry = log_diff.make_entry(
            version=latest + 1,
            timestamp=ts,
            operation=operation,
            parameters={},
            writer=writer_name(),
            commit_info=None,
            app_id=None,
            app_version=None,
            previous=state.header,
            header=None,
            schema=None,
        )
        if store.put_if_absent(
            txlog.entry_key(dataset_uuid, latest + 1), txlog.encode_entry(entry)
        ):
            delete_headers(store, dataset_uuid)
            return latest + 1
    raise CommitConflictError(f"Could not delete dataset {dataset_uuid!r}: too many writers.")


def delete_log(store: Store, dataset_uuid: str) -> list[str]:
    """Delete every log file of a dataset, oldest first (the newest entry last)."""
    entries, checkpoints = log.list_log(store, dataset_uuid)
    keys = [txlog.checkpoint_key(dataset_uuid, v) for v in checkpoints]
    keys += [txlog.entry_key(dataset_uuid, v) for v in entries]
    for key in keys:
        store.delete(key)
    return keys


def restore(
    store: Store,
    dataset_uuid: str,
    *,
    written: bytes,
    written_format: naming.MetadataFormat,
    previous: bytes | None,
    previous_format: naming.MetadataFormat | None,
    table: str,
    previous_schema: bytes | None,
) -> None:
    """Undo a commit: a revert entry, then the previous header and schema are put back.

    Used by multi-dataset writes (cubes) to compensate commits of datasets written before
    a later one failed. For a dataset that did not exist before, the dataset is deleted
    again (header, schema and its log).

    Raises
    ------
    CommitConflictError
        Another writer committed after the commit to undo; nothing is changed then.
    """
    done = decode_header(written, dataset_uuid, written_format)
    hlog = header_stamp.header_log(done)
    if hlog is None:
        raise CommitConflictError(f"Cannot undo a commit of {dataset_uuid!r}: no log version.")
    state = log.current_state(store, dataset_uuid)
    if state is None or state.version != hlog.version:
        raise CommitConflictError(
            f"Cannot undo the commit of dataset {dataset_uuid!r}: it was changed by another "
            "commit meanwhile."
        )
    version = hlog.version
    target = (
        decode_header(previous, dataset_uuid, previous_format or written_format)
        if previous is not None
        else None
    )
    ts = max(txlog.now_ms(), hlog.timestamp + 1)
    txn = header_stamp.header_txn(target) if target is not None else {}
    schema_key = naming.common_metadata_key(dataset_uuid, table)
    if target is not None and previous_schema is None:
        previous_schema = store.get_or_none(schema_key)
    entry = log_diff.make_entry(
        version=version + 1,
        timestamp=ts,
        operation="REVERT",
        parameters={"reverts": version, "reason": "a later commit of the same write failed"},
        writer=writer_name(),
        commit_info=None,
        app_id=None,
        app_version=None,
        previous=done,
        header=header_stamp.stamp_header(target, version + 1, ts, txn)
        if target is not None
        else None,
        schema=previous_schema if target is not None else None,
        force_reset=True,
        reverts=version,
    )
    if not store.put_if_absent(
        txlog.entry_key(dataset_uuid, version + 1), txlog.encode_entry(entry)
    ):
        raise CommitConflictError(
            f"Cannot undo the commit of dataset {dataset_uuid!r}: another writer committed "
            "meanwhile."
        )
    if previous is None:
        delete_headers(store, dataset_uuid)
        store.delete(schema_key)
        delete_log(store, dataset_uuid)
        return
    if previous_schema is not None:
        store.put(schema_key, previous_schema)
    fmt = previous_format or written_format
    store.put(naming.header_key(dataset_uuid, fmt), previous)
    if fmt != written_format:
        store.delete(naming.header_key(dataset_uuid, written_format))
