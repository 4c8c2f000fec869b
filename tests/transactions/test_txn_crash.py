"""Crash safety: a writer process killed with SIGKILL at random points, many rounds.

The writer (``txn_worker.py crash-loop``) commits forever — appends, partition
replacements (``delete_scope``), metadata updates — and journals ``begin i`` / ``done i``
(fsynced) around every commit. After each kill:

* kartoframe reads the dataset as exactly the state of the journaled commits, with the
  interrupted commit either fully applied or not at all (no missing file, no partial
  commit, nothing phantom);
* plateau (which reads only the Kartothek header) sees one of those two states too;
* the next round's writer continues on top of whatever the crash left.

At the end ``vacuum_dataset`` (forced, zero retention) removes every orphan: what remains is
exactly what the current version references plus the log it still needs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from txn_helpers import Workers, store_spec

import kartoframe as kf
from kartoframe.format import naming, txlog
from kartoframe.storage import log

ROUNDS = 8


def _journal(path: Path) -> tuple[list[dict], dict | None]:
    """Committed operations (in order) and the interrupted one (or None)."""
    begun: dict[int, dict] = {}
    done: list[dict] = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if "begin" in rec:
            begun[rec["begin"]] = rec
        else:
            done.append(begun.pop(rec["done"]))
    assert len(begun) <= 1
    return done, next(iter(begun.values()), None)


def _apply(state: dict[int, set[int]], meta: dict, op: dict) -> None:
    if op["op"] == "append":
        state[op["p"]].add(op["begin"])
    elif op["op"] == "replace":
        state[op["p"]] = {op["begin"]}
    else:
        meta["last"] = op["begin"]


def _candidates(done: list[dict], pending: dict | None) -> list[tuple[dict, dict]]:
    state: dict[int, set[int]] = defaultdict(set, {p: {-1} for p in range(3)})
    meta: dict = {}
    for op in done:
        _apply(state, meta, op)
    out = [({p: set(v) for p, v in state.items() if v}, dict(meta))]
    if pending is not None:
        _apply(state, meta, pending)
        out.append(({p: set(v) for p, v in state.items() if v}, dict(meta)))
    return out


def _observed(df: pd.DataFrame) -> dict:
    out: dict[int, set[int]] = defaultdict(set)
    for p, k in zip(df["p"], df["k"], strict=True):
        out[int(p)].add(int(k))
    return dict(out)


def _rows_ok(df: pd.DataFrame) -> None:
    # every commit writes 3 rows (r = 0, 1, 2); the seed 1 row per partition
    counts = df.groupby("k").size()
    assert all(n == 3 for k, n in counts.items() if k >= 0), "a partial commit is visible"


def _wait_for_commits(journal: Path, n: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait (bounded) until the writer has journaled ``n`` finished commits in this round."""
    deadline = time.monotonic() + 120
    while sum('"done"' in line for line in journal.read_text().splitlines()) < n:
        assert proc.poll() is None, "the writer died: " + (
            proc.stderr.read().decode() if proc.stderr else ""
        )
        assert time.monotonic() < deadline, f"the writer did not commit {n} times in 120 s"
        time.sleep(0.005)


@pytest.mark.slow
def test_sigkill_at_random_points(tmp_path: Path, workers: Workers) -> None:
    root = tmp_path / "store"
    store = kf.Store(f"file://{root}")
    kf.store_dataframes_as_dataset(
        store,
        "ds",
        [pd.DataFrame({"p": [0, 1, 2], "wid": [0] * 3, "k": [-1] * 3, "r": [0] * 3})],
        partition_on=["p"],
        secondary_indices=["k"],
    )
    rng = random.Random(20261122)
    import plateau.api.dataset as plateau

    committed: list[dict] = []  # operations in the dataset, in commit order
    start = 0
    for rnd in range(ROUNDS):
        folder = tmp_path / f"round-{rnd}"
        folder.mkdir()
        journal = folder / "journal"
        journal.touch()
        w = Workers(folder)
        w.start(
            "crash-loop",
            store=store_spec(store),
            uuid="ds",
            journal=str(journal),
            seed=rnd,
            start=start,
        )
        w.release()
        proc = w.procs[0][0]
        # kill after a drawn number of commits (so the writer commits between kills whatever
        # the machine's speed), at a drawn point inside the next ones
        _wait_for_commits(journal, rng.randint(1, 3), proc)
        time.sleep(rng.uniform(0.0, 0.05))
        assert proc.poll() is None, "the writer must still be running when it is killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done, pending = _journal(journal)
        candidates = _candidates(committed + done, pending)
        # kartoframe: the journaled state, the interrupted commit all or nothing
        df = kf.read_table("ds", store)
        _rows_ok(df)
        meta = kf.read_dataset_metadata("ds", store).metadata
        seen = (_observed(df), {"last": meta["last"]} if "last" in meta else {})
        assert seen in candidates, f"round {rnd}: {seen} not in {candidates}"
        # plateau reads the header: one of the same states
        pdf = plateau.read_table("ds", f"hfs://{root}")
        _rows_ok(pdf)
        assert _observed(pdf) in [c[0] for c in candidates], f"round {rnd} (plateau)"
        committed += done
        if pending is not None and seen == candidates[-1] and seen != candidates[0]:
            committed.append(pending)  # its log entry was created before the kill
        ids = [op["begin"] for op in done] + ([pending["begin"]] if pending else [])
        start = max([start - 1, *ids]) + 1
    assert len(committed) >= ROUNDS, "the writer must commit between kills"
    history = kf.dataset_history("ds", store)
    assert [r.version for r in history] == list(range(history[0].version, -1, -1))
    # vacuum removes every orphan (files of interrupted commits, temp files)
    kf.vacuum_dataset("ds", store, retention_hours=0, force=True)
    state = log.current_state(store, "ds")
    assert state is not None and state.header is not None and state.version is not None
    assert state.file_version == state.version, "vacuum publishes a lagging header"
    keep = txlog.referenced_keys(state.header) | {naming.header_key("ds", "json")}
    entries, checkpoints = log.list_log(store, "ds")
    assert entries == [state.version] and checkpoints in ([state.version], [])
    keep |= {txlog.entry_key("ds", v) for v in entries}
    keep |= {txlog.checkpoint_key("ds", v) for v in checkpoints}
    assert set(store.iter_keys()) == keep
    assert not [p for p in root.rglob("*") if p.is_file() and ".tmp-" in p.name]
    assert _observed(kf.read_table("ds", store)) == _candidates(committed, None)[0][0]
