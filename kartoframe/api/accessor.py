"""The ``.karto`` accessor on pandas and dask DataFrames (registered by ``import kartoframe``).

``df.karto.to_dataset(store, dataset_uuid, **options)`` and
``df.karto.update_dataset(store, dataset_uuid, **options)`` call
:func:`kartoframe.store_dataframes_as_dataset` / :func:`kartoframe.update_dataset_from_dataframes`
on a pandas frame and :func:`kartoframe.store_dataset_from_ddf` /
:func:`kartoframe.update_dataset_from_ddf` on a dask frame, with the same keywords. Each
method's docstring is that of the function it calls (:func:`_forwards`).

The pandas accessor is registered when this module is imported; the dask accessor at once
if ``dask.dataframe`` is already imported, else right after it is first imported
(:mod:`kartoframe.execution.accessor_hook`): ``import kartoframe`` never imports dask.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import pandas as pd

from kartoframe.api._args import StoreInput
from kartoframe.errors import InvalidInputError
from kartoframe.execution.accessor_hook import register_dask_accessor

__all__ = ["DaskKartoAccessor", "KartoAccessor", "register_accessors"]

ACCESSOR_NAME = "karto"
F = TypeVar("F", bound=Callable[..., Any])

_CUBE_MESSAGE = (
    "to_cube is not available: this kartoframe build has no cube support "
    "(kartoframe.api.cube_write is missing). Write a single dataset with "
    ".karto.to_dataset(store, dataset_uuid, ...) instead."
)


def _function(module: str, name: str) -> Any:
    """``kartoframe.api.<module>.<name>``; NotImplementedError if cubes are unavailable."""
    try:
        return getattr(importlib.import_module(f"kartoframe.api.{module}"), name)
    except (ImportError, AttributeError) as e:
        if not module.startswith("cube"):
            raise
        raise NotImplementedError(_CUBE_MESSAGE) from e


def _forwards(module: str, name: str) -> Callable[[F], F]:
    """Decorator: the method's one-line docstring, then the sections of
    ``kartoframe.api.<module>.<name>``'s docstring (its examples left out).
    """

    def decorate(method: F) -> F:
        try:
            doc = _function(module, name).__doc__ or ""
        except NotImplementedError:  # no cube support in this build
            doc = ""
        start, end = doc.find("    Parameters\n"), doc.find("    Examples\n")
        body = doc[start : end if end >= 0 else None].rstrip() if start >= 0 else ""
        calls = f"    Calls :func:`kartoframe.{name}`; ``options`` are its keywords."
        if module.startswith("cube"):
            calls += "\n    NotImplementedError if this build of kartoframe has no cube support."
        head = (method.__doc__ or "").strip()
        method.__doc__ = f"{head}\n\n{calls}\n\n{body}\n" if body else f"{head}\n\n{calls}\n"
        return method

    return decorate


def _no_dfs(options: Mapping[str, Any], name: str) -> None:
    if name in options:
        raise InvalidInputError(f"{name} cannot be passed to the accessor: the frame is the data.")


def _done(job: Any, compute: bool | None) -> Any:
    return job.compute() if compute else job


class KartoAccessor:
    """``df.karto``: write a pandas DataFrame as (or into) a kartoframe dataset or cube.

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
    >>> cube = kf.Cube(["COUNTRY_CODE"], ["YEAR"], uuid_prefix="accessor_cube")
    >>> df = pd.DataFrame({"COUNTRY_CODE": ["DE"], "YEAR": [2024], "SALES": [1.0]})
    >>> sorted(df.karto.build_cube(cube, "memory://accessor-cube"))
    ['seed']
    """

    _CUBE: ClassVar[str] = "cube_write"
    _TARGETS: ClassVar[dict[str, str]] = {
        "to_cube": "build_cube",
        "extend_cube": "extend_cube",
        "append_to_cube": "append_to_cube",
    }

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _cube(self, method: str, data: Any, cube: Any, store: Any, compute: Any, **kw: Any) -> Any:
        job = _function(self._CUBE, self._TARGETS[method])(data, cube, store, **kw)
        return job if compute is None else _done(job, compute)

    def _target(self, cube: Any, dataset_id: str | None) -> dict[str, Any]:
        return {cube.seed_dataset if dataset_id is None else dataset_id: self._obj}

    @_forwards("write", "store_dataframes_as_dataset")
    def to_dataset(self, store: StoreInput, dataset_uuid: str, **options: Any) -> Any:
        """Write the frame as a new dataset."""
        from kartoframe.api.write import store_dataframes_as_dataset

        _no_dfs(options, "dfs")
        return store_dataframes_as_dataset(store, dataset_uuid, [self._obj], **options)

    @_forwards("write", "update_dataset_from_dataframes")
    def update_dataset(self, store: StoreInput, dataset_uuid: str, **options: Any) -> Any:
        """Add the frame to a dataset."""
        from kartoframe.api.write import update_dataset_from_dataframes

        _no_dfs(options, "df_list")
        return update_dataset_from_dataframes([self._obj], store, dataset_uuid, **options)

    @_forwards("cube_write", "build_cube")
    def to_cube(self, cube: Any, store: StoreInput, **options: Any) -> Any:
        """Build a new cube with this frame as its seed."""
        return self._cube("to_cube", self._obj, cube, store, None, **options)

    build_cube = to_cube

    @_forwards("cube_write", "extend_cube")
    def extend_cube(self, cube: Any, store: StoreInput, dataset_id: str, **options: Any) -> Any:
        """Add this frame to a cube as dataset ``dataset_id``."""
        return self._cube("extend_cube", {dataset_id: self._obj}, cube, store, None, **options)

    @_forwards("cube_write", "append_to_cube")
    def append_to_cube(
        self, cube: Any, store: StoreInput, dataset_id: str | None = None, **options: Any
    ) -> Any:
        """Append this frame to dataset ``dataset_id`` (default: the seed) of a cube."""
        data = self._target(cube, dataset_id)
        return self._cube("append_to_cube", data, cube, store, None, **options)


class DaskKartoAccessor(KartoAccessor):
    """``ddf.karto``: write a dask DataFrame as (or into) a kartoframe dataset or cube.

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

    _CUBE = "cube_dask"
    _TARGETS: ClassVar[dict[str, str]] = {
        "to_cube": "build_cube_from_dataframe",
        "extend_cube": "extend_cube_from_dataframe",
        "append_to_cube": "append_to_cube_from_dataframe",
    }

    @_forwards("dask_write", "store_dataset_from_ddf")
    def to_dataset(  # type: ignore[override]
        self, store: StoreInput, dataset_uuid: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Write the frame as a new dataset."""
        from kartoframe.api.dask_write import store_dataset_from_ddf

        return _done(store_dataset_from_ddf(self._obj, store, dataset_uuid, **options), compute)

    @_forwards("dask_write", "update_dataset_from_ddf")
    def update_dataset(  # type: ignore[override]
        self, store: StoreInput, dataset_uuid: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Add the frame to a dataset."""
        from kartoframe.api.dask_write import update_dataset_from_ddf

        return _done(update_dataset_from_ddf(self._obj, store, dataset_uuid, **options), compute)

    @_forwards("cube_dask", "build_cube_from_dataframe")
    def to_cube(  # type: ignore[override]
        self, cube: Any, store: StoreInput, *, compute: bool = True, **options: Any
    ) -> Any:
        """Build a new cube, this frame as seed."""
        return self._cube("to_cube", self._obj, cube, store, compute, **options)

    build_cube = to_cube

    @_forwards("cube_dask", "extend_cube_from_dataframe")
    def extend_cube(  # type: ignore[override]
        self, cube: Any, store: StoreInput, dataset_id: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Add this frame to a cube."""
        data = {dataset_id: self._obj}
        return self._cube("extend_cube", data, cube, store, compute, **options)

    @_forwards("cube_dask", "append_to_cube_from_dataframe")
    def append_to_cube(  # type: ignore[override]
        self,
        cube: Any,
        store: StoreInput,
        dataset_id: str | None = None,
        *,
        compute: bool = True,
        **options: Any,
    ) -> Any:
        """Append this frame to a cube."""
        data = self._target(cube, dataset_id)
        return self._cube("append_to_cube", data, cube, store, compute, **options)


def register_accessors() -> None:
    """Register ``.karto`` on pandas now, and on dask now or when dask.dataframe is imported.

    Called when :mod:`kartoframe` is imported; calling it again does nothing.
    """
    if ACCESSOR_NAME not in getattr(pd.DataFrame, "_accessors", set()):
        pd.api.extensions.register_dataframe_accessor(ACCESSOR_NAME)(KartoAccessor)
    register_dask_accessor(ACCESSOR_NAME, DaskKartoAccessor)


register_accessors()
