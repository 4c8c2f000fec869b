"""A straightforward pandas implementation of the cube query semantics (the test oracle).

It works on the frames that were written (per dataset, in commit order), never on the
store, and implements the rules of the reference (kartothek 5.3) directly:

* every dataset is filtered by the conditions on its own columns (SQL semantics: NULL
  never matches), then de-duplicated keeping the last row per cell, where a cell is the
  dataset's query dimension columns plus its partition keys that are cube partition
  columns (plus its other ``partition_by`` columns: groups filter before the overlay);
* the seed is inner-joined with restrictive datasets (conditions or ``partition_by`` on a
  column that is neither a dimension nor a cube partition column) and left-joined with
  the others, on the shared dimension and cube partition columns;
* datasets contributing no requested payload are not joined at all;
* output columns are sorted, rows sorted by query dimension then partition columns, one
  frame per ``partition_by`` value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

import kartoframe as kf

Literal = tuple[str, str, Any]


class ProjectionError(Exception):
    """The query would project a dataset that contributes payload."""


def _mask(df: pd.DataFrame, lit: Literal) -> np.ndarray:
    col, op, value = lit
    s = df[col]
    notna = s.notna().to_numpy()
    if op == "in":
        m = s.isin(list(value)).to_numpy()
    elif op == "in_interval":
        start, stop = value
        m = np.ones(len(df), dtype=bool)
        if start is not None:
            m &= (s >= start).fillna(False).to_numpy(dtype=bool)
        if stop is not None:
            m &= (s < stop).fillna(False).to_numpy(dtype=bool)
    else:
        ops = {
            "==": s.__eq__,
            "!=": s.__ne__,
            "<": s.__lt__,
            "<=": s.__le__,
            ">": s.__gt__,
            ">=": s.__ge__,
        }
        m = ops[op](value).fillna(False).to_numpy(dtype=bool)
    return np.asarray(m, dtype=bool) & notna


def _file_order(cube: kf.Cube, df: pd.DataFrame) -> pd.DataFrame:
    """Rows of one write in file order: sorted by partition then dimension columns."""
    keys = [c for c in (*cube.partition_columns, *cube.dimension_columns) if c in df.columns]
    return df.sort_values(keys, kind="stable") if keys else df


def reference_query(
    cube: kf.Cube,
    written: Mapping[str, Sequence[pd.DataFrame]],
    partition_keys: Mapping[str, Sequence[str]],
    conditions: Sequence[Literal] = (),
    datasets: Sequence[str] | None = None,
    dimension_columns: Sequence[str] | None = None,
    partition_by: Sequence[str] | None = None,
    payload_columns: Sequence[str] | None = None,
) -> list[pd.DataFrame]:
    """The expected result frames of a query."""
    # an interval without bounds restricts nothing (kartothek: an "inactive" condition)
    conditions = [c for c in conditions if not (c[1] == "in_interval" and c[2] == (None, None))]
    ids = sorted(datasets if datasets is not None else written)
    frames = {
        d: pd.concat([_file_order(cube, f) for f in written[d]], ignore_index=True) for d in ids
    }
    dims = list(dimension_columns or cube.dimension_columns)
    pby = list(partition_by or [])
    available = set().union(*(set(f.columns) for f in frames.values()))
    payload = set(payload_columns) if payload_columns is not None else available
    output = sorted(set(pby) | set(dims) | payload | set(cube.partition_columns))
    cond_cols = {c for c, _, _ in conditions}
    special = set(cube.dimension_columns) | set(cube.partition_columns)
    tables: dict[str, pd.DataFrame] = {}
    roles: dict[str, str] = {}
    keys: dict[str, list[str]] = {}
    for d in ids:
        df = frames[d]
        cols = set(df.columns)
        is_seed = d == cube.seed_dataset
        wanted = set(output) | set(dims) | (cols & cond_cols)
        if not is_seed:
            wanted -= set(cube.partition_columns)
        contributes = (cols & wanted) - special
        if not is_seed and not contributes:
            continue
        dimensionality = cols & set(cube.dimension_columns)
        if contributes and not dimensionality <= set(dims):
            raise ProjectionError(d)
        for lit in conditions:
            if lit[0] in cols:
                df = df.loc[_mask(df, lit)]
        k = [c for c in dims if c in cols]
        k += [c for c in cube.partition_columns if c in partition_keys[d]]
        dedupe = k + [
            c for c in pby if c in cols and c not in cube.partition_columns and c not in k
        ]
        df = df.drop_duplicates(subset=dedupe, keep="last")
        restrictive = bool(((cond_cols | set(pby)) - special) & cols)
        roles[d] = "seed" if is_seed else ("inner" if restrictive else "left")
        keys[d] = k
        keep = [c for c in df.columns if c in wanted or c in k]
        tables[d] = df[keep]
    out = tables[cube.seed_dataset]
    for role in ("inner", "left"):
        for d in sorted(tables):
            if roles[d] != role:
                continue
            right = tables[d]
            right = right[[c for c in right.columns if c in keys[d] or c not in out.columns]]
            out = out.merge(right, on=keys[d], how=role)
    out = out[output]
    out = out.sort_values(dims + list(cube.partition_columns), kind="stable")
    out = out.reset_index(drop=True)
    if out.empty:
        return []
    if not pby:
        return [out]
    return [g.reset_index(drop=True) for _, g in out.groupby(pby, sort=True, dropna=True)]


def canonical(df: pd.DataFrame) -> pd.DataFrame:
    """Values only: numbers as float (NULL as NaN), everything else as object (NULL None)."""
    out = {}
    for c in df.columns:
        s = df[c]
        if pd.api.types.is_bool_dtype(s.dtype) or pd.api.types.is_numeric_dtype(s.dtype):
            out[c] = pd.to_numeric(s.astype("object").where(s.notna(), np.nan)).astype(float)
        else:
            out[c] = s.astype(object).where(s.notna(), None)
    return pd.DataFrame(out, columns=list(df.columns))


def assert_results_equal(got: Sequence[pd.DataFrame], expected: Sequence[pd.DataFrame]) -> None:
    """Same number of frames, same columns in order, same values row by row."""
    assert len(got) == len(expected), (
        f"{len(got)} frames != {len(expected)}:\n{list(got)}\n!=\n{list(expected)}"
    )
    for g, e in zip(got, expected):
        assert list(g.columns) == list(e.columns)
        assert isinstance(g.index, pd.RangeIndex) and g.index.start == 0
        pd.testing.assert_frame_equal(canonical(g), canonical(e), check_dtype=False)
