"""Every ```python block of the README and docs/*.md runs, page by page, in order."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


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


MODULES = [
    "kartoframe.api.check",
    "kartoframe.api.history",
    "kartoframe.api.read",
    "kartoframe.api.write",
    "kartoframe.storage.store",
]


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples(module: str) -> None:
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
    assert result.attempted > 0
