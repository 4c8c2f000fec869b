"""The Spark engine's session side: pyspark import, sessions, worker checks, types.

The Spark engine is kartoframe's interchange module: the same plan objects become Spark
DataFrames (:mod:`~kartoframe.execution.spark_read`, predicates in
:mod:`~kartoframe.execution.spark_predicates`), and Spark jobs produce chunk results that
are committed once (:mod:`~kartoframe.execution.spark_write`). Only ``execution/spark_*``
modules import pyspark.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import types
import weakref
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from kartoframe import errors
from kartoframe.errors import InvalidInputError, MissingDependencyError
from kartoframe.format.spark_types import (
    from_spark_schema,
)
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "ReaderChoice",
    "check_executors",
    "check_python_workers",
    "check_store",
    "column",
    "local_session",
    "require_pyspark",
    "sdf_arrow_schema",
    "spark_type",
]

ReaderChoice = Literal["auto", "native", "arrow"]

#: Above this many distinct values of a partition column that Spark would decode
#: wrongly, the read uses the arrow reader instead of a CASE mapping.
CASE_LIMIT = 64
#: A write task flushes its buffered Arrow batches into files at this size.
FLUSH_BYTES = 128 * 1024 * 1024
_GLOB_CHARS = re.compile(r"[{}\[\]*?\\]")


def require_pyspark() -> Any:
    """Import pyspark or raise :class:`MissingDependencyError` naming the extra."""
    try:
        import pyspark
        import pyspark.sql
    except ImportError as e:
        raise MissingDependencyError("pyspark", "spark") from e
    return pyspark


#: SparkContext -> the worker interpreter (``sc.pythonExec``) already found usable.
_WORKERS_OK: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_WORKER_PROBE = "import kartoframe, pyarrow"


def _worker_python_problem(python_exec: str) -> str | None:
    """Why ``python_exec`` (as Spark's local workers would start it) cannot run kartoframe."""
    found = shutil.which(python_exec)
    if found is None:
        return f"{python_exec!r} is not an executable on PATH"
    driver = os.path.abspath(sys.executable)
    found = os.path.abspath(found)
    # the driver's interpreter, or a sibling in the same (virtual) environment's bin folder
    if found == driver or os.path.dirname(found) == os.path.dirname(driver):
        return None
    try:
        proc = subprocess.run(
            [found, "-c", _WORKER_PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as e:
        if isinstance(e, subprocess.TimeoutExpired):
            return None  # cannot tell; let Spark try
        return f"{found!r} cannot be started ({e})"
    if proc.returncode == 0:
        return None
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return f"{found!r} cannot import kartoframe ({lines[-1] if lines else 'exit code'})"


def check_python_workers(spark: SparkSession) -> None:
    """Fail early when Spark's Python workers cannot import kartoframe.

    Spark's Python workers run ``PYSPARK_PYTHON`` as it was when the SparkContext
    started (``python3`` from ``PATH`` when unset), not the driver's interpreter, so in a
    virtual environment that is not activated every ``mapInArrow`` task fails with a long
    Java stack trace ending in ``ModuleNotFoundError``. For a local master this checks the
    worker interpreter once per SparkContext: free when it is the driver's (or lives in
    the same environment), otherwise one ``python -c "import kartoframe"``. For a cluster
    master the workers run elsewhere: :func:`check_executors` runs a probe job on the
    executors instead (once per SparkContext and interpreter).

    Raises
    ------
    SparkPythonWorkerError
        The workers' interpreter cannot import kartoframe (the message names the fix).
    """
    try:
        sc = spark.sparkContext
        master = str(sc.master)
        python_exec = str(sc.pythonExec)
    except Exception:  # e.g. Spark Connect: no SparkContext in this process
        return
    if not master.startswith("local"):
        # a cluster: the executors' interpreter is checked by a probe job there, once
        if _WORKERS_OK.get(sc) != python_exec:
            check_executors(spark)
        return
    try:
        if _WORKERS_OK.get(sc) == python_exec:
            return
    except TypeError:  # pragma: no cover - not weak-referenceable
        pass
    problem = _worker_python_problem(python_exec)
    if problem is not None:
        origin = (
            "PYSPARK_PYTHON when the session started"
            if python_exec != "python3"
            else "PYSPARK_PYTHON was unset when the session started: the first python3 on PATH"
        )
        conf_python = sc.getConf().get("spark.pyspark.python", None)
        note = (
            f" (spark.pyspark.python={conf_python!r} is not used by local Python workers)"
            if conf_python
            else ""
        )
        raise errors.SparkPythonWorkerError(
            f"Spark's Python workers cannot run kartoframe: they start {python_exec!r} "
            f"({origin}) and {problem}; the driver runs {sys.executable!r}{note}. Create the "
            "session with kartoframe.spark.local_session(), or set "
            "os.environ['PYSPARK_PYTHON'] = sys.executable before the SparkSession starts "
            '(export PYSPARK_PYTHON="$(which python)" in a shell).'
        )
    with contextlib.suppress(TypeError):
        _WORKERS_OK[sc] = python_exec


def _probe(_: Iterable[Any]) -> Iterator[tuple[str, int, str, str | None, str | None]]:
    """(Runs in an executor's Python worker.) Host, pid, interpreter, kartoframe version,
    and the import error if kartoframe or pyarrow cannot be imported.

    Pickled by value (see :func:`check_executors`): unpickling it must not need kartoframe.
    """
    import importlib as _importlib
    import importlib.metadata as _metadata
    import os as _os
    import socket as _socket
    import sys as _sys

    version = problem = None
    try:
        _importlib.import_module("pyarrow")
        _importlib.import_module("kartoframe")
        version = _metadata.version("kartoframe")
    except BaseException as e:
        problem = f"{type(e).__name__}: {e}"
    yield _socket.gethostname(), _os.getpid(), _sys.executable, version, problem


def check_executors(spark: SparkSession) -> list[tuple[str, int, str]]:
    """:func:`kartoframe.spark.check_executors` (returns and raises as documented
    there); success is remembered per SparkContext and worker interpreter
    (:func:`check_python_workers` then skips the job).
    """
    sc = spark.sparkContext
    python = str(sc.pythonExec)
    fix = (
        "Build the session with kartoframe.spark.cluster_session(master, python=...) naming "
        "an interpreter with kartoframe installed on every executor host, or set "
        "PYSPARK_PYTHON to it before the SparkContext starts."
    )
    slots = max(int(sc.defaultParallelism), 1)
    probe = _by_value(_probe)
    try:
        answers = sc.parallelize(range(slots), slots).mapPartitions(probe).collect()
    except Exception as e:
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        cause = next(
            (ln.strip() for ln in lines if "Cannot run program" in ln or "Error" in ln),
            lines[0] if lines else type(e).__name__,
        )
        raise errors.SparkPythonWorkerError(
            f"Spark's executors cannot start their Python workers with {python!r} "
            f"(the SparkContext's PYSPARK_PYTHON): {cause}. {fix}"
        ) from e
    driver_version = importlib.metadata.version("kartoframe")
    for host, _pid, exe, version, problem in answers:
        if problem is not None:
            raise errors.SparkPythonWorkerError(
                f"Spark's executors cannot run kartoframe: on {host} the Python worker runs "
                f"{exe!r} ({python!r} as the SparkContext's PYSPARK_PYTHON), which raises "
                f"{problem}; the driver runs {sys.executable!r}. {fix}"
            )
        if version != driver_version:
            raise errors.SparkPythonWorkerError(
                f"Spark's executors run kartoframe {version} ({exe!r} on {host}), the driver "
                f"{driver_version}: plans and results pickled between them must come from "
                f"the same version. {fix}"
            )
    with contextlib.suppress(TypeError):
        _WORKERS_OK[sc] = python
    return [(host, pid, exe) for host, pid, exe, _, _ in answers]


def _by_value(fn: Any) -> Any:
    """A copy of the module-level function ``fn`` that Spark's pickler (cloudpickle)
    serialises by value: its module is not importable under the copy's name, so the
    executor does not import kartoframe to unpickle it (the copy's globals hold only the
    builtins; ``fn`` imports what it needs itself).
    """
    copy = types.FunctionType(fn.__code__, {"__builtins__": builtins}, fn.__name__)
    copy.__module__ = "__kartoframe_probe__"
    copy.__qualname__ = fn.__name__
    return copy


#: Settings of :func:`local_session` (before the caller's ``conf``).
LOCAL_SESSION_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(
    app_name: str,
    cores: int,
    driver_memory: str,
    java_options: str,
    quiet: bool,
    conf: Mapping[str, object],
) -> SparkSession:
    """Build (or get) a local SparkSession whose Python workers run this interpreter."""
    require_pyspark()

    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise InvalidInputError(f"cores must be a positive integer, got {cores!r}.")
    # read by SparkContext.__init__ (sc.pythonExec); spark.pyspark.python is not used
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    options = dict(LOCAL_SESSION_CONF)
    options["spark.sql.shuffle.partitions"] = str(cores)
    options["spark.default.parallelism"] = str(cores)
    options["spark.driver.memory"] = driver_memory
    session = build_session(f"local[{cores}]", app_name, options, quiet, java_options, conf)
    check_python_workers(session)
    return session


def build_session(
    master: str,
    app_name: str,
    options: Mapping[str, str],
    quiet: bool,
    java_options: str | None,
    conf: Mapping[str, object] | None,
) -> SparkSession:
    """``getOrCreate`` a session of ``master`` with ``options``, the user's ``conf`` over
    them, the driver's JVM options (``quiet``: kartoframe's log4j2 file, and only errors
    logged).
    """
    require_pyspark()
    from pyspark.sql import SparkSession as Session

    settings = dict(options)
    java = []
    if quiet:
        log4j = os.path.join(os.path.dirname(errors.__file__), "spark-log4j2.properties")
        java.append(f"-Dlog4j2.configurationFile=file:{log4j}")
    if java_options:
        java.append(java_options)
    if java:
        settings["spark.driver.extraJavaOptions"] = " ".join(java)
    settings.update({str(k): str(v) for k, v in (conf or {}).items()})
    builder = Session.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if quiet:
        session.sparkContext.setLogLevel("ERROR")
    return session


def _F() -> Any:
    require_pyspark()
    from pyspark.sql import functions

    return functions


def spark_type(json_value: Any) -> Any:
    """The pyspark ``DataType`` of a Spark type in JSON form (see ``format.spark_types``)."""
    from pyspark.sql import types as T

    if isinstance(json_value, dict) and json_value.get("type") == "struct":
        return T.StructType.fromJson(json_value)
    return T._parse_datatype_json_value(json_value)


def column(name: str) -> Column:
    """A Spark column reference by exact name (dots and backticks are not syntax)."""
    return _F().col("`" + name.replace("`", "``") + "`")


def check_store(store: Store) -> None:
    """Refuse stores Spark executors cannot reach."""
    if store.url.startswith("memory://"):
        raise InvalidInputError(
            f"{store.url} is an in-process memory store; Spark executors run in other "
            "processes and cannot see it. Use a local folder or an object store."
        )


def sdf_arrow_schema(sdf: DataFrame) -> pa.Schema:
    """The Arrow schema kartoframe stores for a Spark DataFrame's columns."""
    return from_spark_schema(sdf.schema.jsonValue())


# -- literals and predicates ---------------------------------------------------------
