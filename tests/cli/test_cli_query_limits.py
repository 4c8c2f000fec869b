"""Queries stream: a limit (or a terminal table's 100 rows) stops reading early."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._query import TABLE_ROWS, QueryRequest, query_dataset
from kartoframe.cli._targets import resolve

#: 20 files of 10 rows: ``n`` is the row number over the whole dataset.
FILES = 20


@pytest.fixture(scope="module")
def many_files(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("limits") / "store")
    dfs = [
        pd.DataFrame({"n": range(10 * i, 10 * (i + 1)), "g": ["a", "b"] * 5}) for i in range(FILES)
    ]
    kf.store_dataframes_as_dataset(store=root, dataset_uuid="big", dfs=dfs, secondary_indices=["g"])
    return root


def _target(root: str):
    return resolve(kf.Store(root), "big")


def test_a_limit_reads_fewer_files_and_returns_the_first_rows(many_files) -> None:
    full = kf.read_table("big", many_files)
    assert len(full) == 10 * FILES
    result = query_dataset(_target(many_files), QueryRequest(limit=5))
    [(_, df)] = result.groups
    assert result.files_planned == FILES
    assert result.files_read is not None and result.files_read < FILES
    pd.testing.assert_frame_equal(df.reset_index(drop=True), full.iloc[:5].reset_index(drop=True))
    assert not result.more


def test_a_terminal_table_reads_what_it_shows(many_files) -> None:
    """No --limit: the table shows 100 rows, and no more than that (and one) is read."""
    result = query_dataset(_target(many_files), QueryRequest(), budget=TABLE_ROWS)
    assert result.more and result.rows == TABLE_ROWS
    assert result.files_read is not None and result.files_read < FILES
    # everything when everything fits, and a filtered query stops the same way
    small = query_dataset(_target(many_files), QueryRequest(["n < 30"]), budget=100)
    assert small.rows == 30 and not small.more
    csv = query_dataset(_target(many_files), QueryRequest())
    assert csv.rows == 10 * FILES and csv.files_read == FILES


def test_terminal_table_says_more_rows_match(many_files, capsys) -> None:
    assert main([many_files, "query", "big"]) == 0
    captured = capsys.readouterr()
    assert f"showing the first {TABLE_ROWS} rows; more match" in captured.err
    assert "│ 99 " in captured.out and "│ 100 " not in captured.out


def test_limit_with_partition_by_limits_each_group(many_files, capsys) -> None:
    assert main([many_files, "query", "big", "--partition-by", "g", "--limit", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["g"], r["n"]) for r in rows] == [("a", 0), ("a", 2), ("b", 1), ("b", 3)]


def test_limit_with_partition_by_on_a_cube(shared_store, capsys) -> None:
    s = str(shared_store)
    assert main([s, "query", "geo", "--partition-by", "YEAR", "--limit", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["YEAR"], r["COUNTRY_CODE"]) for r in rows] == [(2024, "DE"), (2025, "IT")]


def test_table_output_file_holds_the_table(shared_store, tmp_path, capsys) -> None:
    out = tmp_path / "sales.txt"
    args = [str(shared_store), "query", "sales", "-c", "product,units", "-o", str(out)]
    assert main(args) == 0
    assert "Wrote 6 rows" in capsys.readouterr().err
    text = out.read_text()
    assert "┃ product ┃ units ┃" in text and "│ 6       │ 11    │" in text
    assert "product,units" not in text and "\x1b[" not in text
    one = tmp_path / "one.csv"
    args = [str(shared_store), "query", "sales", "-w", "product == 1", "-f", "csv", "-o", str(one)]
    assert main(args) == 0
    assert "Wrote 1 row to" in capsys.readouterr().err


def test_cube_query_with_a_dataset_includes_the_seed(shared_store, capsys) -> None:
    s = str(shared_store)
    assert main([s, "query", "geo", "--dataset", "enrich", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["COUNTRY_CODE"], r["POP"], "SALES" in r) for r in rows] == [
        ("DE", 83, True),
        ("FR", 68, True),
        ("IT", None, True),
    ]
