"""``records_to_frame`` gives every datetime column the unit its pandas record names,
whatever unit the Arrow column arrives in (the units' restore skips only the columns
Arrow already converts in that unit)."""

from __future__ import annotations

import datetime as dt
import itertools

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from kartoframe.format.convert import records_to_frame

UNITS = ("s", "ms", "us", "ns")


#: a naive µs record is the stored unit: a scan never gives its column another one
CASES = [
    (arrow, record, tz)
    for arrow, record in itertools.product(UNITS, UNITS)
    for tz in (None, "Europe/Berlin")
    if tz is not None or record != "us" or arrow == "us"
]


@pytest.mark.parametrize(("arrow_unit", "record_unit", "tz"), CASES)
def test_datetime_columns_get_their_records_unit(arrow_unit: str, record_unit: str, tz) -> None:
    stamps = [dt.datetime(2024, 3, 1, 12, 30, 5), None, dt.datetime(1999, 12, 31, 23, 59, 59)]
    table = pa.table(
        {
            "t": pa.array(stamps, pa.timestamp(arrow_unit, tz=tz)),
            "x": pa.array([1, 2, 3], pa.int64()),
        }
    )
    numpy_type = f"datetime64[{record_unit}]" if tz is None else "datetimetz"
    record = {"name": "t", "field_name": "t", "pandas_type": "datetime", "metadata": None}
    if tz is not None:
        record["metadata"] = {"timezone": tz}
        numpy_type = f"datetime64[{record_unit}, {tz}]"
    records = {"t": {**record, "numpy_type": numpy_type}}
    meta = {"index_columns": [], "column_indexes": [], "columns": []}
    df = records_to_frame(table, meta, records)
    dtype = df["t"].dtype
    if tz is None:
        assert dtype == np.dtype(f"datetime64[{record_unit}]")
    else:
        assert isinstance(dtype, pd.DatetimeTZDtype)
        assert dtype.unit == record_unit and str(dtype.tz) == tz
    expected = table.column("t").to_pandas()
    assert df["t"].dt.as_unit("ns").equals(expected.dt.as_unit("ns"))
