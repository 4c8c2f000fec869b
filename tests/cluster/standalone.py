"""A Spark standalone cluster (one master, one worker) on 127.0.0.1 for the tests, started
from pyspark's own distribution (``$SPARK_HOME/bin/spark-class``), and the test session's
shared cluster SparkSession.

pip's pyspark ships ``bin/spark-class`` but no ``sbin/`` scripts; ``spark-class`` execs the
JVM, so a started process's PID is the JVM's. Ports are dynamic (``--port 0``, the bound one
is read from the master's log), the REST server is off, the daemons start with a fast JIT
setting, and the work dir (executor logs: ``work/app-*/N/stderr``) is a temporary folder.
Stopping sends SIGTERM to the worker, then the master (each takes its executors along), waits,
and kills whatever of the cluster's process groups is left: nothing started here outlives
:meth:`StandaloneCluster.stop`, which also runs at exit; a launcher killed outright takes the
daemons along too (they get SIGTERM when it dies).

Loaded by ``tests/conftest.py`` (the ``spark`` fixture with ``KARTOFRAME_TEST_SPARK=cluster``)
and ``tests/cluster/conftest.py`` under one module name, :data:`MODULE_NAME`, so the test
session has one shared cluster.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MODULE_NAME = "kf_test_standalone"
#: Fast JVM start for short-lived daemons and executors (platform notes: 7.5 s -> 4.3 s).
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
_REGISTERED = "Successfully registered with master"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _descendants(pid: int) -> set[int]:
    """PIDs of every live descendant of ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def _die_with_parent() -> None:
    """(In the child, before exec.) SIGTERM when the launching thread's process dies, even
    by SIGKILL, when neither ``stop()`` nor ``atexit`` can run (Linux ``PR_SET_PDEATHSIG``;
    it survives the exec of ``spark-class`` and its exec of the JVM).
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class StandaloneCluster:
    """A standalone master and one worker (``cores`` cores, ``memory``) on 127.0.0.1."""

    def __init__(self, cores: int = 2, memory: str = "1g") -> None:
        self.cores = cores
        self.memory = memory
        self.folder = Path(tempfile.mkdtemp(prefix="kf-spark-cluster-"))
        self.work_dir = self.folder / "work"
        self.master_url = ""
        self.master: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self._stopped = False
        self.stopped_pids: list[int] = []
        atexit.register(self.stop)

    # -- start ---------------------------------------------------------------------------
    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        conf_dir = self.folder / "conf"  # no spark-defaults/spark-env of the machine's
        conf_dir.mkdir(exist_ok=True)
        env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(conf_dir),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY="256m",
            SPARK_WORKER_DIR=str(self.work_dir),
            SPARK_DAEMON_JAVA_OPTS=FAST_JVM,  # Spark's INFO log: the master URL is read from it
            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
            SPARK_LOG_DIR=str(self.folder / "logs"),
        )
        return env

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - owned by the process
        try:
            return subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env(),
                start_new_session=True,  # its own process group: stop() can take it whole
                preexec_fn=_die_with_parent,
            )
        finally:
            log.close()

    def _wait_for(self, name: str, proc: subprocess.Popen[bytes], pattern: str, timeout: float):
        deadline = time.monotonic() + timeout
        path = self.folder / f"{name}.log"
        while time.monotonic() < deadline:
            text = path.read_text(errors="replace") if path.exists() else ""
            m = re.search(pattern, text)
            if m:
                return m
            if proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"the Spark {name} did not start:\n{self.log(name)}")

    def start(self, timeout: float = 90.0) -> StandaloneCluster:
        """Start the master, then the worker; return when the worker is registered."""
        try:
            self.master = self._spawn(
                "master",
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                ],
            )  # fmt: skip
            found = self._wait_for("master", self.master, _MASTER_URL.pattern, timeout)
            self.master_url = found.group(1)
            self.worker = self._spawn(
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker", self.master_url,
                    "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                    "--cores", str(self.cores), "--memory", self.memory,
                    "--work-dir", str(self.work_dir),
                ],
            )  # fmt: skip
            self._wait_for("worker", self.worker, re.escape(_REGISTERED), timeout)
        except BaseException:
            self.stop()
            raise
        return self

    # -- inspect -------------------------------------------------------------------------
    def log(self, name: str, lines: int = 60) -> str:
        path = self.folder / f"{name}.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def executor_logs(self) -> dict[str, str]:
        """``app-*/N/stderr`` (and ``stdout``) of every executor, by relative path."""
        if not self.work_dir.exists():
            return {}
        return {
            str(p.relative_to(self.work_dir)): p.read_text(errors="replace")
            for p in sorted(self.work_dir.glob("app-*/*/std*"))
        }

    def executor_log_tails(self, lines: int = 40) -> str:
        parts = []
        for name, text in self.executor_logs().items():
            tail = "\n".join(text.splitlines()[-lines:])
            parts.append(f"--- {name} (last {lines} lines) ---\n{tail}")
        return "\n".join(parts) or "(no executor logs)"

    def pids(self) -> list[int]:
        """The daemons' PIDs and their live descendants (executors and their Python)."""
        out: set[int] = set()
        for proc in (self.master, self.worker):
            if proc is not None:
                out.add(proc.pid)
                out |= _descendants(proc.pid)
        return sorted(out)

    def groups(self) -> set[int]:
        """The process groups of the daemons (each started in its own session)."""
        return {p.pid for p in (self.master, self.worker) if p is not None}

    def leftovers(self) -> list[tuple[int, str]]:
        """Live processes of the cluster's process groups (executors included), with their
        command lines; empty after :meth:`stop`.
        """
        groups = self.groups()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] == "Z" or int(fields[2]) not in groups:
                    continue
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError, IndexError):
                continue
            found.append((int(entry.name), cmd.strip()))
        return found

    # -- stop ----------------------------------------------------------------------------
    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the worker, then the master; SIGKILL their process groups if they linger.

        Idempotent; registered with ``atexit``. The work folder is removed.
        """
        if self._stopped:
            return
        self._stopped = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        procs = [p for p in (self.worker, self.master) if p is not None]
        self.stopped_pids = self.pids()  # for the tests: every one of them is gone after
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=timeout)
        for proc in procs:
            # its process group (start_new_session): executors and Python workers left behind
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=timeout)
        shutil.rmtree(self.folder, ignore_errors=True)


# -- the test session's shared cluster and session ---------------------------------------
_shared: dict[str, Any] = {}
#: The tails of the executor logs of the last shared cluster, kept when it stops.
LAST_LOGS: list[str] = []


def session_conf(cluster: StandaloneCluster) -> dict[str, str]:
    """The test settings of a cluster session (retries: Spark's default, 4 attempts)."""
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": "1g",
        "spark.executor.memory": "512m",
        "spark.executor.cores": str(cluster.cores),
        "spark.cores.max": str(cluster.cores),
        "spark.executor.extraJavaOptions": FAST_JVM,  # Spark's own logging: printed on failure
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(cluster.cores),
        "spark.default.parallelism": str(cluster.cores),
    }


