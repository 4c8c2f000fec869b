"""What the worker processes of the transaction tests share (not a test module).

``txn_worker.py`` and ``maintenance_worker.py`` are run as ``python <worker>.py '<json
spec>'``: the spec names a task and the store (URL and options); the worker creates
``ready``, waits for ``go`` and writes its ``report`` (JSON) at the end.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

import kartoframe as kf

Task = Callable[[dict[str, Any]], Any]


def store_of(spec: dict[str, Any]) -> kf.Store:
    """The store the spec names."""
    return kf.Store(spec["store"]["url"], **spec["store"]["options"])


def wait_for_go(spec: dict[str, Any]) -> None:
    """Say ``ready`` (a file), then wait until the file ``go`` exists."""
    with open(spec["ready"], "w") as f:
        f.write("ready")
    while not os.path.exists(spec["go"]):
        time.sleep(0.002)


def run_task(tasks: Mapping[str, Task]) -> None:
    """Run the task the spec (``sys.argv[1]``) names; publish its report atomically."""
    spec = json.loads(sys.argv[1])
    report = tasks[spec["task"]](spec)
    tmp = spec["report"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f)
    os.replace(tmp, spec["report"])
