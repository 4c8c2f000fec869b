"""The dask engine: scan plans become ``dd.from_map`` graphs, writes a graph with one commit.

dask is imported at the top of this module, and this module is imported lazily (by
:mod:`kartoframe.api.dask`, :mod:`kartoframe.api.stats`, the accessors and the dask cube
engine), so ``import kartoframe`` works without dask; a missing dask raises
:class:`~kartoframe.errors.MissingDependencyError` naming the ``dask`` extra.

Reads
    :func:`plan_to_ddf` maps a :class:`PartitionReader` over the plan's tasks with
    ``dd.from_map``. ``meta`` comes from the plan's output schema (no data file is opened to
    build the graph), the reader accepts ``columns=`` so dask's optimizer pushes column
    projections down to the Parquet reader, and dask's ``dataframe.convert-string`` option is
    disabled while the collection is built, so pandas 3 ``str`` columns keep the same dtype in
    ``meta`` and in computed partitions. Graph keys are derived from a digest of the plan
    (files, schema, query), computed once instead of letting dask tokenise every task, and
    :class:`KartoFromMap` builds the graph layer in one pass.

Writes
    :func:`write_graph` maps a :class:`PartitionWriter` over the partitions of a dask
    DataFrame (each call runs :func:`~kartoframe.execution.write.write_chunk` and returns a small
    :class:`~kartoframe.execution.write.ChunkResult`) and adds one final task running a
    :class:`Committer`, which calls :func:`~kartoframe.execution.write.commit_write` once. A
    writer that fails returns a :class:`WriteFailure` instead of raising, so the committer sees
    every outcome, deletes the files of the partitions that did succeed and re-raises the first
    error: a failed write leaves the dataset (and the store) as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import uuid as _uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from kartoframe.errors import InvalidInputError, MissingDependencyError

try:
    import dask
    import dask.dataframe as dd
    from dask.delayed import delayed
except ImportError as _error:  # pragma: no cover - exercised in a subprocess test
    raise MissingDependencyError("dask[dataframe]", "dask") from _error

from kartoframe.execution.kernel import read_task_table, to_frame
from kartoframe.execution.write import (
    ChunkResult,
    DataSerializer,
    commit_write,
    delete_files,
    write_chunk,
)
from kartoframe.format.convert import frame_to_table, table_to_frame
from kartoframe.format.schema import SchemaEvolution, merge_into_stored, normalize_schema
from kartoframe.plan.scan import ReadTask, ScanPlan
from kartoframe.plan.write import check_write_columns
from kartoframe.storage.csv_files import csv_file_sizes, is_csv_key
from kartoframe.storage.parquet import read_footer
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from kartoframe.format.dataset import LoadedDataset

__all__ = [
    "BUCKET_COLUMN",
    "METADATA_COLUMNS",
    "Committer",
    "PartitionReader",
    "PartitionWriter",
    "WriteFailure",
    "dask_modules",
    "gc_paused",
    "hash_partition",
    "metadata_ddf",
    "no_string_conversion",
    "plan_meta",
    "plan_to_ddf",
    "register_dataframe_accessor",
    "shuffle_for_write",
    "write_graph",
]

#: Hidden column holding the hash bucket of a row during a shuffled write.
BUCKET_COLUMN = "__kartoframe_bucket__"

#: Columns (and dtypes) of :func:`kartoframe.collect_dataset_metadata`.
METADATA_COLUMNS: dict[str, str] = {
    "partition_label": "object",
    "row_group_id": "int64",
    "row_group_compressed_size": "int64",
    "row_group_uncompressed_size": "int64",
    "number_rows_total": "int64",
    "number_row_groups": "int64",
    "serialized_size": "int64",
    "number_rows_per_row_group": "int64",
}


def dask_modules() -> tuple[Any, Any]:
    """Return ``(dask, dask.dataframe)`` (imported with this module)."""
    return dask, dd


@contextlib.contextmanager
def no_string_conversion() -> Iterator[None]:
    """Build dask collections without dask's automatic ``string[pyarrow]`` conversion.

    dask decides at construction time whether to append a string-conversion step; with it,
    pandas 3 ``str`` columns would turn into ``string[pyarrow]`` in some collections and not
    in others. kartoframe returns the dtypes the dataset's pandas metadata describes.
    """
    with dask.config.set({"dataframe.convert-string": False}):
        yield


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small objects are created.

    Building a 20,000-partition plan or graph allocates a few hundred thousand objects that
    live on; every collection the allocations trigger scans all of them, which costs more
    than the build itself. Nothing is lost: collection resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _digest(*parts: object) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(p if isinstance(p, bytes) else repr(p).encode())
        h.update(b"\x00")
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# reads
# --------------------------------------------------------------------------------------------


class PartitionReader:
    """Reads one planned task into a pandas DataFrame (the function of ``dd.from_map``).

    The reader holds everything the tasks share (the plan without its task list, the store,
    the categories to impose) and is called with one :class:`~kartoframe.plan.scan.ReadTask`.
    Its ``columns=`` keyword lets dask's optimizer push column projections into the read.

    Parameters
    ----------
    plan
        The scan plan (its task list is dropped: tasks are passed one by one).
    store
        Where the dataset lives (pickled into the graph; cheap).
    output_columns
        Columns of a partition without a projection (excludes ``index_on``).
    index_on
        Column moved into the index of every partition (``dask_index_on``).
    categories
        Known dataset-wide categories per categorical column (from partition keys and
        secondary indices); they are imposed on every partition.
    token
        Digest identifying this read (used for dask's graph keys).
    """

    def __init__(
        self,
        plan: ScanPlan,
        store: Store,
        *,
        output_columns: Sequence[str],
        index_on: str | None = None,
        categories: Mapping[str, pd.CategoricalDtype] | None = None,
        token: str = "",
    ) -> None:
        self.plan = dataclasses.replace(plan, tasks=())
        self.store = store
        self.output_columns = tuple(output_columns)
        self.index_on = index_on
        self.categories = dict(categories or {})
        self.token = token or _uuid.uuid4().hex

    def __call__(self, task: ReadTask, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Read the files of ``task`` (only ``columns``, if given) into a DataFrame."""
        cols = list(self.output_columns) if columns is None else list(columns)
        read = [*cols, self.index_on] if self.index_on is not None else cols
        table = read_task_table(self.plan, task, self.store, read, for_pandas=True)
        df = to_frame(self.plan, table)
        for col, dtype in self.categories.items():
            if col in df.columns:
                df[col] = df[col].cat.set_categories(dtype.categories)
        if self.index_on is not None:
            df = df.set_index(self.index_on)
        return df

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)

    def __repr__(self) -> str:
        return f"PartitionReader({self.plan.dataset_uuid!r}, {self.store.url!r})"


