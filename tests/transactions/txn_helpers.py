"""Helpers of the transaction tests: worker processes running ``txn_worker.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import kartoframe as kf

WORKER = Path(__file__).parent / "txn_worker.py"


def store_spec(store: kf.Store) -> dict[str, Any]:
    """How a worker process re-creates ``store`` (URL and options, JSON)."""
    return {"url": store.url, "options": store.storage_options}


class Workers:
    """Start ``txn_worker.py`` processes, release them together, collect their reports."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []
        self.go = tmp / "go"

    def start(self, task: str, **args: Any) -> Path:
        n = len(self.procs)
        out = self.tmp / f"report-{n}.json"
        spec = {
            "task": task,
            "go": str(self.go),
            "ready": str(self.tmp / f"ready-{n}"),
            "report": str(out),
            **args,
        }
        env = dict(os.environ)
        env.setdefault("AWS_ACCESS_KEY_ID", "testing")
        env.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(spec)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.procs.append((proc, out))
        return out

    def release(self, timeout: float = 60.0) -> None:
        """Wait until every worker is ready (imports done, base loaded), then let them go."""
        deadline = time.monotonic() + timeout
        for n, (proc, _) in enumerate(self.procs):
            while not (self.tmp / f"ready-{n}").exists():
                if proc.poll() is not None:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    raise AssertionError(f"worker {n} died before it was ready:\n{err}")
                if time.monotonic() > deadline:
                    raise AssertionError(f"worker {n} not ready after {timeout} s")
                time.sleep(0.01)
        self.go.write_text("go")

    def reports(self, timeout: float = 120.0) -> list[dict[str, Any]]:
        out = []
        for proc, path in self.procs:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise
            err = proc.stderr.read().decode() if proc.stderr else ""
            assert proc.returncode == 0, f"worker failed ({proc.returncode}):\n{err}"
            out.append(json.loads(path.read_text()))
        return out

    def kill_all(self) -> None:
        for proc, _ in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
