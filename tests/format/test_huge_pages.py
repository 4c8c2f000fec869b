"""``disable_transparent_huge_pages`` sets the process's THP flag (Linux), for the memory
touched afterwards, in a real process; kartoframe never sets it on import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys
import pyarrow as pa
import kartoframe as kf

def flag():
    for line in open("/proc/self/status"):
        if line.startswith("THP_enabled:"):
            return line.split()[1]
    return "?"

before = flag()
done = kf.disable_transparent_huge_pages()
after = flag()

def huge_pages():
    for line in open("/proc/self/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1])
    return 0

start = huge_pages()
buf = pa.allocate_buffer(64 << 20)  # the allocator's new memory, after the call
pa.FixedSizeBufferWriter(buf).write(b"x" * (64 << 20))
print(before, done, after, huge_pages() - start)
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not Path("/proc/self/status").exists(),
    reason="transparent huge pages are a Linux feature",
)
def test_the_flag_is_set_for_the_process_only_when_asked(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=120
    )
    before, done, after, huge = proc.stdout.split()
    if before == "?":
        pytest.skip("this kernel does not report THP_enabled")
    assert before == "1"  # importing kartoframe does not touch the flag
    assert done == "True"
    assert after == "0"
    assert int(huge) == 0  # 64 MiB written after the call: no new huge page
