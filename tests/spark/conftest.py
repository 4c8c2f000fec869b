"""The session-scoped local SparkSession shared by the Spark tests.

Built by :func:`kartoframe.spark.local_session` (the documented way): ``local[2]``,
``PYSPARK_PYTHON`` set to the test interpreter before the JVM starts (otherwise Python
workers run the system Python without pyarrow), Arrow, UTC session time zone, small
shuffles, no UI. On top: the tests' own log4j2 file beside this module (it also silences
the executor logs of expected task failures) and a JIT setting that shortens the cold
start.
"""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession (2 cores) for the whole test session."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java; `make test` installs it")
    import kartoframe.spark as kfs

    java_opts = (
        f"-Dlog4j2.configurationFile=file:{HERE / 'log4j2.properties'} "
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    )
    session = kfs.local_session("kartoframe-tests", cores=2, java_options=java_opts)
    yield session
    session.stop()
