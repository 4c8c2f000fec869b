"""Write graphs over ``dask.delayed`` inputs (plateau's delayed and bag writers).

Every input (a ``Delayed`` or a plain value computing to a DataFrame, ``None``, a dict
``{"data": df}`` / ``{"<table>": df}`` or a list of those) becomes one write task through
:class:`~kartoframe.execution.dask_engine.PartitionWriter`; one final task commits all of them
through :class:`~kartoframe.execution.dask_engine.Committer`, or deletes the written files and
raises the first failure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.dask_write import WriteFailure

__all__ = ["frames_of", "write_delayed_graph"]


def frames_of(obj: object, what: str = "input") -> list[pd.DataFrame]:
    """The DataFrames of one delayed input (plateau's accepted shapes, see module doc)."""
    if obj is None:
        return []
    if isinstance(obj, pd.DataFrame):
        return [obj]
    if isinstance(obj, Mapping):
        if "data" in obj:
            return frames_of(obj["data"], what)
        if len(obj) == 1:
            return frames_of(next(iter(obj.values())), what)
        raise InvalidInputError(
            f"{what}: a dict must be {{'data': df}} or {{table: df}} (one table), got keys "
            f"{sorted(map(str, obj))}."
        )
    if isinstance(obj, list | tuple):
        return [df for item in obj for df in frames_of(item, what)]
    raise InvalidTypeError(f"{what} must compute to a DataFrame, got {type(obj).__name__}.")


@dataclasses.dataclass(frozen=True)
class _ItemsWriter:
    """A write task: every DataFrame of one input through the partition writer."""

    writer: Any

    def __call__(self, obj: object, number: int) -> list[Any]:
        try:
            frames = frames_of(obj, f"delayed input {number}")
        except Exception as e:
            return [WriteFailure(e, f"delayed input {number}")]
        return [self.writer(df, number) for df in frames]

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.writer.token)


def _commit_all(committer: Any, outcomes: Sequence[Sequence[Any]]) -> Any:
    return committer([o for items in outcomes for o in items])


def write_delayed_graph(parts: Sequence[Any], writer: Any, committer: Any) -> Any:
    """A ``Delayed``: one write task per element of ``parts``, then one commit.

    ``writer`` and ``committer`` are those of
    :func:`~kartoframe.execution.dask_write.writer_and_committer`.
    """
    from dask.delayed import delayed

    token = committer.token
    write = delayed(_ItemsWriter(writer), pure=True)
    outcomes = [
        write(p, i, dask_key_name=(f"kartoframe-write-{token}", i)) for i, p in enumerate(parts)
    ]
    return delayed(_commit_all, pure=True)(
        committer, outcomes, dask_key_name=f"kartoframe-commit-{token}"
    )
