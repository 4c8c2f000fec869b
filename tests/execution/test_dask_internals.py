"""dask's private classes are used in one small, version-gated module only."""

from __future__ import annotations

import ast
import pathlib

import dask
import pandas as pd

import kartoframe as kf
from kartoframe.execution import dask_internals

PKG = pathlib.Path(kf.__file__).parent
ALLOWED = {PKG / "execution" / "dask_internals.py"}


def _private_dask_imports(path: pathlib.Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "dask" and any(p.startswith("_") or p == "dask_expr" for p in parts):
                found.append(name)
    return found


def test_only_dask_internals_imports_private_dask_modules() -> None:
    bad = {
        str(p.relative_to(PKG)): names
        for p in PKG.rglob("*.py")
        if p not in ALLOWED and (names := _private_dask_imports(p))
    }
    assert not bad, bad
    assert _private_dask_imports(PKG / "execution" / "dask_internals.py")


def test_version_gate_covers_the_pinned_dask() -> None:
    # the tested releases include the one the constraints pin and CI installs
    pins = (PKG.parent / "requirements" / "constraints.txt").read_text().splitlines()
    pinned = next(line.split("==")[1] for line in pins if line.startswith("dask=="))
    assert pinned.startswith(dask_internals.TESTED_DASK), pinned
    assert dask.__version__ == pinned
    assert dask_internals.SUPPORTED


def test_fast_graph_falls_back_to_dd_from_map_when_unsupported(tmp_path, monkeypatch) -> None:
    df = pd.DataFrame({"p": [1, 1, 2], "x": [1, 2, 3]})
    store = f"file://{tmp_path}"
    kf.store_dataframes_as_dataset(store, "ds", [df], partition_on=["p"])
    fast = kf.read_dataset_as_ddf("ds", store)
    assert isinstance(fast.expr, dask_internals.KartoFromMap)
    monkeypatch.setattr(dask_internals, "_KartoFromMap", None)
    slow = kf.read_dataset_as_ddf("ds", store)
    assert not isinstance(slow.expr, dask_internals.KartoFromMap)
    got = slow.compute().sort_values("x").reset_index(drop=True)
    want = fast.compute().sort_values("x").reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
