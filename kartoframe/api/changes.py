"""The change data feed: ``read_changes`` and its iterator variant.

Every variant returns a :class:`~kartoframe.front.changes.Changes` pair: the rows (a
pandas DataFrame, an iterator of them; a dask DataFrame from
:func:`kartoframe.dask.changes.read_changes_as_ddf`) and the cursor to pass as
``start_version`` next time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd

from kartoframe.execution.changes import iter_change_tables, read_changes_table
from kartoframe.format.convert import table_to_frame
from kartoframe.front.args import same_parameters
from kartoframe.front.changes import Changes, plan_feed
from kartoframe.front.docs import fill
from kartoframe.plan.changes import ChangePlan

__all__ = ["Changes", "read_changes", "read_changes__iterator"]


def _frame(plan: ChangePlan, table: Any) -> pd.DataFrame:
    return table_to_frame(table, plan.schema)


@fill
@same_parameters(plan_feed)
def read_changes(*args: Any, **kwargs: Any) -> Changes[pd.DataFrame]:
    """The rows that the commits ``start_version`` to ``end_version`` inserted, deleted
    and updated (Delta Lake's change data feed).

    Appends give ``insert`` rows; replaced partitions (``delete_scope``, cube updates),
    deleted partitions and overwrites give ``delete`` rows for the rows removed and
    ``insert`` rows for the rows added; merges record their changes exactly, in change
    files written with the commit (``update_preimage`` / ``update_postimage`` pairs,
    ``delete``, ``insert``). Compaction (``optimize_dataset``), index builds and metadata
    commits change no row. Only the files of the requested commits are read.

    $params_dataset
    $changes_range

    Returns
    -------
    Changes
        ``(rows, next_version)``: a pandas DataFrame and the cursor of the next read.

    Raises
    ------
    $not_found
    ChangesUnavailableError
        ``vacuum_dataset`` removed what the changes of ``start_version`` need.
    InvalidInputError
        A version beyond the current one.

    $examples
    >>> url = "memory://changes-example"
    >>> df = pd.DataFrame({"id": [1, 2], "v": [1.0, 2.0]})
    >>> _ = kf.store_dataframes_as_dataset(url, "ds", [df])
    >>> _ = kf.merge_dataset(pd.DataFrame({"id": [2, 3], "v": [20.0, 3.0]}), url, "ds", on="id")
    >>> rows, cursor = kf.read_changes("ds", url, start_version=1)
    >>> rows[["id", "v", "_change_type", "_commit_version"]]
       id     v      _change_type  _commit_version
    0   2   2.0   update_preimage                1
    1   2  20.0  update_postimage                1
    2   3   3.0            insert                1
    >>> cursor, len(kf.read_changes("ds", url, start_version=cursor).rows)
    (2, 0)
    """
    st, plan = plan_feed(*args, **kwargs)
    return Changes(_frame(plan, read_changes_table(st, plan)), plan.next_version)


@fill
@same_parameters(plan_feed)
def read_changes__iterator(*args: Any, **kwargs: Any) -> Changes[Iterator[pd.DataFrame]]:
    """:func:`read_changes` as an iterator of DataFrames, one per commit and kind of file
    (memory holds one at a time), in commit order.

    The versions are fixed when this is called; the iterator reads lazily.

    $params_dataset
    $changes_range

    Returns
    -------
    Changes
        ``(frames, next_version)``: an iterator of pandas DataFrames and the cursor of
        the next read.
    """
    st, plan = plan_feed(*args, **kwargs)
    frames = (_frame(plan, t) for t in iter_change_tables(st, plan))
    return Changes(frames, plan.next_version)
