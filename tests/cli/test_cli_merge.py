"""``kartoframe STORE merge``: upserts from a Parquet file, dry runs, --json, --where, errors.

The sample store (cli_helpers.fill_store) holds ``sales`` (partitioned by country, two
files in DE and FR, one in IT; index on product) and the cube ``geo``.
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib

import pandas as pd
from cli_helpers import SALES, run

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._common import EXIT_BAD_INPUT, EXIT_OK


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _source(tmp_path: pathlib.Path, df: pd.DataFrame) -> str:
    path = tmp_path / "changes.parquet"
    df.to_parquet(path, index=False)
    return str(path)


def _changes() -> pd.DataFrame:
    """Product 3 (DE) corrected, product 99 (IT) new."""
    return pd.DataFrame(
        {
            "country": ["DE", "IT"],
            "day": [dt.date(2024, 1, 3), dt.date(2024, 2, 1)],
            "product": [3, 99],
            "units": [90, 1],
        }
    )


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dry_run_prints_candidates_and_counts_and_writes_nothing(local_store, tmp_path, capsys):
    s = str(local_store)
    src = _source(tmp_path, _changes())
    before = _files(local_store)
    args = [s, "merge", "sales", src, "--on", "country,product", "--dry-run"]
    code, out, err = _cli(args, capsys)
    assert code == EXIT_OK, err
    lines = out.splitlines()
    assert lines[0] == (
        "Would merge into sales: 2 source rows: 1 matched, 1 not matched; "
        "1 candidate file in 1 partition."
    )
    assert lines[1] == "Would update 1, delete 0 and insert 1 rows, rewriting 1 file."
    assert lines[2] == "  country=DE: 1 file"
    assert lines[3].startswith("    country=DE/")
    assert _files(local_store) == before


def test_merge_updates_and_inserts_with_json(local_store, tmp_path) -> None:
    s = str(local_store)
    result = run(s, "merge", "sales", _source(tmp_path, _changes()), "--on", "product", "--json")
    assert result.returncode == EXIT_OK, result
    got = json.loads(result.stdout)
    assert (got["rows_updated"], got["rows_inserted"], got["dry_run"]) == (1, 1, False)
    assert got["version"] == kf.dataset_history("sales", s)[0].version
    table = kf.read_table("sales", s).sort_values("product")
    assert table["product"].tolist() == [*SALES["product"], 99]
    assert table.loc[table["product"] == 3, "units"].tolist() == [90]


def test_when_options_and_where(local_store, tmp_path, capsys) -> None:
    s = str(local_store)
    only_de = pd.DataFrame(
        {"country": ["DE"], "day": [dt.date(2024, 1, 1)], "product": [1], "units": [5]}
    )
    args = [s, "merge", "sales", _source(tmp_path, only_de), "--on", "product"]
    args += ["--where", "country == DE", "--when-not-matched-by-source", "delete"]
    code, out, err = _cli(args, capsys)
    assert code == EXIT_OK, err
    assert "deleted 2 and inserted 0 rows" in out
    table = kf.read_table("sales", s)
    assert sorted(table["product"]) == [1, 2, 4, 5]  # DE keeps product 1 only


def test_bad_input_is_a_clear_error(local_store, tmp_path, capsys) -> None:
    s = str(local_store)
    dup = pd.concat([_changes(), _changes()], ignore_index=True)
    code, _, err = _cli([s, "merge", "sales", _source(tmp_path, dup), "--on", "product"], capsys)
    assert code == EXIT_BAD_INPUT and "{'product': 3} (2 rows)" in err
    bad = tmp_path / "not.parquet"
    bad.write_text("no parquet")
    code, _, err = _cli([s, "merge", "sales", str(bad), "--on", "product"], capsys)
    assert code == EXIT_BAD_INPUT and "Cannot read" in err
    code, _, err = _cli([s, "merge", "geo", str(bad), "--on", "product"], capsys)
    assert code == EXIT_BAD_INPUT and "is a cube" in err
