"""The dask cube query engine: query plans become ``dd.from_map`` graphs.

Imported lazily (only by the dask cube functions), so ``import kartoframe`` works
without dask. One dask partition per :class:`~kartoframe.plan.cube_query.QueryGroup` (one
per ``partition_by`` value, or a few neighbouring cube partitions), each running
:func:`kartoframe.execution.cube_join.load_group` (every dataset's files read by the
dataset read kernel, then joined). ``meta`` is
:func:`~kartoframe.execution.cube_join.empty_result`: the exact dtypes of every
partition. dask's ``string[pyarrow]`` conversion is disabled for these collections.
Cube writes are built by :mod:`kartoframe.execution.cube_dask_write`.
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from typing import Any

import pandas as pd

from kartoframe.errors import MissingDependencyError

try:
    import dask.dataframe as dd
except ImportError as _error:  # pragma: no cover - exercised without dask
    raise MissingDependencyError("dask[dataframe]", "dask") from _error

from kartoframe.execution.cube_join import empty_result, load_group
from kartoframe.execution.dask_engine import no_string_conversion
from kartoframe.execution.read_memo import ReadMemo
from kartoframe.plan.cube_query import CubeQueryPlan, QueryGroup
from kartoframe.storage.store import Store

__all__ = ["GroupLoader", "plan_to_dataframe"]


@dataclasses.dataclass(frozen=True)
class _Group:
    """A query group as a ``from_map`` argument (cheap to tokenize)."""

    group: QueryGroup
    token: str

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("kartoframe-cube-group", self.token)


@dataclasses.dataclass(frozen=True)
class GroupLoader:
    """Loads one query group into pandas (the function of ``dd.from_map``)."""

    plan: CubeQueryPlan
    store: Store
    token: str
    #: lower-dimensional datasets read once for all the groups (see :mod:`read_memo`)
    memo: ReadMemo = dataclasses.field(default_factory=ReadMemo, compare=False, repr=False)

    def __call__(self, item: _Group) -> pd.DataFrame:
        """Run the group's scans and joins."""
        return load_group(self.plan, item.group, self.store, threads=False, memo=self.memo)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return ("kartoframe-cube-loader", self.token)


#: Without ``partition_by``, about this many cube partitions form one dask partition.
PARTITIONS_PER_TASK = 8


def plan_to_dataframe(plan: CubeQueryPlan, store: Store) -> Any:
    """A dask DataFrame of a query plan (unknown divisions).

    With ``partition_by`` every query group is one partition. Without, the groups are the
    cube partitions; neighbouring ones are combined (about :data:`PARTITIONS_PER_TASK` per
    task) so that per-task costs — reading lower-dimensional datasets, scan set-up — are
    shared.
    """
    meta = empty_result(plan)
    token = _uuid.uuid4().hex
    groups = plan.groups
    if not plan.intention.partition_by and len(groups) > 1:
        groups = plan.coalesced(-(-len(groups) // PARTITIONS_PER_TASK))
    with no_string_conversion():
        if not groups:
            return dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
        items = [_Group(g, f"{token}-{i}") for i, g in enumerate(groups)]
        return dd.from_map(  # type: ignore[no-untyped-call]
            GroupLoader(plan.slim(), store, token),
            items,
            meta=meta,
            label="query-cube",
            enforce_metadata=False,
        )
