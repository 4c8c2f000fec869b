"""The ``.karto`` accessor on pandas DataFrames (registered by ``import kartoframe``).

``df.karto.to_dataset(store, dataset_uuid, **options)`` and
``df.karto.update_dataset(store, dataset_uuid, **options)`` call
:func:`kartoframe.store_dataframes_as_dataset` / :func:`kartoframe.update_dataset_from_dataframes`
with the same keywords. Each method's docstring is that of the function it calls
(:func:`forwards`). The dask accessor (:mod:`kartoframe.dask.accessor`) extends this one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import pandas as pd

from kartoframe.errors import InvalidInputError
from kartoframe.front.args import StoreInput

__all__ = ["KartoAccessor", "done", "forwards", "register_accessor"]

ACCESSOR_NAME = "karto"
F = TypeVar("F", bound=Callable[..., Any])

_CUBE_MESSAGE = (
    "to_cube is not available: this kartoframe build has no cube support "
    "(kartoframe.api.cube_write is missing). Write a single dataset with "
    ".karto.to_dataset(store, dataset_uuid, ...) instead."
)


def _function(module: str, name: str) -> Any:
    """``kartoframe.<module>.<name>``; NotImplementedError if cubes are unavailable."""
    try:
        return getattr(importlib.import_module(f"kartoframe.{module}"), name)
    except (ImportError, AttributeError) as e:
        if "cube" not in module:
            raise
        raise NotImplementedError(_CUBE_MESSAGE) from e


def forwards(module: str, name: str) -> Callable[[F], F]:
    """Decorator: the method's one-line docstring, then the sections of
    ``kartoframe.<module>.<name>``'s docstring (its examples left out).
    """

    def decorate(method: F) -> F:
        try:
            doc = _function(module, name).__doc__ or ""
        except NotImplementedError:  # no cube support in this build
            doc = ""
        start, end = doc.find("    Parameters\n"), doc.find("    Examples\n")
        body = doc[start : end if end >= 0 else None].rstrip() if start >= 0 else ""
        calls = f"    Calls :func:`kartoframe.{name}`; ``options`` are its keywords."
        if "cube" in module:
            calls += "\n    NotImplementedError if this build of kartoframe has no cube support."
        head = (method.__doc__ or "").strip()
        method.__doc__ = f"{head}\n\n{calls}\n\n{body}\n" if body else f"{head}\n\n{calls}\n"
        return method

    return decorate


def _no_dfs(options: Mapping[str, Any], name: str) -> None:
    if name in options:
        raise InvalidInputError(f"{name} cannot be passed to the accessor: the frame is the data.")


def done(job: Any, compute: bool | None) -> Any:
    """``job`` computed if ``compute``, else as it is."""
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

    _CUBE: ClassVar[str] = "api.cube_write"
    _TARGETS: ClassVar[dict[str, str]] = {
        "to_cube": "build_cube",
        "extend_cube": "extend_cube",
        "append_to_cube": "append_to_cube",
    }

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def _cube(self, method: str, data: Any, cube: Any, store: Any, compute: Any, **kw: Any) -> Any:
        job = _function(self._CUBE, self._TARGETS[method])(data, cube, store, **kw)
        return job if compute is None else done(job, compute)

    def _target(self, cube: Any, dataset_id: str | None) -> dict[str, Any]:
        return {cube.seed_dataset if dataset_id is None else dataset_id: self._obj}

    @forwards("api.write", "store_dataframes_as_dataset")
    def to_dataset(self, store: StoreInput, dataset_uuid: str, **options: Any) -> Any:
        """Write the frame as a new dataset."""
        from kartoframe.api.write import store_dataframes_as_dataset

        _no_dfs(options, "dfs")
        return store_dataframes_as_dataset(store, dataset_uuid, [self._obj], **options)

    @forwards("api.write", "update_dataset_from_dataframes")
    def update_dataset(self, store: StoreInput, dataset_uuid: str, **options: Any) -> Any:
        """Add the frame to a dataset."""
        from kartoframe.api.write import update_dataset_from_dataframes

        _no_dfs(options, "df_list")
        return update_dataset_from_dataframes([self._obj], store, dataset_uuid, **options)

    @forwards("api.cube_write", "build_cube")
    def to_cube(self, cube: Any, store: StoreInput, **options: Any) -> Any:
        """Build a new cube with this frame as its seed."""
        return self._cube("to_cube", self._obj, cube, store, None, **options)

    build_cube = to_cube

    @forwards("api.cube_write", "extend_cube")
    def extend_cube(self, cube: Any, store: StoreInput, dataset_id: str, **options: Any) -> Any:
        """Add this frame to a cube as dataset ``dataset_id``."""
        return self._cube("extend_cube", {dataset_id: self._obj}, cube, store, None, **options)

    @forwards("api.cube_write", "append_to_cube")
    def append_to_cube(
        self, cube: Any, store: StoreInput, dataset_id: str | None = None, **options: Any
    ) -> Any:
        """Append this frame to dataset ``dataset_id`` (default: the seed) of a cube."""
        data = self._target(cube, dataset_id)
        return self._cube("append_to_cube", data, cube, store, None, **options)


def register_accessor() -> None:
    """Register ``.karto`` on pandas (when :mod:`kartoframe` is imported; again: nothing)."""
    if ACCESSOR_NAME not in getattr(pd.DataFrame, "_accessors", set()):
        pd.api.extensions.register_dataframe_accessor(ACCESSOR_NAME)(KartoAccessor)


register_accessor()
