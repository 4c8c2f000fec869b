"""``kartoframe STORE optimize``: compaction end to end, dry runs, --json, --where, sizes, cubes.

The sample store (cli_helpers.fill_store) holds ``sales`` written in two chunks: two files in
the partitions country=DE and country=FR, one in country=IT; and the cube ``geo``.
"""

from __future__ import annotations

import json
import pathlib

import pandas as pd
import pytest
from cli_helpers import CUBE, SALES, SEED, run, run_many, run_on_a_terminal

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._common import EXIT_BAD_INPUT, EXIT_OK
from kartoframe.cli._optimize import parse_size

RESULT_KEYS = {
    "dataset_uuid",
    "version",
    "files_removed",
    "files_added",
    "bytes_removed",
    "bytes_added",
    "partitions_optimized",
    "partitions_skipped",
    "dry_run",
}


def _files(root: pathlib.Path) -> dict[str, bytes]:
    """Every file of the store with its content (what "writes nothing" compares)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    cols = sorted(df.columns)
    return df[cols].sort_values(cols).reset_index(drop=True)


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    """The console script's entry point in this process (fast: no interpreter start)."""
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dataset_compaction_end_to_end(local_store) -> None:
    s = str(local_store)
    before = kf.read_table("sales", s)
    assert len(kf.read_dataset_metadata("sales", s).partitions) == 5
    untouched = _files(local_store)
    dry, dry_json = run_many(
        [[s, "optimize", "sales", "--dry-run"], [s, "optimize", "sales", "--dry-run", "--json"]]
    )
    assert dry.returncode == dry_json.returncode == EXIT_OK, (dry, dry_json)
    planned = dry_json.json()
    assert planned["dry_run"] is True and planned["files_removed"] == 4
    lines = dry.stdout.splitlines()
    assert lines[0].startswith("Would optimize sales: 2 partitions, 4 files (")
    assert lines[0].endswith(") → 2 files.")
    assert lines[1:] == [
        "Would skip 1 partition: fewer than min_files=2 files below the target (1)."
    ]
    assert _files(local_store) == untouched  # a dry run writes nothing

    done = run(s, "optimize", "sales")
    assert done.returncode == EXIT_OK, done
    first, skipped = done.stdout.splitlines()
    compacted = kf.read_dataset_metadata("sales", s)
    assert first.startswith("Optimized sales: 2 partitions, 4 files (") and " → 2 files (" in first
    assert first.endswith(f"; version {kf.dataset_history('sales', s)[0].version}.")
    assert skipped == "Skipped 1 partition: fewer than min_files=2 files below the target (1)."
    assert len(compacted.partitions) == 3  # 5 files -> one per country
    pd.testing.assert_frame_equal(_sorted(kf.read_table("sales", s)), _sorted(before))
    # the secondary index follows the new files
    hit = kf.read_table("sales", s, predicates=[[("product", "==", 3)]])
    assert list(hit["units"]) == [9]

    again = run(s, "optimize", "sales")
    assert again.returncode == EXIT_OK, again
    assert again.stdout.splitlines() == [
        "Nothing to optimize in sales.",
        "Skipped 3 partitions: fewer than min_files=2 files below the target (3).",
    ]
    assert len(kf.read_dataset_metadata("sales", s).partitions) == 3


def test_json_output_and_sorting(local_store, capsys) -> None:
    s = str(local_store)
    before = kf.read_table("sales", s)
    code, out, err = _cli([s, "optimize", "sales", "--sort-by", "units", "--json"], capsys)
    assert code == EXIT_OK, err
    got = json.loads(out)
    assert set(got) == RESULT_KEYS
    assert got["dataset_uuid"] == "sales" and got["dry_run"] is False
    # sorting rewrites every partition not yet in that order, IT's single file too
    assert got["files_removed"] == 5 and got["files_added"] == 3
    assert got["partitions_optimized"] == ["country=DE", "country=FR", "country=IT"]
    assert got["partitions_skipped"] == []
    assert got["bytes_removed"] > 0 and got["bytes_added"] > 0
    assert got["version"] == kf.dataset_history("sales", s)[0].version
    after = kf.read_table("sales", s, predicates=[[("country", "==", "DE")]])
    assert list(after["units"]) == sorted(after["units"])
    pd.testing.assert_frame_equal(_sorted(kf.read_table("sales", s)), _sorted(before))
    # the same order again: already optimized
    code, out, err = _cli([s, "optimize", "sales", "--sort-by", "units", "--json"], capsys)
    skipped = json.loads(out)["partitions_skipped"]
    assert code == EXIT_OK and json.loads(out)["files_removed"] == 0
    assert skipped == [
        {"partition": f"country={c}", "files": 1, "reason": "already optimized"}
        for c in ("DE", "FR", "IT")
    ]
    # a z-order over two columns is another order: everything is rewritten again
    code, out, err = _cli(
        [s, "optimize", "sales", "--sort-by", "day,units", "--zorder", "--json"], capsys
    )
    assert code == EXIT_OK, err
    assert json.loads(out)["files_removed"] == 3
    pd.testing.assert_frame_equal(_sorted(kf.read_table("sales", s)), _sorted(before))


def test_where_selects_partitions_by_partition_key(local_store, capsys) -> None:
    s = str(local_store)
    code, out, err = _cli([s, "optimize", "sales", "--where", "country in (FR, IT)"], capsys)
    assert code == EXIT_OK, err
    assert out.splitlines()[0].startswith("Optimized sales: 1 partition, 2 files (")
    labels = list(kf.read_dataset_metadata("sales", s).partitions)
    per_country = {
        c: sum(lb.startswith(f"country={c}/") for lb in labels) for c in ["DE", "FR", "IT"]
    }
    assert per_country == {"DE": 2, "FR": 1, "IT": 1}


