"""The process's transparent-huge-page flag (Linux), in real processes: kartoframe never
sets it on import; ``disable_transparent_huge_pages`` sets it for good; an optimize sets
it while it runs (its rewrites included) and restores it afterwards, also when scopes
overlap across threads, and leaves it alone when asked to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/status").exists(),
    reason="transparent huge pages are a Linux feature",
)

PRELUDE = """
import json, sys, threading
import pandas as pd
import pyarrow as pa
import kartoframe as kf

def flag():
    for line in open("/proc/self/status"):
        if line.startswith("THP_enabled:"):
            return line.split()[1]
    return "?"

def huge_pages():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0

def touch(mib):  # the allocator's new memory, written
    buf = pa.allocate_buffer(mib << 20)
    pa.FixedSizeBufferWriter(buf).write(b"x" * (mib << 20))
    return buf

def small_files(store):
    for day in range(4):
        df = pd.DataFrame({"p": ["a", "b"] * 50, "day": day, "v": range(100)})
        kf.update_dataset_from_dataframes([df], store=store, dataset_uuid="ds",
                                          partition_on=["p"])

seen = []  # the flag inside every rewrite of an optimize
import kartoframe.execution.optimize as ex
_batches = ex._unit_batches
def observed(*args, **kwargs):
    seen.append(flag())
    return _batches(*args, **kwargs)
ex._unit_batches = observed
"""


def run(script: str, tmp_path: Path, **env: str) -> dict:
    import os

    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out.get("before") == "?":
        pytest.skip("this kernel does not report THP_enabled")
    return out


def test_disable_sets_the_flag_for_good(tmp_path: Path) -> None:
    out = run(
        """
before = flag()
done = kf.disable_transparent_huge_pages()
after = flag()
start = huge_pages()
buf = touch(64)
small_files(sys.argv[1])
kf.optimize_dataset("ds", sys.argv[1])
print(json.dumps({"before": before, "done": done, "after": after, "seen": seen,
                  "end": flag(), "huge": huge_pages() - start}))
""",
        tmp_path,
    )
    assert out["before"] == "1"  # importing kartoframe does not touch the flag
    assert out["done"] is True
    assert out["after"] == "0"
    assert out["huge"] <= 0  # 64 MiB written after the call: no new huge page
    assert out["seen"] == ["0", "0"]
    assert out["end"] == "0"  # an optimize does not clear what the user set


def test_an_optimize_runs_in_small_pages_and_restores_the_flag(tmp_path: Path) -> None:
    out = run(
        """
before = flag()
small_files(sys.argv[1])
after_writes = flag()
result = kf.optimize_dataset("ds", sys.argv[1])
cube = kf.Cube(dimension_columns=["city"], partition_columns=["country"], uuid_prefix="c")
df = pd.DataFrame({"country": ["DE", "DE"], "city": ["B", "K"], "t": [1.0, 2.0]})
kf.build_cube(data=df, cube=cube, store=sys.argv[1])
kf.append_to_cube(data=df.assign(city=["M", "N"]), cube=cube, store=sys.argv[1])
kf.optimize_cube(cube, sys.argv[1])
print(json.dumps({"before": before, "after_writes": after_writes, "seen": seen,
                  "files": result.files_added, "end": flag()}))
""",
        tmp_path,
    )
    assert out["before"] == out["after_writes"] == "1"  # writes leave the flag alone
    assert out["files"] == 2
    assert out["seen"] == ["0", "0", "0"]  # both partitions and the cube's seed: flag set
    assert out["end"] == "1"


def test_overlapping_scopes_clear_the_flag_when_the_last_one_closes(tmp_path: Path) -> None:
    out = run(
        """
from kartoframe.execution.huge_pages import huge_pages_off
entered, release_first, release_second = threading.Barrier(3), threading.Event(), threading.Event()
def scope(release):
    with huge_pages_off():
        entered.wait()
        release.wait()
threads = [threading.Thread(target=scope, args=(e,)) for e in (release_first, release_second)]
before = flag()
for t in threads:
    t.start()
entered.wait()
both = flag()
start = huge_pages()
buf = touch(64)
huge = huge_pages() - start
release_first.set()
threads[0].join()
one_left = flag()
release_second.set()
threads[1].join()
print(json.dumps({"before": before, "both": both, "huge": huge, "one_left": one_left,
                  "end": flag()}))
""",
        tmp_path,
    )
    assert out["before"] == "1"
    assert out["both"] == "0"
    assert out["huge"] <= 0  # 64 MiB written inside the scopes: no new huge page
    assert out["one_left"] == "0"  # the second thread's scope is still open
    assert out["end"] == "1"


def test_the_environment_keeps_the_flag_alone(tmp_path: Path) -> None:
    out = run(
        """
before = flag()
small_files(sys.argv[1])
kf.optimize_dataset("ds", sys.argv[1])
print(json.dumps({"before": before, "seen": seen, "end": flag()}))
""",
        tmp_path,
        KARTOFRAME_KEEP_HUGE_PAGES="1",
    )
    assert out["before"] == "1"
    assert out["seen"] == ["1", "1"]
    assert out["end"] == "1"
