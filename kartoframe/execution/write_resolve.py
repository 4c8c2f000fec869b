"""The resolve step of every dataset write (the counterpart of :mod:`.read_resolve`).

A public write front (eager, iterator, dask, delayed/bag, Spark) hands its arguments by
name to :func:`store_target` (a new dataset) or :func:`update_target` (an update): they
are checked in one order, the application transaction is looked up (a retried step writes
nothing, on every engine), the base is loaded once and the request is resolved by the
pure :func:`~kartoframe.plan.write_request.resolve_write`. The engine then runs with the
:class:`Front` it gets back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.eager_write import delete_scope_labels
from kartoframe.format import naming
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.arguments import (
    check_format,
    check_metadata_version,
    check_uuid,
    evolution_arg,
    resolve_factory,
    str_list,
    table_name_arg,
)
from kartoframe.plan.write_request import (
    ResolvedWrite,
    WriteRequest,
    resolve_metadata,
    resolve_write,
)
from kartoframe.storage.log import current_state
from kartoframe.storage.resolve import dataset_exists, load_existing
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store

__all__ = ["Front", "store_target", "update_target", "written_extras"]


class Front(NamedTuple):
    """A write front's checked arguments: the store, the dataset and the resolved request."""

    store: Store
    uuid: str
    #: None: the dataset already records the write's application transaction (a retried
    #: step, nothing to write)
    target: ResolvedWrite | None


class _Checked(NamedTuple):
    store: Store
    uuid: str
    table_name: str
    storage_format: naming.MetadataFormat
    evolution: SchemaEvolution
    commit: CommitOptions


def _checked(
    args: Mapping[str, Any], version_key: str, check_store: Callable[[Store], None] | None
) -> _Checked:
    """The arguments every write checks, in one order: table name (plateau's ``table=``
    too), application transaction, dataset (plateau's ``factory=`` too), store and
    ``check_store``, header format, metadata version (``version_key``), ``schema_evolution``.
    """
    table_name = table_name_arg(args.get("table"), args.get("table_name", "table"))
    commit = CommitOptions.of(args.get("app_id"), args.get("app_version"), args.get("commit_info"))
    uuid, store = resolve_factory(args.get("factory"), args.get("dataset_uuid"), args.get("store"))
    uuid = check_uuid(uuid)
    st = ensure_store(store)
    if check_store is not None:
        check_store(st)
    fmt = check_format(args.get("metadata_storage_format", "json"))
    check_metadata_version(args.get(version_key, 4))
    naming.validate_name(table_name, "table_name")
    evolution = evolution_arg(args.get("schema_evolution", "none"))
    return _Checked(st, uuid, table_name, fmt, evolution, commit)


def store_target(
    args: Mapping[str, Any], *, check_store: Callable[[Store], None] | None = None
) -> Front:
    """The resolved request of a write that creates a dataset.

    ``args`` are a write front's arguments by name (its ``locals()``; keywords a front
    lacks take their defaults), checked by :func:`_checked`, then the partition columns,
    indices, ``overwrite`` and their overlap. An existing dataset is refused unless
    ``overwrite``; one that already records the write's application transaction is left
    as it is (``target`` None). The header is read once.
    """
    c = _checked(args, "metadata_version", check_store)
    pon = str_list(args.get("partition_on"), "partition_on")
    sidx = str_list(args.get("secondary_indices"), "secondary_indices")
    overwrite = args.get("overwrite", False)
    if not isinstance(overwrite, bool):
        raise InvalidTypeError("overwrite must be a bool.")
    both = sorted(set(pon) & set(sidx))
    if both:
        raise InvalidInputError(f"Cannot create secondary index on partition columns: {both}.")
    if c.commit.app_id is None:
        exists = dataset_exists(c.store, c.uuid)
    else:  # one read answers both questions (a broken header raises, as before)
        state = current_state(c.store, c.uuid)
        if c.commit.recorded_in(state.header if state else None):
            return Front(c.store, c.uuid, None)
        exists = state is not None
    request = WriteRequest(
        c.uuid,
        "store",
        tuple(pon),
        tuple(sidx),
        c.table_name,
        c.storage_format,
        overwrite,
        c.evolution,
        c.commit,
    )
    return Front(c.store, c.uuid, resolve_write(request, None, exists=exists))


def update_target(
    args: Mapping[str, Any], *, check_store: Callable[[Store], None] | None = None
) -> Front:
    """The resolved request of an update (the dataset is created if missing).

    ``args`` as in :func:`store_target`; the header is loaded once and becomes the resolved
    write's ``base``.
    """
    c = _checked(args, "default_metadata_version", check_store)
    base = load_existing(c.store, c.uuid)
    if base is not None and c.commit.recorded_in(base.metadata):
        return Front(c.store, c.uuid, None)
    pon = args.get("partition_on")
    keys = None if pon is None else tuple(str_list(pon, "partition_on"))  # None: the dataset's
    sidx = tuple(str_list(args.get("secondary_indices"), "secondary_indices"))
    request = WriteRequest(
        c.uuid,
        "update",
        keys,
        sidx,
        c.table_name,
        c.storage_format,
        False,
        c.evolution,
        c.commit,
    )
    return Front(c.store, c.uuid, resolve_write(request, base))


def written_extras(st: Store, target: ResolvedWrite, args: Mapping[str, Any]) -> dict[str, Any]:
    """The user ``metadata`` a write stores and the partition labels its ``delete_scope``
    removes (an engine's ``metadata`` and ``remove_labels`` keywords).
    """
    base = target.base
    if base is None:
        return {"metadata": resolve_metadata(args.get("metadata"), {}), "remove_labels": set()}
    return {
        "metadata": resolve_metadata(args.get("metadata"), base.metadata.metadata),
        "remove_labels": delete_scope_labels(base, st, args.get("delete_scope")),
    }
