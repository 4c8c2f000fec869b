"""Cube write input rules: the shape of the input and the rules on its rows (pure).

The input shapes (a frame for the seed, ``{dataset_id: frame}``, lists of those), the
metadata dict, ``partition_on`` (fixed for the seed), column names (missing seed /
dimension / partition columns, duplicates, payload columns already owned by another
dataset, unspecified cube partition columns) and the rows (NULLs in dimension, partition
and index columns, duplicate cells), checked before any byte is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.format.commit_args import check_user_metadata
from kartoframe.format.convert import frame_to_table
from kartoframe.format.cube import Cube, payload_subset, str_tuple

__all__ = [
    "InputData",
    "concat_input",
    "prepare_inputs",
    "check_frame_columns",
    "check_metadata",
    "check_nulls",
    "check_user_frame",
    "duplicate_mask",
    "is_frame",
    "normalize_columns",
    "normalize_input",
    "prepare_frame",
    "prepare_partition_on",
    "sort_keys",
]


@dataclasses.dataclass(frozen=True, slots=True)
class InputData:
    """One dataset's input: a prepared table (eager) or only its schema (dask meta)."""

    schema: pa.Schema
    table: pa.Table | None


def is_frame(obj: object) -> bool:
    """A pandas DataFrame, or an object that calls itself one (dask, Spark)."""
    return isinstance(obj, pd.DataFrame) or type(obj).__name__ == "DataFrame"


def normalize_input(data: object, cube: Cube) -> dict[str, list[Any]]:
    """``df`` -> ``{seed: [df]}``; ``{id: df}`` -> lists; a list of those -> concatenated lists.

    Raises
    ------
    InvalidTypeError
        Not a frame, dict or list.
    InvalidUUIDError
        A dataset id is not a valid name (or contains ``++``).
    """
    parts = [data] if isinstance(data, dict) or is_frame(data) or data is None else data
    if not isinstance(parts, list | tuple):
        raise InvalidTypeError(
            "data must be a DataFrame, a dict {dataset_id: DataFrame} or a list of those, got "
            f"{type(data).__name__}."
        )
    out: dict[str, list[Any]] = {}
    for part in parts:
        dct = part if isinstance(part, dict) else {cube.seed_dataset: part}
        for ds_id, df in dct.items():
            cube.ktk_dataset_uuid(ds_id)  # validates the id
            out.setdefault(ds_id, []).append(df)
    return out


def check_metadata(metadata: object, dataset_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Validate ``metadata`` = ``{dataset_id: {key: value}}`` for announced ids only."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidTypeError(
            f"Provided metadata should be a dict but is {type(metadata).__name__}"
        )
    unknown = sorted(set(metadata) - set(dataset_ids))
    if unknown:
        raise InvalidInputError(
            "Provided metadata for otherwise unspecified ktk_cube_dataset_ids: "
            + ", ".join(map(str, unknown))
        )
    for k in sorted(metadata):
        v = metadata[k]
        if not isinstance(v, dict):
            raise InvalidTypeError(
                f"Provided metadata for dataset {k} should be a dict but is {type(v).__name__}"
            )
        check_user_metadata(v, what=f"metadata of dataset {k}")
    return {k: dict(v) for k, v in metadata.items()}


def prepare_partition_on(
    cube: Cube, dataset_ids: Iterable[str], partition_on: object
) -> dict[str, tuple[str, ...]]:
    """``partition_on`` per dataset (default: the cube partition columns; fixed for the seed)."""
    if partition_on is None:
        partition_on = {}
    if not isinstance(partition_on, dict):
        raise InvalidTypeError(
            "partition_on must be a dict {dataset_id: [columns]}, got "
            f"{type(partition_on).__name__}"
        )
    out: dict[str, tuple[str, ...]] = {}
    for ds_id in sorted(dataset_ids):
        raw = partition_on.get(ds_id, cube.partition_columns)
        if isinstance(raw, dict | set | frozenset):
            str_tuple(raw, f"partition_on of dataset {ds_id}")
        po = tuple(raw) if not isinstance(raw, str) else (raw,)
        if ds_id == cube.seed_dataset and po != cube.partition_columns:
            raise InvalidInputError(
                f"Seed dataset {ds_id} must have the following, fixed partition-on attribute: "
                f"{', '.join(cube.partition_columns)}"
            )
        if len(set(po)) != len(po):
            raise InvalidInputError(
                f"partition-on attribute of dataset {ds_id} contains duplicates: {', '.join(po)}"
            )
        out[ds_id] = po
    return out


