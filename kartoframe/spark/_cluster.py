"""A SparkSession on a cluster (standalone, YARN, Kubernetes) configured for kartoframe,
and the check that the executors' Python can run kartoframe before the first real job.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from kartoframe.execution import spark_engine

#: ``pyspark.sql.SparkSession`` (pyspark is imported by the engine only).
SparkSession = Any

__all__ = ["check_executors", "cluster_session"]

#: Settings of :func:`cluster_session` (before the caller's ``conf``).
CLUSTER_SESSION_CONF: dict[str, str] = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


def cluster_session(
    master: str,
    *,
    app_name: str = "kartoframe",
    python: str | None = None,
    java_options: str | None = None,
    conf: Mapping[str, object] | None = None,
    quiet: bool = True,
    check: bool = True,
) -> SparkSession:
    """A SparkSession on a cluster, configured for kartoframe, whose executors are checked.

    Spark's executors start their Python workers with ``PYSPARK_PYTHON`` as it was in the
    driver when the SparkContext started (``python3`` when unset); the
    ``spark.pyspark.python`` setting alone does not change it. This sets both to
    ``python`` before the context starts, enables Arrow conversions, sets the session time
    zone to UTC and turns off the console progress bars, then (``check``) runs one tiny
    job on the executors that imports kartoframe and pyarrow there: a cluster whose
    executors cannot run kartoframe fails here, with the executor's interpreter and error,
    instead of in the first write or cube query with a Java stack trace ending in
    ``ModuleNotFoundError``. Spark's retry settings (``spark.task.maxFailures``, 4 on a
    cluster) are left as they are.

    Parameters
    ----------
    master
        The cluster's master URL: ``"spark://host:7077"`` (standalone), ``"yarn"``,
        ``"k8s://https://..."``; ``local[N]`` works too (see :func:`local_session`).
    app_name
        The Spark application name.
    python
        The interpreter the executors run (a path that exists on every executor host,
        with kartoframe and pyarrow installed). Default: ``PYSPARK_PYTHON`` if set, else
        this interpreter (``sys.executable``), right when driver and executors share the
        environment (one host, a shared image or a mounted environment).
    java_options
        Extra JVM options for the driver (``spark.driver.extraJavaOptions``); executors
        take ``conf={"spark.executor.extraJavaOptions": ...}``.
    conf
        More Spark settings (``{"spark.executor.memory": "2g"}``), applied last.
    quiet
        Log errors only in the driver (a log4j2 configuration shipped with kartoframe,
        and ``setLogLevel("ERROR")``).
    check
        Run :func:`check_executors` before returning.

    Returns
    -------
    pyspark.sql.SparkSession
        A new session, or the active one (``getOrCreate``: JVM-level settings and the
        executors' Python of a context that already runs do not change, so the check
        then tells whether it can run kartoframe).

    Raises
    ------
    MissingDependencyError
        pyspark is not installed.
    SparkPythonWorkerError
        The executors cannot start ``python`` or cannot import kartoframe or pyarrow
        with it, or run another kartoframe version than the driver.

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> spark = kfs.cluster_session("spark://10.0.0.5:7077", app_name="nightly",
    ...                             python="/opt/venv/bin/python")  # doctest: +SKIP
    >>> spark.conf.get("spark.sql.session.timeZone")  # doctest: +SKIP
    'UTC'
    """
    spark_engine.require_pyspark()
    executor_python = python or os.environ.get("PYSPARK_PYTHON") or sys.executable
    # read by SparkContext.__init__ (sc.pythonExec); spark.pyspark.python alone is not used
    os.environ["PYSPARK_PYTHON"] = executor_python
    options = dict(CLUSTER_SESSION_CONF)
    options["spark.pyspark.python"] = executor_python
    session = spark_engine.build_session(master, app_name, options, quiet, java_options, conf)
    if check:
        check_executors(session)
    return session


def check_executors(spark: SparkSession) -> list[tuple[str, int, str]]:
    """Run one tiny job on the executors that imports kartoframe and pyarrow there.

    One task per default-parallelism slot, so every executor of a small cluster is
    usually reached. :func:`cluster_session` calls it; kartoframe's Spark functions run
    it themselves before their first job on a cluster session (once per SparkContext and
    executor interpreter), so an explicit call only moves the failure to where the
    session is built (e.g. at the start of a ``spark-submit`` job).

    Returns
    -------
    list of (host, pid, interpreter)
        The Python workers that answered.

    Raises
    ------
    SparkPythonWorkerError
        A Python worker could not be started, or cannot import kartoframe or pyarrow, or
        imports another kartoframe version than the driver's (the message names the
        interpreter, its error and the fix).
    """
    spark_engine.require_pyspark()
    return spark_engine.check_executors(spark)
