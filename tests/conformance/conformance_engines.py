"""Engine adapters: one uniform interface over the eager, iterator and dask engines.

Every conformance test talks to an :class:`Engine`; the binding modules
(``test_conformance_*.py``) choose which. Adapters only translate calls (a list of frames
into a generator or a dask DataFrame, a lazy write into a computed one); they never
normalise results, so a difference between engines fails a test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

import kartoframe as kf


class Engine:
    """The interface every engine adapter implements."""

    name = "abstract"
    #: Whether ``read_table`` of an empty result carries the dataset's dtypes.
    typed_empty = True

    def read_table(self, uuid: str, store: kf.Store, **kw: Any) -> pd.DataFrame:
        """The whole (filtered) dataset as one frame."""
        raise NotImplementedError

    def read_partitions(self, uuid: str, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        """One frame per planned task (data file or dispatch group), in plan order."""
        raise NotImplementedError

    def store(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        """Write a new dataset; each input frame is one chunk (one file per partition)."""
        raise NotImplementedError

    def update(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        """Add frames (possibly none) and/or delete by ``delete_scope``, in one commit."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class Eager(Engine):
    """``read_table`` / ``read_dataset_as_dataframes`` / ``store_dataframes_as_dataset``."""

    name = "eager"

    def read_table(self, uuid: str, store: kf.Store, **kw: Any) -> pd.DataFrame:
        if "dispatch_by" in kw:
            frames = self.read_partitions(uuid, store, **kw)
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        return kf.read_table(uuid, store, **kw)

    def read_partitions(self, uuid: str, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        return kf.read_dataset_as_dataframes(uuid, store, **kw)

    def store(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        return kf.store_dataframes_as_dataset(store=store, dataset_uuid=uuid, dfs=list(dfs), **kw)

    def update(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        return kf.update_dataset_from_dataframes(list(dfs), store=store, dataset_uuid=uuid, **kw)


class Iterator(Engine):
    """The ``__iterator`` / ``__iter`` functions, fed and drained one frame at a time."""

    name = "iterator"
    typed_empty = False  # an empty result is a generator that yields nothing

    def read_table(self, uuid: str, store: kf.Store, **kw: Any) -> pd.DataFrame:
        frames = self.read_partitions(uuid, store, **kw)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def read_partitions(self, uuid: str, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        it = kf.read_dataset_as_dataframes__iterator(uuid, store, **kw)
        assert iter(it) is it, "the iterator read must be lazy (a generator)"
        return list(it)

    def store(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        return kf.store_dataframes_as_dataset__iter((df for df in dfs), store, uuid, **kw)

    def update(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        return kf.update_dataset_from_dataframes__iter((df for df in dfs), store, uuid, **kw)


class Dask(Engine):
    """``read_dataset_as_ddf`` / ``store_dataset_from_ddf`` / ``update_dataset_from_ddf``.

    ``scheduler`` is ``"threads"``, ``"sync"`` or a ``distributed.Client``. Input frames
    become one dask partition each, so the written file structure matches the other engines.
    """

    def __init__(self, name: str, scheduler: Any) -> None:
        self.name = name
        self.scheduler = scheduler

    def _compute(self, *objs: Any) -> tuple[Any, ...]:
        import dask

        return dask.compute(*objs, scheduler=self.scheduler)

    def ddf(self, uuid: str, store: kf.Store, **kw: Any) -> Any:
        """The lazy frame (``predicate_pushdown_to_io`` and friends passed through)."""
        return kf.read_dataset_as_ddf(uuid, store, **kw)

    def read_table(self, uuid: str, store: kf.Store, **kw: Any) -> pd.DataFrame:
        ddf = self.ddf(uuid, store, **kw)
        (df,) = self._compute(ddf)
        assert_meta_matches(ddf._meta, df)
        return df.reset_index(drop=True)

    def read_partitions(self, uuid: str, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        ddf = self.ddf(uuid, store, **kw)
        frames = list(self._compute(*ddf.to_delayed()))
        for f in frames:
            assert_meta_matches(ddf._meta, f)
        return [f.reset_index(drop=True) for f in frames]

    @staticmethod
    def from_frames(dfs: Sequence[pd.DataFrame]) -> Any:
        """A dask DataFrame with one partition per input frame (dtypes untouched)."""
        import dask
        import dask.dataframe as dd

        frames = list(dfs)
        with dask.config.set({"dataframe.convert-string": False}):
            return dd.from_map(_Pick(frames), range(len(frames)), meta=frames[0].iloc[:0])

    def store(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        job = kf.store_dataset_from_ddf(self.from_frames(dfs), store, uuid, **kw)
        return self._compute(job)[0]

    def update(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        ddf = self.from_frames(dfs) if dfs else None
        job = kf.update_dataset_from_ddf(ddf, store, uuid, **kw)
        return self._compute(job)[0]


class _Pick:
    """``from_map`` function returning the i-th input frame (picklable for processes)."""

    def __init__(self, frames: list[pd.DataFrame]) -> None:
        self.frames = frames

    def __call__(self, i: int) -> pd.DataFrame:
        return self.frames[i]


def assert_meta_matches(meta: pd.DataFrame, df: pd.DataFrame) -> None:
    """A computed partition has exactly the columns and dtypes of the collection's meta."""
    assert list(df.columns) == list(meta.columns)
    for col in meta.columns:
        m, d = meta[col].dtype, df[col].dtype
        if isinstance(m, pd.CategoricalDtype) and "__UNKNOWN_CATEGORIES__" in m.categories:
            assert isinstance(d, pd.CategoricalDtype), col
            continue
        assert m == d, f"{col}: meta {m!r} != partition {d!r}"
    if meta.index.name is not None:
        assert meta.index.dtype == df.index.dtype
