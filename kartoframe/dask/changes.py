"""The change data feed as a dask DataFrame: :func:`read_changes_as_ddf`."""

from __future__ import annotations

from typing import Any

from kartoframe.front.args import same_parameters
from kartoframe.front.changes import Changes, plan_feed
from kartoframe.front.docs import fill

__all__ = ["read_changes_as_ddf"]


@fill
@same_parameters(plan_feed)
def read_changes_as_ddf(*args: Any, **kwargs: Any) -> Changes[Any]:
    """:func:`~kartoframe.read_changes` as a lazy dask DataFrame: one partition per commit and kind
    of file (a worker holds one at a time), in commit order.

    The versions are fixed when this is called.

    $params_dataset
    $changes_range

    Returns
    -------
    Changes
        ``(ddf, next_version)``: a ``dask.dataframe.DataFrame`` and the cursor of the
        next read.
    """
    from kartoframe.execution.dask_changes import changes_to_ddf  # dask only when used

    st, plan = plan_feed(*args, **kwargs)
    return Changes(changes_to_ddf(plan, st), plan.next_version)
