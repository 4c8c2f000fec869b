"""The dask cube query on worker processes: each task arrives pickled, with its query's
memo of shared reads empty (:mod:`kartoframe.execution.read_memo`), and the frames equal
the eager query's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf

pytestmark = [pytest.mark.cluster]


def test_cube_query_with_a_lower_dimensional_dataset_on_processes(
    process_dask_client: Any, tmp_path: Path
) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    cube = kf.Cube(["x", "y"], ["p"], uuid_prefix="c", index_columns=["i"])
    seed = pd.DataFrame(
        {"x": range(24), "y": [v % 3 for v in range(24)], "p": [v % 4 for v in range(24)]}
    )
    seed["i"] = seed.p // 2
    low = pd.DataFrame({"x": range(24), "v3": [f"v{v}" for v in range(24)]})
    kf.build_cube({"seed": seed}, cube, store)
    kf.extend_cube({"low": low}, cube, store, partition_on={"low": []})
    for kwargs in ({"partition_by": ["p"]}, {"conditions": kf.C("i") == 1}, {}):
        ddf = kf.query_cube_dataframe(cube, store, **kwargs)
        got = process_dask_client.compute(ddf).result().reset_index(drop=True)
        expected = pd.concat(kf.query_cube(cube, store, **kwargs), ignore_index=True)
        pd.testing.assert_frame_equal(got, expected)
