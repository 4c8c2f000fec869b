"""Run a measuring script in a fresh interpreter (its memory high-water marks are its
own), with this checkout importable, and read the JSON it prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure_in_fresh_interpreter(script: str, *args: str, timeout: float = 300) -> Any:
    """The JSON the (dedented) ``script`` prints when run as ``python -c script *args``."""
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
