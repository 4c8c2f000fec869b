"""Registering ``.karto`` on dask DataFrames without importing dask.

The dask accessor is registered at once if ``dask.dataframe`` is already imported;
otherwise a one-shot import hook registers it right after ``dask.dataframe`` is first
imported, so ``import kartoframe`` never imports dask itself (and works without it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

__all__ = ["register_dask_accessor"]

_DASK_MODULE = "dask.dataframe"
_lock = threading.Lock()
_done: list[bool] = []  # [True] once registered
_pending: list[Callable[[], None]] = []


def _register(register: Callable[[], None]) -> None:
    with _lock:
        if _done:
            return
        _done.append(True)
    try:
        register()
    except Exception:  # pragma: no cover - never break the user's import of dask
        with _lock:
            _done.clear()
        raise


class _RegisteringLoader(importlib.abc.Loader):
    """Wraps the loader of ``dask.dataframe``: registers the accessor after it executed."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        self._loader.exec_module(module)
        _remove_hook()
        try:
            for register in _pending:
                _register(register)
        except Exception:  # pragma: no cover - never break the user's import of dask
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _DaskImportHook(importlib.abc.MetaPathFinder):
    """One-shot finder: wraps the loader of ``dask.dataframe`` when it is first imported."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _DASK_MODULE:
            return None
        # Stay installed until the module is really executed: ``importlib.util.find_spec``
        # (an availability check, no import) also lands here.
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None:
            spec.loader = _RegisteringLoader(spec.loader)
        return spec


_hook = _DaskImportHook()


def _remove_hook() -> None:
    with _lock:
        if _hook in sys.meta_path:
            sys.meta_path.remove(_hook)


def register_dask_accessor(name: str, cls: type) -> None:
    """Register ``cls`` as accessor ``name`` of dask DataFrames now, or when
    ``dask.dataframe`` is first imported; calling it again does nothing.
    """

    def register() -> None:
        # dask's own registry, not a kartoframe module: when kartoframe's dask engine is
        # what imports dask.dataframe, that module is still half-initialised here
        from dask.dataframe.extensions import register_dataframe_accessor

        register_dataframe_accessor(name)(cls)  # type: ignore[no-untyped-call]

    if sys.modules.get(_DASK_MODULE) is not None:
        _remove_hook()
        _register(register)
        return
    with _lock:
        if _hook not in sys.meta_path and not _done:
            _pending[:] = [register]
            sys.meta_path.insert(0, _hook)
