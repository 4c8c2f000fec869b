"""gc, vacuum, delete and cleanup: previews equal actions, seeds, messages, progress."""

from __future__ import annotations

import json
import os
import pathlib
import time

import pytest
from cli_helpers import CUBE, SALES, run_on_a_terminal

import kartoframe as kf
from kartoframe.cli import main
from kartoframe.cli._common import EXIT_BAD_INPUT, EXIT_ERROR


def _age(root: pathlib.Path, hours: float = 2.0) -> None:
    """Make every file under ``root`` ``hours`` old (older than gc's grace window)."""
    then = time.time() - hours * 3600
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (then, then))


def _json(args: list[str], capsys) -> dict:
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_gc_preview_is_what_gc_deletes(local_store, capsys) -> None:
    s = str(local_store)
    kf.store_dataframes_as_dataset(
        store=s, dataset_uuid="sales", dfs=[SALES], partition_on=["country"], overwrite=True
    )
    _age(local_store)
    # the overwritten version is inside the default window (168 h): its files stay
    preview = _json([s, "gc", "sales", "--dry-run", "--json"], capsys)
    done = _json([s, "gc", "sales", "--yes", "--json"], capsys)
    assert preview == {"deleted": done["deleted"], "dry_run": True}
    assert done["deleted"] == []
    # --retention-hours 0: the files only the overwritten version referenced go
    preview = _json([s, "gc", "sales", "--retention-hours", "0", "--dry-run", "--json"], capsys)
    superseded = preview["deleted"]
    assert superseded and all((local_store / k).exists() for k in superseded)
    assert any(k.endswith(".parquet") and "/table/" in k for k in superseded)
    done = _json([s, "gc", "sales", "--retention-hours", "0", "--yes", "--json"], capsys)
    assert sorted(done["deleted"]) == sorted(superseded)
    assert not any((local_store / k).exists() for k in superseded)
    assert sorted(kf.read_table("sales", s)["product"]) == sorted(SALES["product"])


def _text(args: list[str], capsys) -> str:
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_deletion_messages_agree(local_store, capsys) -> None:
    s = str(local_store)
    # a data file name a write generates, older than cleanup's grace window; and a
    # foreign file, never deleted
    stray = local_store / "geo++seed" / "table" / f"{'1' * 32}.parquet"
    stray.write_bytes(b"x")
    two_hours_ago = time.time() - 7200
    os.utime(stray, (two_hours_ago, two_hours_ago))
    foreign = local_store / "geo++seed" / "table" / "orphan.parquet"
    foreign.write_bytes(b"x")
    os.utime(foreign, (two_hours_ago, two_hours_ago))
    for args in (["gc", "sales", "--dry-run"], ["gc", "sales", "--yes"], ["vacuum", "sales"]):
        assert _text([s, *args], capsys) == "Nothing to delete.\n", args
    assert _text([s, "vacuum", "sales", "--dry-run"], capsys) == "Nothing to delete.\n"
    dry = _text([s, "cleanup", "geo", "--dry-run"], capsys)
    assert dry == f"geo++seed/table/{'1' * 32}.parquet\nWould delete 1 file.\n"
    assert _text([s, "cleanup", "geo", "--yes"], capsys) == "Deleted 1 file.\n"
    assert _text([s, "cleanup", "geo", "--yes"], capsys) == "Nothing to delete.\n"
    assert foreign.exists() and not stray.exists()


def test_cleanup_keeps_new_files_unless_forced(local_store, capsys) -> None:
    """A file of a cube write in progress is younger than the grace window."""
    s = str(local_store)
    fresh = local_store / "geo++seed" / "table" / f"{'2' * 32}.parquet"
    fresh.write_bytes(b"x")
    assert _text([s, "cleanup", "geo", "--yes"], capsys) == "Nothing to delete.\n"
    assert main([s, "cleanup", "geo", "--grace-hours", "0", "--yes"]) == EXIT_BAD_INPUT
    assert "--force" in capsys.readouterr().err
    assert fresh.exists()
    done = _json([s, "cleanup", "geo", "--grace-hours", "0", "--force", "-y", "--json"], capsys)
    assert done == {"deleted": [f"geo++seed/table/{'2' * 32}.parquet"], "dry_run": False}
    assert len(kf.query_cube(CUBE, s)[0]) == 3


