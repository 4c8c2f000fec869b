"""Fixtures of the command-line tests: sample stores (see cli_helpers.py)."""

from __future__ import annotations

import pathlib

import pytest
from cli_helpers import fill_store


@pytest.fixture
def local_store(tmp_path) -> pathlib.Path:
    """A local folder holding ``sales`` and ``geo``."""
    root = tmp_path / "store"
    fill_store(str(root))
    return root


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory) -> pathlib.Path:
    """Like ``local_store``, shared by the read-only tests of a module."""
    root = tmp_path_factory.mktemp("cli") / "store"
    fill_store(str(root))
    return root
