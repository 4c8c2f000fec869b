"""Rebasing a commit that lost the race for its version (part of the commit protocol).

When another writer committed first, :func:`rebase` loads the newest version, decides with
:func:`conflict_reason` whether this commit can still land on it (``docs/transactions.md``:
appends rebase; removals, delete scopes, schema changes and creates can conflict) and
prepares the next attempt of :func:`~kartoframe.storage.commit.commit_transaction`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from kartoframe.errors import CommitConflictError, KartoframeError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.naming import label_directory
from kartoframe.storage import log
from kartoframe.storage.commit_values import Built, Intent
from kartoframe.storage.log import State
from kartoframe.storage.parents import Parent, parent_of_state
from kartoframe.storage.resolve import loaded_from_state
from kartoframe.storage.store import Store

__all__ = ["conflict_reason", "discard_built", "loaded_base", "rebase"]


def _dirs(labels: Iterable[str]) -> set[str]:
    return {label_directory(lb) for lb in labels}


def conflict_reason(
    intent: Intent,
    base: LoadedDataset | None,
    new: LoadedDataset | None,
    changes_schema: bool,
    version: int,
) -> str | None:
    """Why this commit cannot be rebased from ``base`` onto ``new`` (None: it can)."""
    if intent.mode == "overwrite":
        return None
    if intent.mode == "create":
        return "it was created by another writer during this write" if new is not None else None
    if intent.mode == "create_or_update" and base is None:
        # still a create: becomes an update of whatever another writer created, unless
        # that data falls inside this commit's delete scope
        if new is None or intent.scope is None:
            return None
        try:
            inside = sorted(intent.scope(new))
        except KartoframeError as e:
            return f"its delete scope cannot be evaluated on version {version}: {e}"
        if inside:
            return (
                f"version {version} created the dataset with data inside this commit's "
                f"delete scope (e.g. {inside[0]!r})"
            )
        return None
    if new is None:
        return "it was deleted by another writer during this write"
    assert base is not None
    old_parts, new_parts = base.metadata.partitions, new.metadata.partitions
    added = {lb for lb, k in new_parts.items() if old_parts.get(lb) != k}
    removed = {lb for lb, k in old_parts.items() if new_parts.get(lb) != k}
    hit = sorted(intent.removes & removed)
    if hit:
        return (
            f"partitions this commit removes were removed or replaced by version {version} "
            f"(e.g. {hit[0]!r})"
        )
    if intent.scope is not None:
        try:
            extra = sorted((intent.scope(new) - intent.removes) & added)
        except KartoframeError as e:
            return f"its delete scope cannot be evaluated on version {version}: {e}"
        if extra:
            return (
                f"version {version} added data inside this commit's delete scope (e.g. "
                f"{extra[0]!r})"
            )
    elif intent.removes:
        touched = sorted(_dirs(intent.removes) & _dirs(added | removed))
        if touched:
            where = touched[0] or "the dataset"
            return f"version {version} changed partition {where!r}, which this commit replaces"
    if changes_schema and not base.schema.equals(new.schema):
        return f"version {version} changed the schema concurrently"
    return None


def discard_built(store: Store, built: Built) -> None:
    """Delete the side files an abandoned attempt wrote (best effort)."""
    if built.written:
        with contextlib.suppress(Exception):
            store.delete_many(list(built.written))


def rebase(
    store: Store,
    uuid: str,
    parent: Parent,
    builder_base: LoadedDataset | None,
    built: Built,
    intent: Intent,
    changes_schema: bool,
) -> tuple[Parent, LoadedDataset | None, Built | None]:
    """Load the newest version, check for conflicts, prepare the next attempt."""
    new_parent = parent_of_state(store, uuid, log.current_state(store, uuid))
    new_loaded = loaded_base(store, new_parent) if new_parent.header is not None else None
    reason = conflict_reason(intent, builder_base, new_loaded, changes_schema, new_parent.version)
    if reason is not None:
        discard_built(store, built)
        raise CommitConflictError(f"Cannot commit to dataset {uuid!r}: {reason}.")
    if intent.mode in ("create", "overwrite") or (
        intent.mode == "create_or_update" and new_loaded is None
    ):
        return new_parent, None, built  # built without a base: still valid
    discard_built(store, built)
    return new_parent, new_loaded, None


def loaded_base(store: Store, parent: Parent) -> LoadedDataset:
    """The version ``parent`` describes, loaded as a builder's base."""
    shown = State(
        parent.version, parent.header, parent.raw, parent.log_schema, parent.timestamp, None
    )
    return loaded_from_state(store, shown)
