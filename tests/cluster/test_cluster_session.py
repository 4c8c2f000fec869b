"""``kartoframe.spark.cluster_session`` on a standalone cluster, its executor check, and the
test cluster's own life cycle (nothing of it outlives the launcher)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import kartoframe.spark as kfs
from kartoframe.errors import SparkPythonWorkerError

pytestmark = [pytest.mark.cluster, pytest.mark.spark]


def test_cluster_session_configures_executors_arrow_and_utc(
    cluster_spark: Any, standalone_cluster: Any
) -> None:
    """Proves: the session the helper builds runs on the standalone master (not
    ``local``), starts the executors' Python workers with this interpreter
    (``PYSPARK_PYTHON`` before the context started, and ``spark.pyspark.python``), has Arrow
    conversions on and the UTC session time zone, and keeps Spark's retries (no
    ``spark.task.maxFailures`` override: 4 attempts on a cluster).
    """
    sc = cluster_spark.sparkContext
    assert sc.master == standalone_cluster.master_url
    assert sc.master.startswith("spark://127.0.0.1:")
    assert sc.pythonExec == sys.executable
    assert sc.getConf().get("spark.pyspark.python") == sys.executable
    assert cluster_spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert cluster_spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert sc.getConf().get("spark.task.maxFailures", None) is None


def test_check_executors_runs_in_the_executors(cluster_spark: Any, standalone_cluster: Any) -> None:
    """Proves: the executor check runs a job whose tasks run in Python workers of the
    cluster's executors (processes below the worker daemon, not the driver), with this
    interpreter.
    """
    answers = kfs.check_executors(cluster_spark)
    assert answers
    worker_tree = set(standalone_cluster.pids())
    for _host, pid, exe in answers:
        assert pid != os.getpid()
        assert pid in worker_tree
        assert exe == sys.executable


@pytest.mark.parametrize(
    ("python", "message"),
    [
        ("/usr/bin/python3", r"cannot run kartoframe: .*ModuleNotFoundError"),
        ("/nonexistent/bin/python", r"cannot start their Python workers .*nonexistent"),
    ],
    ids=["without-kartoframe", "missing-interpreter"],
)
def test_executors_that_cannot_run_kartoframe_fail_before_the_first_job(
    cluster_spark: Any, python: str, message: str
) -> None:
    """Proves: when the executors' Python workers start an interpreter without kartoframe
    (the system Python) or one that does not exist, the check raises
    ``SparkPythonWorkerError`` naming the interpreter and the fix, after Spark's retries,
    instead of a Java stack trace from the first write. (The executors' interpreter is
    ``SparkContext.pythonExec``, fixed from ``PYSPARK_PYTHON`` when the context starts; a
    second context cannot start in this process, so the test sets the attribute the
    context would have read, and restores it.)
    """
    if python.startswith("/usr") and not Path(python).exists():
        pytest.skip(f"{python} is not installed")
    sc = cluster_spark.sparkContext
    saved = sc.pythonExec
    sc.pythonExec = python
    try:
        with pytest.raises(SparkPythonWorkerError, match=message) as info:
            kfs.check_executors(cluster_spark)
    finally:
        sc.pythonExec = saved
    assert "cluster_session" in str(info.value)
    assert kfs.check_executors(cluster_spark)  # the session still works


@pytest.mark.parametrize("ending", ["exit", "sigkill"])
def test_cluster_processes_stop_with_the_launcher(standalone_module: Any, ending: str) -> None:
    """Proves: a cluster started by a process that ends without stopping it is stopped
    all the same, leaving no JVM behind: on a normal exit (a run that ends or fails
    without teardown) by the ``atexit`` hook, and when the launcher is killed outright
    (SIGKILL: no Python code runs) because the daemons get SIGTERM when their parent dies.
    The master's and the worker's JVMs, and everything in their process groups, are gone.
    """
    standalone = Path(__file__).parent / "standalone.py"
    script = textwrap.dedent(
        f"""
        import importlib.util, json, os, signal, sys
        spec = importlib.util.spec_from_file_location("standalone", {str(standalone)!r})
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        cluster = mod.StandaloneCluster(cores=1, memory="512m").start()
        print(json.dumps({{"url": cluster.master_url, "pids": cluster.pids(),
                           "groups": sorted(cluster.groups()),
                           "folder": str(cluster.folder)}}), flush=True)
        if {ending!r} == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        # exits without cluster.stop(): atexit must stop it
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180, check=False
    )
    assert proc.returncode == (0 if ending == "exit" else -signal.SIGKILL), proc.stderr
    started = json.loads(proc.stdout.strip().splitlines()[-1])
    if ending == "sigkill":  # no Python ran in the launcher to remove its temporary folder
        shutil.rmtree(started["folder"], ignore_errors=True)
    assert started["url"].startswith("spark://127.0.0.1:")
    assert len(started["pids"]) >= 2  # master and worker JVMs

    def left() -> list[str]:
        running = [str(pid) for pid in started["pids"] if standalone_module.alive(pid)]
        return running + [
            entry.name
            for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _group_of(entry) in started["groups"]
        ]

    deadline = time.monotonic() + 60  # a JVM's SIGTERM shutdown takes about 0.5 s
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert left() == []


def _group_of(entry: Path) -> int | None:
    """The process group of a live process (None for zombies: exited, not yet reaped)."""
    try:
        fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        return None if fields[0] == "Z" else int(fields[2])
    except (OSError, ValueError, IndexError):
        return None


def test_a_write_on_a_cluster_whose_executors_lack_kartoframe_fails_clearly(
    cluster_spark: Any, tmp_path: Path
) -> None:
    """Proves: on a cluster session built without the helper's check (a session from
    ``spark-submit`` or ``SparkSession.builder``), kartoframe's first Spark write whose
    executors start an interpreter without kartoframe raises ``SparkPythonWorkerError``
    before its job, not a Java stack trace ending in ``ModuleNotFoundError`` from the
    job; and writes nothing. (Failed before the fix: the engine's worker check skipped
    every non-local master, and the write's job failed in the executors with
    ``PythonException ... ModuleNotFoundError: No module named 'kartoframe'``.)
    """
    import kartoframe as kf

    sdf = cluster_spark.createDataFrame([(1, "a"), (2, "b")], "k long, s string")
    store = kf.Store(f"file://{tmp_path}/store")
    sc = cluster_spark.sparkContext
    saved = sc.pythonExec
    sc.pythonExec = "/usr/bin/python3"
    try:
        with pytest.raises(SparkPythonWorkerError, match="cannot run kartoframe"):
            kfs.store_dataset_from_sdf(sdf, store, "ds")
    finally:
        sc.pythonExec = saved
    assert not list(store.iter_keys(""))
    kfs.store_dataset_from_sdf(sdf, store, "ds")  # the session's own interpreter works
    assert len(kf.read_table("ds", store)) == 2
