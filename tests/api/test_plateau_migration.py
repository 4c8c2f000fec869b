"""Migrating from plateau by changing imports only.

* every public name of ``plateau.api.dataset`` has a kartoframe counterpart listed in
  ``docs/migration.md``, and every keyword of plateau's functions is accepted;
* a plateau 4.6.2 pipeline (minimalkv store factories, ``table=``, ``ParquetSerializer``, the
  delayed and bag APIs, secondary indices, predicates) prints the same with kartoframe's
  imports as with plateau's.
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import kartoframe as kf

pl = pytest.importorskip("plateau.api.dataset")

ROOT = pathlib.Path(__file__).parent.parent.parent
PIPELINE = pathlib.Path(__file__).parent / "data" / "plateau_pipeline.py"
MIGRATION = ROOT / "docs" / "migration.md"

#: plateau keywords kartoframe does not accept yet (function -> keywords). Shrinks only.
KNOWN_KEYWORD_GAPS: dict[str, set[str]] = {}


def _public_names() -> list[str]:
    return [n for n in dir(pl) if not n.startswith("_")]


def _functions() -> list[str]:
    return [n for n in _public_names() if inspect.isfunction(getattr(pl, n))]


def test_every_plateau_name_is_in_the_migration_table() -> None:
    text = MIGRATION.read_text()
    listed = set(re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", text, re.M))
    missing = sorted(set(_public_names()) - listed)
    assert not missing, f"docs/migration.md lacks rows for plateau names: {missing}"


@pytest.mark.parametrize("name", _functions())
def test_every_plateau_function_exists_and_takes_its_keywords(name: str) -> None:
    ours = getattr(kf, name, None)
    assert callable(ours), f"kartoframe has no {name} (plateau.api.dataset.{name})"
    assert name in kf.__all__
    theirs = set(inspect.signature(getattr(pl, name)).parameters)
    params = inspect.signature(ours).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    missing = theirs - set(params) - KNOWN_KEYWORD_GAPS.get(name, set())
    assert not missing, f"kf.{name} does not accept plateau's keywords {sorted(missing)}"
    stale = KNOWN_KEYWORD_GAPS.get(name, set()) & set(params)
    assert not stale, f"remove {sorted(stale)} of {name} from KNOWN_KEYWORD_GAPS"


def test_migration_rows_name_existing_kartoframe_objects() -> None:
    for counterpart in re.findall(r"`kf\.([A-Za-z_][A-Za-z0-9_]*)", MIGRATION.read_text()):
        assert hasattr(kf, counterpart), f"docs/migration.md names kf.{counterpart}"


# their docstring examples run in tests/test_docs_examples.py (every module's)


def _kartoframe_imports(plateau_imports: str) -> str:
    """The names the pipeline imports from plateau, imported from kartoframe instead."""
    nodes = ast.parse(plateau_imports).body
    assert nodes and all(
        isinstance(n, ast.ImportFrom) and (n.module or "").startswith("plateau") for n in nodes
    )
    names = sorted(a.name for n in nodes for a in n.names)  # type: ignore[attr-defined]
    return "from kartoframe import (\n" + "".join(f"    {n},\n" for n in names) + ")\n\n"


def _run(script: pathlib.Path, folder: pathlib.Path) -> str:
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(script), str(folder)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
@pytest.mark.interop
def test_plateau_pipeline_runs_unchanged_with_kartoframe_imports(tmp_path: pathlib.Path) -> None:
    source = PIPELINE.read_text()
    converted = re.sub(
        r"(# IMPORTS-BEGIN\n)(.*?)(# IMPORTS-END)",
        lambda m: m.group(1) + _kartoframe_imports(m.group(2)) + m.group(3),
        source,
        flags=re.S,
    )
    assert converted != source and not re.search(r"^(from|import) plateau", converted, re.M)
    ours = tmp_path / "kartoframe_pipeline.py"
    ours.write_text(converted)
    expected = _run(PIPELINE, tmp_path / "store-plateau")
    got = _run(ours, tmp_path / "store-kartoframe")
    assert "== all: 48 rows" in expected
    assert got == expected
