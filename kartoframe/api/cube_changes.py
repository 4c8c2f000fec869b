"""The change feed of a cube: ``read_cube_changes``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

import pandas as pd
import pyarrow as pa

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.changes import load_changes, read_changes_table
from kartoframe.format import changes
from kartoframe.format.convert import table_to_frame
from kartoframe.format.cube import Cube
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.storage.cube_members import load_checked

__all__ = ["DATASET_COLUMN", "CubeChanges", "read_cube_changes"]

#: The column naming the cube dataset (``ktk_cube_dataset_id``) a change row comes from.
DATASET_COLUMN = "_dataset"


class CubeChanges(NamedTuple):
    """The rows of a cube's change feed read and the cursor of the next read.

    Attributes
    ----------
    rows
        The changed rows (see :func:`read_cube_changes`).
    next_version
        Per dataset id the first version this read did not cover: the
        ``start_version`` of the next read.
    """

    rows: pd.DataFrame
    next_version: dict[str, int]


def _per_dataset(
    value: object, name: str, ids: Iterable[str], unnamed: int | None
) -> dict[str, object]:
    """``value`` per dataset id: an integer (or None) for all, or a mapping (datasets it
    does not name get ``unnamed``).
    """
    if value is None or isinstance(value, int):
        return dict.fromkeys(ids, value)
    if not isinstance(value, Mapping):
        raise InvalidTypeError(
            f"{name} must be an integer or a mapping of dataset id to version, got "
            f"{type(value).__name__}."
        )
    unknown = sorted(set(value) - set(ids))
    if unknown:
        raise InvalidInputError(f"{name} names datasets the cube does not have: {unknown}.")
    return {i: value.get(i, unnamed) for i in ids}


@fill
def read_cube_changes(
    cube: Cube,
    store: StoreInput,
    *,
    start_version: int | Mapping[str, int],
    end_version: int | Mapping[str, int] | None = None,
    datasets: Iterable[str] | None = None,
) -> CubeChanges:
    """The cells the seed or an enrichment dataset changed: each cube dataset's change
    feed (:func:`kartoframe.read_changes`), one row per changed row of a dataset.

    Every row holds the cell's dimension and partition columns, the columns of the
    dataset that changed it (other datasets' columns are null), ``_dataset`` (its
    ``ktk_cube_dataset_id``) and the feed's ``_change_type``, ``_commit_version`` (the
    dataset's log version) and ``_commit_timestamp``. The seed's rows come first, then
    the other datasets' in id order, each in commit order.

    Parameters
    ----------
    cube
        The cube.
    $store
    start_version
        Per dataset the first version to read: one integer for every dataset, or a
        mapping of dataset id to version (a previous read's ``next_version``; datasets it
        does not name start at 0, e.g. one added by ``extend_cube`` since).
    end_version
        Per dataset the last version (default: each one's current version).
    datasets
        Read only these datasets (default: all).

    Returns
    -------
    CubeChanges
        ``(rows, next_version)``: a pandas DataFrame and the cursor of the next read, a
        dict of dataset id to version.

    Raises
    ------
    ChangesUnavailableError
        ``vacuum_dataset`` removed what a dataset's start version needs.
    InvalidInputError
        A dataset the cube does not have, or a version beyond a dataset's current one.
    """
    st = ensure_store(store)
    members = load_checked(cube, st)
    ids = sorted(members, key=lambda i: (i != cube.seed_dataset, i))
    if datasets is not None:
        wanted = [datasets] if isinstance(datasets, str) else list(datasets)
        unknown = sorted(set(wanted) - set(ids))
        if unknown:
            raise InvalidInputError(f"The cube has no datasets {unknown}.")
        ids = [i for i in ids if i in wanted]
    starts = _per_dataset(start_version, "start_version", ids, 0)
    ends = _per_dataset(end_version, "end_version", ids, None)
    cell = [*cube.dimension_columns, *cube.partition_columns]
    frames: list[pd.DataFrame] = []
    cursor: dict[str, int] = {}
    for ds_id in ids:
        plan = load_changes(
            st,
            cube.ktk_dataset_uuid(ds_id),
            start_version=starts[ds_id],
            end_version=ends[ds_id],
        )
        cursor[ds_id] = plan.next_version
        table = read_changes_table(st, plan)
        table = table.append_column(
            DATASET_COLUMN, pa.array([ds_id] * table.num_rows, type=pa.string())
        )
        frames.append(table_to_frame(table, plan.schema))
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    payload = [
        c
        for c in rows.columns
        if c not in cell and c != DATASET_COLUMN and c not in changes.FEED_COLUMNS
    ]
    order = [c for c in cell if c in rows.columns] + payload
    rows = rows[[*order, DATASET_COLUMN, *changes.FEED_COLUMNS]] if frames else rows
    return CubeChanges(rows, cursor)
