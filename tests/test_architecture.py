"""The layer rule: imports only point downwards (api -> execution -> plan|storage -> format)."""

from __future__ import annotations

import ast
import pathlib

PKG = pathlib.Path(__file__).parent.parent / "kartoframe"
RANK = {"format": 0, "plan": 1, "storage": 1, "execution": 2, "api": 3}
THIRD_PARTY_ONLY_IN = {
    "fsspec": {"storage"},
    "s3fs": {"storage"},
    "dask": {"execution", "api"},
    "distributed": {"execution", "api"},
    "pyspark": {"execution"},
}


def _imports(path: pathlib.Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append(node.module)
    return out


def _layer(path: pathlib.Path) -> str | None:
    rel = path.relative_to(PKG).parts
    return rel[0] if len(rel) > 1 and rel[0] in RANK else None


def test_layers_only_import_downwards() -> None:
    bad = []
    for path in PKG.rglob("*.py"):
        layer = _layer(path)
        if layer is None:
            continue
        for mod in _imports(path):
            parts = mod.split(".")
            if parts[0] == "kartoframe" and len(parts) > 1 and parts[1] in RANK:
                target = parts[1]
                if target != layer and RANK[target] >= RANK[layer]:
                    bad.append(f"{path.relative_to(PKG)} imports {mod}")
    assert not bad, "layer violations:\n" + "\n".join(bad)


def test_plan_and_storage_are_independent() -> None:
    bad = []
    for path in PKG.rglob("*.py"):
        layer = _layer(path)
        for mod in _imports(path):
            if layer == "plan" and mod.startswith("kartoframe.storage"):
                bad.append(f"{path.name} imports {mod}")
            if layer == "storage" and mod.startswith("kartoframe.plan"):
                bad.append(f"{path.name} imports {mod}")
    assert not bad, bad


#: Applications on top of the public API (the ``make demo`` job), not library layers: they
#: start a SparkSession and use dask directly, as a user would.
APPLICATIONS = {"demo.py", "_demo_engines.py"}


def test_third_party_engines_stay_in_their_layer() -> None:
    bad = []
    for path in PKG.rglob("*.py"):
        if path.parent == PKG and path.name in APPLICATIONS:
            continue
        layer = _layer(path)
        for mod in _imports(path):
            allowed = THIRD_PARTY_ONLY_IN.get(mod.split(".")[0])
            if allowed is not None and layer not in allowed:
                bad.append(f"{path.relative_to(PKG)} imports {mod}")
    assert not bad, bad
