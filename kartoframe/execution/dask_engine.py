"""The dask engine: scan plans become ``dd.from_map`` graphs, writes a graph with one commit.

dask is imported at the top of this module, and this module is imported lazily (by
:mod:`kartoframe.dask.read`, :mod:`kartoframe.dask.stats`, the accessors and the dask cube
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
    :class:`~kartoframe.execution.dask_internals.KartoFromMap` builds the graph layer in
    one pass.

"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import uuid as _uuid
from collections.abc import Iterator, Mapping, Sequence
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

from kartoframe.execution.dask_internals import fast_from_map, gc_paused
from kartoframe.execution.kernel import read_task_table, to_frame
from kartoframe.format.convert import table_to_frame
from kartoframe.plan.scan import ReadTask, ScanPlan
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from kartoframe.format.dataset import LoadedDataset

__all__ = [
    "PartitionReader",
    "check_positive_int",
    "dask_modules",
    "delayed",
    "gc_paused",
    "no_string_conversion",
    "plan_meta",
    "plan_to_ddf",
]


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
        fast = fast_from_map(reader, iterable, meta, divisions)
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


def check_positive_int(value: object, name: str) -> int:
    """Validate an int >= 1 (``num_buckets``)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidInputError(f"{name} must be an int >= 1, got {value!r}.")
    return value
