"""Dask cube queries and writes: ``query_cube_dataframe`` and
``build/extend/append/update_cube_from_dataframe``.

A query is planned now (:func:`~kartoframe.front.cube_query.plan_cube_query`); its tasks
read the files. Every write validates what can be validated without computing the data (input types,
columns of the frames' ``meta``, seed and dimension rules, payload ownership, schemas
against the stored datasets, the resulting cube) **before** building the graph, and
returns a ``dask.delayed`` object. Computing it writes each partition in its own task
(rows validated there: NULLs, duplicate cells within the partition) and finally commits
one dataset at a time, the seed last; if anything fails no header changes and the files
written by the graph are deleted.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.cube_resolve import frames_by_dataset
from kartoframe.execution.cube_write import CubeWriteJob
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.convert import frame_to_table
from kartoframe.format.cube import Cube, str_tuple
from kartoframe.front import cube_signatures as sig
from kartoframe.front.args import StoreInput, arguments_of, same_parameters, verb_like
from kartoframe.front.cube_args import check_cube
from kartoframe.front.cube_query import plan_cube_query
from kartoframe.front.cube_write import cube_serializer, cube_write_front, handles
from kartoframe.plan.cube_write import Operation, check_user_frame

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = [
    "append_to_cube_from_dataframe",
    "build_cube_from_dataframe",
    "extend_cube_from_dataframe",
    "query_cube_dataframe",
    "update_cube_from_dataframe",
]


@same_parameters(sig.Query)
def query_cube_dataframe(*args: Any, **kwargs: Any) -> dd.DataFrame:
    """Query a cube as a dask DataFrame (one partition per query group).

    Same semantics and arguments as :func:`~kartoframe.query_cube`; ``meta`` has the exact result
    dtypes. Planning happens now (metadata and needed indices); data files are read by
    the tasks.
    """
    from kartoframe.execution.cube_dask import plan_to_dataframe

    # one frame per group: the same integer dtypes in all of them
    arguments = arguments_of(query_cube_dataframe, args, kwargs)
    plan, st = plan_cube_query(**arguments, consistent_integers=True)
    result: dd.DataFrame = plan_to_dataframe(plan, st)
    return result


def _dask_frame(ds_id: str, ddf: Any) -> Any:
    """A dataset's dask input, checked on its ``meta`` (bytes column names decoded)."""
    if ddf is not None and not hasattr(ddf, "to_delayed"):
        raise InvalidTypeError(
            f'Provided DataFrame is not a dask.dataframe.DataFrame or None, but is a "'
            f'{type(ddf).__name__}"'
        )
    check_user_frame(ds_id, getattr(ddf, "_meta", ddf))
    if ddf is None:
        return None
    renames = {c: c.decode("utf-8") for c in ddf.columns if isinstance(c, bytes)}
    bad = [c for c in ddf.columns if not isinstance(c, str | bytes)]
    if bad:
        raise InvalidTypeError(f"Object of type {type(bad[0]).__name__} is not a string: {bad[0]}")
    return ddf.rename(columns=renames) if renames else ddf


def _write_dask(
    operation: Operation,
    data: object,
    cube: Cube,
    store: StoreInput,
    *,
    shuffle: bool = False,
    num_buckets: int = 1,
    bucket_by: Iterable[str] | None = None,
    df_serializer: ParquetSerializer | None = None,
    **options: Any,
) -> Any:
    from dask.delayed import delayed

    from kartoframe.execution.cube_dask_write import write_graph

    check_cube(cube)
    if not isinstance(num_buckets, int) or isinstance(num_buckets, bool) or num_buckets < 1:
        raise InvalidInputError(f"num_buckets must be an int >= 1, got {num_buckets!r}.")
    buckets = str_tuple(bucket_by, "bucket_by")
    adapt = functools.partial(frames_by_dataset, data, check=_dask_frame)
    st, fw = cube_write_front(operation, cube, store, adapt, **options)
    if fw.complete:  # a retried step: every dataset already records the transaction
        return delayed(dict, pure=True)(handles(st, cube, fw.done))
    inputs = fw.schema_inputs(
        cube,
        lambda ddf: ddf.columns,
        lambda ds_id, ddf: frame_to_table(ddf._meta, what=f'the meta of dataset "{ds_id}"').schema,
    )
    plan = fw.plan(cube, inputs)
    job = CubeWriteJob(st, plan, fw.frames, cube_serializer(df_serializer), operation != "update")
    graph = write_graph(job, shuffle=shuffle, num_buckets=num_buckets, bucket_by=buckets)
    return delayed(handles, pure=True)(st, cube, fw.done, graph)


@same_parameters(sig.DaskBuild)
def build_cube_from_dataframe(*args: Any, **kwargs: Any) -> Any:
    """Build a cube from dask DataFrames (a frame for the seed, or ``{dataset_id: ddf}``).

    Parameters
    ----------
    shuffle
        Shuffle rows so each physical partition is written by one task (one file per
        partition value and bucket instead of one per input partition and value).
    num_buckets
        With ``shuffle``: files per partition value.
    bucket_by
        With ``shuffle``: columns hashed to choose the bucket (default: all non-partition
        columns).

    Other parameters as in :func:`kartoframe.build_cube` (including ``app_id``,
    ``app_version`` and ``commit_info``).

    Returns
    -------
    dask.delayed.Delayed
        Computing it writes the cube and returns ``{dataset_id: handle}``.
    """
    return _write_dask("build", **arguments_of(build_cube_from_dataframe, args, kwargs))


extend_cube_from_dataframe = verb_like(
    build_cube_from_dataframe,
    "extend_cube_from_dataframe",
    """Add non-seed datasets from dask DataFrames (see :func:`kartoframe.extend_cube`).

``app_id``, ``app_version`` and ``commit_info`` work as there.
""",
    functools.partial(_write_dask, "extend"),
)


@same_parameters(sig.DaskAppend)
def append_to_cube_from_dataframe(*args: Any, **kwargs: Any) -> Any:
    """Append dask DataFrames to existing datasets (see :func:`kartoframe.append_to_cube`).

    ``schema_evolution``, ``app_id``, ``app_version`` and ``commit_info`` work as there.
    """
    return _write_dask("append", **arguments_of(append_to_cube_from_dataframe, args, kwargs))


@same_parameters(sig.DaskUpdate)
def update_cube_from_dataframe(*args: Any, **kwargs: Any) -> Any:
    """Remove partitions and append dask DataFrames, one commit per dataset.

    See :func:`kartoframe.update_cube` (``schema_evolution``, ``app_id``, ``app_version``
    and ``commit_info`` work as there).
    """
    return _write_dask("update", **arguments_of(update_cube_from_dataframe, args, kwargs))
