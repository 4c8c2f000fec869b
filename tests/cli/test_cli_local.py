"""The installed ``kartoframe`` console script against a local folder store."""

from __future__ import annotations

import io
import os
import subprocess
import time

import pandas as pd
import pytest
from cli_helpers import BIN, SALES, Result, cli_env, run, run_many, run_on_a_terminal

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._common import EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_NOT_FOUND

COMMANDS = [
    "ls",
    "info",
    "stats",
    "schema",
    "history",
    "check",
    "query",
    "index",
    "gc",
    "vacuum",
    "copy",
    "delete",
    "cleanup",
    "optimize",
]


def _ok(r: Result) -> Result:
    assert r.returncode == 0, str(r)
    return r


def test_read_only_commands(shared_store) -> None:
    s = str(shared_store)
    (
        ls,
        ls_long,
        info_ds,
        info_cube,
        stats_ds,
        stats_cube,
        schema_cube,
        table,
    ) = run_many(
        [
            [s, "ls", "--json"],
            [s, "--json", "--no-progress", "ls", "--long"],  # group options after STORE_URL
            [s, "info", "sales", "--json"],
            [s, "info", "geo", "--json"],
            [s, "stats", "sales", "--json"],
            [s, "stats", "geo", "--json"],
            [s, "schema", "geo", "--json"],
            [s, "info", "sales"],
        ]
    )
    listing = _ok(ls).json()
    assert [d["name"] for d in listing["datasets"]] == ["sales"]
    assert listing["cubes"] == [{"name": "geo", "kind": "cube", "datasets": ["enrich", "seed"]}]
    long_ = _ok(ls_long).json()
    assert long_["datasets"][0]["partition_keys"] == ["country"]
    assert long_["cubes"][0]["dimension_columns"] == ["COUNTRY_CODE"]

    d = _ok(info_ds).json()
    assert d["kind"] == "dataset"
    assert d["partition_keys"] == ["country"]
    assert d["secondary_indices"] == ["product"]
    assert d["files"] == 5  # DE, FR (2 writes), IT
    assert d["partitions"] == 3
    assert d["metadata"]["owner"] == "cli-tests"
    sizes = sum(p.stat().st_size for p in (shared_store / "sales" / "table").rglob("*.parquet"))
    assert d["bytes"] == sizes
    types = {c["name"]: (c["type"], c["roles"]) for c in d["schema"]}
    assert types == {
        "country": ("string", ["partition key"]),
        "day": ("date32[day]", []),
        "product": ("int64", ["index"]),
        "units": ("int64", []),
    }

    c = _ok(info_cube).json()
    assert (c["kind"], c["seed_dataset"], c["dimension_columns"], c["partition_columns"]) == (
        "cube",
        "seed",
        ["COUNTRY_CODE"],
        ["YEAR"],
    )
    roles = {col["name"]: col["roles"] for col in c["datasets"]["seed"]["schema"]}
    assert roles == {
        "YEAR": ["partition"],
        "COUNTRY_CODE": ["dimension", "index"],
        "SALES": ["payload"],
    }

    st = _ok(stats_ds).json()
    assert st["total"] == {"files": 5, "partitions": 3, "rows": 6, "bytes": d["bytes"]}
    sc = _ok(stats_cube).json()
    assert {k: v["rows"] for k, v in sc["datasets"].items()} == {"enrich": 2, "seed": 3}
    assert sc["total"]["rows"] == 5

    cols = {col["name"]: col for col in _ok(schema_cube).json()["columns"]}
    assert cols["COUNTRY_CODE"]["datasets"] == ["enrich", "seed"]
    assert cols["POP"]["type"] == "int64" and cols["POP"]["roles"] == ["payload"]

    text = _ok(table).stdout
    for word in ("partition keys", "country", "product", "date32[day]", "cli-tests"):
        assert word in text