class _TaskList(Sequence[ReadTask]):
    """The tasks of a plan with a precomputed dask token (tokenising 20,000 tasks is slow)."""

    def __init__(self, tasks: Sequence[ReadTask], token: str) -> None:
        self._tasks = tuple(tasks)
        self._token = token

    def __len__(self) -> int:
        return len(self._tasks)

    def __getitem__(self, i: Any) -> Any:
        return self._tasks[i]

    def __iter__(self) -> Iterator[ReadTask]:
        return iter(self._tasks)

    def __dask_tokenize__(self) -> tuple[str, str, int]:
        return ("kartoframe-tasks", self._token, len(self._tasks))


try:
    from dask._task_spec import Task as _Task
    from dask.dataframe.dask_expr.io import FromMapProjectable as _FromMapProjectable
except ImportError:  # pragma: no cover - other dask versions
    _FromMapProjectable = object  # type: ignore[misc, assignment]


class KartoFromMap(_FromMapProjectable):  # type: ignore[misc, valid-type]
    """A ``FromMapProjectable`` whose graph layer is built in one pass.

    dask's generic layer construction looks up half a dozen expression operands per
    partition (about 12 µs each); for 20,000 partitions that is most of the graph build.
    The layer is identical: one ``Task(key, reader, task, columns=...)`` per partition.
    """

    def _layer(self) -> dict[Any, Any]:
        if self.enforce_metadata or self._series or self.args or len(self.iterables) != 1:
            return super()._layer()  # type: ignore[no-any-return]
        name = self._name
        func = self.func
        kwargs = self.apply_kwargs
        items = self.iterables[0]
        with gc_paused():
            return {
                (name, i): _Task((name, i), func, items[p], _data_producer=True, **kwargs)
                for i, p in enumerate(self._partitions)
            }


