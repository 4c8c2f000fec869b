"""plateau reads datasets with statistics; kartoframe survives plateau rewriting them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.storage.resolve import read_header, statistics_ref

plateau = pytest.importorskip("plateau.api.dataset")

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def frame(n: int, start: int = 0) -> pd.DataFrame:
    x = np.arange(start, start + n)
    # pandas' "string" dtype: plateau on pandas 3 refuses to append "str" columns to a
    # dataset whose schema says ``string`` (docs/format.md)
    return pd.DataFrame({"p": x % 2, "x": x, "s": pd.array([f"s{v}" for v in x], dtype="string")})


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_plateau_reads_and_drops_the_kartoframe_map(tmp_path, fmt: str) -> None:
    url = f"{tmp_path}/store"
    store = kf.Store(url)
    kf.store_dataframes_as_dataset(
        store=url,
        dataset_uuid="ds",
        dfs=[frame(10), frame(10, 10)],
        partition_on=["p"],
        metadata_storage_format=fmt,
    )
    old_stats = statistics_ref(read_header(store, "ds")[0])
    assert old_stats is not None
    got = plateau.read_table("ds", f"hfs://{url}", predicates=[[("x", ">=", 15)]])
    assert sorted(got["x"]) == list(range(15, 20))
    # plateau rewrites the header: our map (schema record, statistics) is gone
    plateau.update_dataset_from_dataframes([frame(4, 100)], store=f"hfs://{url}", dataset_uuid="ds")
    header = read_header(store, "ds")[0]
    assert "kartoframe" not in header.extra
    assert not kf.dataset_statistics("ds", url)["has_statistics"].any()
    plan, _ = plan_read("ds", url, predicates=[[("x", ">=", 100)]])
    assert plan.stats.after_statistics == plan.stats.total == 6
    assert sorted(kf.read_table("ds", url, predicates=[[("x", ">=", 100)]])["x"]) == [
        100,
        101,
        102,
        103,
    ]
    # the old statistics file is garbage now; building statistics restores skipping
    assert old_stats.key in kf.garbage_collect_dataset(
        "ds", url, retention_hours=0, grace_hours=0, force=True
    )
    kf.build_dataset_statistics(url, "ds")
    plan, _ = plan_read("ds", url, predicates=[[("x", ">=", 100)]])
    assert plan.stats.after_statistics == 2
    assert kf.schema_history("ds", url)[0].change == "adopt"
    # and plateau still reads it (its GC leaves our side file alone)
    plateau.garbage_collect_dataset("ds", f"hfs://{url}")
    assert len(plateau.read_table("ds", f"hfs://{url}")) == 24
    assert statistics_ref(read_header(store, "ds")[0]).key in set(store.iter_keys("ds/"))


def test_plateau_reads_implicit_dataset_with_statistics_file(tmp_path) -> None:
    """plateau lists every *.parquet below <uuid>/ for implicit datasets: ours is not."""
    url = f"{tmp_path}/store"
    kf.create_empty_dataset_header(url, "ds", schema=frame(2).iloc[:0], partition_on=["p"])
    kf.write_single_partition(url, "ds", frame(6))
    kf.build_dataset_statistics(url, "ds")
    raw = json.loads(kf.Store(url).get("ds.by-dataset-metadata.json"))
    assert "partitions" not in raw and "statistics" in raw["kartoframe"]
    got = plateau.read_table("ds", f"hfs://{url}")
    assert sorted(got["x"]) == list(range(6))
    plan, _ = plan_read("ds", url, predicates=[[("x", ">", 4)]])
    assert plan.stats.after_statistics == 1


def test_kartoframe_adds_statistics_to_plateau_datasets(tmp_path) -> None:
    url = f"{tmp_path}/store"
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}", dataset_uuid="ds", dfs=[frame(8), frame(8, 8)], partition_on=["p"]
    )
    assert kf.schema_history("ds", url) == []
    kf.build_dataset_statistics(url, "ds")
    st = kf.dataset_statistics("ds", url)
    assert st["has_statistics"].all() and sorted(st["x.max"]) == [6, 7, 14, 15]
    got = kf.read_table("ds", url, predicates=[[("s", "==", "s9")]])
    assert got["x"].tolist() == [9]
