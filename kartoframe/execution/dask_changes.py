"""The change feed on dask: one partition per task of a
:class:`~kartoframe.plan.changes.ChangePlan` (a commit's change files, or the data files
it added or removed), each read by :func:`kartoframe.execution.changes.read_change_task`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from kartoframe.execution.changes import read_change_task
from kartoframe.execution.dask_engine import dask_modules, no_string_conversion
from kartoframe.format.convert import table_to_frame
from kartoframe.plan.changes import ChangePlan
from kartoframe.storage.store import Store

__all__ = ["changes_meta", "changes_to_ddf"]


def changes_meta(plan: ChangePlan) -> pd.DataFrame:
    """The empty frame every partition of the feed matches."""
    return table_to_frame(plan.output_schema.empty_table(), plan.schema)


class _TaskReader:
    """Reads task ``i`` of a plan as a pandas DataFrame (the function of ``from_map``)."""

    def __init__(self, plan: ChangePlan, store: Store) -> None:
        self.plan, self.store = plan, store

    def __call__(self, i: int) -> pd.DataFrame:
        if i < 0:  # the one partition of an empty feed
            return changes_meta(self.plan)
        table = read_change_task(self.store, self.plan, self.plan.tasks[i])
        return table_to_frame(table, self.plan.schema)


def changes_to_ddf(plan: ChangePlan, store: Store) -> Any:
    """The feed of ``plan`` as a lazy dask DataFrame (one partition per task, in commit
    order; one empty partition if there is no change).
    """
    _, dd = dask_modules()
    with no_string_conversion():
        return dd.from_map(
            _TaskReader(plan, store),
            list(range(len(plan.tasks))) or [-1],
            meta=changes_meta(plan),
            label="kartoframe-changes",
            enforce_metadata=False,
        )