_KartoFromMap: Any = KartoFromMap if _FromMapProjectable is not object else None


def plan_token(plan: ScanPlan, store: Store, *extra: object) -> str:
    """A digest of everything that determines a read's result (used for dask's keys).

    Data files are immutable (new writes use fresh names), so the file keys grouped by task,
    the dispatch values, the schema and the query identify the data; callers add the header
    bytes and anything else that shapes the result (``extra``).
    """
    tasks = "\n".join("\t".join(f.key for f in t.files) for t in plan.tasks)
    dispatch = (
        [t.dispatch_values for t in plan.tasks]
        if any(t.dispatch_values for t in plan.tasks)
        else ()
    )
    predicate = (
        [
            [(lit.column, lit.op, lit.value, lit.has_null, str(lit.arrow_type)) for lit in conj]
            for conj in plan.predicate.conjunctions
        ]
        if plan.predicate is not None
        else None
    )
    return _digest(
        tasks,
        dispatch,
        plan.schema.serialize().to_pybytes(),
        store.url,
        sorted(store.storage_options.items(), key=lambda kv: kv[0]),
        plan.columns,
        predicate,
        plan.categoricals,
        plan.dates_as_object,
        plan.nullable_integers,
        *extra,
    )


def categories_token(categories: Mapping[str, pd.CategoricalDtype] | None) -> object:
    """A repr-stable summary of known categories (pandas truncates long dtype reprs)."""
    return sorted((c, list(d.categories)) for c, d in (categories or {}).items())


def plan_meta(
    plan: ScanPlan,
    *,
    index_on: str | None = None,
    categories: Mapping[str, pd.CategoricalDtype] | None = None,
) -> pd.DataFrame:
    """The empty DataFrame a read produces: dtypes from the stored schema, no file opened.

    Categorical columns with known categories get them; other categoricals get dask's
    "unknown categories" marker.
    """
    meta = to_frame(plan, plan.output_schema().empty_table())
    known = dict(categories or {})
    unknown = [c for c in plan.categoricals if c in meta.columns and c not in known]
    for col, dtype in known.items():
        if col in meta.columns:
            meta[col] = meta[col].astype(dtype)
    if unknown:
        meta = dd.utils.clear_known_categories(meta, cols=unknown)
    if index_on is not None:
        meta = meta.set_index(index_on)
    return meta


def known_categories(
    loaded: LoadedDataset, columns: Sequence[str], *, dates_as_object: bool
) -> dict[str, pd.CategoricalDtype]:
    """Dataset-wide categories of indexed columns (partition keys and loaded indices).

    Partition-key values come from every label in the header, secondary-index values from the
    index; both cover the whole dataset, so every partition gets the same categories.
    """
    from kartoframe.plan.pruning import partition_values_table

    md, schema = loaded.metadata, loaded.schema
    out: dict[str, pd.CategoricalDtype] = {}
    pk = [c for c in columns if c in md.partition_keys]
    if pk:
        table = partition_values_table(list(md.partitions), md.partition_keys, schema)
        for c in pk:
            out[c] = _categories(c, table[c], schema, dates_as_object)
    for c in columns:
        if c in out or c not in loaded.indices:
            continue
        out[c] = _categories(c, loaded.indices[c][c], schema, dates_as_object)
    return out


def _categories(
    column: str, values: pa.ChunkedArray, schema: pa.Schema, dates_as_object: bool
) -> pd.CategoricalDtype:
    import pyarrow.compute as pc

    uniq = pc.unique(values.cast(schema.field(column).type)).drop_null()
    uniq = uniq.take(pc.sort_indices(uniq))
    frame = table_to_frame(
        pa.table({column: uniq}), schema, dates_as_object=dates_as_object, categoricals=()
    )
    return pd.CategoricalDtype(pd.Index(frame[column].array), ordered=False)


