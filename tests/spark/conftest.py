"""The session-scoped local SparkSession shared by the Spark tests.

Settings follow the measured platform notes: ``local[2]``, no UI, quiet logging (the
log4j2 file beside this module), ``PYSPARK_PYTHON`` set to the test interpreter before the
JVM starts (otherwise Python workers run the system Python without pyarrow), UTC session
time zone, small shuffles, and a JIT setting that shortens the cold start.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys
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
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    java_opts = (
        f"-Dlog4j2.configurationFile=file:{HERE / 'log4j2.properties'} "
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    )
    session = (
        SparkSession.builder.master("local[2]")
        .appName("kartoframe-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", java_opts)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