def test_delete_refuses_the_seed_alone(local_store, capsys) -> None:
    s = str(local_store)
    assert main([s, "delete", "geo", "--dataset", "seed", "--yes"]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "seed dataset 'seed'" in err and "enrich" in err
    assert set(kf.discover_datasets(kf.discover_cube("geo", s), s)) == {"seed", "enrich"}
    # the seed goes with all the others
    both = _json(
        [s, "delete", "geo", "--dataset", "seed", "--dataset", "enrich", "-y", "--json"], capsys
    )
    assert both == {"deleted": ["geo++enrich", "geo++seed"]}
    assert kf.discover_datasets_unchecked("geo", s) == {}


@pytest.mark.parametrize("command", ["delete", "cleanup"])
def test_a_cube_without_its_seed_can_be_removed(local_store, capsys, command) -> None:
    s = str(local_store)
    kf.delete_cube(CUBE, s, datasets=["seed"])  # what older versions let the CLI do
    assert main([s, "query", "geo"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "seed" in err and "delete geo --yes" in err
    if command == "cleanup":
        preview = _json([s, "cleanup", "geo", "--dry-run", "--json"], capsys)
        assert "geo++enrich.by-dataset-metadata.json" in preview["deleted"]
        assert all((local_store / k).exists() for k in preview["deleted"])
        done = _json([s, "cleanup", "geo", "--yes", "--json"], capsys)
        assert sorted(done["deleted"]) == sorted(preview["deleted"])
    else:
        assert _json([s, "delete", "geo", "--yes", "--json"], capsys) == {
            "deleted": ["geo++enrich"]
        }
    assert kf.discover_datasets_unchecked("geo", s) == {}
    listing = _json([s, "ls", "--json"], capsys)
    assert listing["cubes"] == [] and [d["name"] for d in listing["datasets"]] == ["sales"]
    if command == "cleanup":
        assert not list(kf.Store(s).iter_keys("geo++"))


def test_json_output_without_a_terminal_is_only_json(local_store, capsys) -> None:
    s = str(local_store)
    calls = [
        [s, "gc", "sales", "--dry-run", "--json"],
        [s, "vacuum", "sales", "--dry-run", "--json"],
        [s, "cleanup", "geo", "--dry-run", "--json"],
        [s, "history", "sales", "--json"],
        [s, "delete", "sales", "--yes", "--json"],
    ]
    for args in calls:
        assert main(args) == 0
        captured = capsys.readouterr()
        assert captured.err == "", args
        json.loads(captured.out)


@pytest.mark.slow
def test_long_operations_say_what_they_dorun_on_a_terminal(local_store) -> None:
    s = str(local_store)
    code, out, drawn = run_on_a_terminal([s, "gc", "sales", "--dry-run", "--json"])
    assert code == 0 and json.loads(out) == {"deleted": [], "dry_run": True}
    assert "reading sales in file://" in drawn and "listing unreferenced files of sales" in drawn
    code, out, drawn = run_on_a_terminal([s, "--no-progress", "cleanup", "geo", "--dry-run"])
    assert code == 0 and out == "Nothing to delete.\n" and drawn == ""
    code, out, drawn = run_on_a_terminal([s, "delete", "geo", "--yes"])
    assert code == 0 and "deleting geo" in drawn


@pytest.mark.slow
def test_storage_retries_are_not_silentrun_on_a_terminal() -> None:
    """An unreachable object store: the spinner says that requests are being retried."""
    import socket

    with socket.socket() as closed:  # bound, never listening: connections are refused
        closed.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        code, out, drawn = run_on_a_terminal(
            [
                "s3://bucket/warehouse",
                "--storage-option",
                json_option("client_kwargs", {"endpoint_url": endpoint}),
                "--storage-option",
                json_option("config_kwargs", {"retries": {"max_attempts": 2}}),
                "--storage-option",
                "retries=1",
                "--storage-option",
                "key=testing",
                "--storage-option",
                "secret=testing",
                "info",
                "sales",
            ]
        )
    assert code == EXIT_ERROR and out == ""
    assert "reading sales in s3://bucket/warehouse" in drawn
    assert "(storage retry 1)" in drawn
    assert "Could not connect" in drawn  # the error itself, after the spinner


def json_option(key: str, value: object) -> str:
    return f"{key}={json.dumps(value)}"