def divisions_of(plan: ScanPlan, index_on: str, dates_as_object: bool) -> tuple[Any, ...] | None:
    """Known divisions of a read dispatched by one column (one value per task, sorted)."""
    if not plan.tasks:
        return None
    values = [t.dispatch_values[0][1] for t in plan.tasks]
    arr = pa.array(values, type=plan.schema.field(index_on).type)
    frame = table_to_frame(pa.table({index_on: arr}), plan.schema, dates_as_object=dates_as_object)
    vals = list(frame[index_on])  # the plan orders dispatch groups by value
    return (*vals, vals[-1])


def plan_to_ddf(
    plan: ScanPlan,
    store: Store,
    *,
    output_columns: Sequence[str],
    index_on: str | None = None,
    categories: Mapping[str, pd.CategoricalDtype] | None = None,
    token: str | None = None,
) -> Any:
    """Turn a scan plan into a lazy ``dask.dataframe.DataFrame`` (one partition per task).

    Parameters
    ----------
    plan
        The planned read; when ``index_on`` is set it must be dispatched by that column
        alone and its columns must include it.
    store
        The store of the dataset.
    output_columns
        The frame's columns (without ``index_on``).
    index_on
        Column to move into the index; divisions are then known.
    categories
        Known categories of categorical columns.
    token
        Digest of the read (default: computed from the plan).
    """
    token = token or plan_token(plan, store, index_on, categories_token(categories))
    reader = PartitionReader(
        plan,
        store,
        output_columns=output_columns,
        index_on=index_on,
        categories=categories,
        token=token,
    )
    tasks = list(plan.tasks) or [ReadTask(())]
    divisions = divisions_of(plan, index_on, plan.dates_as_object) if index_on else None
    with no_string_conversion():
        meta = plan_meta(plan, index_on=index_on, categories=categories)
        iterable = _TaskList(tasks, token)
        fast = _fast_from_map(reader, iterable, meta, divisions)
        if fast is not None:
            return fast
        return dd.from_map(
            reader,
            iterable,
            meta=meta,
            divisions=divisions,
            label="kartoframe-read",
            enforce_metadata=False,
        )


def _fast_from_map(reader: PartitionReader, tasks: _TaskList, meta: Any, divisions: Any) -> Any:
    """``dd.from_map(reader, tasks, ...)`` with :class:`KartoFromMap` as its expression.

    Returns None (and the caller uses ``dd.from_map``) if this dask version lacks the
    internals it relies on.
    """
    if _KartoFromMap is None:
        return None
    try:
        from dask.dataframe.dask_expr._collection import (  # type: ignore[attr-defined]
            new_collection,
        )

        expr = _KartoFromMap(
            reader, [tasks], None, [], {}, False, meta, False, divisions, "kartoframe-read"
        )
        return new_collection(expr)
    except (TypeError, ValueError, AttributeError):  # pragma: no cover - other dask versions
        return None


# --------------------------------------------------------------------------------------------
# writes
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class WriteFailure:
    """Returned by a :class:`PartitionWriter` that failed (the committer re-raises it)."""

    error: BaseException
    origin: str


@dataclasses.dataclass(frozen=True)
class PartitionWriter:
    """Writes one dask partition as data files and returns its :class:`ChunkResult`.

    Empty partitions write no file (their schema still takes part in the validation).
    ``base_schema``, when given, is checked before anything is written (updates).
    """

    store: Store
    dataset_uuid: str
    table_name: str
    partition_on: tuple[str, ...]
    index_columns: tuple[str, ...]
    serializer: DataSerializer
    sort_partitions_by: tuple[str, ...]
    base_schema: pa.Schema | None
    token: str
    drop_columns: tuple[str, ...] = ()
    schema_evolution: SchemaEvolution = "none"
    bloom_filter_columns: tuple[str, ...] = ()

    def __call__(self, df: pd.DataFrame, number: int) -> ChunkResult | WriteFailure:
        """Write partition number ``number``; never raises (failures are returned)."""
        origin = f"dask partition {number}"
        try:
            if self.drop_columns:
                df = df.drop(columns=[c for c in self.drop_columns if c in df.columns])
            return self._write(df, origin)
        except Exception as e:
            return WriteFailure(e, origin)

    def _write(self, df: pd.DataFrame, origin: str) -> ChunkResult:
        pon = list(self.partition_on)
        table = frame_to_table(df, what=origin)
        check_write_columns(table.schema, pon, list(self.index_columns), what=origin)
        schema = normalize_schema(table.schema, pon)
        if self.base_schema is not None:
            merge_into_stored(
                self.base_schema,
                schema,
                schema_evolution=self.schema_evolution,
                dataset_uuid=self.dataset_uuid,
                origin=origin,
                partition_keys=pon,
            )
        if table.num_rows == 0:
            return ChunkResult((), schema, origin)
        return write_chunk(
            self.store,
            self.dataset_uuid,
            table,
            table_name=self.table_name,
            partition_on=pon,
            index_columns=list(self.index_columns),
            serializer=self.serializer,
            sort_partitions_by=list(self.sort_partitions_by),
            origin=origin,
            max_workers=1,
            bloom_filter_columns=self.bloom_filter_columns,
        )

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)