def test_query(shared_store, tmp_path) -> None:
    s = str(shared_store)
    out = tmp_path / "res.parquet"
    where, csv, groups, cube, cube_groups, parquet, limited = run_many(
        [
            [s, "query", "sales", "--where", "units > 4 and day >= 2024-01-02", "--json"],
            [
                s,
                "query",
                "sales",
                "-w",
                "country in (DE, 'IT')",
                "-c",
                "country,units",
                "-f",
                "csv",
            ],
            [s, "query", "sales", "--partition-by", "country", "-c", "units", "--json"],
            [s, "query", "geo", "--where", "COUNTRY_CODE == DE", "--json"],
            [s, "query", "geo", "--partition-by", "YEAR", "-c", "POP", "--json"],
            [s, "query", "sales", "-f", "parquet", "--output", str(out)],
            [s, "query", "sales", "--limit", "2", "-f", "csv"],
        ]
    )
    rows = _ok(where).json()
    expected = SALES[(SALES.units > 4) & (SALES.day >= pd.Timestamp("2024-01-02").date())]
    assert sorted(r["product"] for r in rows) == sorted(expected["product"])
    assert {r["day"] for r in rows} == {d.isoformat() for d in expected["day"]}

    got = pd.read_csv(io.StringIO(_ok(csv).stdout))
    assert list(got.columns) == ["country", "units"]
    assert sorted(got["units"]) == sorted(SALES[SALES.country.isin(["DE", "IT"])]["units"])

    grouped = _ok(groups).json()
    assert [r["country"] for r in grouped] == sorted(SALES["country"])
    assert {tuple(r) for r in grouped} == {("units", "country")} or all(
        set(r) == {"units", "country"} for r in grouped
    )

    assert _ok(cube).json() == [{"COUNTRY_CODE": "DE", "POP": 83, "SALES": 10.0, "YEAR": 2024}]
    # IT has no enrich row: a left join gives a null POP
    assert _ok(cube_groups).json() == [
        {"COUNTRY_CODE": "DE", "POP": 83, "YEAR": 2024},
        {"COUNTRY_CODE": "FR", "POP": 68, "YEAR": 2024},
        {"COUNTRY_CODE": "IT", "POP": None, "YEAR": 2025},
    ]

    _ok(parquet)
    assert "Wrote 6 rows" in parquet.stderr
    back = pd.read_parquet(out)
    pd.testing.assert_frame_equal(
        back.sort_values("product").reset_index(drop=True),
        kf.read_table("sales", s).sort_values("product").reset_index(drop=True),
        check_dtype=False,
    )
    assert len(pd.read_csv(io.StringIO(_ok(limited).stdout))) == 2
    # standard error is a pipe: no progress bar (5 files are read)
    assert limited.stderr == "" and csv.stderr == ""


def test_exit_codes(shared_store, tmp_path, capsys) -> None:
    s = str(shared_store)
    # the console script ...
    not_found, bad_value, no_store = run_many(
        [
            [s, "info", "nope", "--json"],
            [s, "query", "sales", "--where", "units > many", "--json"],
            [str(tmp_path / "missing"), "ls"],
        ]
    )
    assert not_found.returncode == EXIT_NOT_FOUND, str(not_found)
    err = not_found.error()
    assert err["kind"] == "not_found" and "nope" in err["message"] and not_found.stdout == ""
    assert bad_value.returncode == EXIT_BAD_INPUT, str(bad_value)
    err = bad_value.error()
    assert err["kind"] == "bad_input" and "many" in err["message"] and "int64" in err["message"]
    assert no_store.returncode == EXIT_NOT_FOUND and "does not exist" in no_store.stderr
    # ... and more cases through the same entry point, in this process
    cases = [
        ([s, "query", "nope"], EXIT_NOT_FOUND, "nope"),
        ([s, "query", "sales", "--where", "colour == red"], EXIT_BAD_INPUT, "colour"),
        ([s, "query", "sales", "-c", "zz*"], EXIT_BAD_INPUT, "zz*"),
        ([s, "info", "bad/name"], EXIT_BAD_INPUT, "bad/name"),
        ([s, "frobnicate"], EXIT_BAD_INPUT, "frobnicate"),
        ([s, "--storage-options", "{not json", "ls"], EXIT_BAD_INPUT, "JSON"),
        ([s, "copy", "sales", "--to", s], EXIT_BAD_INPUT, "--rename"),
        ([s, "cleanup", "sales"], EXIT_NOT_FOUND, "cube"),
        ([s, "info", "sales", "--kind", "cube"], EXIT_NOT_FOUND, "cube"),
        ([s, "query", "sales", "--dataset", "x"], EXIT_BAD_INPUT, "cubes"),
        ([s, "ls"], 0, ""),
    ]
    for args, code, word in cases:
        assert main(args) == code, args
        assert word in capsys.readouterr().err, args


