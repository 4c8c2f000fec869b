"""Argument checks shared by the dataset writes (eager, iterator, dask, delayed/bag, Spark).

Every writer hands its arguments by name to :func:`store_target` (a new dataset) or
:func:`update_target` (an update): they are checked in one order, become a
:class:`~kartoframe.plan.write_request.WriteRequest` and are resolved against the dataset
by :func:`~kartoframe.plan.write_request.resolve_write` — its partition keys and table
(they must match what was asked for) and every existing index. The engine then runs with
the :class:`Front` it gets back.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar, cast

from kartoframe.api._args import dataset_args, ensure_store
from kartoframe.api.compat import table_name_arg
from kartoframe.errors import EmptyInputError, InvalidInputError, InvalidTypeError
from kartoframe.execution.eager_write import delete_scope_labels
from kartoframe.execution.write import already_recorded
from kartoframe.format import naming
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import SCHEMA_EVOLUTIONS, SchemaEvolution
from kartoframe.plan.arguments import check_format, check_metadata_version, check_uuid, str_list
from kartoframe.plan.write_request import (
    ResolvedWrite,
    WriteRequest,
    resolve_metadata,
    resolve_write,
)
from kartoframe.storage.resolve import dataset_exists, load_existing
from kartoframe.storage.store import Store

__all__ = [
    "Front",
    "evolution_arg",
    "store_target",
    "update_target",
    "check_update_input",
    "written_extras",
    "verb_like",
    "update_indices",
    "update_layout",
    "update_request",
]


F = TypeVar("F", bound=Callable[..., Any])


def verb_like(template: F, name: str, doc: str, run: Callable[..., Any]) -> F:
    """A public verb with ``template``'s signature (and type) that calls ``run(**arguments)``.

    Verbs that take the same keywords (``build_cube`` and ``extend_cube``, on every engine)
    are written once: the second one binds its arguments with the first one's signature.
    """
    signature = inspect.signature(template)

    @functools.wraps(template)
    def verb(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return run(**bound.arguments)

    verb.__name__ = verb.__qualname__ = name
    verb.__doc__ = doc
    return cast(F, verb)


def update_request(
    uuid: str,
    partition_on: object,
    secondary_indices: object,
    table_name: str,
    storage_format: naming.MetadataFormat = "json",
    *,
    schema_evolution: SchemaEvolution = "none",
    commit: CommitOptions = NO_COMMIT_OPTIONS,
) -> WriteRequest:
    """The request of an update (``partition_on`` None: the dataset's keys)."""
    pon = str_list(partition_on, "partition_on") if partition_on is not None else None
    sidx = str_list(secondary_indices, "secondary_indices")
    return WriteRequest(
        uuid,
        "update",
        tuple(pon) if pon is not None else None,
        tuple(sidx),
        table_name,
        storage_format,
        schema_evolution=schema_evolution,
        commit=commit,
    )


def update_layout(
    base: LoadedDataset | None, uuid: str, partition_on: object, table_name: str
) -> tuple[list[str], str]:
    """The partition keys and table name an update writes with (see :func:`resolve_write`)."""
    target = resolve_write(update_request(uuid, partition_on, (), table_name), base)
    return target.partition_on, target.table_name


def update_indices(
    base: LoadedDataset | None, partition_on: list[str], secondary_indices: object
) -> tuple[list[str], list[str]]:
    """The requested secondary indices, and every index the update maintains (sorted):
    the requested ones and the dataset's (its partition keys excluded).
    """
    uuid = base.uuid if base is not None else "new"
    target = resolve_write(update_request(uuid, None, secondary_indices, "table"), base)
    return target.secondary_indices, target.index_columns


def evolution_arg(schema_evolution: object) -> SchemaEvolution:
    """Validate ``schema_evolution``."""
    if schema_evolution not in SCHEMA_EVOLUTIONS:
        raise InvalidInputError(
            f"schema_evolution must be one of {list(SCHEMA_EVOLUTIONS)}, got {schema_evolution!r}."
        )
    return schema_evolution  # type: ignore[return-value]


def _commit_options(args: Mapping[str, Any]) -> CommitOptions:
    return CommitOptions.of(args.get("app_id"), args.get("app_version"), args.get("commit_info"))


class Front(NamedTuple):
    """A write front's checked arguments: the store, the dataset and the resolved request."""

    store: Store
    uuid: str
    #: None: the dataset already records the write's application transaction (a retried
    #: step, nothing to write)
    target: ResolvedWrite | None


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
    uuid, st = dataset_args(
        args.get("dataset_uuid"), args.get("store"), args.get("factory"), uuid_first=True
    )
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
    request = update_request(
        uuid,
        args.get("partition_on"),
        args.get("secondary_indices"),
        table_name,
        fmt,
        schema_evolution=evolution,
        commit=commit,
    )
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