def normalize_columns(df: pd.DataFrame) -> pd.DataFrame:
    """Column names as ``str`` (bytes decoded); other types are refused."""
    names = []
    changed = False
    for c in df.columns:
        if isinstance(c, bytes):
            names.append(c.decode("utf-8"))
            changed = True
        elif isinstance(c, str):
            names.append(c)
        else:
            raise InvalidTypeError(f"Object of type {type(c).__name__} is not a string: {c}")
    if not changed:
        return df
    out = df.copy(deep=False)
    out.columns = names
    return out


def check_frame_columns(
    ds_id: str,
    columns: Sequence[str],
    cube: Cube,
    existing_payload: set[str],
    partition_on: Sequence[str],
) -> None:
    """Column-level rules (they only need the column names)."""
    cols = set(columns)
    if len(cols) != len(columns):
        raise InvalidInputError(
            f'Duplicate columns found in dataset "{ds_id}": {", ".join(map(str, columns))}'
        )
    if ds_id == cube.seed_dataset:
        missing = sorted(set(cube.dimension_columns) - cols)
        if missing:
            raise InvalidInputError(
                f'Missing dimension columns in seed data "{ds_id}": {", ".join(missing)}'
            )
    elif not set(cube.dimension_columns) & cols:
        raise InvalidInputError(
            f'Dataset "{ds_id}" must have at least 1 of the following dimension columns: '
            f"{', '.join(cube.dimension_columns)}"
        )
    missing_p = sorted(set(partition_on) - cols)
    if missing_p:
        raise InvalidInputError(
            f'Missing partition columns in dataset "{ds_id}": {", ".join(missing_p)}'
        )
    overlap = sorted(payload_subset(cols, cube) & existing_payload)
    if overlap:
        raise InvalidInputError(
            f'Payload written in "{ds_id}" is already present in cube: {", ".join(overlap)}'
        )
    unspecified = sorted((cols - set(partition_on)) & set(cube.partition_columns))
    if unspecified:
        raise InvalidInputError(
            f"Unspecified but provided partition columns in {ds_id}: {', '.join(unspecified)}"
        )


def check_user_frame(ds_id: str, df: object) -> None:
    """The input is a DataFrame (or None) without sparse columns."""
    if df is None:
        return
    if not is_frame(df):
        raise InvalidTypeError(
            f'Provided DataFrame is not a pandas.DataFrame or None, but is a "{type(df).__name__}"'
        )
    dtypes = getattr(df, "dtypes", [])
    if any(isinstance(t, pd.SparseDtype) for t in dtypes):
        raise InvalidTypeError("Sparse data is not supported.")


def check_nulls(ds_id: str, table: pa.Table, cube: Cube, partition_on: Sequence[str]) -> None:
    """No NULL in partition, dimension or index columns."""
    names = set(table.column_names)
    for what, cols in (
        ("partition", set(partition_on)),
        ("dimension", set(cube.dimension_columns) & names),
        ("index", set(cube.index_columns) & names),
    ):
        for col in sorted(cols):
            if col in names and table[col].null_count:
                raise InvalidInputError(
                    f'Found NULL-values in {what} column "{col}" of dataset "{ds_id}"'
                )


