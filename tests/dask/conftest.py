"""Fixtures of the dask tests: a session-wide in-process ``LocalCluster`` and test data."""

from __future__ import annotations

import pandas as pd
import pytest
from dask_helpers import sales

pytest.importorskip("dask.dataframe")


@pytest.fixture
def sales_frame() -> pd.DataFrame:
    """36 rows of :func:`dask_helpers.sales`."""
    return sales(36)
