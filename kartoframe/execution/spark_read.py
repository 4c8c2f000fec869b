"""Spark reads: a :class:`~kartoframe.plan.scan.ScanPlan` as a Spark DataFrame.

* **native** (local stores): Spark's own Parquet reader over exactly the files the plan
  kept, with an explicit schema (kartoframe's types, never Spark's inference). Partition
  columns are typed by Spark from the directory names only where Spark's decoding and
  cast provably give kartoframe's value; other partition columns are read as Spark's
  decoded string and mapped to the right value (``CASE``), with a loud error should a
  string not match. Residual predicates become a Spark filter with kartoframe's null
  semantics, which Spark pushes into the Parquet scan.
* **arrow** (object stores, and files Spark's reader cannot read: nanosecond or
  null-typed Parquet columns, unsigned integers): ``mapInArrow`` over the plan's tasks;
  each Python worker reads its files through the store (fsspec) with kartoframe's
  kernel, residual filter included.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from kartoframe.errors import InvalidInputError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.spark_engine import (
    _F,
    _GLOB_CHARS,
    CASE_LIMIT,
    ReaderChoice,
    check_python_workers,
    check_store,
    column,
    require_pyspark,
    spark_type,
)
from kartoframe.format import naming
from kartoframe.format.spark_types import (
    native_parquet_readable,
    partition_text_castable,
    spark_arrow_schema,
    spark_unescape,
    to_spark_schema,
    to_spark_table,
)
from kartoframe.plan.scan import FilePart, ReadTask, ScanPlan
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

from kartoframe.execution.spark_predicates import predicate_to_column, typed_literal

_footer_cache: dict[tuple[str, str], frozenset[str]] = {}
_footer_lock = threading.Lock()
_FOOTER_CACHE_MAX = 500_000


def _bad_for_spark(t: pa.DataType) -> bool:
    if pa.types.is_null(t):
        return True
    if pa.types.is_timestamp(t):
        return bool(t.unit == "ns")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _bad_for_spark(t.value_type)
    if pa.types.is_map(t):
        return _bad_for_spark(t.key_type) or _bad_for_spark(t.item_type)
    if pa.types.is_struct(t):
        return any(_bad_for_spark(t.field(i).type) for i in range(t.num_fields))
    return False


def _file_problems(store: Store, key: str) -> frozenset[str]:
    """Columns of a data file Spark's Parquet reader cannot read as kartoframe does.

    Data files are immutable (fresh names, never rewritten), so the answer is cached.
    """
    ck = (store.url, key)
    hit = _footer_cache.get(ck)
    if hit is not None:
        return hit
    path = store.path(key)
    schema = store.with_retry("read footer", key, lambda: pq.read_metadata(path).schema)
    arrow = schema.to_arrow_schema()
    bad = frozenset(f.name for f in arrow if _bad_for_spark(f.type))
    with _footer_lock:
        if len(_footer_cache) > _FOOTER_CACHE_MAX:
            _footer_cache.clear()
        _footer_cache[ck] = bad
    return bad


def _footer_problems(store: Store, keys: Sequence[str]) -> list[frozenset[str]]:
    known = [_footer_cache.get((store.url, k)) for k in keys]
    todo = [k for k, hit in zip(keys, known) if hit is None]
    if len(todo) > 16:
        with ThreadPoolExecutor(max_workers=8) as pool:
            found = dict(zip(todo, pool.map(lambda k: _file_problems(store, k), todo)))
    else:
        found = {k: _file_problems(store, k) for k in todo}
    return [hit if hit is not None else found[k] for k, hit in zip(keys, known)]


@dataclasses.dataclass(frozen=True, slots=True)
class _PartitionColumns:
    """How the native reader materialises partition columns.

    ``typed``: columns Spark types itself. ``mapped``: column -> {Spark's decoded
    string: kartoframe value} for the rest. ``reason``: why the native reader cannot be
    used at all (None if it can).
    """

    typed: tuple[str, ...]
    mapped: Mapping[str, Mapping[str, Any]]
    reason: str | None = None


def _partition_columns(plan: ScanPlan, files: Sequence[FilePart]) -> _PartitionColumns:
    pk = plan.partition_keys
    if not pk:
        return _PartitionColumns((), {})
    for k in pk:
        if naming.quote(k) != k and spark_unescape(naming.quote(k)) != k:
            return _PartitionColumns((), {}, f"partition column name {k!r} is not ASCII")
    raw: dict[str, dict[str, Any]] = {k: {} for k in pk}
    for f in files:
        comps = f.label.split("/")[:-1]
        if len(comps) != len(pk):
            return _PartitionColumns((), {}, f"label {f.label!r} has an unusual layout")
        for i, (k, comp) in enumerate(zip(pk, comps)):
            col, sep, val = comp.partition("=")
            if not sep or spark_unescape(col) != k:
                return _PartitionColumns((), {}, f"label {f.label!r} has an unusual layout")
            if not val or spark_unescape(val) == "__HIVE_DEFAULT_PARTITION__":
                # Spark refuses empty values and reads the Hive marker as null
                return _PartitionColumns((), {}, f"{k!r} has the value {naming.unquote(val)!r}")
            raw[k][val] = f.partition_values[i]
    typed: list[str] = []
    mapped: dict[str, dict[str, Any]] = {}
    for k in pk:
        t = plan.schema.field(k).type
        ok = all(
            spark_unescape(r) == naming.unquote(r) and partition_text_castable(naming.unquote(r), t)
            for r in raw[k]
        )
        if ok:
            typed.append(k)
            continue
        m: dict[str, Any] = {}
        for r, value in raw[k].items():
            s = spark_unescape(r)
            if s in m and m[s] != value:
                return _PartitionColumns((), {}, f"values of {k!r} collide in Spark's decoding")
            m[s] = value
        if len(m) > CASE_LIMIT:
            return _PartitionColumns(
                (), {}, f"{len(m)} values of {k!r} need re-decoding (limit {CASE_LIMIT})"
            )
        mapped[k] = m
    return _PartitionColumns(tuple(typed), mapped)


def _native_problem(plan: ScanPlan, store: Store, needed: Sequence[str]) -> str | None:
    """Why Spark's native reader cannot serve this plan at all (None if it can)."""
    if not store.is_local:
        return f"{store.url} is not a local folder"
    root = store.path(naming.table_prefix(plan.dataset_uuid, plan.table_name).rstrip("/"))
    if _GLOB_CHARS.search(root) or ":" in root:
        return f"the store path {root!r} contains characters Spark treats as patterns"
    lowered = [n.lower() for n in plan.schema.names]
    if len(set(lowered)) != len(lowered):
        return "column names differ only in case"
    pk = set(plan.partition_keys)
    for c in needed:
        if c not in pk and not native_parquet_readable(plan.schema.field(c).type):
            return f"column {c!r} has type {plan.schema.field(c).type}"
    return None


