"""Eager cube writes: build, extend, append, update and remove partitions (kartothek 5.3 names).

Every cube verb, on every engine, goes through one front
(:func:`kartoframe.front.cube_write.cube_write_front`): the
arguments become a :class:`~kartoframe.plan.cube_front.FrameWrite` (the cube's datasets
loaded once, the operation rules applied by
:func:`~kartoframe.plan.cube_front.resolve_cube_write`), which plans the write; the engine
writes the files and commits dataset by dataset, the seed last.
"""

from __future__ import annotations

import functools
from typing import Any

from kartoframe.execution.cube_write import commit_all, write_plan_files
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.cube import Cube
from kartoframe.front import cube_signatures as sig
from kartoframe.front.args import (
    StoreInput,
    arguments_of,
    same_parameters,
    verb_like,
)
from kartoframe.front.cube_args import fill
from kartoframe.front.cube_write import cube_serializer, cube_write_front, handles
from kartoframe.front.results import DatasetMetadataResult
from kartoframe.plan.conditions import Conjunction
from kartoframe.plan.cube_rules import concat_input, prepare_inputs
from kartoframe.plan.cube_write import Operation

__all__ = [
    "append_to_cube",
    "build_cube",
    "extend_cube",
    "remove_partitions",
    "update_cube",
]


def _write(
    operation: Operation,
    data: object,
    cube: Cube,
    store: StoreInput,
    *,
    df_serializer: ParquetSerializer | None = None,
    **options: Any,
) -> dict[str, DatasetMetadataResult]:
    st, fw = cube_write_front(operation, cube, store, lambda c: concat_input(data, c), **options)
    if fw.complete:  # a retried step: every dataset already records the transaction
        return handles(st, cube, fw.done)
    plan = fw.plan(cube, prepare_inputs(cube, fw.frames, fw.partition_on, fw.payload))
    chunks = write_plan_files(st, plan, cube_serializer(df_serializer))
    return handles(st, cube, fw.done, commit_all(st, plan, dict(chunks)))


@fill
@same_parameters(sig.Build)
def build_cube(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
    """Create a cube: the seed and any other datasets, in one operation.

    Parameters
    ----------
    data
        A DataFrame (the seed), a dict ``{dataset_id: DataFrame}``, or a list of those
        (concatenated per dataset).
    cube
        The cube spec.
    store
        Store URL, :class:`kartoframe.Store` or factory.
    metadata
        ``{dataset_id: {key: value}}`` user metadata per dataset.
    overwrite
        Replace an existing cube; every existing dataset must then be rewritten.
    partition_on
        ``{dataset_id: [columns]}`` for non-seed datasets (default: the cube partition
        columns; the seed's are fixed).
    df_serializer
        Default: ZSTD Parquet.
    $cube_txn

    Returns
    -------
    dict
        Dataset id -> handle of the committed dataset.

    Raises
    ------
    InvalidInputError, InvalidTypeError, SchemaError, DatasetExistsError, EmptyInputError
        Any rule of the cube write path; nothing is written then.

    $cube_examples
    >>> sorted(kf.build_cube(df, cube, "memory://docs-build"))
    ['seed']
    """
    return _write("build", **arguments_of(build_cube, args, kwargs))


extend_cube = verb_like(
    build_cube,
    "extend_cube",
    """Add (or with ``overwrite`` replace) non-seed datasets of an existing cube.

``data`` is a dict ``{dataset_id: DataFrame}`` (or a list of those). Payload columns
must not exist in other datasets (except in datasets being replaced, so
``overwrite=True`` can move columns). Other parameters as in :func:`build_cube`.
""",
    functools.partial(_write, "extend"),
)


@fill
@same_parameters(sig.Append)
def append_to_cube(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
    """Add rows to existing datasets (no removal): newer rows win per cell at query time.

    ``partition_on`` is taken from the stored datasets and all their secondary indices are
    maintained.

    Parameters
    ----------
    $cube_evolution
    app_id, app_version, commit_info, metadata, df_serializer
        As in :func:`build_cube`.
    """
    return _write("append", **arguments_of(append_to_cube, args, kwargs))


@fill
@same_parameters(sig.Update)
def update_cube(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
    """Remove partitions and append rows, in one commit per dataset.

    Parameters
    ----------
    data
        Rows to append (a frame for the seed, a dict, a list, or None).
    remove_conditions
        Conditions on cube partition columns selecting the partitions to remove from
        every touched dataset (None: remove nothing).
    ktk_cube_dataset_ids
        Datasets to touch (default: those in ``data``); data for other ids is refused.
    metadata, df_serializer
        As in :func:`build_cube`.
    $cube_evolution
    $cube_txn
    """
    return _write("update", **arguments_of(update_cube, args, kwargs))


@fill
@same_parameters(sig.Remove)
def remove_partitions(*args: Any, **kwargs: Any) -> dict[str, DatasetMetadataResult]:
    """Remove the physical partitions selected by conditions on cube partition columns.

    A dataset without partition keys (or not partitioned by the condition's columns) loses
    all its partitions, as in kartothek; ``conditions=None`` removes everything.

    Parameters
    ----------
    conditions
        Conditions on cube partition columns only.
    ktk_cube_dataset_ids
        Datasets to touch (default: all).
    metadata
        ``{dataset_id: {key: value}}``: keys to set (none can be deleted).
    $cube_txn
    """
    options = arguments_of(remove_partitions, args, kwargs)
    conditions = options.pop("conditions")
    return _write("remove", data=None, remove_conditions=Conjunction(conditions), **options)
