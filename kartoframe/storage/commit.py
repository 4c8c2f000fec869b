"""The commit: the only code that writes a dataset header.

``commit`` publishes a new header for a dataset whose data and index files are already
written under fresh names:

1. re-read the current header and check it is still the base the change was planned on
   (or still absent, for a create); otherwise :class:`CommitConflictError`;
2. write ``_common_metadata`` if the schema changed (the old bytes are kept for undo);
3. publish the header atomically (local disk: temp file + rename; object stores: one
   PUT), then remove a header of the other storage format, if any.

If step 3 fails, the previous schema is restored, so a failed commit leaves the dataset
as it was; the files written for it are orphans that ``garbage_collect_dataset`` removes.
"""

from __future__ import annotations

from kartoframe.errors import CommitConflictError
from kartoframe.format import naming
from kartoframe.format.header import DatasetHeader, encode_header
from kartoframe.storage.store import Store

__all__ = ["commit", "delete_headers"]


def _current_raw(store: Store, dataset_uuid: str) -> bytes | None:
    for fmt in ("json", "msgpack"):
        data = store.get_or_none(naming.header_key(dataset_uuid, fmt))  # type: ignore[arg-type]
        if data is not None:
            return data
    return None


def commit(
    store: Store,
    new: DatasetHeader,
    *,
    base_header: bytes | None,
    expect_absent: bool,
    schema_bytes: bytes | None = None,
) -> bytes:
    """Publish ``new`` as the dataset header; return the bytes written.

    Parameters
    ----------
    store
        Where the dataset lives.
    new
        The complete new header.
    base_header
        Raw bytes of the header the change was planned on (None for a create or an
        overwrite that ignores the current state).
    expect_absent
        True when creating: fail if a header appeared meanwhile.
    schema_bytes
        New ``_common_metadata`` content, or None to keep the stored one.

    Raises
    ------
    CommitConflictError
        The header changed since it was read (or appeared, when creating).
    """
    uuid = new.uuid
    current = _current_raw(store, uuid)
    if expect_absent and current is not None:
        raise CommitConflictError(
            f"Dataset {uuid!r} was created by another writer during this write."
        )
    if base_header is not None and current != base_header:
        raise CommitConflictError(
            f"Dataset {uuid!r} was changed by another commit during this write; "
            "re-read it and retry."
        )
    schema_key = naming.common_metadata_key(uuid, new.table_name)
    old_schema: bytes | None = None
    schema_written = False
    if schema_bytes is not None:
        old_schema = store.get_or_none(schema_key)
        if old_schema != schema_bytes:
            store.put(schema_key, schema_bytes)
            schema_written = True
    data = encode_header(new)
    try:
        store.put(naming.header_key(uuid, new.storage_format), data)
    except BaseException:
        if schema_written:
            if old_schema is None:
                store.delete(schema_key)
            else:
                store.put(schema_key, old_schema)
        raise
    other = "msgpack" if new.storage_format == "json" else "json"
    store.delete(naming.header_key(uuid, other))  # type: ignore[arg-type]
    return data


def delete_headers(store: Store, dataset_uuid: str) -> None:
    """Delete the header in whichever format(s) it exists."""
    for fmt in ("json", "msgpack"):
        store.delete(naming.header_key(dataset_uuid, fmt))  # type: ignore[arg-type]
