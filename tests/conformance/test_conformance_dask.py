"""The conformance suite bound to the dask engine: threaded scheduler and LocalCluster."""

from __future__ import annotations

import pytest
from conformance_engines import Dask
from conformance_suite import (
    DeleteSuite,
    DispatchSuite,
    PredicateSuite,
    ReadSuite,
    UpdateSuite,
    WriteSuite,
)

pytest.importorskip("dask.dataframe")


class TestDaskThreads(
    ReadSuite, PredicateSuite, DispatchSuite, WriteSuite, UpdateSuite, DeleteSuite
):
    """dask's local threaded scheduler."""

    @pytest.fixture
    def engine(self) -> Dask:
        return Dask("dask-threads", "threads")


class TestDaskDistributed(
    ReadSuite, PredicateSuite, DispatchSuite, WriteSuite, UpdateSuite, DeleteSuite
):
    """A dask.distributed ``LocalCluster`` (in-process workers, session-scoped)."""

    @pytest.fixture
    def engine(self, dask_client) -> Dask:
        return Dask("dask-distributed", dask_client)