@dataclasses.dataclass(frozen=True)
class Committer:
    """The final task of a write graph: one :func:`commit_write` over all partition results.

    ``commit_kwargs`` are passed to :func:`commit_write`; ``result`` turns the committed
    header into the value the graph computes to.
    """

    store: Store
    dataset_uuid: str
    base: Any
    commit_kwargs: Mapping[str, Any]
    result: Callable[[str, Store], Any]
    token: str

    def __call__(self, outcomes: Sequence[ChunkResult | WriteFailure]) -> Any:
        """Commit the written partitions, or delete them and raise the first failure."""
        failures = [o for o in outcomes if isinstance(o, WriteFailure)]
        chunks = [o for o in outcomes if isinstance(o, ChunkResult)]
        if failures:
            delete_files(self.store, [p.key for c in chunks for p in c.partitions])
            raise failures[0].error
        md = commit_write(
            self.store, self.dataset_uuid, chunks, base=self.base, **self.commit_kwargs
        )
        return self.result(md.uuid, self.store)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)


def hash_bucket(df: pd.DataFrame, columns: Sequence[str], num_buckets: int) -> pd.DataFrame:
    """Add :data:`BUCKET_COLUMN`: a stable hash of ``columns`` modulo ``num_buckets``."""
    if num_buckets == 1 or len(df) == 0:
        bucket = pd.Series(0, index=df.index, dtype="uint64")
    else:
        h = pd.util.hash_pandas_object(df[list(columns)], index=False)
        bucket = h % num_buckets
    return df.assign(**{BUCKET_COLUMN: bucket.astype("uint64")})


def shuffle_for_write(
    ddf: Any, partition_on: Sequence[str], bucket_by: Sequence[str], num_buckets: int
) -> Any:
    """Shuffle rows so each (partition value, bucket) lands in exactly one dask partition.

    Uses dask's task-based shuffle (the disk-based one can lose data on a cluster).
    """
    cols = list(bucket_by) or [c for c in ddf.columns if c not in partition_on]
    with no_string_conversion():
        meta = ddf._meta.assign(**{BUCKET_COLUMN: pd.Series([], dtype="uint64")})
        tagged = ddf.map_partitions(hash_bucket, cols, num_buckets, meta=meta)
        return tagged.shuffle(on=[*partition_on, BUCKET_COLUMN], shuffle_method="tasks")


def write_graph(ddf: Any, writer: PartitionWriter, committer: Committer) -> Any:
    """A ``Delayed`` that writes every partition of ``ddf`` and then commits once.

    ``ddf`` may be None (commit only, e.g. a delete-only update).
    """
    token = committer.token
    outcomes = []
    if ddf is not None:
        with no_string_conversion():
            parts = ddf.to_delayed(optimize_graph=True)
        write = delayed(writer, pure=True)
        outcomes = [
            write(p, i, dask_key_name=(f"kartoframe-write-{token}", i)) for i, p in enumerate(parts)
        ]
    return delayed(committer, pure=True)(outcomes, dask_key_name=f"kartoframe-commit-{token}")


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def _label_dtype() -> Any:
    """``str`` under pandas 3, ``object`` before (what a column of Python strings gets)."""
    return pd.Series([""]).dtype


