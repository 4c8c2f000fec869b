"""One read kernel: cube queries read through the dataset read kernel, and the dask read
path resolves like the eager one (partial index lookups included).
"""

from __future__ import annotations

import ast
import sys
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe import C
from kartoframe.format import index as fi

PACKAGE = Path(kf.__file__).parent


def _count(monkeypatch: Any, module: Any, name: str, record: Callable[..., object]) -> list[object]:
    """Wrap ``module.name`` in every loaded kartoframe module holding it; one entry a call."""
    real = getattr(module, name)
    calls: list[object] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(record(*args, **kwargs))
        return real(*args, **kwargs)

    for mod_name, mod in list(sys.modules.items()):
        if mod is not None and mod_name.split(".")[0] == "kartoframe":
            for attr, value in list(vars(mod).items()):
                if value is real:
                    monkeypatch.setattr(mod, attr, counting)
    return calls


@pytest.fixture
def cube_store(tmp_path: Any) -> tuple[kf.Cube, kf.Store]:
    store = kf.Store(f"file://{tmp_path}/cube")
    cube = kf.Cube(["d"], ["p"], uuid_prefix="c", index_columns=["i"])
    d = np.arange(30)
    kf.build_cube(
        {
            "seed": pd.DataFrame({"d": d, "p": d % 3, "i": d % 5, "v": d * 1.0}),
            "enrich": pd.DataFrame({"d": d, "p": d % 3, "w": d * 2}),
        },
        cube,
        store,
    )
    return cube, store


def test_cube_queries_read_through_the_dataset_kernel(cube_store: Any, monkeypatch: Any) -> None:
    from kartoframe.execution import kernel

    cube, store = cube_store
    reads = _count(
        monkeypatch, kernel, "read_task_table", lambda plan, task, *a, **k: plan.dataset_uuid
    )
    (df,) = kf.query_cube(cube, store, conditions=(C("i") == 2) & (C("w") > 10))
    assert sorted(df["d"]) == [7, 12, 17, 22, 27]
    # the merged group: one kernel read per dataset
    assert Counter(reads) == Counter({"c++seed": 1, "c++enrich": 1})
    reads.clear()
    frames = kf.query_cube(cube, store, partition_by=["i"])
    assert len(frames) == 5
    assert Counter(reads) == Counter({"c++seed": 1, "c++enrich": 1})


def test_dask_cube_queries_read_through_the_dataset_kernel(
    cube_store: Any, monkeypatch: Any
) -> None:
    pytest.importorskip("dask")
    from kartoframe.execution import kernel

    cube, store = cube_store
    reads = _count(
        monkeypatch, kernel, "read_task_table", lambda plan, task, *a, **k: plan.dataset_uuid
    )
    ddf = kf.query_cube_dataframe(cube, store, partition_by=["i"])
    assert len(ddf.compute(scheduler="sync")) == 30
    assert Counter(reads) == Counter({"c++seed": ddf.npartitions, "c++enrich": ddf.npartitions})


#: Modules that may call the storage scans (``storage.parquet.read_files``,
#: ``storage.csv_files.read_data_files`` / ``read_csv_files``): the storage layer itself
#: and the one read kernel.
SCAN_FUNCTIONS = {
    "kartoframe.storage.parquet": {"read_files"},
    "kartoframe.storage.csv_files": {"read_data_files", "read_csv_files"},
}


def test_only_the_kernel_uses_the_storage_scans() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith("storage/") or rel == "execution/kernel.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in SCAN_FUNCTIONS:
                names = {a.name for a in node.names} & SCAN_FUNCTIONS[node.module]
                if names:
                    offenders.append(f"{rel}: {sorted(names)}")
            elif isinstance(node, ast.Import):
                offenders += [
                    f"{rel}: import {a.name}" for a in node.names if a.name in SCAN_FUNCTIONS
                ]
    assert offenders == []


def _indexed_dataset(monkeypatch: Any) -> tuple[kf.Store, pd.DataFrame]:
    monkeypatch.setattr(fi, "LABELS_PER_ROW_GROUP", 16)
    monkeypatch.setattr(fi, "MIN_VALUES_PER_ROW_GROUP", 2)
    rng = np.random.default_rng(9)
    n = 3_000
    df = pd.DataFrame(
        {"p": rng.integers(0, 12, n), "i": rng.integers(0, 400, n), "rid": np.arange(n)}
    )
    store = kf.Store(f"memory://kernel-{uuid.uuid4().hex}")
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["i"]
    )
    return store, df


def test_dask_read_uses_partial_index_lookups_like_eager(monkeypatch: Any) -> None:
    pytest.importorskip("dask")
    store, df = _indexed_dataset(monkeypatch)
    lookups = _count(monkeypatch, fi, "index_from_bytes", lambda *a, **k: k.get("only"))
    predicates = [[("i", "in", [17, 300])]]
    eager = kf.read_table("ds", store, predicates=predicates)
    assert lookups == [(17, 300)]
    lookups.clear()
    ddf = kf.read_dataset_as_ddf("ds", store, predicates=predicates)
    assert lookups == [(17, 300)]  # the same lookup as the eager read: only those values
    got = ddf.compute(scheduler="sync")
    want = sorted(df.loc[df.i.isin([17, 300]), "rid"])
    assert sorted(got["rid"]) == sorted(eager["rid"]) == want


def test_dask_plan_loads_only_the_index_rows_of_its_values(monkeypatch: Any) -> None:
    pytest.importorskip("dask")
    from kartoframe.execution.read_plan import plan_ddf_read
    from kartoframe.storage.resolve import load_dataset, load_indices

    store, _ = _indexed_dataset(monkeypatch)
    full = load_indices(store, load_dataset(store, "ds"), ["i"]).indices["i"]
    _, _, loaded, _ = plan_ddf_read("ds", store, predicates=[[("i", "==", 17)]])
    part = loaded.indices["i"]
    assert part.num_rows < full.num_rows / 5
    assert 17 in part["i"].to_pylist()
    # categoricals of an indexed column need every value: the full index (known categories)
    _, _, loaded, _ = plan_ddf_read("ds", store, predicates=[[("i", "==", 17)]], categoricals=["i"])
    assert loaded.indices["i"].equals(full)
