"""Fixtures of the dask tests: a session-wide in-process ``LocalCluster`` and test data."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest
from dask_helpers import sales

pytest.importorskip("dask.dataframe")


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A two-worker ``LocalCluster(processes=False)`` client; not the default scheduler."""
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture
def sales_frame() -> pd.DataFrame:
    """36 rows of :func:`dask_helpers.sales`."""
    return sales(36)