def duplicate_mask(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """On a table sorted by ``keys``: True where a row has the same key as the next row."""
    n = table.num_rows
    if n < 2 or not keys:
        return np.zeros(n, dtype=bool)
    same = np.ones(n - 1, dtype=bool)
    for k in keys:
        col = table[k].combine_chunks()
        a, b = col.slice(0, n - 1), col.slice(1)
        eq = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same &= np.asarray(pc.or_(eq, both_null).to_numpy(zero_copy_only=False), dtype=bool)
    return np.append(same, False)


def sort_keys(cube: Cube, columns: Iterable[str]) -> list[str]:
    """Cube partition columns then dimension columns, those present."""
    cols = set(columns)
    return [c for c in (*cube.partition_columns, *cube.dimension_columns) if c in cols]


def _duplicate_error(ds_id: str, table: pa.Table, keys: list[str], mask: np.ndarray) -> None:
    df = table.to_pandas()
    first = int(np.flatnonzero(mask)[0])
    example = df.iloc[first]
    same_key = np.ones(len(df), dtype=bool)
    for k in keys:
        same_key &= (df[k] == example[k]).to_numpy()
    dup = df.loc[same_key]
    ident = {c for c in dup.columns if dup[c].nunique(dropna=False) == 1}
    show_id = sorted(ident - set(keys))
    show_nonid = sorted(set(df.columns) - ident)
    keys_text = example[sorted(keys)].to_string()
    ident_text = example[show_id].to_string() if show_id else "n/a"
    nonid_text = dup[show_nonid].to_string() if show_nonid else "n/a"
    raise InvalidInputError(
        f'Found duplicate cells by [{", ".join(sorted(keys))}] in dataset "{ds_id}", example:\n'
        f"\nKeys:\n{keys_text}\n\nIdentical Payload:\n{ident_text}\n\n"
        f"Non-Idential Payload:\n{nonid_text}"
    )


def prepare_frame(
    ds_id: str,
    df: pd.DataFrame | pa.Table,
    cube: Cube,
    partition_on: Sequence[str],
) -> pa.Table:
    """Data-level rules and normalisation of one dataset's rows.

    Returns an Arrow table sorted (stably) by cube partition then dimension columns, with
    ``str`` column names and the index dropped.

    Raises
    ------
    InvalidInputError
        NULLs in dimension/partition/index columns, duplicate cells.
    """
    table = df if isinstance(df, pa.Table) else frame_to_table(normalize_columns(df), what=ds_id)
    check_nulls(ds_id, table, cube, partition_on)
    keys = sort_keys(cube, table.column_names)
    if keys and table.num_rows > 1:
        order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys])
        if not _is_identity(order):
            table = table.take(order)
        mask = duplicate_mask(table, keys)
        if mask.any():
            _duplicate_error(ds_id, table, keys, mask)
    return table


def _is_identity(order: pa.Array) -> bool:
    arr = order.to_numpy(zero_copy_only=False)
    return bool(len(arr) == 0 or (arr[0] == 0 and np.all(np.diff(arr) == 1)))


def _concat(frames: list[Any]) -> Any:
    frames = [f for f in frames if f is not None]
    for f in frames:
        if not isinstance(f, pd.DataFrame):
            check_user_frame("", f)
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    return pd.concat([normalize_columns(f) for f in frames], ignore_index=True)


def concat_input(data: object, cube: Cube) -> dict[str, Any]:
    """The eager input as one frame per dataset (None: nothing given; see
    :func:`normalize_input`).
    """
    if data is None:
        return {}
    return {k: _concat(v) for k, v in normalize_input(data, cube).items()}


def prepare_inputs(
    cube: Cube,
    data: Mapping[str, Any],
    partition_on: Mapping[str, tuple[str, ...]],
    existing_payload: set[str],
) -> dict[str, InputData | None]:
    """Check and prepare every dataset's rows (eager writes)."""
    out: dict[str, InputData | None] = {}
    for ds_id in sorted(data):
        df = data[ds_id]
        check_user_frame(ds_id, df)
        if df is None:
            out[ds_id] = None
            continue
        df = normalize_columns(df)
        check_frame_columns(
            ds_id, [str(c) for c in df.columns], cube, existing_payload, partition_on[ds_id]
        )
        if df.empty:
            out[ds_id] = None
            continue
        table = prepare_frame(ds_id, df, cube, partition_on[ds_id])
        out[ds_id] = InputData(table.schema, table)
    return out
