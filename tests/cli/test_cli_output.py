"""Small output details: counts in the singular, labelled version numbers."""

from __future__ import annotations

import pandas as pd

import kartoframe as kf
from kartoframe.cli import main


def test_schema_history_says_which_versions_it_counts(tmp_path, capsys) -> None:
    s = str(tmp_path / "store")
    kf.store_dataframes_as_dataset(store=s, dataset_uuid="one", dfs=[pd.DataFrame({"x": [1]})])
    assert main([s, "schema", "one", "--history"]) == 0
    captured = capsys.readouterr()
    assert "schema version" in captured.out
    assert (
        "from 1" in captured.err and "`history` shows the commit versions, from 0" in captured.err
    )
    # the log's first version is 0
    assert [r.version for r in kf.dataset_history("one", s)] == [0]


def test_one_file_is_singular(tmp_path, capsys) -> None:
    s = str(tmp_path / "store")
    kf.store_dataframes_as_dataset(store=s, dataset_uuid="one", dfs=[pd.DataFrame({"x": [1]})])
    assert main([s, "ls", "--long"]) == 0
    out = capsys.readouterr().out
    assert "1 file;" in out and "1 files" not in out
