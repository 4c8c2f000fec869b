"""``kartoframe STORE changes``: the change data feed as a table or JSON, the cursor, the
range and filter options, and errors (a vacuumed start version among them).

The sample store (cli_helpers.fill_store) holds ``sales`` (version 0: six rows over DE, FR
and IT) and the cube ``geo``; the tests merge into ``sales`` (version 1).
"""

from __future__ import annotations

import datetime as dt
import json
import pathlib

import pandas as pd
from cli_helpers import run

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._common import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK, json_value

FEED = ["_change_type", "_commit_version", "_commit_timestamp"]


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _merge(store: str) -> None:
    """Version 1: product 3 (DE) updated, product 99 (IT) inserted."""
    source = pd.DataFrame(
        {
            "country": ["DE", "IT"],
            "day": [dt.date(2024, 1, 3), dt.date(2024, 2, 1)],
            "product": [3, 99],
            "units": [90, 1],
        }
    )
    kf.merge_dataset(source, store, "sales", on=["product"])


def _records(df: pd.DataFrame) -> list[dict]:
    """Rows as the CLI's JSON gives them."""
    return json_value([dict(zip(df.columns, r)) for r in df.itertuples(index=False, name=None)])


def test_table_shows_every_changed_row_and_the_next_version(local_store, capsys) -> None:
    s = str(local_store)
    _merge(s)
    code, out, err = _cli([s, "changes", "sales", "--from", "0"], capsys)
    assert code == EXIT_OK, err
    lines = out.splitlines()
    assert lines[-1] == "next version: 2"
    header = next(line for line in lines if "_change_type" in line)
    assert [c.strip() for c in header.strip("┃").split("┃")] == [
        "country",
        "day",
        "product",
        "units",
        *FEED,
    ]
    body = [
        [c.strip() for c in line.strip("│").split("│")] for line in lines if line.startswith("│")
    ]
    assert len(body) == 9  # six inserts of version 0; the merge's update pair and insert
    merged = sorted((r[2], r[3], r[4], r[5]) for r in body if r[5] == "1")
    assert merged == [
        ("3", "9", "update_preimage", "1"),
        ("3", "90", "update_postimage", "1"),
        ("99", "1", "insert", "1"),
    ]
    stamp = kf.dataset_history("sales", s)[0].timestamp
    assert all(r[6] == pd.Timestamp(stamp).isoformat() for r in body if r[5] == "1")
    assert err.strip() == "(9 changed rows in versions 0 to 1)"


def test_json_equals_read_changes_through_the_console_script(local_store) -> None:
    s = str(local_store)
    _merge(s)
    result = run(s, "changes", "sales", "--from", "1", "--json")
    assert result.returncode == EXIT_OK, result
    got = result.json()
    want = kf.read_changes("sales", s, start_version=1)
    assert got == {"rows": _records(want.rows), "next_version": 2}
    assert [r["_change_type"] for r in got["rows"]] == [
        "update_preimage",
        "update_postimage",
        "insert",
    ]
    assert got["rows"][1]["units"] == 90 and got["rows"][1]["day"] == "2024-01-03"


def test_range_columns_and_where(local_store, capsys) -> None:
    s = str(local_store)
    _merge(s)
    args = [s, "changes", "sales", "--from", "0", "--to", "0", "-c", "prod*", "--json"]
    code, out, err = _cli([*args, "--where", "country == DE"], capsys)
    assert code == EXIT_OK, err
    got = json.loads(out)
    assert got["next_version"] == 1
    assert [list(r) for r in got["rows"]] == [["product", *FEED]] * 3
    assert sorted(r["product"] for r in got["rows"]) == [1, 3, 6]
    assert {r["_commit_version"] for r in got["rows"]} == {0}
    want = kf.read_changes(
        "sales", s, start_version=0, end_version=0, columns=["product"],
        predicates=[[("country", "==", "DE")]],
    )  # fmt: skip
    assert got["rows"] == _records(want.rows)


def test_tailing_with_the_printed_cursor(local_store, capsys) -> None:
    s = str(local_store)
    code, out, _ = _cli([s, "changes", "sales", "--from", "0"], capsys)
    cursor = int(out.splitlines()[-1].removeprefix("next version: "))
    assert (code, cursor) == (EXIT_OK, 1)
    code, out, err = _cli([s, "changes", "sales", "--from", str(cursor)], capsys)
    assert (code, out, err) == (EXIT_OK, "next version: 1\n", "(no version from 1 on)\n")
    _merge(s)
    code, out, _ = _cli([s, "changes", "sales", "--from", str(cursor), "--json"], capsys)
    got = json.loads(out)
    assert (code, len(got["rows"]), got["next_version"]) == (EXIT_OK, 3, 2)
    kf.optimize_dataset("sales", s, min_files=1)  # version 2: no row changes
    code, out, err = _cli([s, "changes", "sales", "--from", "2"], capsys)
    assert (code, out, err) == (EXIT_OK, "next version: 3\n", "(no changed rows in version 2)\n")


def test_a_vacuumed_start_version_is_a_clear_error(tmp_path: pathlib.Path, capsys) -> None:
    s = str(tmp_path / "store")
    df = pd.DataFrame({"id": [1, 2], "v": [1.0, 2.0]})
    kf.store_dataframes_as_dataset(s, "ds", [df])
    kf.merge_dataset(pd.DataFrame({"id": [1], "v": [10.0]}), s, "ds", on="id")  # 1
    kf.store_dataframes_as_dataset(s, "ds", [df], overwrite=True)  # 2
    kf.vacuum_dataset("ds", s, retention_hours=0, force=True)
    code, out, err = _cli([s, "changes", "ds", "--from", "1"], capsys)
    assert code == EXIT_BAD_INPUT and out == ""
    assert err.startswith("Error: The changes of version 1 of dataset 'ds' can no longer be read")
    assert "the oldest version whose changes can be read is" in err
    code, _, err = _cli([s, "changes", "ds", "--from", "1", "--json"], capsys)
    error = json.loads(err)["error"]
    assert code == EXIT_BAD_INPUT
    assert (error["kind"], error["type"]) == ("bad_input", "ChangesUnavailableError")
    code, out, _ = _cli([s, "changes", "ds", "--from", "3"], capsys)
    assert (code, out) == (EXIT_OK, "next version: 3\n")  # nothing vacuumed is needed


def test_bad_input_and_not_found(shared_store, capsys) -> None:
    s = str(shared_store)
    cases = [
        (["changes", "geo", "--from", "0"], EXIT_BAD_INPUT, "is a cube"),
        (["changes", "nope", "--from", "0"], EXIT_NOT_FOUND, "No dataset or cube named 'nope'"),
        (["changes", "sales"], EXIT_BAD_INPUT, "Missing option '--from'"),
        (["changes", "sales", "--from", "-1"], EXIT_BAD_INPUT, "--from"),
        (["changes", "sales", "--from", "5"], EXIT_BAD_INPUT, "start_version 5 is after"),
        (["changes", "sales", "--from", "0", "--to", "7"], EXIT_BAD_INPUT, "beyond the current"),
        (["changes", "sales", "--from", "3", "--to", "0"], EXIT_BAD_INPUT, "--to 0 is before"),
        (["changes", "sales", "--from", "0", "-c", "nope"], EXIT_BAD_INPUT, "nope"),
        (["changes", "sales", "--from", "0", "-w", "units >"], EXIT_BAD_INPUT, "units >"),
    ]
    for args, expected, message in cases:
        code, out, err = _cli([s, *args], capsys)
        assert (code, out) == (expected, ""), (args, err)
        assert message in err, (args, err)