def shared_session(conf: Mapping[str, str] | None = None) -> Any:
    """The test session's cluster SparkSession (started once, with its cluster).

    Built by :func:`kartoframe.spark.cluster_session` (the documented helper): executor
    Python, Arrow, UTC, and the executors checked before the first test's job.
    """
    if "session" not in _shared:
        import kartoframe.spark as kfs

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        cluster = _shared.get("cluster") or StandaloneCluster().start()
        _shared["cluster"] = cluster
        _shared["session"] = kfs.cluster_session(
            cluster.master_url,
            app_name="kartoframe-cluster-tests",
            python=sys.executable,
            java_options=FAST_JVM,  # and (quiet) kartoframe's error-only log4j2 file
            conf={**session_conf(cluster), **(conf or {})},
        )
        atexit.register(shutdown)
    return _shared["session"]


def shared_cluster() -> StandaloneCluster | None:
    """The shared cluster, if :func:`shared_session` started it."""
    return _shared.get("cluster")


def shutdown() -> list[tuple[int, str]]:
    """Stop the shared session and its cluster; return its processes still alive (none)."""
    session = _shared.pop("session", None)
    cluster = _shared.pop("cluster", None)
    if session is not None:
        with contextlib.suppress(Exception):
            session.stop()
    if cluster is not None:
        LAST_LOGS[:] = [cluster.executor_log_tails()]  # for a failure summary after the stop
        cluster.stop()
        return cluster.leftovers() + [(p, "") for p in cluster.stopped_pids if alive(p)]
    return []
