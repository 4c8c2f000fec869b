"""The cube conformance suite (``test_cube_conformance.py``) bound to the Spark engine.

The suite's test functions run here with an ``engine`` fixture calling ``kartoframe.spark``
(``query_cube_sdf`` and the ``*_cube_from_sdf`` writers) on the session's local SparkSession
(the ``spark`` fixture of ``tests/conftest.py``), on local folders only (``memory://`` is
refused by ``kartoframe.spark``: Spark's executors cannot see the driver's memory
filesystem). No case is skipped.

The adapter only translates: pandas frames become Spark DataFrames under the Spark types of
their Arrow types; a query is collected through Arrow (integer and boolean columns holding
nulls as pandas' nullable dtypes, which plain NumPy columns cannot hold) and, with
``partition_by``, cut into one frame per run of equal ``partition_by`` values in the order
Spark returns them (``query_cube``'s frame order, per ``docs/spark.md``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
import test_cube_conformance as suite
from cube_engines import Engine

import kartoframe as kf

pytestmark = pytest.mark.spark

# the suite's tests, collected again in this module (where ``engine`` is Spark)
globals().update({k: v for k, v in vars(suite).items() if k.startswith("test_")})


class SparkCube(Engine):
    """``query_cube_sdf`` and ``build/extend/append_to/update_cube_from_sdf``."""

    name = "spark"

    def __init__(self, session: Any) -> None:
        self.session = session

    def query(self, cube: kf.Cube, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        import kartoframe.spark as kfs

        table = kfs.query_cube_sdf(self.session, cube, store, **kw).toArrow()
        df = pd.DataFrame({name: _column(table.column(name)) for name in table.column_names})
        if df.empty:
            return []
        keys = list(kw.get("partition_by") or [])
        if not keys:
            return [df]
        key = df[keys].astype(object).apply(tuple, axis=1)
        runs = (key != key.shift()).cumsum()
        return [part.reset_index(drop=True) for _, part in df.groupby(runs, sort=True)]

    def _sdf(self, df: pd.DataFrame) -> Any:
        from pyspark.sql.types import StructType

        from kartoframe.format.convert import frame_to_table
        from kartoframe.format.spark_types import spark_arrow_type, to_spark_schema

        table = frame_to_table(df)
        arrow = pa.schema([pa.field(f.name, spark_arrow_type(f.type)) for f in table.schema])
        schema = StructType.fromJson(to_spark_schema(table.schema))
        return self.session.createDataFrame(table.cast(arrow), schema)

    def write(self, verb: str, data: Any, cube: kf.Cube, store: kf.Store, **kw: Any) -> Any:
        import kartoframe.spark as kfs

        fn = {
            "build": kfs.build_cube_from_sdf,
            "extend": kfs.extend_cube_from_sdf,
            "append": kfs.append_to_cube_from_sdf,
            "update": kfs.update_cube_from_sdf,
        }[verb]
        if isinstance(data, dict):
            sdata: Any = {k: self._sdf(v) for k, v in data.items()}
        else:
            sdata = self._sdf(data)
        return fn(sdata, cube, store, **kw)


def _column(col: pa.ChunkedArray) -> Any:
    """A collected column in pandas (integers and booleans with nulls as nullable dtypes)."""
    t = col.type
    if col.null_count and pa.types.is_integer(t):
        return col.to_pandas(types_mapper={t: pd.Int64Dtype()}.get).astype("Int64")
    if col.null_count and pa.types.is_boolean(t):
        return col.to_pandas(types_mapper={t: pd.BooleanDtype()}.get)
    return col.to_pandas()


@pytest.fixture
def engine(spark) -> SparkCube:
    """The Spark engine (overrides the eager/dask ``engine`` of ``conftest.py``)."""
    return SparkCube(spark)


@pytest.fixture
def store(file_store) -> kf.Store:
    """Local folders only (see the module docstring)."""
    return file_store
