"""The ``.karto`` accessor on dask DataFrames (registered by ``import kartoframe``).

``ddf.karto.to_dataset`` / ``update_dataset`` call :func:`kartoframe.store_dataset_from_ddf`
/ :func:`kartoframe.update_dataset_from_ddf` with the same keywords, as the pandas accessor
(:class:`kartoframe.api.accessor.KartoAccessor`) calls the eager writes.

It is registered at once if ``dask.dataframe`` is already imported, else right after it is
first imported (:mod:`kartoframe.execution.accessor_hook`): ``import kartoframe`` never
imports dask.
"""

from __future__ import annotations

from typing import Any, ClassVar

from kartoframe.api.accessor import ACCESSOR_NAME, KartoAccessor, done, forwards
from kartoframe.execution.accessor_hook import register_dask_accessor
from kartoframe.front.args import StoreInput

__all__ = ["DaskKartoAccessor"]


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

    _CUBE = "dask.cube"
    _TARGETS: ClassVar[dict[str, str]] = {
        "to_cube": "build_cube_from_dataframe",
        "extend_cube": "extend_cube_from_dataframe",
        "append_to_cube": "append_to_cube_from_dataframe",
    }

    @forwards("dask.write", "store_dataset_from_ddf")
    def to_dataset(  # type: ignore[override]
        self, store: StoreInput, dataset_uuid: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Write the frame as a new dataset."""
        from kartoframe.dask.write import store_dataset_from_ddf

        return done(store_dataset_from_ddf(self._obj, store, dataset_uuid, **options), compute)

    @forwards("dask.write", "update_dataset_from_ddf")
    def update_dataset(  # type: ignore[override]
        self, store: StoreInput, dataset_uuid: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Add the frame to a dataset."""
        from kartoframe.dask.write import update_dataset_from_ddf

        return done(update_dataset_from_ddf(self._obj, store, dataset_uuid, **options), compute)

    @forwards("dask.cube", "build_cube_from_dataframe")
    def to_cube(  # type: ignore[override]
        self, cube: Any, store: StoreInput, *, compute: bool = True, **options: Any
    ) -> Any:
        """Build a new cube, this frame as seed."""
        return self._cube("to_cube", self._obj, cube, store, compute, **options)

    build_cube = to_cube

    @forwards("dask.cube", "extend_cube_from_dataframe")
    def extend_cube(  # type: ignore[override]
        self, cube: Any, store: StoreInput, dataset_id: str, *, compute: bool = True, **options: Any
    ) -> Any:
        """Add this frame to a cube."""
        data = {dataset_id: self._obj}
        return self._cube("extend_cube", data, cube, store, compute, **options)

    @forwards("dask.cube", "append_to_cube_from_dataframe")
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


register_dask_accessor(ACCESSOR_NAME, DaskKartoAccessor)
