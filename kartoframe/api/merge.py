"""Row-level upserts: ``merge_dataset`` (Delta's ``MERGE``).

The dask variant is :func:`kartoframe.dask.merge.merge_dataset_from_ddf`, the Spark one
:func:`kartoframe.spark.merge_dataset_from_sdf`; all start with
:func:`kartoframe.front.merge.prepared_merge`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kartoframe.execution.merge import run_merge
from kartoframe.front.args import StoreInput
from kartoframe.front.docs import fill
from kartoframe.front.merge import is_dask, merge_delayed, prepared_merge
from kartoframe.plan.merge import MergeResult

__all__ = ["MergeResult", "merge_dataset"]


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
        (then run as :func:`kartoframe.merge_dataset_from_ddf`'s graph on the current scheduler)
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
    if is_dask(source):
        return merge_delayed(locals()).compute()  # type: ignore[no-any-return]
    st, plan, commit = prepared_merge(locals())
    return run_merge(st, plan, commit=commit, dry_run=dry_run)
