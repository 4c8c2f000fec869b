"""The cube verbs of the ``.karto`` accessors (pandas and dask)."""

from __future__ import annotations

import pandas as pd
import pytest

import kartoframe as kf
import kartoframe.api.cube
import kartoframe.format.cube
import kartoframe.plan.conditions


def test_pandas_accessor_cube_verbs(cube, store, seed_df, enrich_df, low_df):
    out = seed_df.karto.build_cube(cube, store)
    assert sorted(out) == ["seed"]
    enrich_df.karto.extend_cube(cube, store, "enrich")
    low_df.karto.extend_cube(cube, store, "low", partition_on={"low": []})
    new = pd.DataFrame({"x": [9], "y": [9], "p": [1], "i": [1], "v1": [9.0]})
    new.karto.append_to_cube(cube, store)
    enrich_df.iloc[:1].assign(v2=-1).karto.append_to_cube(cube, store, "enrich")
    (df,) = kf.query_cube(cube, store)
    assert df.x.tolist()[-1] == 9
    assert df[(df.x == 0) & (df.y == 0)].v2.tolist() == [-1]
    assert sorted(kf.discover_datasets(cube, store)) == ["enrich", "low", "seed"]


def test_dask_accessor_cube_verbs(cube, store, seed_df, enrich_df):
    dd = pytest.importorskip("dask.dataframe")
    dd.from_pandas(seed_df, npartitions=2).karto.build_cube(cube, store, shuffle=True)
    job = dd.from_pandas(enrich_df, npartitions=2).karto.extend_cube(
        cube, store, "enrich", compute=False
    )
    assert sorted(job.compute(scheduler="sync")) == ["enrich"]
    new = pd.DataFrame({"x": [9], "y": [9], "p": [1], "i": [1], "v1": [9.0]})
    dd.from_pandas(new, npartitions=1).karto.append_to_cube(cube, store)
    (df,) = kf.query_cube(cube, store)
    assert len(df) == 7 and df.v2.notna().sum() == 3
    # shuffle: one file per partition value
    seed_md = kf.read_dataset_metadata("cube++seed", store)
    assert len(seed_md.partitions) == 3


# their docstring examples run in tests/test_docs_examples.py (every module's)
