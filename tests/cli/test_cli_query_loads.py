"""A cube query from the command line loads every dataset header once."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pandas as pd

import kartoframe as kf
from kartoframe.cli._query import QueryRequest, query_cube
from kartoframe.cli._targets import resolve
from kartoframe.storage import resolve as storage_resolve


def test_a_cube_query_loads_each_header_once(tmp_path: Any, monkeypatch: Any) -> None:
    store = kf.Store(f"file://{tmp_path}/store")
    cube = kf.Cube(["d"], ["p"], uuid_prefix="geo", index_columns=["i"])
    d = np.arange(20)
    kf.build_cube(
        {
            "seed": pd.DataFrame({"d": d, "p": d % 2, "i": d % 4, "v": d * 1.0}),
            "enrich": pd.DataFrame({"d": d, "p": d % 2, "w": d * 2}),
        },
        cube,
        store,
    )
    real = storage_resolve.load_dataset
    loads: list[str] = []

    def counting(store: Any, dataset_uuid: str, *args: Any, **kwargs: Any) -> Any:
        loads.append(dataset_uuid)
        return real(store, dataset_uuid, *args, **kwargs)

    for name, mod in list(sys.modules.items()):
        if mod is not None and name.split(".")[0] == "kartoframe":
            for attr, value in list(vars(mod).items()):
                if value is real:
                    monkeypatch.setattr(mod, attr, counting)
    target = resolve(store, "geo")
    result = query_cube(target, QueryRequest(["i == 1", "w > 4"]))
    assert sorted(loads) == ["geo++enrich", "geo++seed"]
    [(_, df)] = result.groups
    assert sorted(df["d"]) == [5, 9, 13, 17]
