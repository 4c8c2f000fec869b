"""Cube cleanup is safe at any time with its defaults (issue 12, sections 2 and 3).

``cleanup_cube`` is the dataset garbage collection (``retention_hours=0``) of every
dataset uuid under the cube's prefix: it deletes only names our writes generate, never a
file younger than the grace window, never a file a version committed after its listing
references, never a dataset that exists by its log alone, and ``dry_run=True`` returns
exactly what the action deletes.

The loop is deterministic: every commit of the writer thread (before it claims its log
entry, and between its log entry and its header) hands over to the cleanup thread and
waits until one cleanup round that started after that point has finished.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe import C
from kartoframe.execution import cube_write
from kartoframe.storage import commit as commit_mod
from kartoframe.storage import log

FORCED = {"grace_hours": 0, "force": True}
WAIT = 60  # seconds: only reached if a thread hangs


def _cube() -> kf.Cube:
    return kf.Cube(["x"], ["p"], uuid_prefix="cube")


def _seed(xs: range | list[int], v: float = 0.0) -> pd.DataFrame:
    xs = list(xs)
    return pd.DataFrame({"x": xs, "p": xs, "v1": [float(v + x) for x in xs]})


def _age(root: Path, hours: float = 2.0) -> None:
    """Make every file below ``root`` ``hours`` old (modification time)."""
    past = time.time() - hours * 3600
    for path in root.rglob("*"):
        os.utime(path, (past, past))


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    return df[sorted(df.columns)].sort_values("x").reset_index(drop=True)


def _check_model(store: kf.Store, cube: kf.Cube, model: dict[str, pd.DataFrame]) -> None:
    """Every dataset holds exactly its acknowledged rows, and the cube is queryable."""
    assert sorted(kf.discover_datasets(cube, store)) == sorted(model)
    for ds, expected in model.items():
        got = kf.read_table(cube.ktk_dataset_uuid(ds), store, columns=list(expected.columns))
        pd.testing.assert_frame_equal(_sorted(got), _sorted(expected), check_dtype=False)
    (df,) = kf.query_cube(cube, store)
    assert sorted(df["x"]) == sorted(model["seed"]["x"])


# ------------------------------------------------------------------ hand-over points


@pytest.fixture
def commit_points(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Callable[[str], None]]]:
    """``hooks.append(f)``: every dataset commit of a cube write calls ``f("files")``
    after writing its data files, before committing, and ``f("log")`` after claiming its
    log entry, before writing its header."""
    hooks: list[Callable[[str], None]] = []
    real_commit = cube_write._commit_dataset
    real_publish = commit_mod._publish_or_revert

    def commit_dataset(*args: Any, **kwargs: Any) -> Any:
        for hook in list(hooks):
            hook("files")
        return real_commit(*args, **kwargs)

    def publish(*args: Any, **kwargs: Any) -> None:
        for hook in list(hooks):
            hook("log")
        real_publish(*args, **kwargs)

    monkeypatch.setattr(cube_write, "_commit_dataset", commit_dataset)
    monkeypatch.setattr(commit_mod, "_publish_or_revert", publish)
    yield hooks


# ------------------------------------------------------------------ the loop

OPS = [
    "build",
    "append",
    "update",
    "extend",
    "append",
    "update",
    "extend",
    "rebuild",
    "append",
    "update",
    "extend",
    "append",
    "update",
    "extend",
    "append",
]


def _write(op: int, kind: str, cube: kf.Cube, store: kf.Store, model: dict[str, Any]) -> None:
    """One cube write; ``model`` (dataset id -> frame) becomes what it acknowledges."""
    if kind == "build":
        frames = {"seed": _seed(range(4)), "enrich": _seed(range(2)).rename(columns={"v1": "v2"})}
        kf.build_cube(frames, cube, store)
        model.clear()
        model.update(frames)
    elif kind == "rebuild":  # a new cube under the same prefix, replacing every dataset
        frames = {
            ds: df.assign(**{c: df[c] * 10 for c in df.columns if c[0] in "vw"})
            for ds, df in model.items()
        }
        kf.build_cube(frames, cube, store, overwrite=True)
        model.clear()
        model.update(frames)
    elif kind == "append":
        new = _seed([100 + op], v=op)
        kf.append_to_cube({"seed": new}, cube, store)
        model["seed"] = pd.concat([model["seed"], new], ignore_index=True)
    elif kind == "update":
        seed = model["seed"]
        target = int(seed["p"].max())
        new = _seed([target], v=-op)
        kf.update_cube({"seed": new}, cube, store, remove_conditions=C("p") == target)
        model["seed"] = pd.concat([seed[seed["p"] != target], new], ignore_index=True)
    else:  # extend: a new dataset
        ds = f"e{op}"
        new = _seed(list(model["seed"]["x"][:2])).rename(columns={"v1": f"w{op}"})
        kf.extend_cube({ds: new}, cube, store)
        model[ds] = new


def _run_loop(store: kf.Store, hooks: list[Callable[[str], None]]) -> int:
    cube = _cube()
    errors: list[str] = []
    want, served, done = threading.Event(), threading.Event(), threading.Event()
    rounds = [0]

    def hand_over(point: str) -> None:
        if threading.current_thread() is writer_thread:
            served.clear()
            want.set()
            assert served.wait(WAIT), f"no cleanup round at {point}"

    def cleaner() -> None:
        while not done.is_set() and rounds[0] < 2000:
            asked = want.wait(0.01)
            if asked:
                want.clear()
            try:
                kf.cleanup_cube(cube, store)
            except Exception as e:
                errors.append(f"cleanup: {type(e).__name__}: {e}")
            rounds[0] += 1
            if asked:
                served.set()
        served.set()  # never leave the writer waiting

    model: dict[str, pd.DataFrame] = {}

    def writer() -> None:
        try:
            for op, kind in enumerate(OPS):
                try:
                    _write(op, kind, cube, store, model)
                except Exception as e:
                    errors.append(f"{kind} #{op}: {type(e).__name__}: {e}")
                    return
                _check_model(store, cube, model)  # readable right after it is acknowledged
        except Exception as e:
            errors.append(f"read after a write: {type(e).__name__}: {e}")
        finally:
            done.set()

    hooks.append(hand_over)
    writer_thread = threading.Thread(target=writer)
    cleaner_thread = threading.Thread(target=cleaner)
    cleaner_thread.start()
    writer_thread.start()
    writer_thread.join(WAIT * 2)
    cleaner_thread.join(WAIT)
    hooks.clear()
    assert not errors, "\n".join(errors)
    kf.cleanup_cube(cube, store)  # and once more after the writes
    _check_model(store, cube, model)
    return rounds[0]


@pytest.mark.parametrize("backend", ["file", "memory"])
def test_cleanup_beside_cube_writers(
    tmp_path: Path, backend: str, commit_points: list[Callable[[str], None]]
) -> None:
    """cleanup_cube in a loop beside build, append, update, extend and a rebuild: every
    acknowledged write stays readable, no writer fails."""
    url = f"file://{tmp_path}/store" if backend == "file" else f"memory://kf-{uuid.uuid4().hex}"
    rounds = _run_loop(kf.Store(url), commit_points)
    assert rounds >= 2 * len(OPS)  # at least one round inside each write's windows


# ------------------------------------------------------------------ a write paused


def _paused(
    store: kf.Store,
    hooks: list[Callable[[str], None]],
    where: str,
    write: Callable[[], Any],
    during: Callable[[], None],
) -> None:
    """Run ``write``; at its first dataset commit's ``where`` point, run ``during``."""
    fired: list[str] = []

    def hook(point: str) -> None:
        if point == where and not fired:
            fired.append(point)
            during()

    hooks.append(hook)
    write()
    hooks.clear()
    assert fired == [where]


