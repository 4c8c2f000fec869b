"""The ``.karto`` accessor on pandas and dask DataFrames (registered by ``import kartoframe``).

``df.karto.to_dataset(store, dataset_uuid, **options)`` and
``df.karto.update_dataset(store, dataset_uuid, **options)`` call
:func:`kartoframe.store_dataframes_as_dataset` / :func:`kartoframe.update_dataset_from_dataframes`
on a pandas frame and :func:`kartoframe.store_dataset_from_ddf` /
:func:`kartoframe.update_dataset_from_ddf` on a dask frame, with the same keywords.

The pandas accessor is registered when this module is imported. The dask accessor is
registered at once if ``dask.dataframe`` is already imported; otherwise a one-shot import
hook registers it right after ``dask.dataframe`` is first imported, so ``import kartoframe``
never imports dask itself (and works without it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import pandas as pd

from kartoframe.api._args import StoreInput

__all__ = ["DaskKartoAccessor", "KartoAccessor", "register_accessors"]

ACCESSOR_NAME = "karto"

_CUBE_MESSAGE = (
    "to_cube is not available: this kartoframe build has no cube support "
    "(kartoframe.api.cube_write is missing). Write a single dataset with "
    ".karto.to_dataset(store, dataset_uuid, ...) instead."
)


def _cube_function(module: str, name: str) -> Any:
    """The cube writer ``module.name``, or NotImplementedError if cubes are unavailable."""
    import importlib

    try:
        return getattr(importlib.import_module(f"kartoframe.api.{module}"), name)
    except (ImportError, AttributeError) as e:
        raise NotImplementedError(_CUBE_MESSAGE) from e


class KartoAccessor:
    """``df.karto``: write a pandas DataFrame as (or into) a kartoframe dataset.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> df = pd.DataFrame({"country": ["DE", "FR"], "units": [1, 2]})
    >>> df.karto.to_dataset("memory://accessor-example", "sales", partition_on=["country"]).uuid
    'sales'
    >>> more = pd.DataFrame({"country": ["IT"], "units": [3]})
    >>> _ = more.karto.update_dataset("memory://accessor-example", "sales")
    >>> len(kf.read_table("sales", "memory://accessor-example"))
    3
    """

    def __init__(self, obj: pd.DataFrame) -> None:
        self._obj = obj

    def to_dataset(self, store: StoreInput, dataset_uuid: str, **options: Any) -> Any:
        """Write the frame as a new dataset (:func:`kartoframe.store_dataframes_as_dataset`).

        Parameters
        ----------
        store
            Store URL, :class:`kartoframe.Store` or factory.
        dataset_uuid
            Name of the new dataset.
        **options
            Keywords of :func:`kartoframe.store_dataframes_as_dataset` (``partition_on``,
            ``secondary_indices``, ``overwrite``, ``metadata``, ...).

        Returns
        -------
        DatasetMetadataResult
        """
        from kartoframe.api.write import store_dataframes_as_dataset

        _no_dfs(options, "dfs")
        return store_dataframes_as_dataset(store, dataset_uuid, [self._obj], **options)

    def update_dataset(self, store: StoreInput, dataset_uuid: str, **options: Any) -> Any:
        """Add the frame to a dataset (:func:`kartoframe.update_dataset_from_dataframes`).

        The dataset is created if it does not exist. ``delete_scope`` removes partitions in
        the same commit.

        Parameters
        ----------
        store
            Store URL, :class:`kartoframe.Store` or factory.
        dataset_uuid
            The dataset.
        **options
            Keywords of :func:`kartoframe.update_dataset_from_dataframes`.

        Returns
        -------
        DatasetMetadataResult
        """
        from kartoframe.api.write import update_dataset_from_dataframes

        _no_dfs(options, "df_list")
        return update_dataset_from_dataframes([self._obj], store, dataset_uuid, **options)

    def to_cube(self, cube: Any, store: StoreInput, **options: Any) -> Any:
        """Build a new cube with this frame as its seed (:func:`kartoframe.build_cube`).

        Parameters
        ----------
        cube
            The :class:`kartoframe.Cube` spec.
        store
            Store URL, :class:`kartoframe.Store` or factory.
        **options
            Keywords of :func:`kartoframe.build_cube` (``metadata``, ``overwrite``,
            ``partition_on``, ``df_serializer``).

        Returns
        -------
        dict
            ``{dataset_id: DatasetMetadataResult}``.

        Raises
        ------
        NotImplementedError
            If this build of kartoframe has no cube support.
        """
        return _cube_function("cube_write", "build_cube")(self._obj, cube, store, **options)

    def build_cube(self, cube: Any, store: StoreInput, **options: Any) -> Any:
        """Build a new cube with this frame as its seed (:func:`kartoframe.build_cube`).

        Same as :meth:`to_cube`; ``options`` are the keywords of
        :func:`kartoframe.build_cube`.

        Examples
        --------
        >>> import pandas as pd, kartoframe as kf
        >>> cube = kf.Cube(["COUNTRY_CODE"], ["YEAR"], uuid_prefix="accessor_cube")
        >>> df = pd.DataFrame({"COUNTRY_CODE": ["DE"], "YEAR": [2024], "SALES": [1.0]})
        >>> sorted(df.karto.build_cube(cube, "memory://accessor-cube"))
        ['seed']
        """
        return _cube_function("cube_write", "build_cube")(self._obj, cube, store, **options)

    def extend_cube(self, cube: Any, store: StoreInput, dataset_id: str, **options: Any) -> Any:
        """Add this frame to an existing cube as dataset ``dataset_id``.

        Calls :func:`kartoframe.extend_cube` with ``{dataset_id: frame}``; ``options`` are
        its keywords (``metadata``, ``overwrite``, ``partition_on``, ``df_serializer``).
        """
        extend = _cube_function("cube_write", "extend_cube")
        return extend({dataset_id: self._obj}, cube, store, **options)

    def append_to_cube(
        self, cube: Any, store: StoreInput, dataset_id: str | None = None, **options: Any
    ) -> Any:
        """Append this frame to dataset ``dataset_id`` (default: the seed) of a cube.

        Calls :func:`kartoframe.append_to_cube`; ``options`` are its keywords.
        """
        append = _cube_function("cube_write", "append_to_cube")
        target = cube.seed_dataset if dataset_id is None else dataset_id
        return append({target: self._obj}, cube, store, **options)


class DaskKartoAccessor:
    """``ddf.karto``: write a dask DataFrame as (or into) a kartoframe dataset.

    By default the write runs at once (like ``ddf.to_parquet``); pass ``compute=False`` to
    get the lazy ``Delayed`` of :func:`kartoframe.store_dataset_from_ddf` instead.

    Examples
    --------
    >>> import dask.dataframe as dd, pandas as pd, kartoframe as kf
    >>> pdf = pd.DataFrame({"country": ["DE", "FR", "DE"], "units": [1, 2, 3]})
    >>> ddf = dd.from_pandas(pdf, npartitions=2)
    >>> ddf.karto.to_dataset("memory://dask-accessor-example", "sales",
    ...                      partition_on=["country"]).uuid
    'sales'
    >>> job = ddf.karto.update_dataset("memory://dask-accessor-example", "sales",
    ...                                compute=False)
    >>> _ = job.compute()
    >>> len(kf.read_table("sales", "memory://dask-accessor-example"))
    6
    """

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def to_dataset(
        self, store: StoreInput, dataset_uuid: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Write the frame as a new dataset (:func:`kartoframe.store_dataset_from_ddf`).

        Parameters
        ----------
        store
            Store URL, :class:`kartoframe.Store` or factory.
        dataset_uuid
            Name of the new dataset.
        compute
            Run the write now (default) or return the lazy ``Delayed``.
        **options
            Keywords of :func:`kartoframe.store_dataset_from_ddf` (``partition_on``,
            ``shuffle``, ``num_buckets``, ``secondary_indices``, ...).

        Returns
        -------
        DatasetMetadataResult or dask.delayed.Delayed
        """
        from kartoframe.api.dask_write import store_dataset_from_ddf

        job = store_dataset_from_ddf(self._obj, store, dataset_uuid, **options)
        return job.compute() if compute else job

    def update_dataset(
        self, store: StoreInput, dataset_uuid: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Add the frame to a dataset (:func:`kartoframe.update_dataset_from_ddf`).

        Parameters
        ----------
        store
            Store URL, :class:`kartoframe.Store` or factory.
        dataset_uuid
            The dataset (created if missing).
        compute
            Run the write now (default) or return the lazy ``Delayed``.
        **options
            Keywords of :func:`kartoframe.update_dataset_from_ddf`.

        Returns
        -------
        DatasetMetadataResult or dask.delayed.Delayed
        """
        from kartoframe.api.dask_write import update_dataset_from_ddf

        job = update_dataset_from_ddf(self._obj, store, dataset_uuid, **options)
        return job.compute() if compute else job

    def to_cube(self, cube: Any, store: StoreInput, *, compute: bool = True, **options: Any) -> Any:
        """Build a new cube with this frame as its seed (``build_cube_from_dataframe``).

        Parameters
        ----------
        cube
            The :class:`kartoframe.Cube` spec.
        store
            Store URL, :class:`kartoframe.Store` or factory.
        compute
            Run the write now (default) or return the lazy ``Delayed``.
        **options
            Keywords of :func:`kartoframe.build_cube_from_dataframe` (``shuffle``,
            ``num_buckets``, ``partition_on``, ...).

        Returns
        -------
        dict or dask.delayed.Delayed
            ``{dataset_id: DatasetMetadataResult}`` once computed.

        Raises
        ------
        NotImplementedError
            If this build of kartoframe has no cube support.
        """
        build = _cube_function("cube_dask", "build_cube_from_dataframe")
        job = build(self._obj, cube, store, **options)
        return job.compute() if compute else job

    def build_cube(
        self, cube: Any, store: StoreInput, *, compute: bool = True, **options: Any
    ) -> Any:
        """Build a new cube with this frame as its seed (same as :meth:`to_cube`)."""
        build = _cube_function("cube_dask", "build_cube_from_dataframe")
        job = build(self._obj, cube, store, **options)
        return job.compute() if compute else job

    def extend_cube(
        self,
        cube: Any,
        store: StoreInput,
        dataset_id: str,
        *,
        compute: bool = True,
        **options: Any,
    ) -> Any:
        """Add this frame to a cube as dataset ``dataset_id`` (``extend_cube_from_dataframe``)."""
        extend = _cube_function("cube_dask", "extend_cube_from_dataframe")
        job = extend({dataset_id: self._obj}, cube, store, **options)
        return job.compute() if compute else job

    def append_to_cube(
        self,
        cube: Any,
        store: StoreInput,
        dataset_id: str | None = None,
        *,
        compute: bool = True,
        **options: Any,
    ) -> Any:
        """Append this frame to dataset ``dataset_id`` (default: the seed) of a cube."""
        append = _cube_function("cube_dask", "append_to_cube_from_dataframe")
        target = cube.seed_dataset if dataset_id is None else dataset_id
        job = append({target: self._obj}, cube, store, **options)
        return job.compute() if compute else job


def _no_dfs(options: Mapping[str, Any], name: str) -> None:
    if name in options:
        from kartoframe.errors import InvalidInputError

        raise InvalidInputError(f"{name} cannot be passed to the accessor: the frame is the data.")


# --------------------------------------------------------------------------------------------
# registration
# --------------------------------------------------------------------------------------------

_lock = threading.Lock()
_registered: set[str] = set()
_DASK_MODULE = "dask.dataframe"


def _register_pandas() -> None:
    with _lock:
        if "pandas" in _registered:
            return
        _registered.add("pandas")
    if ACCESSOR_NAME not in getattr(pd.DataFrame, "_accessors", set()):
        pd.api.extensions.register_dataframe_accessor(ACCESSOR_NAME)(KartoAccessor)


def _register_dask() -> None:
    with _lock:
        if "dask" in _registered:
            return
        _registered.add("dask")
    from kartoframe.execution.dask_engine import register_dataframe_accessor

    register_dataframe_accessor(ACCESSOR_NAME, DaskKartoAccessor)


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
            _register_dask()
        except Exception:  # pragma: no cover - never break the user's import of dask
            with _lock:
                _registered.discard("dask")

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
            spec = find(fullname, path, target)
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


def register_accessors() -> None:
    """Register ``.karto`` on pandas now, and on dask now or when dask.dataframe is imported.

    Called when :mod:`kartoframe` is imported; calling it again does nothing.
    """
    _register_pandas()
    if sys.modules.get(_DASK_MODULE) is not None:
        _remove_hook()
        _register_dask()
        return
    with _lock:
        if _hook not in sys.meta_path and "dask" not in _registered:
            sys.meta_path.insert(0, _hook)


register_accessors()
