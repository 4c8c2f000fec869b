"""Helpers of the command-line tests: run the installed console script; sample data.

Every test runs the real ``kartoframe`` console script of the venv in a subprocess (each
one imports kartoframe, about a second), so independent read-only invocations run in
parallel through :func:`run_many`.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

import kartoframe as kf

BIN = pathlib.Path(sys.executable).with_name("kartoframe")

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


def run(
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
        timeout=120,
    )
    return Result(list(args), proc.returncode, proc.stdout, proc.stderr)


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
