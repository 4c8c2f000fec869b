"""Row-level upserts: ``merge_dataset`` (Delta's ``MERGE``), eager and as a dask graph."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.api._args import StoreInput, arguments_of, dataset_args, same_parameters
from kartoframe.api._docs import fill
from kartoframe.errors import InvalidTypeError
from kartoframe.execution.merge import MergePlan, load_merge, run_merge, skip_merge
from kartoframe.format.commit_args import CommitOptions
from kartoframe.format.convert import frame_to_table
from kartoframe.plan.merge import MergeResult, merge_options
from kartoframe.storage.resolve import load_dataset
from kartoframe.storage.store import Store

__all__ = ["MergeResult", "merge_dataset", "merge_dataset_from_ddf"]


@fill
def merge_dataset(
    source: Any,
    store: StoreInput | None = None,
    dataset_uuid: str | None = None,
    *,
    on: str | Sequence[str],
    when_matched: str = "update",
    when_not_matched: str = "insert",
    when_not_matched_by_source: str = "ignore",
    predicates: object = None,
    schema_evolution: str | None = None,
    dry_run: bool = False,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> MergeResult:
    """Upsert rows: match ``source`` rows to the dataset's rows on ``on`` and update,
    delete or insert them, in one commit (Delta's ``MERGE``).

    Only the files that can hold a source key are read: partition keys among ``on``
    select the partitions, per-file statistics (min/max, value lists, bloom filters) of
    the other key columns the files. Only files with a matched row are rewritten (their
    other rows unchanged, in order); all others stay. Indices and statistics are
    maintained.

    Parameters
    ----------
    source
        The rows to merge: a pandas DataFrame, a pyarrow Table or a dask DataFrame
        (then run as :func:`merge_dataset_from_ddf`'s graph on the current scheduler)
        with every column of the dataset (an update replaces whole rows). Two rows with
        the same key are an error; a key with a null never matches.
    $store_dataset
    on
        Key column(s) matching source and dataset rows.
    when_matched
        ``"update"`` (default): the source row replaces the matched row (moving it if
        its partition values changed); ``"delete"``: the matched row is removed;
        ``"ignore"``.
    when_not_matched
        ``"insert"`` (default): source rows nothing matched are appended; ``"ignore"``.
    when_not_matched_by_source
        ``"ignore"`` (default); ``"delete"``: dataset rows (selected by ``predicates``)
        that no source row matched are removed.
    predicates
        Restrict the dataset rows the merge sees (DNF, as in
        :func:`kartoframe.read_table`): rows outside are never matched or deleted.
    schema_evolution
        None or ``"none"``: the source must have the dataset's columns. ``"add_columns"``:
        it may add nullable columns.
    dry_run
        Find the candidates and count the matches; write nothing.
    $txn

    Returns
    -------
    MergeResult
        Rows matched, updated, deleted and inserted; candidate partitions and files;
        files rewritten, removed and added; the new version.

    Raises
    ------
    $not_found
    DuplicateKeyError
        Two source rows share a key.
    ColumnNotFoundError
        A key column or a dataset column is missing from the source.
    SchemaError
        A source column cannot be cast to the dataset's type, or new columns without
        ``schema_evolution="add_columns"``.
    CommitConflictError
        A concurrent commit removed or replaced a file this merge rewrote (nothing of it
        remains; run it again).

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> store = "memory://merge-example"
    >>> df = pd.DataFrame({"day": [1, 1, 2], "id": [1, 2, 3], "v": [10.0, 20.0, 30.0]})
    >>> _ = kf.store_dataframes_as_dataset(store=store, dataset_uuid="t", dfs=[df],
    ...                                    partition_on=["day"])
    >>> changes = pd.DataFrame({"day": [1, 3], "id": [2, 4], "v": [-20.0, 40.0]})
    >>> r = kf.merge_dataset(changes, store, "t", on=["day", "id"])
    >>> r.rows_updated, r.rows_inserted, r.candidate_files
    (1, 1, 1)
    >>> kf.read_table("t", store).sort_values("id")["v"].tolist()
    [10.0, -20.0, 30.0, 40.0]
    """
    if _is_dask(source):
        return merge_dataset_from_ddf(source, **_keywords(locals())).compute()  # type: ignore[no-any-return]
    st, plan, commit = prepared_merge(locals())
    return run_merge(st, plan, commit=commit, dry_run=dry_run)


def _is_dask(source: object) -> bool:
    return type(source).__module__.startswith("dask.") and hasattr(source, "npartitions")


def _keywords(args: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if k != "source"}


def prepared_merge(args: Mapping[str, Any]) -> tuple[Store, MergePlan, CommitOptions]:
    """Check the arguments of :func:`merge_dataset` (every keyword), load and plan."""
    uuid, st = dataset_args(args["dataset_uuid"], args["store"])
    if not isinstance(args["dry_run"], bool):
        raise InvalidTypeError("dry_run must be a bool.")
    source = args["source"]
    table = source if isinstance(source, pa.Table) else frame_to_table(source, what="source")
    commit = CommitOptions.of(args["app_id"], args["app_version"], args["commit_info"])
    loaded = load_dataset(st, uuid)
    options = merge_options(
        loaded.schema,
        on=args["on"],
        when_matched=args["when_matched"],
        when_not_matched=args["when_not_matched"],
        when_not_matched_by_source=args["when_not_matched_by_source"],
        schema_evolution=args["schema_evolution"],
    )
    plan = load_merge(st, uuid, table, options, predicates=args["predicates"], loaded=loaded)
    return st, plan, commit


@same_parameters(merge_dataset)
def merge_dataset_from_ddf(*args: Any, **kwargs: Any) -> Any:
    """:func:`merge_dataset` as a dask graph: one task per candidate file, one commit.

    The source (a dask DataFrame: the change set, small beside the dataset) is computed
    now, and the dataset loaded and the candidate files found; computing the result
    merges into each candidate file in its own task (any scheduler: threads, processes, a
    ``distributed`` cluster; each task holds the source and one file) and writes the
    inserts and commits once in a final task. If a task fails, the files the others wrote
    are deleted and nothing is committed. Parameters as in :func:`merge_dataset`.

    Returns
    -------
    dask.delayed.Delayed
        Computes to a :class:`MergeResult`.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd, kartoframe as kf
    >>> store = "memory://merge-ddf-example"
    >>> df = pd.DataFrame({"day": [1, 2], "id": [1, 2], "v": [1.0, 2.0]})
    >>> _ = kf.store_dataframes_as_dataset(store=store, dataset_uuid="t", dfs=[df],
    ...                                    partition_on=["day"])
    >>> changes = dd.from_pandas(pd.DataFrame({"day": [2], "id": [2], "v": [-2.0]}),
    ...                          npartitions=1)
    >>> kf.merge_dataset_from_ddf(changes, store, "t", on="id").compute().rows_updated
    1
    """
    from dask.delayed import delayed

    from kartoframe.execution.graph_delayed import merge_graph

    values = arguments_of(merge_dataset, args, kwargs)
    ddf = values["source"]
    if not _is_dask(ddf):
        raise InvalidTypeError(f"source must be a dask DataFrame, got {type(ddf).__name__}.")
    values["source"] = ddf.compute()
    st, plan, commit = prepared_merge(values)
    if values["dry_run"]:
        return delayed(run_merge, pure=False)(st, plan, commit=commit, dry_run=True)
    skipped = skip_merge(st, plan, commit)
    if skipped is not None:
        return delayed(skipped, traverse=False)
    return merge_graph(st, plan, commit)