_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_SEP = "\x00"


def _java_strings(spark: SparkSession, items: Sequence[str]) -> Any:
    """A JVM ``Seq[String]`` built in four py4j calls (py4j converts a Python list with
    one call per element: ~1 ms each, a tenth of a second for a few hundred files).
    """
    jvm: Any = spark.sparkContext._jvm
    array = jvm.java.util.regex.Pattern.compile(_SEP).split(_SEP.join(items), -1)
    return jvm.scala.collection.immutable.ArraySeq.unsafeWrapArray(array)


def _fast_path(spark: SparkSession, items: Sequence[str], *objs: Any) -> bool:
    return (
        len(items) > 3
        and all(_SEP not in i for i in items)
        and getattr(spark, "sparkContext", None) is not None
        and all(o is not None for o in objs)
    )


def _read_parquet(spark: SparkSession, reader: Any, paths: Sequence[str]) -> DataFrame:
    """``reader.parquet(*paths)``, passing the paths to the JVM in one piece."""
    jreader: Any = getattr(reader, "_jreader", None)
    make: Any = getattr(reader, "_df", None)
    if _fast_path(spark, paths, jreader, make):
        return make(jreader.parquet(_java_strings(spark, paths)))
    return reader.parquet(*paths)


def _select(sdf: DataFrame, names: Sequence[str]) -> DataFrame:
    """``sdf.select(*names)`` by exact names, in a few py4j calls."""
    if list(names) == list(sdf.columns):
        return sdf
    exprs = ["`" + n.replace("`", "``") + "`" for n in names]
    jdf: Any = getattr(sdf, "_jdf", None)
    if _fast_path(sdf.sparkSession, exprs, jdf):
        from pyspark.sql.dataframe import DataFrame as SparkDataFrame

        return SparkDataFrame(
            jdf.selectExpr(_java_strings(sdf.sparkSession, exprs)), sdf.sparkSession
        )
    return sdf.select(*[column(n) for n in names])


@contextlib.contextmanager
def _serial_file_listing(spark: SparkSession, n_files: int) -> Iterator[None]:
    """Let Spark stat the plan's local files on the driver instead of starting a listing
    job (its default above 32 paths; the job costs ~0.7 s, the local stats ~10 µs each).

    The setting is only read while the DataFrame is created, and restored right after.
    """
    old = spark.conf.get(_LISTING_THRESHOLD, None)
    current = int(old) if old is not None else 32
    if n_files <= current:
        yield
        return
    spark.conf.set(_LISTING_THRESHOLD, str(n_files))
    try:
        yield
    finally:
        if old is None:
            spark.conf.unset(_LISTING_THRESHOLD)
        else:
            spark.conf.set(_LISTING_THRESHOLD, old)


