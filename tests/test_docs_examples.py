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


def _modules_with_examples() -> list[str]:
    """Every module of the package whose docstrings hold an example (``>>>``)."""
    names = []
    for path in sorted((ROOT / "kartoframe").rglob("*.py")):
        if ">>> " in path.read_text():
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = _modules_with_examples()
#: Modules whose examples do not run here, and why (each is checked to still run none).
NOT_RUN = {
    "kartoframe.front.docs": "fragments: they run in the docstrings they are inserted into",
    "kartoframe.front.cube_args": "fragments: they run in the docstrings they are inserted into",
    **{
        m: "needs a SparkSession: every line is +SKIP (tests/spark runs the same calls)"
        for m in MODULES
        if m == "kartoframe.spark" or m.startswith("kartoframe.spark.")
    },
}


def test_the_examples_are_found() -> None:
    # the fronts of every engine, the formats and the stores have examples
    for module in ("kartoframe.api.read", "kartoframe.dask.merge", "kartoframe.storage.store"):
        assert module in MODULES
    assert set(NOT_RUN) <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert (result.attempted == 0) == (module in NOT_RUN), NOT_RUN.get(module, "no example ran")
