"""plateau's ``dask.delayed`` API on kartoframe's plans: one task per file, one commit task.

``read_dataset_as_delayed`` plans the read from the header (as :func:`read_dataset_as_ddf`
does) and returns one ``Delayed`` per planned read task. The writers take a list of
``Delayed`` objects (or plain values) that each compute to a DataFrame, ``None``, a dict
``{"data": df}`` / ``{"<table>": df}`` or a list of those; every input becomes one write task
(writing its files and returning a summary) and one final task commits them all, or deletes
the written files and raises if any task failed.
"""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Mapping
from typing import Any

from kartoframe.api.maintenance import delete_dataset, garbage_collect_dataset
from kartoframe.errors import EmptyInputError, InvalidTypeError
from kartoframe.execution.write_resolve import Front, store_target, update_target, written_extras
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import (
    StoreInput,
    any_serializer_arg,
    arguments_of,
    dataset_args,
    read_front,
    same_parameters,
)
from kartoframe.front.docs import fill
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.arguments import str_list
from kartoframe.storage.retention import DEFAULT_RETENTION_HOURS, GRACE_HOURS

__all__ = [
    "delete_dataset__delayed",
    "garbage_collect_dataset__delayed",
    "read_dataset_as_delayed",
    "store_delayed_as_dataset",
    "update_dataset_from_delayed",
]


@same_parameters(sig.ReadDelayed)
def read_dataset_as_delayed(*args: Any, **kwargs: Any) -> list[Any]:
    """One ``dask.delayed`` object per planned read task, each computing to a DataFrame.

    The header (and the indices the predicates need) is read now; pruned partitions get no
    task. Parameters are those of :func:`kartoframe.read_dataset_as_ddf`.

    Returns
    -------
    list of dask.delayed.Delayed
        Empty if the predicates prune everything.

    Examples
    --------
    >>> import dask, pandas as pd, kartoframe as kf
    >>> df = pd.DataFrame({"p": [1, 2], "x": [3, 4]})
    >>> _ = kf.store_dataframes_as_dataset("memory://delayed-ex", "ds", [df], partition_on=["p"])
    >>> tasks = kf.read_dataset_as_delayed("ds", "memory://delayed-ex")
    >>> [len(t) for t in dask.compute(*tasks, scheduler="sync")]
    [1, 1]
    """
    from kartoframe.execution import dask_engine as de
    from kartoframe.execution.graph_delayed import read_graph

    arguments = arguments_of(read_dataset_as_delayed, args, kwargs)
    de.dask_modules()
    plan, st, loaded, output = read_front(arguments, uuid_first=True)
    return read_graph(plan, st, loaded, output, dates_as_object=arguments["dates_as_object"])


def _tasks(delayed_tasks: object) -> list[Any]:
    if not isinstance(delayed_tasks, list | tuple):
        raise InvalidTypeError(
            f"delayed_tasks must be a list of dask.delayed objects, got "
            f"{type(delayed_tasks).__name__}."
        )
    return list(delayed_tasks)


def _graph(parts: list[Any], front: Front, args: Mapping[str, Any]) -> Any:
    """The write graph of a front: one task per input, one commit task."""
    from kartoframe.execution.graph_delayed import write_graph

    assert front.target is not None, "delayed writes have no application transaction"
    return write_graph(
        parts,
        front.store,
        front.target,
        result=DatasetMetadataResult,
        serializer=any_serializer_arg(args["df_serializer"]),
        sort_partitions_by=str_list(args["sort_partitions_by"], "sort_partitions_by"),
        **written_extras(front.store, front.target, args),
    )


@fill
@same_parameters(sig.StoreDelayed)
def store_delayed_as_dataset(*args: Any, **kwargs: Any) -> Any:
    """Write the results of delayed tasks as a new dataset: one task each, one commit.

    Parameters
    ----------
    delayed_tasks
        ``Delayed`` objects (or values) computing to DataFrames (see the module doc).
    store
        Store URL, :class:`kartoframe.Store`, key-value store or factory.
    dataset_uuid
        Name of the new dataset (default: a fresh uuid, as plateau).
    metadata, df_serializer, overwrite, partition_on, secondary_indices, table_name,
    metadata_storage_format, metadata_version, sort_partitions_by
        As in :func:`kartoframe.store_dataframes_as_dataset`.
    $new_merger

    $returns_delayed

    Raises
    ------
    DatasetExistsError
        The dataset exists and ``overwrite`` is False (checked now and at commit).
    """
    arguments = arguments_of(store_delayed_as_dataset, args, kwargs)
    parts = _tasks(arguments.pop("delayed_tasks"))
    if arguments["dataset_uuid"] is None:
        arguments["dataset_uuid"] = _uuid.uuid4().hex
    return _graph(parts, store_target(arguments), arguments)


@fill
@same_parameters(sig.UpdateDelayed)
def update_dataset_from_delayed(*args: Any, **kwargs: Any) -> Any:
    """Add the results of delayed tasks to a dataset (created if missing); one commit.

    ``delete_scope`` removes matching partitions in the same commit; the header read now
    must still be current at commit (else :class:`kartoframe.CommitConflictError`).
    Parameters as in :func:`kartoframe.update_dataset_from_ddf`; ``metadata_merger`` is
    accepted for plateau compatibility (metadata is merged key by key).

    $returns_delayed
    """
    arguments = arguments_of(update_dataset_from_delayed, args, kwargs)
    parts = _tasks(arguments.pop("delayed_tasks"))
    front = update_target(arguments)
    if front.target is not None and front.target.base is None and not parts:
        raise EmptyInputError(f"Dataset {front.uuid!r} does not exist and no data was given.")
    return _graph(parts, front, arguments)


def delete_dataset__delayed(
    dataset_uuid: str | None = None, store: StoreInput | None = None, factory: Any = None
) -> Any:
    """A ``Delayed`` deleting the dataset (one task: :func:`kartoframe.delete_dataset`).

    The deletion is one commit of the transaction protocol (files, indices and header),
    so it is not split into per-file tasks.
    """
    from dask.delayed import delayed

    uuid, st = dataset_args(dataset_uuid, store, factory, uuid_first=True)
    return delayed(delete_dataset, pure=False)(uuid, st)


def garbage_collect_dataset__delayed(
    dataset_uuid: str | None = None,
    store: StoreInput | None = None,
    chunk_size: int = 100,
    factory: Any = None,
    retention_hours: float = DEFAULT_RETENTION_HOURS,
    *,
    grace_hours: float = GRACE_HOURS,
    force: bool = False,
) -> list[Any]:
    """``Delayed`` tasks deleting the files the dataset no longer references.

    The files are chosen now, by the computation of
    ``kf.garbage_collect_dataset(..., dry_run=True)`` (same ``retention_hours``,
    ``grace_hours`` and ``force``; plateau's behaviour is ``retention_hours=0``), and
    deleted in tasks of ``chunk_size`` keys.

    Returns
    -------
    list of dask.delayed.Delayed
        Each computes to the list of keys it deleted.
    """
    from kartoframe.execution.dask_engine import check_positive_int
    from kartoframe.execution.graph_delayed import delete_graph

    size = check_positive_int(chunk_size, "chunk_size")
    uuid, st = dataset_args(dataset_uuid, store, factory, uuid_first=True)
    keys = garbage_collect_dataset(
        uuid, st, retention_hours, dry_run=True, grace_hours=grace_hours, force=force
    )
    return delete_graph(st, keys, size)
