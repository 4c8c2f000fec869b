"""The conformance suite bound to the Spark engine (``kartoframe.spark``).

Runs on the session's local SparkSession (the ``spark`` fixture of ``tests/conftest.py``),
on local-folder stores only (``memory://`` is refused by ``kartoframe.spark``: Spark's
executors cannot see the driver's memory filesystem). What else Spark cannot do is listed
below, in one place:
:data:`UNSUPPORTED` cases are skipped (the Spark API has no such thing), :data:`DIFFERENCES`
are strict xfails (Spark gives another result than eager and dask).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest
from conformance_engines import Spark
from conformance_suite import (
    DeleteSuite,
    DispatchSuite,
    PredicateSuite,
    ReadSuite,
    UpdateSuite,
    WriteSuite,
)

import kartoframe as kf

pytestmark = pytest.mark.spark

_ONE_SCHEMA = (
    "a Spark DataFrame has one schema: input chunks of different column types or column "
    "sets cannot be one Spark input (the schema check of a single DataFrame is in "
    "tests/spark/test_spark_write.py)"
)
_DISPATCH = "dispatch_by= is a pandas/dask keyword; read_dataset_as_sdf has none (use groupBy)"

#: Suite tests the Spark API has no counterpart for: skipped, with the reason.
UNSUPPORTED: dict[str, str] = {
    "test_categoricals": "categoricals= is a pandas keyword; read_dataset_as_sdf has none",
    "test_dates_as_object": "dates_as_object= is a pandas keyword; Spark dates are `date`",
    "test_incompatible_chunks_write_nothing": _ONE_SCHEMA,
    "test_frames_adding_columns_need_schema_evolution": _ONE_SCHEMA,
    "test_incompatible_update_changes_nothing": _ONE_SCHEMA,
    **{name: _DISPATCH for name in dir(DispatchSuite) if name.startswith("test_")},
}

_NO_FILES = (
    "the arrow reader runs kartoframe's read tasks inside mapInArrow: Spark does not know "
    "which file a row came from (input_file_name), so there are no per-file frames to check"
)

#: More tests the arrow reader (``reader="arrow"``) cannot run, with the reason.
UNSUPPORTED_ARROW_READER: dict[str, str] = {
    "test_one_partition_per_file": _NO_FILES,
    "test_index_pruning_skips_files": _NO_FILES,
}

#: Suite tests where Spark behaves differently from eager and dask: strict xfails.
DIFFERENCES: dict[str, str] = {
    "test_all_types_write_round_trip": (
        "a Spark-written dataset has no pandas metadata and Spark has no unsigned integers: "
        "read back with pandas, uint32 comes back int64 (not uint64), the 'string' column as "
        "str, the nullable 'boolean' column as object, datetime64[ns] as datetime64[us] and "
        "the Asia/Tokyo column in UTC (docs/spark.md, Types)"
    ),
}


class TestSparkEngine(
    ReadSuite, PredicateSuite, DispatchSuite, WriteSuite, UpdateSuite, DeleteSuite
):
    @pytest.fixture
    def engine(self, spark) -> Spark:
        return Spark(spark)

    @pytest.fixture
    def store(self, file_store) -> kf.Store:
        """Local folders only: ``memory://`` is refused by ``kartoframe.spark`` (Spark's
        executors are other processes and cannot see the driver's memory filesystem)."""
        return file_store

    @pytest.fixture
    def ref_store(self, file_ref_store) -> kf.Store:
        """The reference datasets in a local folder (see :meth:`store`)."""
        return file_ref_store


class TestSparkArrowReader(ReadSuite, PredicateSuite):
    """The reads again through the ``mapInArrow`` reader (``reader="arrow"``: what object
    stores and files Spark cannot read exactly use)."""

    @pytest.fixture
    def engine(self, spark) -> Spark:
        return Spark(spark, reader="arrow")

    @pytest.fixture
    def ref_store(self, file_ref_store) -> kf.Store:
        return file_ref_store


def _marked(test: Callable[..., Any], mark: pytest.MarkDecorator) -> Callable[..., Any]:
    """``test`` with ``mark`` for this binding only (the suite's function stays unmarked)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        return test(*args, **kwargs)

    return mark(run)


for _cls, _skipped in [
    (TestSparkEngine, UNSUPPORTED),
    (TestSparkArrowReader, {**UNSUPPORTED, **UNSUPPORTED_ARROW_READER}),
]:
    for _name, _reason in _skipped.items():
        if hasattr(_cls, _name):
            _test = getattr(_cls, _name)
            setattr(_cls, _name, _marked(_test, pytest.mark.skip(reason=_reason)))
    for _name, _reason in DIFFERENCES.items():
        if hasattr(_cls, _name):
            _test = getattr(_cls, _name)
            setattr(_cls, _name, _marked(_test, pytest.mark.xfail(strict=True, reason=_reason)))
