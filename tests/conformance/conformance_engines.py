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


class Spark(Engine):
    """``kartoframe.spark``: ``read_dataset_as_sdf`` / ``store_dataset_from_sdf`` /
    ``update_dataset_from_sdf`` on a local SparkSession.

    Translation only, in both directions, through Spark's documented type mapping
    (``docs/spark.md``, ``kartoframe.format.spark_types``):

    * input frames become one Spark DataFrame with one Spark partition per frame (Arrow
      columns under the Spark types of their Arrow types, naive timestamps as
      ``timestamp_ntz``), written with ``repartition=False``, so the files match the other
      engines' (one per input frame and partition value);
    * a read is collected through Arrow; its schema must be exactly Spark's representation
      of the dataset's schema (``spark_arrow_schema``), which is then mapped back (same
      values: ``decimal(20,0)`` to ``uint64``, UTC instants to the column's zone) and
      converted to pandas with the dataset's pandas metadata, as the eager reader does.
    * ``read_partitions`` returns one frame per data file Spark reads, which only Spark's
      native Parquet reader reports (``input_file_name``).

    ``reader`` is ``read_dataset_as_sdf``'s (``"auto"``, ``"native"`` or ``"arrow"``).
    """

    name = "spark"

    def __init__(self, session: Any, reader: str = "auto") -> None:
        self.session = session
        self.reader = reader
        if reader != "auto":
            self.name = f"spark-{reader}"

    def _sdf(self, uuid: str, store: kf.Store, **kw: Any) -> Any:
        import kartoframe.spark as kfs

        return kfs.read_dataset_as_sdf(self.session, uuid, store, reader=self.reader, **kw)

    def _to_frame(self, table: Any, uuid: str, store: kf.Store, columns: Any) -> pd.DataFrame:
        import pyarrow as pa

        from kartoframe.format.convert import table_to_frame
        from kartoframe.format.spark_types import spark_arrow_schema

        schema = kf.read_dataset_metadata(uuid, store).schema
        names = list(columns) if columns is not None else list(table.column_names)
        assert table.schema.remove_metadata() == spark_arrow_schema(schema, names), table.schema
        back = pa.Table.from_arrays(
            [table.column(n).cast(schema.field(n).type) for n in names], names=names
        )
        return table_to_frame(back, schema)

    def read_table(self, uuid: str, store: kf.Store, **kw: Any) -> pd.DataFrame:
        sdf = self._sdf(uuid, store, **kw)
        return self._to_frame(sdf.toArrow(), uuid, store, kw.get("columns"))

    def read_partitions(self, uuid: str, store: kf.Store, **kw: Any) -> list[pd.DataFrame]:
        """One frame per data file Spark reads (``inputFiles``), rows grouped by
        ``input_file_name()`` (the native reader; Spark splits need not follow files)."""
        import pyarrow.compute as pc
        from pyspark.sql import functions as F

        sdf = self._sdf(uuid, store, **kw)
        files = sdf.inputFiles()
        tagged = sdf.withColumn("__file", F.input_file_name()).toArrow()
        source = tagged.column("__file")
        assert set(source.to_pylist()) <= set(files), "rows without a native-reader file"
        table = tagged.drop_columns(["__file"])
        columns = kw.get("columns")
        return [
            self._to_frame(table.filter(pc.equal(source, f)), uuid, store, columns) for f in files
        ]

    def from_frames(self, dfs: Sequence[pd.DataFrame]) -> Any:
        """One Spark DataFrame, Spark partition ``i`` holding the rows of input frame ``i``.

        (A union of one DataFrame per frame is not enough: Spark's optimiser merges the
        local relations into one partition.)
        """
        from pyspark.sql.types import StructType

        from kartoframe.format.convert import frame_to_table
        from kartoframe.format.spark_types import to_spark_schema

        tables = [frame_to_table(df) for df in dfs]
        schema = StructType.fromJson(to_spark_schema(tables[0].schema))
        inputs = [t.cast(_spark_input_schema(t.schema)) for t in tables]

        def frames(batches: Any) -> Any:
            for batch in batches:
                for i in batch.column(0).to_pylist():
                    yield from inputs[i].to_batches()

        ids = self.session.range(0, len(inputs), 1, numPartitions=len(inputs))
        return ids.mapInArrow(frames, schema)

    def store(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        import kartoframe.spark as kfs

        return kfs.store_dataset_from_sdf(
            self.from_frames(dfs), store, uuid, repartition=False, **kw
        )

    def update(self, store: kf.Store, uuid: str, dfs: Sequence[pd.DataFrame], **kw: Any) -> Any:
        import kartoframe.spark as kfs

        sdf = self.from_frames(dfs) if dfs else None
        return kfs.update_dataset_from_sdf(sdf, store, uuid, repartition=False, **kw)


def _spark_input_schema(schema: Any) -> Any:
    """The Arrow types Spark takes for the Spark types of ``schema`` (same values)."""
    import pyarrow as pa

    from kartoframe.format.spark_types import spark_arrow_type

    return pa.schema([pa.field(f.name, spark_arrow_type(f.type)) for f in schema])
