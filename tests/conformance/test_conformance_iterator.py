"""The conformance suite bound to the iterator engine."""

from __future__ import annotations

import pytest
from conformance_engines import Iterator
from conformance_suite import (
    DeleteSuite,
    DispatchSuite,
    PredicateSuite,
    ReadSuite,
    UpdateSuite,
    WriteSuite,
)


class TestIteratorEngine(
    ReadSuite, PredicateSuite, DispatchSuite, WriteSuite, UpdateSuite, DeleteSuite
):
    @pytest.fixture
    def engine(self) -> Iterator:
        return Iterator()
