"""The demo's statistics step shows a query skipping files by statistics."""

from __future__ import annotations

import importlib
import pathlib
import re

#: The demo is an application outside the package, in the repository's top folder.
ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_demo_skips_files_by_statistics(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    demo = importlib.import_module("demo.run")
    demo.run(f"file://{tmp_path}/store", 20_000, [])
    out = capsys.readouterr().out
    block = out[out.index("- data skipping by statistics") :]
    m = re.search(r"(\d+) after indices -> (\d+) after statistics", block)
    assert m is not None, block
    after_indices, after_statistics = int(m.group(1)), int(m.group(2))
    assert after_statistics < after_indices / 5
    assert "per-file statistics of" in block and "demo finished" in out