@pytest.mark.parametrize("where", ["files", "log"])
@pytest.mark.parametrize("kind", ["build", "append", "update", "extend"])
def test_a_paused_cube_write_survives_cleanup_with_defaults(
    store: kf.Store, commit_points: list[Callable[[str], None]], where: str, kind: str
) -> None:
    """A cube write stopped after its data files (before its commit, or between its log
    entry and its header): a default cleanup deletes none of its files."""
    cube = _cube()
    model: dict[str, pd.DataFrame] = {}
    if kind != "build":
        _write(0, "build", cube, store, model)
    before = set(store.iter_keys())
    deleted: list[list[str]] = []

    def during() -> None:
        assert set(store.iter_keys()) - before, "the write has written files"
        deleted.append(kf.cleanup_cube(cube, store))

    _paused(store, commit_points, where, lambda: _write(1, kind, cube, store, model), during)
    assert deleted == [[]]
    _check_model(store, cube, model)


def test_a_dataset_that_exists_by_its_log_only_is_not_garbage(
    store: kf.Store, commit_points: list[Callable[[str], None]]
) -> None:
    """A cube build between its log entry and its header: the dataset exists (the log
    commits it), so even a forced cleanup without a grace window keeps its log and files."""
    cube = _cube()
    seed = _seed(range(3))
    found: list[list[str]] = []

    def during() -> None:
        assert log.read_stored_header(store, "cube++seed") is None
        found.append(kf.cleanup_cube(cube, store, dry_run=True, **FORCED))
        found.append(kf.cleanup_cube(cube, store, **FORCED))

    _paused(store, commit_points, "log", lambda: kf.build_cube(seed, cube, store), during)
    assert found == [[], []]
    _check_model(store, cube, {"seed": seed})


