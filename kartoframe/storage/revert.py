"""Reverting a committed version whose header could not be written (commit protocol, step 5).

The log entry of the version exists (the commit point is passed), but the header write
failed: :func:`revert_version` commits a revert entry on top (or, for a create, deletes the
dataset again), unless another writer already built on the version; see
:class:`~kartoframe.storage.commit_values.HeaderPublishError`.
"""

from __future__ import annotations

import contextlib

from kartoframe.format import header_stamp, log_diff, naming, txlog
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.format.schema import schema_to_bytes
from kartoframe.format.txlog import LogEntry
from kartoframe.storage.commit_values import HeaderPublishError
from kartoframe.storage.parents import Parent
from kartoframe.storage.store import Store

__all__ = ["revert_version"]


def revert_version(
    store: Store,
    header: DatasetHeader,
    version: int,
    entry: LogEntry,
    parent: Parent,
    builder_base: LoadedDataset | None,
    old_schema: bytes | None,
    schema_written: bool,
) -> None:
    """The header of a committed version could not be written: revert the version.

    Returns normally if the version was reverted (the caller re-raises the failure and
    removes its files) or if another writer already built on it (then it stands and the
    caller's failure is re-raised too, but the files are referenced: see
    :class:`HeaderPublishError`).
    """
    uuid = header.uuid
    schema_key = naming.common_metadata_key(header.uuid, header.table_name)

    def _restore_schema() -> None:
        if schema_written:
            with contextlib.suppress(Exception):
                if old_schema is None:
                    store.delete(schema_key)
                else:
                    store.put(schema_key, old_schema)

    try:
        if parent.header is None:
            # a create: the revert deletes the dataset again (readers and writers see a
            # create in the log before its header exists, so its entry must stay)
            previous_schema = None
            target = None
        else:
            if schema_written or old_schema is not None:
                previous_schema = old_schema
            elif builder_base is not None:
                previous_schema = schema_to_bytes(builder_base.schema)
            else:
                previous_schema = parent.log_schema or store.get_or_none(schema_key)
            target = header_stamp.stamp_header(
                parent.header, version + 1, entry.timestamp + 1, parent.txn
            )
        revert = log_diff.make_entry(
            version=version + 1,
            timestamp=entry.timestamp + 1,
            operation="REVERT",
            parameters={"reverts": version, "reason": "the header could not be written"},
            writer=entry.writer,
            commit_info=None,
            app_id=None,
            app_version=None,
            previous=header,
            header=target,
            schema=previous_schema,
            force_reset=True,
            reverts=version,
        )
        won = store.put_if_absent(txlog.entry_key(uuid, version + 1), txlog.encode_entry(revert))
    except Exception as e:
        err = HeaderPublishError(
            f"Version {version} of dataset {uuid!r} is committed in the transaction log, but "
            f"its header could not be written and the version could not be reverted ({e}). "
            "kartoframe readers see the new version; plateau sees it after the next commit."
        )
        err.version = version
        raise err from None
    if not won:
        err = HeaderPublishError(
            f"Version {version} of dataset {uuid!r} is committed, but its header could not be "
            "written; a later commit already builds on it and will publish it."
        )
        err.version = version
        raise err from None
    _restore_schema()
    if parent.header is None:
        # nobody can build on the create any more (version + 1 deletes it): a failed
        # create leaves nothing behind, its entry first, the deleting revert last
        with contextlib.suppress(Exception):
            for v in (version, version + 1):
                store.delete(txlog.entry_key(uuid, v))
        return
    with contextlib.suppress(Exception):
        current = store.get_or_none(naming.header_key(uuid, parent.header.storage_format))
        if current is not None and current != parent.raw and parent.raw is not None:
            store.put(naming.header_key(uuid, parent.header.storage_format), parent.raw)