@dataclasses.dataclass(frozen=True)
class FooterReader:
    """Reads the Parquet footer of one data file into rows of :data:`METADATA_COLUMNS`."""

    store: Store
    token: str

    def __call__(self, part: tuple[str, str]) -> pd.DataFrame:
        """``part`` is ``(label, key)``; one row per row group of the file."""
        label, key = part
        rows: dict[str, list[Any]] = {c: [] for c in METADATA_COLUMNS}
        if is_csv_key(key):  # plateau's CsvSerializer: the whole file is one "row group"
            stored, uncompressed, n = csv_file_sizes(self.store, key)
            for c, v in [
                ("partition_label", label),
                ("row_group_id", 0),
                ("row_group_compressed_size", stored),
                ("row_group_uncompressed_size", uncompressed),
                ("number_rows_total", n),
                ("number_row_groups", 1),
                ("serialized_size", 0),
                ("number_rows_per_row_group", n),
            ]:
                rows[c].append(v)
            return metadata_frame(rows)
        md = read_footer(self.store, key)
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            rows["partition_label"].append(label)
            rows["row_group_id"].append(i)
            rows["row_group_compressed_size"].append(rg.total_byte_size)
            rows["row_group_uncompressed_size"].append(
                sum(rg.column(j).total_uncompressed_size for j in range(rg.num_columns))
            )
            rows["number_rows_total"].append(md.num_rows)
            rows["number_row_groups"].append(md.num_row_groups)
            rows["serialized_size"].append(md.serialized_size)
            rows["number_rows_per_row_group"].append(rg.num_rows)
        return metadata_frame(rows)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)


def metadata_frame(rows: Mapping[str, Sequence[Any]] | None = None) -> pd.DataFrame:
    """A frame with :data:`METADATA_COLUMNS` (empty if ``rows`` is None)."""
    data = rows or {c: [] for c in METADATA_COLUMNS}
    return pd.DataFrame(
        {
            c: pd.Series(list(data[c]), dtype=_label_dtype() if t == "object" else t)
            for c, t in METADATA_COLUMNS.items()
        }
    )


def metadata_ddf(store: Store, parts: Sequence[tuple[str, str]], token: str) -> Any:
    """A dask DataFrame of footer statistics, one partition per data file."""
    with no_string_conversion():
        if not parts:
            return dd.from_pandas(metadata_frame(), npartitions=1)
        return dd.from_map(
            FooterReader(store, token),
            list(parts),
            meta=metadata_frame(),
            label="kartoframe-metadata",
            enforce_metadata=False,
        )


def hash_partition(df: pd.DataFrame, subset: Sequence[str]) -> pd.Series:
    """The ``uint64`` hash of one partition: sum of the row hashes of ``subset``."""
    total = pd.util.hash_pandas_object(df[list(subset)], index=False).sum()
    return pd.Series([total], dtype="uint64")


def hash_groups(df: pd.DataFrame, group_key: Sequence[str], subset: Sequence[str]) -> pd.Series:
    """Per-group ``uint64`` hashes (sum of row hashes of ``subset``), indexed by the group."""
    keys = list(group_key)
    if len(df) == 0:
        index = pd.MultiIndex.from_frame(df[keys]) if len(keys) > 1 else pd.Index(df[keys[0]])
        return pd.Series([], index=index, dtype="uint64")
    hashes = pd.util.hash_pandas_object(df[list(subset)], index=False)
    grouped = hashes.groupby([df[k] for k in keys], sort=True, observed=True, dropna=False).sum()
    return grouped.astype("uint64")


def check_positive_int(value: object, name: str) -> int:
    """Validate an int >= 1 (``num_buckets``)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInputError(f"{name} must be an int >= 1, got {value!r}.")
    return value


# --------------------------------------------------------------------------------------------
# accessor registration
# --------------------------------------------------------------------------------------------


def register_dataframe_accessor(name: str, accessor: type) -> None:
    """Register ``accessor`` as ``dask.dataframe.DataFrame.<name>``."""
    from dask.dataframe.extensions import register_dataframe_accessor as register

    register(name)(accessor)
