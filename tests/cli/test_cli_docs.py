"""The ``$ kartoframe ...`` examples of docs/cli.md and docs/getting-started.md run as shown.

docs/cli.md builds its sample store in a ```python block; every command of a ```console
block is then run in that folder, must exit with 0 and, where the page shows output, print
exactly that (trailing spaces aside). A command with shell syntax beyond quoting (pipes,
redirections, variables) runs through bash with the installed console script; the others
are split as bash would and run through ``cli_helpers.run``.
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor

from cli_helpers import BIN, Result, cli_env, run

DOCS = pathlib.Path(__file__).parent.parent.parent / "docs"
BLOCK = re.compile(r"^```(python|console)\n(.*?)^```", re.S | re.M)
#: Commands that change the store run one after the other, in page order.
MUTATING = {"index", "copy", "delete", "gc", "cleanup", "merge"}
#: Shell syntax that needs bash (quotes alone are split by :func:`shlex.split`).
SHELL = re.compile(r"[|&;<>$`*?(){}\\]")


def _blocks(page: str) -> list[tuple[str, str]]:
    return BLOCK.findall((DOCS / page).read_text())


def _commands(page: str) -> list[tuple[str, list[str]]]:
    """``(command, expected output lines)`` of the page's console blocks."""
    out: list[tuple[str, list[str]]] = []
    for lang, body in _blocks(page):
        if lang != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                out.append((line[2:], []))
            elif out:
                out[-1][1].append(line.rstrip())
    return [(cmd, lines) for cmd, lines in out if cmd.startswith("kartoframe ")]


def _run(cmd: str, cwd: pathlib.Path) -> Result | subprocess.CompletedProcess[str]:
    env = {"PATH": f"{BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if not SHELL.search(cmd):
        return run(*shlex.split(cmd)[1:], env=env, cwd=cwd)
    return subprocess.run(
        ["bash", "-c", cmd],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def _check(cmd: str, expected: list[str], proc: Result | subprocess.CompletedProcess[str]) -> None:
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
    if expected:
        got = [line.rstrip() for line in proc.stdout.rstrip("\n").splitlines()]
        assert got == expected, (
            f"{cmd}: the page shows\n"
            + "\n".join(expected)
            + ("\nbut the command printed\n" + "\n".join(got))
        )


def test_console_examples_run_as_documented(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_cli"}
    setup = next(body for lang, body in _blocks("cli.md") if lang == "python")
    exec(compile(setup, "cli.md[setup]", "exec"), namespace)
    commands = _commands("getting-started.md") + _commands("cli.md")
    assert len(commands) >= 10
    first_mutating = next(
        (i for i, (cmd, _) in enumerate(commands) if cmd.split()[2] in MUTATING), len(commands)
    )
    read_only, rest = commands[:first_mutating], commands[first_mutating:]
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        procs = list(pool.map(lambda c: _run(c[0], tmp_path), read_only))
    for (cmd, expected), proc in zip(read_only, procs):
        _check(cmd, expected, proc)
    for cmd, expected in rest:
        _check(cmd, expected, _run(cmd, tmp_path))
