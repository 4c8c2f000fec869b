"""Reading a dataset's history: the log entries of its newest versions, newest first."""

from __future__ import annotations

from kartoframe.format.txlog import LogEntry
from kartoframe.storage import log
from kartoframe.storage.store import Store

__all__ = ["history_entries"]


def history_entries(
    store: Store, uuid: str, limit: int | None
) -> list[tuple[LogEntry, bool]] | None:
    """``(entry, reverted)`` of the newest ``limit`` (None: all) versions still in the log,
    newest first; ``reverted``: the next version is a ``REVERT`` of it. None if the
    dataset does not exist.
    """
    if log.current_state(store, uuid) is None:
        return None
    versions, _ = log.list_log(store, uuid)
    wanted = versions[-limit:] if limit is not None else versions
    extra = [v + 1 for v in wanted if v + 1 in set(versions) and v + 1 not in set(wanted)]
    entries = log.read_entries(store, uuid, [*wanted, *extra])
    out = []
    for v in reversed(wanted):
        entry = entries.get(v)
        if entry is None:
            continue
        following = entries.get(v + 1)
        out.append((entry, following is not None and following.reverts == v))
    return out
