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

from kartoframe.errors import EmptyInputError, InvalidInputError, InvalidTypeError
from kartoframe.execution.eager_write import delete_scope_labels
from kartoframe.execution.write import already_recorded
from kartoframe.format import naming
from kartoframe.format.commit_args import CommitOptions
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
from kartoframe.storage.resolve import dataset_exists, load_existing
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store

__all__ = ["Front", "check_update_input", "store_target", "update_target", "written_extras"]


class Front(NamedTuple):
    """A write front's checked arguments: the store, the dataset and the resolved request."""

    store: Store
    uuid: str
    #: None: the dataset already records the write's application transaction (a retried
    #: step, nothing to write)
    target: ResolvedWrite | None


def _commit_options(args: Mapping[str, Any]) -> CommitOptions:
    return CommitOptions.of(args.get("app_id"), args.get("app_version"), args.get("commit_info"))


def store_target(
    args: Mapping[str, Any], *, check_store: Callable[[Store], None] | None = None
) -> Front:
    """The resolved request of a write that creates a dataset.

    ``args`` are a write front's arguments by name (its ``locals()``; keywords a front
    lacks take their defaults). Every engine checks them in this one order
    (the application transaction, uuid, store and ``check_store``, header format and
    version, table name, partition columns, indices, ``overwrite``, the partition/index
    overlap, ``schema_evolution``) and refuses an existing dataset unless ``overwrite``.
    """
    table_name = table_name_arg(args.get("table"), args.get("table_name", "table"))
    commit = _commit_options(args)
    uuid = check_uuid(args["dataset_uuid"])
    st = ensure_store(args["store"])
    if check_store is not None:
        check_store(st)
    fmt = check_format(args.get("metadata_storage_format", "json"))
    check_metadata_version(args.get("metadata_version", 4))
    naming.validate_name(table_name, "table_name")
    pon = str_list(args.get("partition_on"), "partition_on")
    sidx = str_list(args.get("secondary_indices"), "secondary_indices")
    overwrite = args.get("overwrite", False)
    if not isinstance(overwrite, bool):
        raise InvalidTypeError("overwrite must be a bool.")
    both = sorted(set(pon) & set(sidx))
    if both:
        raise InvalidInputError(f"Cannot create secondary index on partition columns: {both}.")
    evolution = evolution_arg(args.get("schema_evolution", "none"))
    if already_recorded(st, uuid, commit):
        return Front(st, uuid, None)
    request = WriteRequest(
        uuid, "store", tuple(pon), tuple(sidx), table_name, fmt, overwrite, evolution, commit
    )
    return Front(st, uuid, resolve_write(request, None, exists=dataset_exists(st, uuid)))


def update_target(
    args: Mapping[str, Any], *, check_store: Callable[[Store], None] | None = None
) -> Front:
    """The resolved request of an update (the dataset is created if missing).

    ``args`` as in :func:`store_target` (with plateau's ``factory`` and ``table``); the
    header is loaded once and becomes the resolved write's ``base``.
    """
    table_name = table_name_arg(args.get("table"), args.get("table_name", "table"))
    uuid, store = resolve_factory(args.get("factory"), args.get("dataset_uuid"), args.get("store"))
    uuid = check_uuid(uuid)
    st = ensure_store(store)
    if check_store is not None:
        check_store(st)
    check_metadata_version(args.get("default_metadata_version", 4))
    fmt = check_format(args.get("metadata_storage_format", "json"))
    evolution = evolution_arg(args.get("schema_evolution", "none"))
    commit = _commit_options(args)
    naming.validate_name(table_name, "table_name")
    base = load_existing(st, uuid)
    if base is not None and commit.recorded_in(base.metadata):
        return Front(st, uuid, None)
    pon = args.get("partition_on")
    keys = None if pon is None else tuple(str_list(pon, "partition_on"))  # None: the dataset's
    sidx = tuple(str_list(args.get("secondary_indices"), "secondary_indices"))
    request = WriteRequest(uuid, "update", keys, sidx, table_name, fmt, False, evolution, commit)
    return Front(st, uuid, resolve_write(request, base))


def check_update_input(target: ResolvedWrite, has_data: bool, args: Mapping[str, Any]) -> None:
    """An update without data needs a dataset, and a ``delete_scope`` or ``metadata``."""
    if has_data:
        return
    if target.base is None:
        raise EmptyInputError(f"Dataset {target.uuid!r} does not exist and no data was given.")
    if args.get("delete_scope") is None and args.get("metadata") is None:
        raise EmptyInputError("Nothing to update: no data, no delete_scope, no metadata.")


def written_extras(st: Store, target: ResolvedWrite, args: Mapping[str, Any]) -> dict[str, Any]:
    """The user ``metadata`` a write stores and the partition labels its ``delete_scope``
    removes (an engine's ``metadata`` and ``remove_labels`` keywords).
    """
    base = target.base
    existing = base.metadata.metadata if base is not None else {}
    remove = set()
    if base is not None:
        remove = delete_scope_labels(base, st, args.get("delete_scope"))
    return {"metadata": resolve_metadata(args.get("metadata"), existing), "remove_labels": remove}
