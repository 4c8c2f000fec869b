"""``kartoframe STORE check NAME``: exit 0 when clean, 5 with errors; --json and the table."""

from __future__ import annotations

import json

from cli_helpers import run, run_many

import kartoframe as kf
from kartoframe.cli._check import EXIT_PROBLEMS
from kartoframe.cli._common import EXIT_NOT_FOUND
from kartoframe.format import naming, txlog
from kartoframe.storage import log


def _store(root) -> kf.Store:
    return kf.Store(f"file://{root}")


def test_clean_dataset_and_cube(shared_store) -> None:
    s = str(shared_store)
    ds, ds_json, cube_json, missing = run_many(
        [
            [s, "check", "sales"],
            [s, "check", "sales", "--deep", "--json"],
            [s, "--json", "check", "geo"],
            [s, "check", "nope"],
        ]
    )
    assert ds.returncode == 0, str(ds)
    assert ds.stdout.startswith("OK: dataset sales: 0 errors, 0 warnings (5 data files")
    assert ds_json.returncode == 0, str(ds_json)
    got = ds_json.json()
    assert (got["ok"], got["deep"], got["findings"], got["datasets"]) == (
        True,
        True,
        [],
        ["sales"],
    )
    assert cube_json.returncode == 0, str(cube_json)
    assert cube_json.json()["kind"] == "cube"
    assert cube_json.json()["datasets"] == ["geo++enrich", "geo++seed"]
    assert missing.returncode == EXIT_NOT_FOUND, str(missing)


def test_problems_exit_with_5_and_are_listed(local_store) -> None:
    store = _store(local_store)
    found = log.read_stored_header(store, "sales")
    assert found is not None
    label, key = next(iter(found[0].partitions.items()))
    store.delete(key)
    entry = txlog.entry_key("geo++seed", 0)
    doc = json.loads(store.get(entry))
    doc["header"]["metadata"]["edited"] = True
    store.put(entry, json.dumps(doc).encode())
    s = str(local_store)
    table, as_json, cube = run_many(
        [[s, "check", "sales"], [s, "check", "sales", "--json"], [s, "check", "geo", "--json"]]
    )
    assert table.returncode == EXIT_PROBLEMS, str(table)
    assert "data_file_missing" in table.stdout and key in table.stdout
    assert f"Data file {key!r} of partition {label!r} does not exist." in table.stdout
    assert "PROBLEMS: dataset sales: 1 error, 0 warnings" in table.stdout
    assert as_json.returncode == EXIT_PROBLEMS
    report = as_json.json()
    assert report["ok"] is False and report["errors"] == 1
    assert report["findings"][0] | {"message": ""} == {
        "severity": "error",
        "kind": "data_file_missing",
        "dataset": "sales",
        "key": key,
        "partition": label,
        "message": "",
    }
    assert cube.returncode == EXIT_PROBLEMS, str(cube)
    f = cube.json()["findings"]
    assert [(x["kind"], x["dataset"], x["key"]) for x in f] == [
        ("log_digest_mismatch", "geo++seed", entry)
    ]


def test_a_lagging_header_is_a_warning_with_exit_0(local_store) -> None:
    store = _store(local_store)
    kf.update_dataset_from_dataframes([], store, "sales", metadata={"owner": "again"})
    old = log.state_at(store, "sales", 0)
    assert old.header_bytes is not None
    store.put(naming.header_key("sales", "json"), old.header_bytes)
    r = run(str(local_store), "check", "sales")
    assert r.returncode == 0, str(r)
    assert "header_lags_log" in r.stdout and "OK: dataset sales: 0 errors, 1 warning" in r.stdout