def test_conflict_and_destructive_commands(local_store, tmp_path) -> None:
    s = str(local_store)
    backup = tmp_path / "backup"
    backup.mkdir()
    # stray files no header references
    # a data file name a write generates, older than gc's grace window (a failed write's)
    stray = local_store / "sales" / "table" / "country=DE" / f"{'0' * 32}.parquet"
    stray.write_bytes(b"not parquet")
    two_hours_ago = time.time() - 7200
    os.utime(stray, (two_hours_ago, two_hours_ago))
    cube_stray = local_store / "geo++seed" / "table" / f"{'1' * 32}.parquet"
    cube_stray.write_bytes(b"x")
    os.utime(cube_stray, (two_hours_ago, two_hours_ago))

    assert _ok(run(s, "copy", "sales", "--to", str(backup))).stdout.startswith("Copied")
    refused = run_many(
        [
            [s, "delete", "sales"],
            [s, "delete", "geo"],
            [s, "gc", "sales"],
            [s, "cleanup", "geo"],
            [s, "copy", "sales", "--to", str(backup), "--overwrite"],
        ]
    )
    for r in refused:
        assert r.returncode == EXIT_BAD_INPUT, str(r)
        assert "--yes" in r.stderr
    conflict = run(s, "copy", "sales", "--to", str(backup), "--json")
    assert conflict.returncode == EXIT_CONFLICT, str(conflict)
    assert conflict.error()["kind"] == "conflict"
    # nothing was deleted
    assert stray.exists() and cube_stray.exists()
    assert kf.read_table("sales", s).shape == (6, 4)
    assert len(kf.query_cube(kf.discover_cube("geo", s), s)[0]) == 3

    dry = _ok(run(s, "gc", "sales", "--dry-run", "--json")).json()
    assert dry == {"deleted": [f"sales/table/country=DE/{'0' * 32}.parquet"], "dry_run": True}
    gc, cleanup = run_many([[s, "gc", "sales", "--yes", "--json"], [s, "cleanup", "geo", "-y"]])
    assert _ok(gc).json()["deleted"] == dry["deleted"]
    _ok(cleanup)
    assert not stray.exists() and not cube_stray.exists()
    assert kf.read_table("sales", s).shape == (6, 4)

    for r in run_many(
        [[s, "delete", "geo", "--dataset", "enrich", "--yes"], [s, "delete", "sales", "-y"]]
    ):
        _ok(r)
    assert set(kf.discover_datasets_unchecked("geo", s)) == {"seed"}
    with pytest.raises(kf.DatasetNotFoundError):
        kf.read_dataset_metadata("sales", s)
    # the copy is independent of the deleted source
    assert kf.read_table("sales", str(backup)).shape == (6, 4)


def test_index_and_copy_with_rename(local_store, tmp_path) -> None:
    s = str(local_store)
    other = tmp_path / "other"
    other.mkdir()
    r = _ok(run(s, "index", "sales", "unit*", "--json"))
    assert r.json() == {"indexed": {"sales": ["units"]}}
    assert kf.read_dataset_metadata("sales", s).secondary_indices == ["product", "units"]
    cube_idx = _ok(run(s, "index", "geo", "POP,SALES", "--json")).json()
    assert cube_idx == {"indexed": {"geo++enrich": ["POP"], "geo++seed": ["SALES"]}}
    assert set(kf.discover_cube("geo", s).index_columns) == {"POP", "SALES"}

    renamed, cube_copy = run_many(
        [
            [s, "copy", "sales", "--rename", "sales_copy"],
            [s, "copy", "geo", "--to", str(other), "--rename", "geo2", "--json"],
        ]
    )
    _ok(renamed)
    pd.testing.assert_frame_equal(kf.read_table("sales_copy", s), kf.read_table("sales", s))
    assert kf.read_dataset_metadata("sales_copy", s).secondary_indices == ["product", "units"]
    assert sorted(_ok(cube_copy).json()["copied"]) == ["enrich", "seed"]
    cube2 = kf.discover_cube("geo2", str(other))
    assert len(kf.query_cube(cube2, str(other))[0]) == 3
    bad = run(s, "copy", "geo", "--rename", "geo3")
    assert bad.returncode == EXIT_BAD_INPUT and "another store" in bad.stderr


