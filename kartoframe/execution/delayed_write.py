"""Write graphs over ``dask.delayed`` inputs (plateau's delayed and bag writers).

Every input (a ``Delayed`` or a plain value computing to a DataFrame, ``None``, a dict
``{"data": df}`` / ``{"<table>": df}`` or a list of those) becomes one write task through
:class:`~kartoframe.execution.dask_engine.PartitionWriter`; one final task commits all of them
through :class:`~kartoframe.execution.dask_engine.Committer`, or deletes the written files and
raises the first failure.
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution import dask_engine as de
from kartoframe.execution.dask_engine import WriteFailure
from kartoframe.execution.write import DataSerializer
from kartoframe.format.dataset import LoadedDataset
from kartoframe.storage.resolve import bloom_columns_of
from kartoframe.storage.store import Store

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


def write_delayed_graph(
    parts: Sequence[Any],
    result: Callable[[str, Store], Any],
    st: Store,
    uuid: str,
    *,
    base: LoadedDataset | None,
    partition_on: list[str],
    secondary_indices: list[str],
    index_columns: list[str],
    serializer: DataSerializer,
    sort_partitions_by: list[str],
    metadata: Mapping[str, Any] | None,
    storage_format: str,
    table_name: str,
    expect_absent: bool,
    remove_labels: set[str] | None = None,
    create_or_update: bool = False,
) -> Any:
    """A ``Delayed``: one write task per element of ``parts``, then one commit.

    ``result`` turns the committed dataset into the value the graph computes to; the other
    arguments are those of :class:`~kartoframe.execution.dask_engine.PartitionWriter` and
    :func:`~kartoframe.execution.write.commit_write`.
    """
    from dask.delayed import delayed

    token = _uuid.uuid4().hex
    writer = de.PartitionWriter(
        store=st,
        dataset_uuid=uuid,
        table_name=table_name,
        partition_on=tuple(partition_on),
        index_columns=tuple(index_columns),
        serializer=serializer,
        sort_partitions_by=tuple(sort_partitions_by),
        base_schema=base.schema if base is not None else None,
        token=token,
        bloom_filter_columns=bloom_columns_of(base),
    )
    kwargs: dict[str, Any] = {
        "partition_on": partition_on,
        "secondary_indices": secondary_indices,
        "metadata": metadata,
        "storage_format": storage_format,
        "table_name": table_name,
        "expect_absent": expect_absent,
    }
    if remove_labels:
        kwargs["remove_labels"] = remove_labels
    if create_or_update:  # an update of a missing dataset lands as an append if it appears
        kwargs["create_or_update"] = True
    committer = de.Committer(
        store=st,
        dataset_uuid=uuid,
        base=base,
        commit_kwargs=kwargs,
        result=result,
        token=token,
    )
    write = delayed(_ItemsWriter(writer), pure=True)
    outcomes = [
        write(p, i, dask_key_name=(f"kartoframe-write-{token}", i)) for i, p in enumerate(parts)
    ]
    return delayed(_commit_all, pure=True)(
        committer, outcomes, dask_key_name=f"kartoframe-commit-{token}"
    )
