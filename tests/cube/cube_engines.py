"""Engine adapters for the cube conformance suite.

``eager`` calls the pandas functions; ``dask`` and ``dask_cluster`` call the dask variants
(threaded scheduler / a ``LocalCluster``), round-trip the graphs through ``cloudpickle``
and return the computed results in the same shape as the eager functions (a list of the
non-empty group frames). Adapters never normalise results, so engines must agree exactly.
"""

from __future__ import annotations

from typing import Any

import cloudpickle
import pandas as pd

import kartoframe as kf

ENGINES = ["eager", "dask", "dask_cluster"]


class Engine:
    """Uniform interface: query and the four data-carrying writes."""

    name = "abstract"

    def query(self, cube: kf.Cube, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        """Like ``kf.query_cube``."""
        raise NotImplementedError

    def write(self, verb: str, data: Any, cube: kf.Cube, store: kf.Store, **kw: Any) -> Any:
        """``verb`` in build, extend, append, update."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class Eager(Engine):
    name = "eager"

    def query(self, cube: kf.Cube, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        return kf.query_cube(cube, store, **kw)

    def write(self, verb: str, data: Any, cube: kf.Cube, store: kf.Store, **kw: Any) -> Any:
        fn = {
            "build": kf.build_cube,
            "extend": kf.extend_cube,
            "append": kf.append_to_cube,
            "update": kf.update_cube,
        }[verb]
        return fn(data, cube, store, **kw)


class Dask(Engine):
    name = "dask"

    def __init__(self, client: Any = None, npartitions: int = 2) -> None:
        self.client = client
        self.npartitions = npartitions
        if client is not None:
            self.name = "dask_cluster"

    def _compute(self, obj: Any) -> Any:
        obj = cloudpickle.loads(cloudpickle.dumps(obj))
        if self.client is not None:
            return self.client.compute(obj).result()
        return obj.compute(scheduler="threads")

    def query(self, cube: kf.Cube, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        ddf = kf.query_cube_dataframe(cube, store, **kw)
        meta = ddf._meta
        parts = [self._compute(p) for p in ddf.to_delayed()]
        for p in parts:
            pd.testing.assert_series_equal(p.dtypes, meta.dtypes)
            assert list(p.columns) == list(meta.columns)
        frames = [p for p in parts if len(p)]
        if not kw.get("partition_by") and len(frames) > 1:
            sort = list(kw.get("dimension_columns") or cube.dimension_columns)
            sort += list(cube.partition_columns)
            out = pd.concat(frames, ignore_index=True)
            out = out.sort_values(sort, kind="stable").reset_index(drop=True)
            return [out]
        return [f.reset_index(drop=True) for f in frames]

    def _ddf(self, df: Any) -> Any:
        import dask.dataframe as dd

        if df is None:
            return None
        return dd.from_pandas(df, npartitions=min(self.npartitions, max(1, len(df))), sort=False)

    def write(self, verb: str, data: Any, cube: kf.Cube, store: kf.Store, **kw: Any) -> Any:
        fn = {
            "build": kf.build_cube_from_dataframe,
            "extend": kf.extend_cube_from_dataframe,
            "append": kf.append_to_cube_from_dataframe,
            "update": kf.update_cube_from_dataframe,
        }[verb]
        if isinstance(data, dict):
            ddata: Any = {k: self._ddf(v) for k, v in data.items()}
        else:
            ddata = self._ddf(data)
        return self._compute(fn(ddata, cube, store, **kw))


def make_engine(name: str, client: Any = None) -> Engine:
    """The adapter for an engine name."""
    if name == "eager":
        return Eager()
    if name == "dask":
        return Dask()
    return Dask(client)
