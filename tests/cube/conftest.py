"""Fixtures of the cube tests: cube specs, small frames and the engines under test."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

import kartoframe as kf

sys.path.insert(0, str(Path(__file__).parent))

from cube_engines import ENGINES, Engine, make_engine


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    """Every engine: eager, dask (threads), dask (LocalCluster)."""
    client = request.getfixturevalue("dask_client") if request.param == "dask_cluster" else None
    return make_engine(request.param, client)


@pytest.fixture
def cube() -> kf.Cube:
    """Dimensions x, y; partition p; index column i."""
    return kf.Cube(["x", "y"], ["p"], uuid_prefix="cube", index_columns=["i"])


@pytest.fixture
def seed_df() -> pd.DataFrame:
    """3 x values x 2 y values, p = x // 2, index column i, payload v1."""
    return pd.DataFrame(
        {
            "x": [0, 0, 1, 1, 2, 2],
            "y": [0, 1, 0, 1, 0, 1],
            "p": [0, 0, 0, 0, 1, 1],
            "i": [1, 2, 1, 2, 1, 2],
            "v1": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
        }
    )


@pytest.fixture
def enrich_df() -> pd.DataFrame:
    """Partial coverage plus a cell (5, 5) that is not in the seed."""
    return pd.DataFrame(
        {"x": [0, 1, 2, 5], "y": [0, 1, 0, 5], "p": [0, 0, 1, 2], "v2": [10, 11, 12, 13]}
    )


@pytest.fixture
def low_df() -> pd.DataFrame:
    """A lower-dimensional dataset: dimension x only."""
    return pd.DataFrame({"x": [0, 1, 2], "v3": ["a", "b", "c"]})
