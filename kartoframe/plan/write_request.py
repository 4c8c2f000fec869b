"""The one write front: a frozen write request, resolved against the base once (pure).

Every dataset write (eager, iterator, dask, delayed/bag, Spark) describes itself as a
:class:`WriteRequest` — the dataset, the verb, the layout it asks for and one
:class:`~kartoframe.format.commit_args.CommitOptions` value — and
:func:`resolve_write` applies the rules against the dataset as loaded before the write:
exists / overwrite, partition keys, table name, the indices to maintain, the header
format, how the commit treats a missing dataset. The engines then adapt their input, run
the chunk kernel and commit once with the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Literal

from kartoframe.errors import (
    DatasetExistsError,
    EmptyInputError,
    InvalidInputError,
    InvalidTypeError,
)
from kartoframe.format.commit_args import NO_COMMIT_OPTIONS, CommitOptions, check_user_metadata
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.naming import MetadataFormat
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.commit_plan import check_partition_keys

__all__ = [
    "CommitOptions",
    "MetadataArg",
    "ResolvedWrite",
    "Verb",
    "WriteRequest",
    "check_update_input",
    "jsonable",
    "resolve_metadata",
    "resolve_write",
]

MetadataArg = Mapping[str, Any] | Callable[[Mapping[str, Any]], Mapping[str, Any]] | None

#: ``store``: a new dataset (``overwrite`` replaces one); ``update``: rows added to a
#: dataset (created if missing) in one commit; ``append``: files written for an existing
#: dataset, committed later (``write_single_partition``).
Verb = Literal["store", "update", "append"]


@dataclasses.dataclass(frozen=True, slots=True)
class WriteRequest:
    """What a write asks for, its arguments checked (see :func:`resolve_write`)."""

    uuid: str
    verb: Verb
    partition_on: tuple[str, ...] | None = None
    secondary_indices: tuple[str, ...] = ()
    table_name: str = "table"
    storage_format: MetadataFormat = "json"
    overwrite: bool = False
    schema_evolution: SchemaEvolution = "none"
    commit: CommitOptions = NO_COMMIT_OPTIONS


@dataclasses.dataclass(frozen=True, slots=True)
class ResolvedWrite:
    """A request resolved against the base: what the chunks and the commit use."""

    request: WriteRequest
    #: the dataset the commit builds on (None: created or overwritten)
    base: LoadedDataset | None
    partition_on: list[str]
    table_name: str
    storage_format: MetadataFormat
    #: the indices the request names (the commit creates them)
    secondary_indices: list[str]
    #: every index the written files carry (requested and maintained)
    index_columns: list[str]

    @property
    def uuid(self) -> str:
        """The dataset."""
        return self.request.uuid

    @property
    def expect_absent(self) -> bool:
        """Whether the commit expects no dataset (a create, or an update of a missing one)."""
        if self.request.verb == "store":
            return not self.request.overwrite
        return self.base is None

    @property
    def create_or_update(self) -> bool:
        """An update of a missing dataset lands as an update if another writer creates it."""
        return self.request.verb == "update"

    def chunk_arguments(self) -> dict[str, Any]:
        """The layout keywords of ``write_chunk`` (and ``write_sdf``) this write fixes."""
        return {
            "table_name": self.table_name,
            "partition_on": self.partition_on,
            "index_columns": self.index_columns,
        }

    def commit_arguments(self) -> dict[str, Any]:
        """The keywords of ``commit_write`` this write fixes (every engine commits with them)."""
        return {
            "base": self.base,
            "partition_on": self.partition_on,
            "secondary_indices": self.secondary_indices,
            "storage_format": self.storage_format,
            "table_name": self.table_name,
            "expect_absent": self.expect_absent,
            "create_or_update": self.create_or_update,
            "schema_evolution": self.request.schema_evolution,
            "commit": self.request.commit,
        }


def resolve_write(
    request: WriteRequest, base: LoadedDataset | None, *, exists: bool = False
) -> ResolvedWrite:
    """Resolve ``request`` against ``base`` (pure).

    ``store`` ignores ``base`` and refuses an existing dataset (``exists``) unless
    ``overwrite``. ``update`` and ``append`` write with the dataset's partition keys and
    table: another ``partition_on``, or a ``table_name`` other than ``"table"`` and the
    dataset's, is refused; every existing index is maintained and an existing dataset
    keeps its header format.

    Raises
    ------
    DatasetExistsError
        ``store`` on an existing dataset without ``overwrite``.
    InvalidInputError
        Incompatible partition keys or table name.
    """
    req = request
    if req.verb == "store":
        if exists and not req.overwrite:
            raise DatasetExistsError(req.uuid)
        pon = list(req.partition_on or ())
        sidx = list(req.secondary_indices)
        return ResolvedWrite(req, None, pon, req.table_name, req.storage_format, sidx, sidx)
    if base is None:
        return ResolvedWrite(
            req,
            None,
            list(req.partition_on or ()),
            req.table_name,
            req.storage_format,
            list(req.secondary_indices),
            sorted(set(req.secondary_indices)),
        )
    md = base.metadata
    if req.partition_on is not None:
        check_partition_keys(req.uuid, md.partition_keys, req.partition_on)
    pon = list(md.partition_keys)
    table_name = md.table_name
    if req.verb == "append":
        # files for a later commit_dataset: the indices the dataset lists, plus the requested
        table_name = req.table_name or md.table_name
        maintained = sorted(set(req.secondary_indices) | set(md.indices))
    else:
        if req.table_name != "table" and req.table_name != md.table_name:
            raise InvalidInputError(
                f"table_name {req.table_name!r} differs from the dataset's table {md.table_name!r}."
            )
        maintained = sorted(set(req.secondary_indices) | (md.index_columns - set(pon)))
    return ResolvedWrite(
        req, base, pon, table_name, md.storage_format, list(req.secondary_indices), maintained
    )


def check_update_input(
    target: ResolvedWrite, has_data: bool, delete_scope: object, metadata: object
) -> None:
    """An update without data needs a dataset, and a ``delete_scope`` or ``metadata``.

    Raises
    ------
    EmptyInputError
        No data, and no dataset or nothing else to change.
    """
    if has_data:
        return
    if target.base is None:
        raise EmptyInputError(f"Dataset {target.uuid!r} does not exist and no data was given.")
    if delete_scope is None and metadata is None:
        raise EmptyInputError("Nothing to update: no data, no delete_scope, no metadata.")


def resolve_metadata(
    metadata: MetadataArg, existing: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """The user metadata a write stores: ``metadata``, or ``metadata(existing)``, checked."""
    if metadata is None:
        return None
    if callable(metadata):
        metadata = metadata(dict(existing))
    if not isinstance(metadata, Mapping):
        raise InvalidTypeError(f"metadata must be a dict, got {type(metadata).__name__}.")
    bad = [k for k in metadata if not isinstance(k, str)]
    if bad:
        raise InvalidTypeError(f"metadata keys must be strings, got {bad!r}.")
    return check_user_metadata(metadata)


def jsonable(value: Any) -> Any:
    """A JSON-safe rendering of an argument, for the commit history."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
