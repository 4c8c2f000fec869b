"""The layer rule, for every module of the package: imports only point downwards.

    errors, _progress_bar  <  format  <  plan | storage  <  execution  <  front, progress.py
        <  api | dask | spark  <  kartoframe/__init__.py  <  cli

Every import counts: module-level ones, lazy ones inside functions, ``TYPE_CHECKING`` ones and
relative ones (the whole syntax tree is walked). Within one rank a module may import its
neighbours, except plan and storage, which never import each other, and the engine fronts:
the pandas front (api) imports neither the dask nor the Spark front, and those two never
import each other (each may reuse an eager function of api, e.g. for its signature). The
import graph has no cycle, no module is longer than :data:`SIZE_CAP` lines unless
:data:`OVERSIZE` says why, and the third-party engines stay in their layers.
"""

from __future__ import annotations

import ast
import pathlib
import tomllib
from collections.abc import Iterator

import setuptools

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "kartoframe"
#: The ``make demo`` application: outside the package, a user of its public API.
DEMO = ROOT / "demo"
#: What the demo may import of kartoframe (``plan_read`` is the documented way to see pruning).
DEMO_MAY_IMPORT = {"kartoframe", "kartoframe.spark", "kartoframe.api.read"}

#: The rank of each layer folder (a sub-package of kartoframe).
#: ``front`` is what the engine fronts share (keywords, argument checks, docstring fragments,
#: result values, each verb's first step); ``api`` (pandas: eager and iterator), ``dask`` and
#: ``spark`` are the engine fronts. The command line is a client of the public package.
LAYER_RANK = {
    "format": 1,
    "plan": 2,
    "storage": 2,
    "execution": 3,
    "front": 4,
    "api": 5,
    "dask": 5,
    "spark": 5,
    "cli": 7,
}
#: The rank of each top-level module: a new one must be given a rank here.
TOP_LEVEL_RANK = {
    "errors": 0,  # the exception hierarchy: imported by everything
    "_progress_bar": 0,  # the rich bar: a utility any layer may draw with
    "progress": 4,  # the public front of the bars (its dask callback lives in execution)
    "__init__": 6,  # the package: the public names of the engine fronts
}
#: Layers of one rank that never import each other.
INDEPENDENT = {frozenset({"plan", "storage"}), frozenset({"dask", "spark"})}
#: Layers that never import another of their rank (which may import them).
IMPORTS_NO_NEIGHBOUR = {"api": {"dask", "spark"}}

#: Third-party engines and the layers (folders, or top-level modules) that may import them.
THIRD_PARTY_ONLY_IN = {
    "fsspec": {"storage"},
    "s3fs": {"storage"},
    "dask": {"execution", "dask"},
    "distributed": {"execution", "dask"},
    "pyspark": {"execution"},
}

#: No module is longer than this many lines ...
SIZE_CAP = 600
#: ... unless it is listed here with the reason (a path relative to kartoframe/).
OVERSIZE: dict[str, str] = {}

#: Imports that close a cycle and are still there (importer, imported), with the reason: the
#: cycle test leaves them out of the graph.
KNOWN_CYCLE_EDGES: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, pathlib.Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _imports(name: str) -> Iterator[tuple[str, int]]:
    """Every module ``name`` imports (absolute dotted names) with the line of the import."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if _is_package(name) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                # ``from kartoframe.api import read`` imports the module kartoframe.api.read
                sub = f"{module}.{alias.name}"
                yield (sub if sub in MODULES else module), node.lineno


def _internal(target: str) -> str | None:
    """The kartoframe module an import of ``target`` names (None outside the package)."""
    while target and target not in MODULES:
        target = target.rpartition(".")[0]
    return target or None


def _group(name: str) -> str:
    """The layer folder of a module, or the top-level module's own name."""
    parts = name.split(".")
    if len(parts) == 1:
        return "__init__"
    return parts[1]


def _rank(name: str) -> int:
    group = _group(name)
    if len(name.split(".")) > 2 or (len(name.split(".")) == 2 and _is_package(name)):
        return LAYER_RANK[group]
    return TOP_LEVEL_RANK[group]


def _edges() -> Iterator[tuple[str, str, int]]:
    for name in MODULES:
        for target, line in _imports(name):
            internal = _internal(target) if target.split(".")[0] == "kartoframe" else None
            if internal is not None and internal != name:
                yield name, internal, line


def _where(name: str, line: int) -> str:
    return f"{MODULES[name].relative_to(PKG)}:{line}"


def test_every_module_has_a_rank() -> None:
    unranked = []
    for name in MODULES:
        group = _group(name)
        if group not in LAYER_RANK and group not in TOP_LEVEL_RANK:
            unranked.append(str(MODULES[name].relative_to(PKG)))
    assert not unranked, f"give these modules a rank in TOP_LEVEL_RANK: {unranked}"


def test_imports_only_point_downwards() -> None:
    bad = [
        f"{_where(src, line)} imports {dst} (rank {_rank(src)} -> {_rank(dst)})"
        for src, dst, line in _edges()
        if _rank(dst) > _rank(src)
    ]
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_plan_and_storage_are_independent() -> None:
    bad = [
        f"{_where(src, line)} imports {dst}"
        for src, dst, line in _edges()
        if frozenset({_group(src), _group(dst)}) in INDEPENDENT
    ]
    assert not bad, "sideways imports:\n" + "\n".join(bad)


def test_the_pandas_front_imports_no_other_engine_front() -> None:
    bad = [
        f"{_where(src, line)} imports {dst}"
        for src, dst, line in _edges()
        if _group(dst) in IMPORTS_NO_NEIGHBOUR.get(_group(src), set())
    ]
    assert not bad, "the pandas front imports an engine front:\n" + "\n".join(bad)


def test_the_import_graph_has_no_cycle() -> None:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for src, dst, _line in _edges():
        if (src, dst) not in KNOWN_CYCLE_EDGES:
            graph[src].add(dst)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_module_is_over_the_size_cap() -> None:
    sizes = {
        str(path.relative_to(PKG)): len(path.read_text().splitlines()) for path in MODULES.values()
    }
    over = {path: n for path, n in sizes.items() if n > SIZE_CAP and path not in OVERSIZE}
    assert not over, f"modules over {SIZE_CAP} lines (split them): {over}"


def test_third_party_engines_stay_in_their_layer() -> None:
    bad = []
    for name in MODULES:
        group = _group(name)
        for target, line in _imports(name):
            allowed = THIRD_PARTY_ONLY_IN.get(target.split(".")[0])
            if allowed is not None and group not in allowed:
                bad.append(f"{_where(name, line)} imports {target}")
    assert not bad, "third-party engines outside their layer:\n" + "\n".join(bad)


def test_the_demo_is_an_application_outside_the_package() -> None:
    assert (DEMO / "__main__.py").is_file()  # ``make demo`` runs ``python -m demo``
    assert not any("demo" in path.name for path in PKG.rglob("*.py"))
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packaged = setuptools.find_packages(str(ROOT), **find["packages"]["find"])
    assert packaged and all(p.split(".")[0] == "kartoframe" for p in packaged), packaged
    bad = []
    for path in sorted(DEMO.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            bad += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {name}"
                for name in names
                if name.split(".")[0] == "kartoframe" and name not in DEMO_MAY_IMPORT
            ]
    assert not bad, "the demo uses kartoframe as a user would:\n" + "\n".join(bad)
