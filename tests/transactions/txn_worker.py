"""A writer process for the concurrency and crash tests (not a test module).

Run as ``python txn_worker.py '<json spec>'``. The spec names a task, the store (URL and
options), and the files used to synchronise with the test: the worker creates ``ready``
when it is about to start, waits for ``go`` and writes its ``report`` (JSON) at the end.

Tasks
-----
append
    ``commits`` appends of a small frame whose ``wid``/``k`` columns identify the commit.
replace
    Load the dataset, write a replacement of partition ``p == 0`` (``delete_scope``), and —
    after ``go`` — commit it on the version loaded before: exactly one of several such
    workers can win.
create-rounds
    For each of ``rounds`` rounds: wait for the round's start file, then create dataset
    ``<uuid>-<round>`` (``store_dataframes_as_dataset``, or ``update_dataset_from_dataframes``
    on the missing dataset with ``how="update"``); report each round's outcome.
crash-loop
    Commit forever (appends, partition replacements, metadata updates), journaling
    ``begin i`` / ``done i`` (fsynced) around every commit; the test kills it with SIGKILL.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import pandas as pd
from worker_common import run_task, store_of, wait_for_go

import kartoframe as kf
from kartoframe.api.write import delete_scope_labels
from kartoframe.execution.write import commit_write, write_chunk
from kartoframe.storage.resolve import load_dataset


def _frame(wid: int, k: int, p: int, rows: int = 3) -> pd.DataFrame:
    return pd.DataFrame(
        {"p": [p] * rows, "wid": [wid] * rows, "k": [k] * rows, "r": list(range(rows))}
    )


def append(spec: dict[str, Any]) -> dict[str, Any]:
    store = store_of(spec)
    wid = spec["wid"]
    wait_for_go(spec)
    latencies = []
    conflicts = 0
    for k in range(spec["commits"]):
        t0 = time.perf_counter()
        try:
            kf.update_dataset_from_dataframes(
                [_frame(wid, k, k % 3)], store=store, dataset_uuid=spec["uuid"]
            )
        except kf.CommitConflictError:
            conflicts += 1
            raise
        latencies.append(time.perf_counter() - t0)
    return {"latencies": latencies, "conflicts": conflicts}


def replace(spec: dict[str, Any]) -> dict[str, Any]:
    store = store_of(spec)
    uuid, wid = spec["uuid"], spec["wid"]
    base = load_dataset(store, uuid)
    scope = [{"p": 0}]
    remove = delete_scope_labels(base, store, scope)
    chunk = write_chunk(store, uuid, _frame(wid, 0, 0), partition_on=["p"], index_columns=["wid"])
    wait_for_go(spec)
    try:
        header = commit_write(
            store,
            uuid,
            [chunk],
            base=base,
            remove_labels=remove,
            remove_scope=lambda b: delete_scope_labels(b, store, scope),
        )
    except kf.CommitConflictError as e:
        return {"outcome": "conflict", "message": str(e), "files": [chunk.partitions[0].key]}
    return {"outcome": "committed", "labels": sorted(header.partitions)}


def create_rounds(spec: dict[str, Any]) -> dict[str, Any]:
    store = store_of(spec)
    wid = spec["wid"]
    sync = spec["sync"]
    outcomes: list[str] = []
    wait_for_go(spec)
    for r in range(spec["rounds"]):
        with open(os.path.join(sync, f"ready-{r}-{wid}"), "w") as f:
            f.write("ready")
        while not os.path.exists(os.path.join(sync, f"go-{r}")):
            time.sleep(0.001)
        uuid = f"{spec['uuid']}-{r}"
        frame = _frame(wid, r, wid % 2)
        try:
            if spec["how"] == "update":
                kf.update_dataset_from_dataframes(
                    [frame], store=store, dataset_uuid=uuid, partition_on=["p"]
                )
            else:
                kf.store_dataframes_as_dataset(store, uuid, [frame], partition_on=["p"])
            outcomes.append("ok")
        except (kf.CommitConflictError, kf.DatasetExistsError) as e:
            outcomes.append(type(e).__name__)
    return {"outcomes": outcomes}


def crash_loop(spec: dict[str, Any]) -> dict[str, Any]:
    store = store_of(spec)
    uuid = spec["uuid"]
    rng = random.Random(spec["seed"])
    journal = open(spec["journal"], "a")  # noqa: SIM115  (open until the process is killed)

    def note(text: str) -> None:
        journal.write(text + "\n")
        journal.flush()
        os.fsync(journal.fileno())

    wait_for_go(spec)
    i = spec["start"]
    while True:
        op = rng.choices(["append", "replace", "metadata"], [6, 3, 1])[0]
        p = rng.randrange(3)
        note(json.dumps({"begin": i, "op": op, "p": p}))
        if op == "append":
            kf.update_dataset_from_dataframes([_frame(0, i, p)], store=store, dataset_uuid=uuid)
        elif op == "replace":
            kf.update_dataset_from_dataframes(
                [_frame(0, i, p)], store=store, dataset_uuid=uuid, delete_scope=[{"p": p}]
            )
        else:
            kf.update_dataset_from_dataframes(
                [], store=store, dataset_uuid=uuid, metadata={"last": i}
            )
        note(json.dumps({"done": i}))
        i += 1


TASKS = {
    "append": append,
    "replace": replace,
    "create-rounds": create_rounds,
    "crash-loop": crash_loop,
}


def main() -> None:
    run_task(TASKS)


if __name__ == "__main__":
    main()
