"""Running kartothek 5.3's ``query_cube`` on a store folder (the reference implementation,
in its own venv: ``bash tests/golden/make_kartothek53_env.sh``)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
KTK_PYTHON = (
    pathlib.Path(os.environ.get("KARTOTHEK53_VENV", ROOT / ".venv-kartothek53")) / "bin" / "python"
)
QUERY_SCRIPT = ROOT / "tests" / "golden" / "kartothek53_query.py"


def run_kartothek(
    store_path: pathlib.Path | str, queries: list[dict[str, Any]], tmp_path: pathlib.Path
) -> dict[str, list[pathlib.Path]]:
    """Run ``queries`` (the JSON form of ``kartothek53_query.py``) with kartothek 5.3 on
    the store folder; query id -> its result files (skips without the venv).
    """
    if not KTK_PYTHON.exists():
        pytest.skip(
            f"kartothek 5.3 venv not found at {KTK_PYTHON}: create it with "
            "`bash tests/golden/make_kartothek53_env.sh` (needs python3.11 and PyPI)"
        )
    qfile = tmp_path / "queries.json"
    qfile.write_text(json.dumps(queries))
    out = tmp_path / "out"
    args = ["--store", str(store_path), "--queries", str(qfile), "--out", str(out), "--strict"]
    proc = subprocess.run(
        [str(KTK_PYTHON), str(QUERY_SCRIPT), *args],
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    return {k: [out / f for f in v["result_files"]] for k, v in results.items()}
