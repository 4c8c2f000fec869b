"""Fixtures of the cluster tests (``make test-cluster``; every test here is marked ``cluster``
and ``make test`` deselects them).

* ``cluster_spark``: the test session's SparkSession on a standalone cluster (a master and
  one 2-core worker on 127.0.0.1, :mod:`standalone`), built by
  :func:`kartoframe.spark.cluster_session`, Spark's default ``spark.task.maxFailures`` (4);
  the same session the ``spark`` fixture returns under ``KARTOFRAME_TEST_SPARK=cluster``.
  Its teardown stops the cluster and fails if any of its processes is left.
* ``standalone_cluster``: that cluster (URL, work dir, executor logs, PIDs).
* ``process_dask_client``: a dask ``LocalCluster(processes=True)`` of two one-thread
  worker processes.

A failing cluster test gets the tails of the executors' logs as a report section.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_STANDALONE = "kf_test_standalone"  # the name tests/conftest.py loads it by, too
#: The helper module the executors and workers import (tasks carry its filesystems).
HELPERS = Path(__file__).parent / "cluster_fs.py"


def load_standalone() -> ModuleType:
    """``tests/cluster/standalone.py``, imported once under :data:`_STANDALONE`."""
    if _STANDALONE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _STANDALONE, Path(__file__).parent / "standalone.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_STANDALONE] = module
        spec.loader.exec_module(module)
    return sys.modules[_STANDALONE]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test below this folder is a cluster test (``-m "not cluster"`` skips them)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.cluster)


def _needs_spark() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java; `make test` installs it")


@pytest.fixture(scope="session")
def standalone_module() -> ModuleType:
    """The module :mod:`standalone` (one copy per test session)."""
    return load_standalone()


@pytest.fixture(scope="session")
def cluster_spark() -> Iterator[Any]:
    """The SparkSession on the shared standalone cluster (started on first use)."""
    _needs_spark()
    standalone = load_standalone()
    session = standalone.shared_session()
    # the test helpers the executors unpickle (filesystem wrappers), shipped as users ship
    # their own modules
    session.sparkContext.addPyFile(str(HELPERS))
    yield session
    left = standalone.shutdown()
    assert not left, f"cluster processes left running: {left}"


@pytest.fixture(scope="session")
def standalone_cluster(cluster_spark) -> Any:
    """The shared cluster (a :class:`standalone.StandaloneCluster`)."""
    return load_standalone().shared_cluster()


@pytest.fixture
def process_dask_client() -> Iterator[Any]:
    """A client of a fresh ``LocalCluster(processes=True, n_workers=2, threads_per_worker=1)``."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        client.upload_file(str(HELPERS))  # as SparkContext.addPyFile for the executors
        yield client


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test's report gets the tails of the cluster's executor logs."""
    report = yield
    if report.failed:
        cluster = load_standalone().shared_cluster()
        if cluster is not None:
            report.sections.append(("executor logs", cluster.executor_log_tails()))
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """After failures (in any suite run on the cluster): the executor logs' tails."""
    logs = load_standalone().LAST_LOGS if _STANDALONE in sys.modules else []
    if terminalreporter.stats.get("failed") and logs:
        terminalreporter.write_sep("-", "Spark cluster executor logs")
        terminalreporter.write_line(logs[-1])