def test_where_on_other_columns_is_bad_input(local_store) -> None:
    s = str(local_store)
    untouched = _files(local_store)
    text, as_json, unknown = run_many(
        [
            [s, "optimize", "sales", "--where", "units > 3"],
            [s, "optimize", "sales", "--where", "units > 3", "--json"],
            [s, "optimize", "sales", "--where", "colour == red"],
        ]
    )
    message = (
        "optimize selects whole partitions: predicates may only use the partition keys "
        "['country'], got ['units']."
    )
    assert text.returncode == EXIT_BAD_INPUT, text
    assert text.stderr == f"Error: {message}\n" and text.stdout == ""
    assert as_json.returncode == EXIT_BAD_INPUT
    assert as_json.error() == {
        "kind": "bad_input",
        "type": "InvalidInputError",
        "message": message,
        "exit_code": EXIT_BAD_INPUT,
    }
    assert unknown.returncode == EXIT_BAD_INPUT and 'Unknown column "colour"' in unknown.stderr
    assert _files(local_store) == untouched


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("134217728", 134217728),
        ("128MiB", 128 * 1024**2),
        ("128mib", 128 * 1024**2),
        ("128MB", 128_000_000),
        ("1G", 1024**3),
        ("1 GB", 10**9),
        ("64m", 64 * 1024**2),
        ("0.5K", 512),
        ("1.5KiB", 1536),
        ("2t", 2 * 1024**4),
        ("100B", 100),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MB", "12XB", "1.5.2", "-5", "0", "0.1", "1e6", "5 M B"])
def test_bad_target_size_is_a_usage_error(text: str, shared_store, capsys) -> None:
    with pytest.raises(ValueError, match=r"is not a size|less than one byte"):
        parse_size(text)
    untouched = _files(shared_store)
    code, out, err = _cli([str(shared_store), "optimize", "sales", "--target-size", text], capsys)
    assert code == EXIT_BAD_INPUT and out == ""
    assert f"Invalid value for '--target-size': {text!r} is " in err
    assert _files(shared_store) == untouched


def test_target_size_decides_what_is_small(local_store, capsys) -> None:
    s = str(local_store)
    # every data file is above 100 bytes: none is small
    code, out, err = _cli([s, "optimize", "sales", "--target-size", "100B", "--json"], capsys)
    assert code == EXIT_OK, err
    got = json.loads(out)
    assert got["files_removed"] == 0
    assert {p["reason"] for p in got["partitions_skipped"]} == {"no file below the target"}
    code, out, err = _cli([s, "optimize", "sales", "--target-size", "1MiB", "--json"], capsys)
    assert code == EXIT_OK and json.loads(out)["files_removed"] == 4


def test_cube(local_store, capsys) -> None:
    s = str(local_store)
    # a second seed file in YEAR=2024 (one more country)
    kf.append_to_cube(
        {"seed": pd.DataFrame({"COUNTRY_CODE": ["AT"], "YEAR": [2024], "SALES": [5.0]})},
        CUBE,
        s,
    )
    before = kf.query_cube(CUBE, s)[0]
    code, out, err = _cli([s, "optimize", "geo", "--dry-run", "--json"], capsys)
    assert code == EXIT_OK, err
    planned = json.loads(out)
    assert list(planned) == ["seed", "enrich"]
    assert all(set(r) == RESULT_KEYS and r["dry_run"] for r in planned.values())
    # sorted by the dimension column: every partition of every dataset is rewritten
    code, out, err = _cli([s, "optimize", "geo"], capsys)
    assert code == EXIT_OK, err
    lines = out.splitlines()
    assert lines[0].startswith("Optimized geo++seed: 2 partitions, 3 files (")
    assert lines[1].startswith("Optimized geo++enrich: 1 partition, 1 file (")
    after = kf.query_cube(CUBE, s)[0]
    pd.testing.assert_frame_equal(_sorted(after), _sorted(before))
    seed_2024 = kf.read_table("geo++seed", s, predicates=[[("YEAR", "==", 2024)]])
    assert list(seed_2024["COUNTRY_CODE"]) == ["AT", "DE", "FR"]
    code, out, err = _cli([s, "optimize", "geo"], capsys)
    assert code == EXIT_OK and out.splitlines() == [
        "Nothing to optimize in geo++seed.",
        "Skipped 2 partitions: already optimized (2).",
        "Nothing to optimize in geo++enrich.",
        "Skipped 1 partition: already optimized (1).",
    ]
    # --where on the cube's partition column: enrich, not partitioned by YEAR, is left out
    code, out, err = _cli(
        [s, "optimize", "geo", "--where", "YEAR == 2025", "--no-sort", "--dry-run"], capsys
    )
    assert code == EXIT_OK, err
    assert out.splitlines() == [
        "Nothing to optimize in geo++seed.",
        "Would skip 1 partition: fewer than min_files=2 files below the target (1).",
        "Left out geo++enrich: --where selects no partition of it (it has no column YEAR).",
    ]
    code, out, err = _cli([s, "optimize", "geo", "--dataset", "nope"], capsys)
    assert code == EXIT_BAD_INPUT and "Cube 'geo' has no dataset nope." in err
    code, out, err = _cli([s, "optimize", "sales", "--no-sort"], capsys)
    assert code == EXIT_BAD_INPUT and "only apply to cubes" in err
    assert len(SEED) == 3  # the shared sample frame is untouched


def test_progress_on_a_terminal(local_store) -> None:
    code, stdout, drawn = run_on_a_terminal([str(local_store), "optimize", "sales"])
    assert code == EXIT_OK
    assert stdout.startswith("Optimized sales: 2 partitions")
    assert "optimizing sales" in drawn
    assert len(kf.read_table("sales", str(local_store))) == len(SALES)
