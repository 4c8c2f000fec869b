"""The first step of every change feed read (eager, iterator, dask, Spark)."""

from __future__ import annotations

from typing import Any, Generic, NamedTuple, TypeVar

from kartoframe.execution.changes import load_changes
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import arguments_of, ensure_store, same_parameters
from kartoframe.plan.arguments import check_uuid
from kartoframe.plan.changes import ChangePlan
from kartoframe.storage.store import Store

__all__ = ["Changes", "plan_feed"]

T = TypeVar("T")


class Changes(NamedTuple, Generic[T]):
    """The rows of a change feed read and the cursor of the next read.

    Unpack it: ``rows, cursor = kf.read_changes(..., start_version=cursor)``.

    Attributes
    ----------
    rows
        The changed rows: the dataset's columns, then ``_change_type`` (``insert``,
        ``delete``, ``update_preimage``, ``update_postimage``), ``_commit_version`` and
        ``_commit_timestamp`` (UTC), in commit order.
    next_version
        The first version this read did not cover: the ``start_version`` of the next
        read (tailing a dataset).
    """

    rows: T
    next_version: int


@same_parameters(sig.ChangesFeed)
def plan_feed(*args: Any, **kwargs: Any) -> tuple[Store, ChangePlan]:
    """The store and the planned feed of a read (every variant's first step)."""
    values = arguments_of(plan_feed, args, kwargs)
    st = ensure_store(values.pop("store"))
    return st, load_changes(st, check_uuid(values.pop("dataset_uuid")), **values)
