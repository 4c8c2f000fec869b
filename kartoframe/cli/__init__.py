"""The ``kartoframe`` command line: inspect and maintain datasets and cubes in a store.

Installed as the ``kartoframe`` console script (``kartoframe STORE_URL COMMAND ...``); see
``kartoframe --help`` and ``docs/cli.md``. :func:`main` runs it from Python and returns
the exit code.
"""

from __future__ import annotations

from kartoframe.cli.app import cli, main

__all__ = ["cli", "main"]
