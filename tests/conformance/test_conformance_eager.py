"""The conformance suite bound to the eager engine."""

from __future__ import annotations

import pytest
from conformance_engines import Eager
from conformance_suite import (
    DeleteSuite,
    DispatchSuite,
    PredicateSuite,
    ReadSuite,
    UpdateSuite,
    WriteSuite,
)


class TestEagerEngine(
    ReadSuite, PredicateSuite, DispatchSuite, WriteSuite, UpdateSuite, DeleteSuite
):
    @pytest.fixture
    def engine(self) -> Eager:
        return Eager()
