"""A process of the maintenance-safety tests (not a test module).

Run as ``python maintenance_worker.py '<json spec>'``. The spec names a task and the store
(URL and options); the worker creates ``ready``, waits for ``go``, and writes its
``report`` (JSON) at the end.

Tasks
-----
write
    ``commits`` commits; commit ``k`` is of kind ``kinds[k % len(kinds)]`` (``append``,
    ``replace``: ``delete_scope`` on its partition, ``overwrite``: the whole dataset), each
    tagged ``commit_info={"wid", "k"}``. Reports the acknowledged commits (``[k, rows]``)
    and every error that is not a ``CommitConflictError``.
maintain
    ``garbage_collect_dataset`` and ``vacuum_dataset`` with their defaults, and a read of
    the current version, in a loop until the file ``stop`` exists (at most ``rounds``
    rounds). Reports the rounds run and every error.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

import pandas as pd
from worker_common import run_task, store_of, wait_for_go

import kartoframe as kf


def frame(wid: int, k: int, p: int) -> pd.DataFrame:
    """The rows commit ``k`` of writer ``wid`` writes (partition ``p``)."""
    return pd.DataFrame({"p": [p, p], "wid": [wid, wid], "k": [k, k], "r": [0, 1]})


def rows_of(kind: str) -> int:
    """How many rows a commit of ``kind`` writes."""
    return 4 if kind == "overwrite" else 2


def write_once(store: kf.Store, uuid: str, kind: str, wid: int, k: int) -> None:
    """One commit of a writer (see the module docstring)."""
    info = {"wid": wid, "k": k}
    if kind == "append":
        kf.update_dataset_from_dataframes(
            [frame(wid, k, k % 3)], store=store, dataset_uuid=uuid, commit_info=info
        )
    elif kind == "replace":
        kf.update_dataset_from_dataframes(
            [frame(wid, k, 10 + wid)],
            store=store,
            dataset_uuid=uuid,
            delete_scope=[{"p": 10 + wid}],
            commit_info=info,
        )
    elif kind == "overwrite":
        kf.store_dataframes_as_dataset(
            store,
            uuid,
            [frame(wid, k, 0), frame(wid, k, 1)],
            partition_on=["p"],
            overwrite=True,
            commit_info=info,
        )
    else:  # pragma: no cover
        raise ValueError(kind)


def maintain_once(store: kf.Store, uuid: str) -> None:
    """One round of maintenance with the defaults, and a read of the current version."""
    kf.garbage_collect_dataset(uuid, store)
    kf.vacuum_dataset(uuid, store)
    kf.read_table(uuid, store)


def _error(e: BaseException) -> str:
    return f"{type(e).__module__}.{type(e).__name__}: {e}\n{traceback.format_exc()}"


def write(spec: dict[str, Any]) -> dict[str, Any]:
    store = store_of(spec)
    wait_for_go(spec)
    acked, conflicts, errors = [], 0, []
    for k in range(spec["commits"]):
        kind = spec["kinds"][k % len(spec["kinds"])]
        try:
            write_once(store, spec["uuid"], kind, spec["wid"], k)
        except kf.CommitConflictError:
            conflicts += 1
        except Exception as e:
            errors.append(_error(e))
        else:
            acked.append([k, rows_of(kind)])
    return {"acked": acked, "conflicts": conflicts, "errors": errors}


def maintain(spec: dict[str, Any]) -> dict[str, Any]:
    store = store_of(spec)
    maintain_once(store, spec["uuid"])  # warm up (imports, first listing) before "ready"
    wait_for_go(spec)
    rounds, errors = 0, []
    while rounds < spec["rounds"] and not os.path.exists(spec["stop"]):
        try:
            maintain_once(store, spec["uuid"])
        except Exception as e:
            errors.append(_error(e))
        rounds += 1
    return {"rounds": rounds, "errors": errors}


TASKS = {"write": write, "maintain": maintain}


def main() -> None:
    run_task(TASKS)


if __name__ == "__main__":
    main()
