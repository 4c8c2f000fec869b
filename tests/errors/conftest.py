"""Fixtures of the error tests: fault-injecting stores (see ``tests/storage/faultfs.py``)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import kartoframe as kf


def load_faultfs() -> ModuleType:
    """Import ``tests/storage/faultfs.py`` once, under a name no other module uses."""
    name = "kf_test_faultfs"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).parent.parent / "storage" / "faultfs.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def make_faulty() -> Callable[..., tuple[kf.Store, Any]]:
    """``make_faulty(store, retries=3)`` -> (store over a FaultyFileSystem, that filesystem)."""
    faultfs = load_faultfs()

    def _make(store: kf.Store, retries: int = 3) -> tuple[kf.Store, Any]:
        ffs = faultfs.FaultyFileSystem(store.fs)
        wrapped = kf.Store(store.url, retries=retries, filesystem=ffs, **store.storage_options)
        return wrapped, ffs

    return _make