# ------------------------------------------------------------------ names and dry runs

FOREIGN = [
    "cube++seed/notes.txt",
    "cube++seed/table/readme.md",
    "cube++seed/table/p=0/stray.parquet",
    "cube++seed/indices/x/notes.txt",
    "cube++seed/_kartoframe/stats/notes.txt",
    "cube++seed/_kartoframe/log/notes.json",
    "cube++gone/table/p=0/orphan.parquet",
    "cube++gone/data.bin",
    "cube++notes.txt",
    "cube++odd name/table/p=0/" + "d" * 32 + ".parquet",
]


def test_foreign_files_under_the_prefix_survive(store: kf.Store) -> None:
    """Only names our writes generate are deleted, even forced without a grace window."""
    cube = _cube()
    kf.build_cube(_seed(range(3)), cube, store)
    orphans = [
        f"cube++seed/table/p=9/{'a' * 32}.parquet",
        f"cube++gone/table/p=0/{'b' * 32}.parquet",
    ]
    for key in [*FOREIGN, *orphans]:
        store.put(key, b"not ours")
    assert kf.cleanup_cube(cube, store) == []  # brand-new: inside the grace window
    assert kf.cleanup_cube(cube, store, **FORCED) == sorted(orphans)
    assert all(store.exists(k) for k in FOREIGN)
    assert kf.cleanup_cube(cube, store, **FORCED) == []
    _check_model(store, cube, {"seed": _seed(range(3))})


def test_dry_run_equals_the_action(tmp_path: Path) -> None:
    """Old garbage (an overwritten partition, a deleted dataset, a failed write's file)
    goes with the defaults; the dry run lists exactly that and deletes nothing."""
    root = tmp_path / "store"
    store = kf.Store(f"file://{root}")
    cube = _cube()
    model: dict[str, pd.DataFrame] = {}
    _write(0, "build", cube, store, model)
    _write(1, "update", cube, store, model)  # the replaced partition's file is garbage
    _write(2, "extend", cube, store, model)
    kf.delete_cube(cube, store, datasets=["e2"])
    model.pop("e2")
    store.put(f"cube++gone/table/p=0/{'b' * 32}.parquet", b"a failed write's file")
    for key in FOREIGN:
        store.put(key, b"not ours")
    _age(root)
    before = set(store.iter_keys())
    planned = kf.cleanup_cube(cube, store, dry_run=True)
    assert set(store.iter_keys()) == before  # a dry run deletes nothing
    assert planned and not set(planned) & set(FOREIGN)
    assert any(k.startswith("cube++seed/table/") for k in planned)
    assert f"cube++gone/table/p=0/{'b' * 32}.parquet" in planned
    assert kf.cleanup_cube(cube, store) == planned
    assert set(store.iter_keys()) == before - set(planned)
    assert kf.cleanup_cube(cube, store, dry_run=True) == []
    _check_model(store, cube, model)


def test_grace_window_rules(memory_store: kf.Store, caplog: pytest.LogCaptureFixture) -> None:
    """The same validation and warning as garbage_collect_dataset."""
    cube = _cube()
    kf.build_cube(_seed(range(2)), cube, memory_store)
    with pytest.raises(kf.InvalidInputError, match="force=True"):
        kf.cleanup_cube(cube, memory_store, grace_hours=0.5)
    for value in (math.inf, math.nan, -1):
        with pytest.raises(kf.InvalidInputError):
            kf.cleanup_cube(cube, memory_store, grace_hours=value, force=True)
    with pytest.raises(kf.InvalidInputError):
        kf.cleanup_cube(cube, memory_store, dry_run="yes")  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="kartoframe.maintenance"):
        assert kf.cleanup_cube(cube, memory_store, **FORCED) == []
    warnings = [r for r in caplog.records if r.name == "kartoframe.maintenance"]
    assert len(warnings) == 1 and "cleanup_cube" in warnings[0].getMessage()