def _native_sdf(
    spark: SparkSession,
    plan: ScanPlan,
    store: Store,
    files: Sequence[FilePart],
    needed: Sequence[str],
    parts: _PartitionColumns,
) -> DataFrame:
    F = _F()
    pk = list(plan.partition_keys)
    data_cols = [c for c in plan.schema.names if c in needed and c not in pk]
    overrides = dict.fromkeys(parts.mapped, "string")
    struct = to_spark_schema(plan.schema, data_cols + pk, overrides)
    reader = spark.read.schema(spark_type(struct))
    if pk:
        base = store.path(naming.table_prefix(plan.dataset_uuid, plan.table_name).rstrip("/"))
        reader = reader.option("basePath", "file://" + base)
    with _serial_file_listing(spark, len(files)):
        sdf = _read_parquet(spark, reader, ["file://" + store.path(f.key) for f in files])
    for k, mapping in parts.mapped.items():
        t = plan.schema.field(k).type
        c = column(k)
        expr = None
        for s, value in mapping.items():
            lit = typed_literal(value, t)
            expr = F.when(c == s, lit) if expr is None else expr.when(c == s, lit)
        assert expr is not None
        expr = expr.otherwise(
            F.raise_error(
                F.concat(
                    F.lit(f"kartoframe: unexpected value of partition column {k!r}: "),
                    c,
                )
            )
        )
        sdf = sdf.withColumn(k, expr)
    cond = predicate_to_column(plan.predicate)
    if cond is not None:
        sdf = sdf.filter(cond)
    return _select(sdf, plan.columns)


def _arrow_sdf(
    spark: SparkSession,
    plan: ScanPlan,
    store: Store,
    tasks: Sequence[ReadTask],
) -> DataFrame:
    check_python_workers(spark)
    sub = dataclasses.replace(plan, tasks=tuple(tasks))
    out_schema = spark_arrow_schema(plan.schema, plan.columns)
    struct = spark_type(to_spark_schema(plan.schema, plan.columns))
    n = len(tasks)
    slices = max(1, min(n, spark.sparkContext.defaultParallelism * 4))

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for i in b.column(0).to_pylist():
                table = read_task_table(sub, sub.tasks[i], store)
                table = to_spark_table(table, out_schema)
                yield from table.to_batches(max_chunksize=65536)

    return spark.range(0, n, 1, slices).mapInArrow(read, struct)


def plan_to_sdf(
    spark: SparkSession,
    plan: ScanPlan,
    store: Store,
    *,
    reader: ReaderChoice = "auto",
) -> DataFrame:
    """Run a scan plan on Spark and return the (lazy) Spark DataFrame.

    Parameters
    ----------
    spark
        The active SparkSession.
    plan
        The planned read (pruning already done).
    store
        The store of the dataset.
    reader
        ``"auto"``: Spark's Parquet reader for local files it can read exactly, the
        arrow reader for everything else. ``"native"`` insists on the former (error if
        impossible), ``"arrow"`` always uses ``mapInArrow``.

    Raises
    ------
    InvalidInputError
        ``reader="native"`` for a plan Spark's reader cannot serve exactly, or a
        ``memory://`` store.
    """
    require_pyspark()
    check_store(store)
    if reader not in ("auto", "native", "arrow"):
        raise InvalidInputError(f"reader must be 'auto', 'native' or 'arrow', got {reader!r}.")
    struct = spark_type(to_spark_schema(plan.schema, plan.columns))
    tasks = [t for t in plan.tasks if t.files]
    if not tasks:
        return spark.createDataFrame([], struct)
    if reader == "arrow":
        return _arrow_sdf(spark, plan, store, tasks)
    needed = list(
        dict.fromkeys([*plan.columns, *(plan.predicate.columns if plan.predicate else [])])
    )
    problem = _native_problem(plan, store, needed)
    parts = None
    if problem is None:
        files = [f for t in tasks for f in t.files]
        parts = _partition_columns(plan, files)
        problem = parts.reason
    if problem is not None:
        if reader == "native":
            raise InvalidInputError(f"Spark's Parquet reader cannot read this plan: {problem}.")
        return _arrow_sdf(spark, plan, store, tasks)
    assert parts is not None
    needed_set = set(needed)
    native_tasks: list[ReadTask] = []
    arrow_tasks: list[ReadTask] = []
    problems = _footer_problems(store, [f.key for t in tasks for f in t.files])
    pos = 0
    for t in tasks:
        bad = any(problems[pos + i] & needed_set for i in range(len(t.files)))
        pos += len(t.files)
        (arrow_tasks if bad or t.extra else native_tasks).append(t)
    if arrow_tasks and reader == "native":
        raise InvalidInputError(
            "Spark's Parquet reader cannot read this plan: some files hold nanosecond "
            "timestamps or null-typed columns."
        )
    out: DataFrame | None = None
    if native_tasks:
        files = [f for t in native_tasks for f in t.files]
        out = _native_sdf(spark, plan, store, files, needed, parts)
    if arrow_tasks:
        extra = _arrow_sdf(spark, plan, store, arrow_tasks)
        out = extra if out is None else out.unionByName(extra)
    assert out is not None
    return out