def test_help_has_examples_for_every_command(capsys) -> None:
    top = run("--help")
    assert top.returncode == 0
    assert "Examples:" in top.stdout and "Exit codes:" in top.stdout
    for cmd in COMMANDS:
        assert cmd in top.stdout
    sub = run("./x", "query", "--help")
    assert sub.returncode == 0 and "--where" in sub.stdout and "Examples:" in sub.stdout
    for cmd in COMMANDS:
        assert main(["./x", cmd, "--help"]) == 0
        text = capsys.readouterr().out
        assert "Examples:" in text, cmd
        assert f"kartoframe ./data {cmd}" in text, cmd


@pytest.mark.parametrize("flag", [None, "--no-progress"])
def test_progress_bar_only_on_a_terminal(shared_store, flag) -> None:
    """A terminal on standard error gets a bar; a pipe (the other tests) gets none."""
    args = [str(shared_store), *([flag] if flag else []), "query", "sales", "-f", "csv"]
    returncode, stdout, err = run_on_a_terminal(args)
    assert returncode == 0
    assert len(pd.read_csv(io.StringIO(stdout))) == 6
    if flag is None:
        assert "reading sales" in err and "5/5" in err
    else:
        assert "reading sales" not in err


def test_history_and_vacuum(local_store) -> None:
    s = str(local_store)
    kf.store_dataframes_as_dataset(
        store=s,
        dataset_uuid="sales",
        dfs=[SALES.iloc[:2]],
        partition_on=["country"],
        overwrite=True,
    )
    kf.update_dataset_from_dataframes(
        [SALES.iloc[2:3]], store=s, dataset_uuid="sales", commit_info={"job": "nightly"}
    )
    history, cube_history, unsafe, refused, planned = run_many(
        [
            [s, "history", "sales", "--json"],
            [s, "history", "geo", "--json"],
            [s, "vacuum", "sales", "--retention-hours", "0", "--yes"],
            [s, "vacuum", "sales", "--retention-hours", "0", "--force"],
            [s, "vacuum", "sales", "--retention-hours", "0", "--force", "--dry-run", "--json"],
        ]
    )
    records = _ok(history).json()["datasets"]["sales"]
    assert [r["operation"] for r in records] == ["APPEND", "OVERWRITE", "CREATE"]
    assert records[0]["commit_info"] == {"job": "nightly"}
    assert set(_ok(cube_history).json()["datasets"]) == {"geo++enrich", "geo++seed"}
    assert unsafe.returncode == EXIT_BAD_INPUT and "--force" in unsafe.stderr
    assert refused.returncode == EXIT_BAD_INPUT and "--yes" in refused.stderr
    doomed = _ok(planned).json()["deleted"]
    assert doomed and all(k.startswith("sales/") for k in doomed)
    assert all((local_store / k).exists() for k in doomed)
    done = _ok(run(s, "vacuum", "sales", "--retention-hours", "0", "--force", "--yes", "--json"))
    assert sorted(done.json()["deleted"]) == sorted(doomed)
    assert not any((local_store / k).exists() for k in doomed)
    assert sorted(kf.read_table("sales", s)["product"]) == [1, 2, 3]


@pytest.mark.parametrize("answer", ["n", "y"])
def test_confirmation_on_a_terminal(local_store, answer) -> None:
    """With a terminal on standard input, destructive commands ask and obey the answer."""
    import os
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [str(BIN), str(local_store), "delete", "sales"],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
    )
    os.close(slave)
    os.write(master, f"{answer}\n".encode())
    out, err = proc.communicate(timeout=60)
    os.close(master)
    assert b"Delete dataset 'sales' (5 files)" in err
    exists = (local_store / "sales.by-dataset-metadata.json").exists()
    if answer == "n":
        assert proc.returncode == 1 and b"Aborted" in err and exists
    else:
        assert proc.returncode == 0 and b"Deleted dataset sales." in out and not exists
