"""The cube join converts its joined columns to pandas in one pass
(:func:`kartoframe.execution.cube_join._frame_of`); each dataset's part converted on its
own by its dataset's rules (as the join's merge fallback converts them), then a
``concat``, gives exactly the same frame, for every column type a cube dataset may hold.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.execution import cube_join
from kartoframe.front.cube_query import plan_cube_query

N = 8


def _payload(prefix: str, n: int) -> dict[str, Any]:
    """Columns of many types (a few holding nulls)."""
    return {
        f"{prefix}_i8": pd.Series(range(n), dtype="int8"),
        f"{prefix}_u16": pd.Series(range(n), dtype="uint16"),
        f"{prefix}_i64": pd.Series(range(n), dtype="int64") * 10**12,
        f"{prefix}_nullable": pd.array([None if k % 3 == 0 else k for k in range(n)], "Int32"),
        f"{prefix}_f": [k / 3 for k in range(n)],
        f"{prefix}_b": [k % 2 == 0 for k in range(n)],
        f"{prefix}_s": [f"s{k}" if k % 4 else None for k in range(n)],
        f"{prefix}_d": [dt.date(2024, 1, 1 + k) for k in range(n)],
        f"{prefix}_ts": pd.date_range("2024-01-01", periods=n, freq="h"),
        f"{prefix}_tz": pd.date_range("2024-01-01", periods=n, freq="D", tz="Europe/Berlin"),
        f"{prefix}_dec": [decimal.Decimal(k) / 4 for k in range(n)],
        f"{prefix}_bytes": [bytes([k]) for k in range(n)],
    }


@pytest.fixture
def typed_cube(tmp_path):
    store = kf.Store(f"file://{tmp_path}")
    cube = kf.Cube(["x"], ["p"], uuid_prefix="typed")
    seed = pd.DataFrame({"x": range(N), "p": [k % 2 for k in range(N)], **_payload("seed", N)})
    half = range(0, N, 2)  # a left-joined dataset covering half the cells
    enrich = pd.DataFrame({"x": list(half), "p": [k % 2 for k in half], **_payload("e", len(half))})
    kf.build_cube({"seed": seed, "enrich": enrich}, cube, store)
    return cube, store


def test_one_conversion_equals_a_conversion_per_dataset(typed_cube, monkeypatch):
    cube, store = typed_cube
    calls = []
    one_pass = cube_join._frame_of

    def checked(pieces: Sequence[tuple[Any, pa.Table]], output: Sequence[str]) -> pd.DataFrame:
        got = one_pass(pieces, output)
        parts = [one_pass([(read, table)], table.column_names) for read, table in pieces]
        expected = pd.concat(parts, axis=1).loc[:, list(output)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        pd.testing.assert_index_equal(got.columns, expected.columns, exact=True)
        calls.append([read.role for read, _ in pieces])
        return got

    monkeypatch.setattr(cube_join, "_frame_of", checked)
    (df,) = kf.query_cube(cube, store)
    assert calls == [["seed", "left"]]
    assert len(df) == N
    # the left-joined dataset's integers and booleans hold NA where it has no cell
    assert str(df["e_i8"].dtype) == "Int64" and df["e_i8"].isna().sum() == N // 2
    assert str(df["e_u16"].dtype) == "UInt64"
    assert str(df["e_b"].dtype) == "boolean"
    assert str(df["seed_i8"].dtype) == "int64"  # cube datasets store integers as int64
    assert isinstance(df["e_d"].dropna().iloc[0], dt.date)
    assert str(df["e_tz"].dtype).startswith("datetime64") and "Berlin" in str(df["e_tz"].dtype)
    # the empty result (dask's meta) takes the same path, with the same dtypes
    plan, _ = plan_cube_query(cube, store, consistent_integers=True)
    meta = cube_join.empty_result(plan)
    assert len(meta) == 0
    assert {c: str(t) for c, t in meta.dtypes.items()} == {c: str(t) for c, t in df.dtypes.items()}
