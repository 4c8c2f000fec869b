"""Fixtures of the transaction tests: stores on every backend, counting/faulty wrappers,
and worker processes (``txn_worker.py``, run with the venv's Python)."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from txn_helpers import Workers

import kartoframe as kf

HERE = Path(__file__).parent


def load_faultfs() -> ModuleType:
    """Import ``tests/storage/faultfs.py`` once, under a name no other module uses."""
    name = "kf_test_faultfs"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE.parent / "storage" / "faultfs.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(params=["file", "memory", pytest.param("s3", marks=pytest.mark.s3)])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> kf.Store:
    """A fresh store on local disk, in memory and on the S3 server."""
    if request.param == "file":
        return kf.Store(f"file://{tmp_path}/store")
    if request.param == "memory":
        return kf.Store(f"memory://kf-txn-{uuid.uuid4().hex}")
    return request.getfixturevalue("s3_store")  # type: ignore[no-any-return]


@pytest.fixture
def make_faulty() -> Callable[..., tuple[kf.Store, Any]]:
    """``make_faulty(store, retries=3)`` -> (store over a FaultyFileSystem, that filesystem).

    The wrapper also counts every filesystem call (``ffs.calls``): the request counts.
    """
    faultfs = load_faultfs()

    def _make(store: kf.Store, retries: int = 3) -> tuple[kf.Store, Any]:
        ffs = faultfs.FaultyFileSystem(store.fs)
        wrapped = kf.Store(store.url, retries=retries, filesystem=ffs, **store.storage_options)
        return wrapped, ffs

    return _make


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    w = Workers(tmp_path)
    yield w
    w.kill_all()
