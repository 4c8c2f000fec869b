"""Helpers shared by the Spark tests: expected results and exact table comparison."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from kartoframe.api.read import plan_read
from kartoframe.execution.kernel import read_plan_table
from kartoframe.format.spark_types import spark_arrow_schema, to_spark_table


def kartoframe_expected(
    uuid: str, store: Any, columns: Sequence[str] | None = None, predicates: object = None
) -> pa.Table:
    """The eager engine's result, in the Arrow types Spark uses."""
    plan, st = plan_read(uuid, store, columns=columns, predicates=predicates)
    table = read_plan_table(plan, st, for_pandas=False)
    return to_spark_table(table, spark_arrow_schema(plan.schema, plan.columns))


def _canon(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, list):
        return [_canon(v) for v in value]
    if isinstance(value, dict):
        return {k: _canon(v) for k, v in value.items()}
    return value


def rows(table: pa.Table, key: str | Sequence[str] = "id") -> list[dict[str, Any]]:
    """Rows sorted by ``key`` with NaN made comparable."""
    keys = [key] if isinstance(key, str) else list(key)
    out = [_canon(r) for r in table.to_pylist()]
    return sorted(out, key=lambda r: tuple((r[k] is None, r[k]) for k in keys))


def assert_tables_equal(got: pa.Table, want: pa.Table, key: str | Sequence[str] = "id") -> None:
    """Same columns (names, order, Arrow types) and the same rows in any order."""
    assert got.column_names == want.column_names
    for g, w in zip(got.schema, want.schema):
        assert g.type == w.type, (g.name, g.type, w.type)
    assert got.num_rows == want.num_rows
    assert rows(got, key) == rows(want, key)


def spark_rows(sdf: Any) -> pa.Table:
    """Collect a Spark DataFrame through Arrow (pandas-3 safe)."""
    return sdf.toArrow()


def predicate_table(n: int = 60) -> pa.Table:
    """Rows with nulls (and NaN) in every column type predicates support."""
    ids = np.arange(n)
    base = dt.datetime(2021, 3, 1, 12, 0, 0)

    def nulls(values: list[Any], every: int) -> list[Any]:
        return [None if i % every == every - 1 else v for i, v in enumerate(values)]

    f: list[Any] = [float(i % 9) / 2 for i in ids]
    f = [math.nan if i % 5 == 2 else v for i, v in enumerate(f)]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": pa.array(ids % 3, pa.int64()),
            "q": pa.array([["a b", "ü/€", "x"][i // 20] for i in ids]),
            "i": pa.array(nulls([int(i * 7 % 11) - 5 for i in ids], 7), pa.int64()),
            "f": pa.array(nulls(f, 6), pa.float64()),
            "s": pa.array(nulls([f"s{i % 10}" for i in ids], 4), pa.string()),
            "b": pa.array(nulls([bool(i % 2) for i in ids], 5), pa.bool_()),
            "d": pa.array(
                nulls([dt.date(2020, 1, 1) + dt.timedelta(days=int(i % 15)) for i in ids], 8),
                pa.date32(),
            ),
            "ts": pa.array(
                nulls([base + dt.timedelta(seconds=int(i), microseconds=int(i)) for i in ids], 9),
                pa.timestamp("us"),
            ),
            "tz": pa.array(
                nulls(
                    [pd.Timestamp(base + dt.timedelta(hours=int(i)), tz="UTC") for i in ids],
                    9,
                ),
                pa.timestamp("us", tz="Europe/Berlin"),
            ),
            "dec": pa.array(
                nulls([decimal.Decimal(int(i % 13)) / 4 for i in ids], 10), pa.decimal128(10, 2)
            ),
        }
    )
