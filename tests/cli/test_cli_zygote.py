"""The forked command line of the tests (``cli_zygote.py``) behaves as the installed script.

The other command-line tests run through :func:`cli_helpers.run`, which forks each
invocation from a zygote that imported kartoframe once. These tests check that this gives
exactly what the real console script gives (exit code, standard output, standard error),
that each invocation gets its own environment and working directory, and that the zygote
really forks (a refusal would silently fall back to the slower script).
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor

import cli_helpers
import pytest
from cli_helpers import Zygote, cli_env, run, run_many, run_script

from kartoframe.cli._common import ENV_STORAGE_OPTIONS


def test_forked_invocations_print_and_exit_as_the_script(shared_store: pathlib.Path) -> None:
    s = str(shared_store)
    calls = [
        [s, "ls", "--json"],
        [s, "info", "sales"],
        [s, "query", "sales", "--where", "country == DE", "--format", "csv"],
        [s, "info", "nope", "--json"],  # not found: exit 3, a JSON error on stderr
        [s, "query", "sales", "--where", "country ==="],  # bad input: exit 2
        ["--help"],
        ["/nonexistent-store-kf", "ls"],
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:  # independent, read-only invocations
        scripts = list(pool.map(lambda args: run_script(*args), calls))
    forked = run_many(calls)
    for args, f, script in zip(calls, forked, scripts, strict=True):
        assert (f.returncode, f.stdout, f.stderr) == (
            script.returncode,
            script.stdout,
            script.stderr,
        ), f"{args}\nforked: {f}\nscript: {script}"
    assert [f.returncode for f in forked] == [0, 0, 0, 3, 2, 0, 3]


def test_each_invocation_has_its_own_environment_and_folder(
    shared_store: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    bad = run(str(shared_store), "ls", env={ENV_STORAGE_OPTIONS: "not json"})
    assert bad.returncode == 2, bad
    assert "not valid JSON" in bad.stderr
    good = run(str(shared_store), "ls")  # the variable did not stay behind
    assert good.returncode == 0, good
    relative = os.path.relpath(shared_store, tmp_path)
    here = run(relative, "ls", "--json", cwd=tmp_path)
    assert here.returncode == 0, here
    assert here.json()["datasets"][0]["name"] == "sales"
    assert run(relative, "ls", cwd=tmp_path.parent).returncode == 3


def test_the_zygote_forks_and_survives_failed_invocations(shared_store: pathlib.Path) -> None:
    zygote = Zygote()
    try:
        results = [
            zygote.run(args, cli_env(), str(shared_store))
            for args in (
                [str(shared_store), "info", "missing"],
                [str(shared_store), "query", "sales", "--where", "units >"],
                [str(shared_store), "ls"],
            )
        ]
        assert all(r is not None for r in results), "the zygote refused to fork"
        assert [r.returncode for r in results if r is not None] == [3, 2, 0]
        assert zygote.proc.poll() is None
    finally:
        zygote.close()
    assert zygote.proc.returncode == 0


def test_an_invocation_over_the_time_limit_is_killed(
    shared_store: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    zygote = Zygote()
    try:
        assert zygote.run(["--help"], cli_env(), str(shared_store)) is not None  # imported
        monkeypatch.setattr(cli_helpers, "TIMEOUT", 0.001)
        with pytest.raises(subprocess.TimeoutExpired):
            zygote.run([str(shared_store), "query", "sales"], cli_env(), str(shared_store))
        assert zygote.proc.returncode == -signal.SIGKILL  # the zygote and its fork are gone
    finally:
        zygote.close()
    monkeypatch.undo()
    assert run(str(shared_store), "ls").returncode == 0  # the next invocation gets a new one
