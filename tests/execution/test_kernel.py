"""The read kernel every engine runs (``kartoframe.execution.kernel``): a plan's tasks, read
one by one, in batches or in one scan, give the same rows as the public read."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.execution.kernel import (
    iter_plan_batches,
    read_plan_table,
    read_task_frame,
    read_task_table,
    to_frame,
)


def _sales(n: int, offset: int = 0) -> pd.DataFrame:
    i = range(offset, offset + n)
    return pd.DataFrame(
        {
            "country": [["DE", "FR", "IT"][k % 3] for k in i],
            "product": [k % 4 for k in i],
            "units": list(i),
        }
    )


@pytest.fixture
def sales(store) -> kf.Store:
    """Three chunks partitioned by ``country`` with an index on ``product`` (9 files)."""
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="sales",
        dfs=[_sales(12), _sales(12, 12), _sales(6, 24)],
        partition_on=["country"],
        secondary_indices=["product"],
    )
    return store


PREDICATES = [
    None,
    [[("country", "==", "FR")]],
    [[("product", "==", 2)]],
    [[("units", ">=", 7), ("country", "!=", "IT")], [("product", "in", [0])]],
]


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("units", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("predicates", PREDICATES)
def test_plan_table_equals_its_tasks_and_the_public_read(sales, predicates) -> None:
    plan, st = plan_read("sales", sales, predicates=predicates)
    whole = read_plan_table(plan, st)
    tasks = [read_task_table(plan, t, st, for_pandas=True) for t in plan.tasks]
    assert whole.column_names == list(plan.columns)
    assert sum(t.num_rows for t in tasks) == whole.num_rows
    got = _sorted(to_frame(plan, whole))
    by_task = [read_task_frame(plan, t, st) for t in plan.tasks]
    expected = _sorted(kf.read_table("sales", sales, predicates=predicates))
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    if by_task:
        pd.testing.assert_frame_equal(
            _sorted(pd.concat(by_task, ignore_index=True)), expected, check_dtype=False
        )


def test_pruning_leaves_only_the_matching_files(sales) -> None:
    full, _ = plan_read("sales", sales)
    pruned, st = plan_read("sales", sales, predicates=[[("country", "==", "DE")]])
    assert sum(len(t.files) for t in full.tasks) == 9
    files = [f for t in pruned.tasks for f in t.files]
    assert len(files) == 3
    assert all(f.partition_values == ("DE",) for f in files)
    assert set(read_plan_table(pruned, st).column("country").to_pylist()) == {"DE"}


def test_batches_concatenate_to_the_plan_table(sales) -> None:
    plan, st = plan_read("sales", sales)
    whole = read_plan_table(plan, st)
    parts = list(iter_plan_batches(plan, st, batches=3, min_files=2))
    assert [n for _, n in parts] == [3, 3, 3]
    joined = pa.concat_tables([t for t, _ in parts])
    assert joined.sort_by("units").equals(whole.sort_by("units"))


def test_an_empty_plan_reads_one_typed_empty_table(sales) -> None:
    plan, st = plan_read("sales", sales, predicates=[[("country", "==", "XX")]])
    assert plan.tasks == () or all(not t.files for t in plan.tasks)
    (table, n), *rest = list(iter_plan_batches(plan, st))
    assert rest == [] and n == 0 and table.num_rows == 0
    assert table.column_names == list(plan.columns)
    assert table.schema.field("units").type == pa.int64()


def test_projection_of_a_task(sales) -> None:
    plan, st = plan_read("sales", sales, columns=["units", "country"])
    task = plan.tasks[0]
    table = read_task_table(plan, task, st, columns=["units"])
    assert table.column_names == ["units"]
    assert table.num_rows == read_task_table(plan, task, st).num_rows
