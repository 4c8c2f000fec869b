"""Fixtures of the transaction tests: stores on every backend, counting/faulty wrappers,
and worker processes (``txn_worker.py``, run with the venv's Python)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from txn_helpers import Workers

import kartoframe as kf


@pytest.fixture(params=["file", "memory", pytest.param("s3", marks=pytest.mark.s3)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> kf.Store:
    """A fresh store on local disk, in memory and on the S3 server."""
    if request.param == "file":
        return kf.Store(f"file://{tmp_path}/store")
    if request.param == "memory":
        return kf.Store(f"memory://kf-txn-{uuid.uuid4().hex}")
    return request.getfixturevalue("s3_store")  # type: ignore[no-any-return]


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    w = Workers(tmp_path)
    yield w
    w.kill_all()
