"""Helpers of the command-line tests: run the command line in a process of its own; sample data.

Every invocation runs in a process of its own, with its own environment, working directory,
standard streams and exit code. A fresh ``kartoframe`` console script spends about 0.5 s of
CPU importing pandas, pyarrow, dask and kartoframe; :func:`run` forks the invocation from
a process that has imported the console script's entry point once (``cli_zygote.py``) and
runs ``sys.exit(main())`` there, as the installed script does. ``KARTOFRAME_TEST_CLI=script``
runs the installed console script instead (``test_cli_zygote.py`` checks both give the
same results; the terminal and signal tests always run the script). Independent read-only
invocations run in parallel through :func:`run_many`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pathlib
import queue
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

import kartoframe as kf

BIN = pathlib.Path(sys.executable).with_name("kartoframe")
ZYGOTE = pathlib.Path(__file__).with_name("cli_zygote.py")
#: Seconds an invocation may take (the console script's runs have the same limit).
TIMEOUT = 120

#: Column types the --where parsing tests read literals with (in this order).
WHERE_TYPES = {
    "country": pa.string(),
    "units": pa.int64(),
    "price": pa.float64(),
    "day": pa.date32(),
    "flag": pa.bool_(),
}


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        return json.loads(self.stderr)["error"]

    def __str__(self) -> str:
        return f"{self.args} -> {self.returncode}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KARTOFRAME_STORAGE_OPTIONS", None)
    env.pop("KARTOFRAME_PROGRESS", None)
    env.update(extra or {})
    return env


class Zygote:
    """One ``cli_zygote.py`` process: runs one invocation at a time, each in a fork."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(ZYGOTE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=cli_env(),
            text=True,
            start_new_session=True,  # one process group with its forks: killed together
        )
        self.tmp = tempfile.TemporaryDirectory(prefix="kf-cli-")

    def run(self, args: Sequence[str], env: dict[str, str], cwd: str) -> Result | None:
        """The invocation's result, or None if the zygote refused to fork (threads)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        out, err = (os.path.join(self.tmp.name, name) for name in ("stdout", "stderr"))
        req = {"args": list(args), "env": env, "cwd": cwd, "stdout": out, "stderr": err}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        if not ready:  # as subprocess.run(timeout=...) would: the invocation is killed
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise subprocess.TimeoutExpired(["kartoframe", *args], TIMEOUT)
        line = self.proc.stdout.readline()
        assert line, f"the CLI zygote died (exit code {self.proc.poll()})"
        answer = json.loads(line)
        if "refused" in answer:
            return None
        with open(out, encoding="utf-8") as o, open(err, encoding="utf-8") as e:
            return Result(list(args), int(answer["code"]), o.read(), e.read())

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):  # a zygote killed on a timeout
                self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.tmp.cleanup()


#: Idle zygotes of this test process (one is started whenever none is idle).
_IDLE: queue.SimpleQueue[Zygote] = queue.SimpleQueue()
_ALL: list[Zygote] = []


@atexit.register
def _close_zygotes() -> None:
    for z in _ALL:
        z.close()


def _use_script() -> bool:
    return os.environ.get("KARTOFRAME_TEST_CLI") == "script"


def run_script(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: pathlib.Path | str | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> Result:
    """Run the installed console script (standard input: /dev/null, not a terminal)."""
    assert BIN.exists(), f"{BIN} is missing: install the project (pip install -e .)"
    proc = subprocess.run(
        [str(BIN), *args],
        capture_output=True,
        text=True,
        env=cli_env(env),
        cwd=cwd,
        stdin=stdin,
        timeout=TIMEOUT,
    )
    return Result(list(args), proc.returncode, proc.stdout, proc.stderr)


def run(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: pathlib.Path | str | None = None,
    stdin: int | None = subprocess.DEVNULL,
) -> Result:
    """Run the command line in a process of its own (standard input: /dev/null).

    Forked from a zygote (see the module's docstring), or the installed console script
    with ``KARTOFRAME_TEST_CLI=script``.
    """
    if _use_script() or stdin != subprocess.DEVNULL:
        return run_script(*args, env=env, cwd=cwd, stdin=stdin)
    try:
        zygote = _IDLE.get_nowait()
    except queue.Empty:
        zygote = Zygote()
        _ALL.append(zygote)
    result = zygote.run(args, cli_env(env), str(cwd if cwd is not None else os.getcwd()))
    _IDLE.put(zygote)  # not on a failure: a zygote that died is not reused
    return result if result is not None else run_script(*args, env=env, cwd=cwd, stdin=stdin)


def run_many(
    calls: Sequence[Sequence[str]],
    envs: Sequence[dict[str, str] | None] | None = None,
    **kwargs: Any,
) -> list[Result]:
    """Run independent invocations in parallel (one per CPU); ``envs``: extra variables."""
    extra = list(envs) if envs is not None else [None] * len(calls)
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        return list(pool.map(lambda a, e: run(*a, env=e, **kwargs), calls, extra))


SALES = pd.DataFrame(
    {
        "country": ["DE", "FR", "DE", "IT", "FR", "DE"],
        "day": pd.to_datetime(
            ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-01", "2024-01-03", "2024-01-05"]
        ).date,
        "product": [1, 2, 3, 4, 5, 6],
        "units": [5, 7, 9, 1, 3, 11],
    }
)
SEED = pd.DataFrame(
    {
        "COUNTRY_CODE": ["DE", "FR", "IT"],
        "YEAR": [2024, 2024, 2025],
        "SALES": [10.0, 20.0, 30.0],
    }
)
ENRICH = pd.DataFrame({"COUNTRY_CODE": ["DE", "FR"], "POP": [83, 68]})
CUBE = kf.Cube(["COUNTRY_CODE"], ["YEAR"], uuid_prefix="geo")


def fill_store(store: kf.Store | str) -> None:
    """Dataset ``sales`` (3 partitions, index on product) and cube ``geo`` (seed, enrich)."""
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="sales",
        dfs=[SALES.iloc[:3], SALES.iloc[3:]],
        partition_on=["country"],
        secondary_indices=["product"],
        metadata={"owner": "cli-tests"},
    )
    kf.build_cube({"seed": SEED, "enrich": ENRICH}, CUBE, store, partition_on={"enrich": []})


def run_on_a_terminal(args: Sequence[str]) -> tuple[int, str, str]:
    """Run with standard error on a pseudo terminal; (exit code, stdout, what stderr drew)."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN), *args],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        env=cli_env({"COLUMNS": "120", "TERM": "xterm"}),
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    stdout, _ = proc.communicate(timeout=60)
    os.close(master)
    return proc.returncode, stdout.decode(), b"".join(chunks).decode("utf-8", "replace")
