"""Every ```python block of the README and docs/*.md runs, page by page, in order."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


CONSOLE = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
#: Pages whose ``$ kartoframe ...`` lines run too, after their Python blocks, in one folder.
SHELL_TOURS = {"getting-started.md": ("sales", "(2 rows)")}


def run_shell_tour(text: str, cwd: pathlib.Path, expected: tuple[str, ...]) -> None:
    """Run the ``$ kartoframe ...`` lines of ``console`` blocks with the installed command."""
    commands = [
        line[2:]
        for block in CONSOLE.findall(text)
        for line in block.splitlines()
        if line.startswith("$ kartoframe ")
    ]
    assert commands, "no shell tour"
    script = pathlib.Path(sys.executable).parent / "kartoframe"  # the installed entry point
    outputs = []
    for command in commands:
        args = shlex.split(command)
        proc = subprocess.run(
            [str(script), *args[1:]], cwd=cwd, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, f"$ {command}\n{proc.stdout}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr, proc.stderr
        outputs.append(proc.stdout + proc.stderr)
    for text_expected in expected:
        assert text_expected in "".join(outputs), (text_expected, outputs)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_code_blocks_run(page: pathlib.Path, tmp_path, monkeypatch) -> None:
    blocks = BLOCK.findall(page.read_text())
    if not blocks:
        pytest.skip("no python blocks")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
        except Exception as e:  # pragma: no cover - the message is the point
            raise AssertionError(f"{page.name} block {i} failed: {e!r}\n{code}") from e
    if page.name in SHELL_TOURS:
        run_shell_tour(page.read_text(), tmp_path, SHELL_TOURS[page.name])


MODULES = [
    "kartoframe.api.check",
    "kartoframe.api.changes",
    "kartoframe.api.history",
    "kartoframe.api.metadata",
    "kartoframe.api.optimize",
    "kartoframe.api.read",
    "kartoframe.api.write",
    "kartoframe.storage.csv_files",
    "kartoframe.storage.store",
]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
