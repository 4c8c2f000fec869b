"""The Spark engine: runs kartoframe plans on PySpark (the only module importing pyspark).

Reads turn a :class:`~kartoframe.plan.scan.ScanPlan` into a Spark DataFrame:

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

Writes run :func:`~kartoframe.execution.write.write_chunk` inside ``mapInArrow`` and
return one small record per written file; the caller commits once on the driver. File
names carry a per-job prefix, so a failed job removes every file it wrote.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import decimal
import os
import pickle
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid as _uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from kartoframe import errors
from kartoframe.errors import InvalidInputError, MissingDependencyError
from kartoframe.execution.kernel import read_task_table
from kartoframe.execution.write import (
    ChunkResult,
    ParquetSerializer,
    WrittenPartition,
    write_chunk,
)
from kartoframe.format import naming
from kartoframe.format.spark_types import (
    from_spark_schema,
    from_spark_table,
    native_parquet_readable,
    partition_text_castable,
    spark_arrow_schema,
    spark_unescape,
    to_spark_schema,
    to_spark_table,
    to_spark_type,
)
from kartoframe.plan.predicates import Literal as PredLiteral
from kartoframe.plan.predicates import Predicate
from kartoframe.plan.scan import FilePart, ReadTask, ScanPlan
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "ReaderChoice",
    "check_python_workers",
    "check_store",
    "column",
    "local_session",
    "spark_type",
    "delete_job_files",
    "plan_to_sdf",
    "predicate_to_column",
    "require_pyspark",
    "sdf_arrow_schema",
    "write_sdf",
]

ReaderChoice = Literal["auto", "native", "arrow"]

#: Above this many distinct values of a partition column that Spark would decode
#: wrongly, the read uses the arrow reader instead of a CASE mapping.
CASE_LIMIT = 64
#: A write task flushes its buffered Arrow batches into files at this size.
FLUSH_BYTES = 128 * 1024 * 1024
_GLOB_CHARS = re.compile(r"[{}\[\]*?\\]")


def require_pyspark() -> Any:
    """Import pyspark or raise :class:`MissingDependencyError` naming the extra."""
    try:
        import pyspark
        import pyspark.sql
    except ImportError as e:
        raise MissingDependencyError("pyspark", "spark") from e
    return pyspark


#: SparkContext -> the worker interpreter (``sc.pythonExec``) already found usable.
_WORKERS_OK: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_WORKER_PROBE = "import kartoframe, pyarrow"


def _worker_python_problem(python_exec: str) -> str | None:
    """Why ``python_exec`` (as Spark's local workers would start it) cannot run kartoframe."""
    found = shutil.which(python_exec)
    if found is None:
        return f"{python_exec!r} is not an executable on PATH"
    driver = os.path.abspath(sys.executable)
    found = os.path.abspath(found)
    # the driver's interpreter, or a sibling in the same (virtual) environment's bin folder
    if found == driver or os.path.dirname(found) == os.path.dirname(driver):
        return None
    try:
        proc = subprocess.run(
            [found, "-c", _WORKER_PROBE],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as e:
        if isinstance(e, subprocess.TimeoutExpired):
            return None  # cannot tell; let Spark try
        return f"{found!r} cannot be started ({e})"
    if proc.returncode == 0:
        return None
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return f"{found!r} cannot import kartoframe ({lines[-1] if lines else 'exit code'})"


def check_python_workers(spark: SparkSession) -> None:
    """Fail early when local Spark's Python workers cannot import kartoframe.

    Spark's Python workers run ``PYSPARK_PYTHON`` as it was when the SparkContext
    started (``python3`` from ``PATH`` when unset), not the driver's interpreter, so in a
    virtual environment that is not activated every ``mapInArrow`` task fails with a long
    Java stack trace ending in ``ModuleNotFoundError``. For a local master this checks the
    worker interpreter once per SparkContext: free when it is the driver's (or lives in
    the same environment), otherwise one ``python -c "import kartoframe"``. Remote
    masters are not checked (their workers run elsewhere).

    Raises
    ------
    SparkPythonWorkerError
        The workers' interpreter cannot import kartoframe (the message names the fix).
    """
    try:
        sc = spark.sparkContext
        master = str(sc.master)
        python_exec = str(sc.pythonExec)
    except Exception:  # e.g. Spark Connect: no SparkContext in this process
        return
    if not master.startswith("local"):
        return
    try:
        if _WORKERS_OK.get(sc) == python_exec:
            return
    except TypeError:  # pragma: no cover - not weak-referenceable
        pass
    problem = _worker_python_problem(python_exec)
    if problem is not None:
        origin = (
            "PYSPARK_PYTHON when the session started"
            if python_exec != "python3"
            else "PYSPARK_PYTHON was unset when the session started: the first python3 on PATH"
        )
        conf_python = sc.getConf().get("spark.pyspark.python", None)
        note = (
            f" (spark.pyspark.python={conf_python!r} is not used by local Python workers)"
            if conf_python
            else ""
        )
        raise errors.SparkPythonWorkerError(
            f"Spark's Python workers cannot run kartoframe: they start {python_exec!r} "
            f"({origin}) and {problem}; the driver runs {sys.executable!r}{note}. Create the "
            "session with kartoframe.spark.local_session(), or set "
            "os.environ['PYSPARK_PYTHON'] = sys.executable before the SparkSession starts "
            '(export PYSPARK_PYTHON="$(which python)" in a shell).'
        )
    with contextlib.suppress(TypeError):
        _WORKERS_OK[sc] = python_exec


#: Settings of :func:`local_session` (before the caller's ``conf``).
LOCAL_SESSION_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
}


def local_session(
    app_name: str,
    cores: int,
    driver_memory: str,
    java_options: str,
    quiet: bool,
    conf: Mapping[str, object],
) -> SparkSession:
    """Build (or get) a local SparkSession whose Python workers run this interpreter."""
    require_pyspark()
    from pyspark.sql import SparkSession

    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise InvalidInputError(f"cores must be a positive integer, got {cores!r}.")
    # read by SparkContext.__init__ (sc.pythonExec); spark.pyspark.python is not used
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    options = dict(LOCAL_SESSION_CONF)
    options["spark.sql.shuffle.partitions"] = str(cores)
    options["spark.default.parallelism"] = str(cores)
    options["spark.driver.memory"] = driver_memory
    java = []
    if quiet:
        log4j = os.path.join(os.path.dirname(errors.__file__), "spark-log4j2.properties")
        java.append(f"-Dlog4j2.configurationFile=file:{log4j}")
    if java_options:
        java.append(java_options)
    if java:
        options["spark.driver.extraJavaOptions"] = " ".join(java)
    options.update({str(k): str(v) for k, v in conf.items()})
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in options.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    if quiet:
        session.sparkContext.setLogLevel("ERROR")
    check_python_workers(session)
    return session


def _F() -> Any:
    require_pyspark()
    from pyspark.sql import functions

    return functions


def spark_type(json_value: Any) -> Any:
    """The pyspark ``DataType`` of a Spark type in JSON form (see ``format.spark_types``)."""
    from pyspark.sql import types as T

    if isinstance(json_value, dict) and json_value.get("type") == "struct":
        return T.StructType.fromJson(json_value)
    return T._parse_datatype_json_value(json_value)


def column(name: str) -> Column:
    """A Spark column reference by exact name (dots and backticks are not syntax)."""
    return _F().col("`" + name.replace("`", "``") + "`")


def check_store(store: Store) -> None:
    """Refuse stores Spark executors cannot reach."""
    if store.url.startswith("memory://"):
        raise InvalidInputError(
            f"{store.url} is an in-process memory store; Spark executors run in other "
            "processes and cannot see it. Use a local folder or an object store."
        )


def sdf_arrow_schema(sdf: DataFrame) -> pa.Schema:
    """The Arrow schema kartoframe stores for a Spark DataFrame's columns."""
    return from_spark_schema(sdf.schema.jsonValue())


# -- literals and predicates ---------------------------------------------------------
def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _timestamp_ns(value: Any) -> int:
    """Nanoseconds since the epoch (UTC for tz-aware values, wall time for naive ones)."""
    if isinstance(value, pa.TimestampScalar):
        factor = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[value.type.unit]
        return int(value.value) * factor
    ts = pd.Timestamp(value)
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC")
    return int(ts.as_unit("ns").value)


def _timestamp_text(us: int, aware: bool) -> str:
    text = (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)).isoformat(sep=" ")
    return text + "+00:00" if aware else text


def _timestamp_lit(us: int, t: pa.DataType) -> Column:
    aware = t.tz is not None
    return _F().lit(_timestamp_text(us, aware)).cast("timestamp" if aware else "timestamp_ntz")


def spark_literal(value: Any, t: pa.DataType) -> Column:
    """A Spark literal of a (normalised) value of a column of Arrow type ``t``."""
    F = _F()
    t = _value_type(t)
    spark_t = spark_type(to_spark_type(t))
    if value is None:
        return F.lit(None).cast(spark_t)
    if pa.types.is_timestamp(t):
        return _timestamp_lit(_timestamp_ns(value) // 1000, t)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, bool | str | float | dt.date | decimal.Decimal):
        return F.lit(value)
    if isinstance(value, bytes):
        return F.lit(bytearray(value))
    if isinstance(value, int):
        if -(2**63) <= value < 2**63:
            return F.lit(value)
        return F.lit(str(value)).cast("decimal(20,0)")
    return F.lit(value).cast(spark_t)


def _typed_literal(value: Any, t: pa.DataType) -> Column:
    """A literal cast to exactly the Spark type of ``t`` (partition values)."""
    return spark_literal(value, t).cast(spark_type(to_spark_type(_value_type(t))))


def _timestamp_in_values(lit: PredLiteral) -> list[Any]:
    # pyarrow's ``isin`` casts the value set to the column unit with truncation
    t = _value_type(lit.arrow_type)
    ns = pa.array([_timestamp_ns(v) for v in lit.value], type=pa.timestamp("ns"))
    return [int(x) for x in ns.cast(pa.timestamp(t.unit), safe=False).cast(pa.int64())]


def _literal_column(lit: PredLiteral) -> Column:
    """One bound literal as a Spark column, true exactly where pyarrow's is."""
    F = _F()
    c = column(lit.column)
    t = _value_type(lit.arrow_type)
    is_float = pa.types.is_floating(t)
    is_null = (c.isNull() | F.isnan(c)) if is_float else c.isNull()
    op, v = lit.op, lit.value
    if op in ("in", "not in"):
        if pa.types.is_timestamp(t) and v:
            per_unit = {"s": 10**6, "ms": 10**3, "us": 1, "ns": 0}[t.unit]
            if per_unit == 0:
                raise InvalidInputError("Nanosecond timestamp columns cannot be read by Spark.")
            items = [_timestamp_lit(x * per_unit, t) for x in _timestamp_in_values(lit)]
        else:
            items = [spark_literal(x, t) for x in v]
        expr = c.isin(*items) if items else F.lit(False)
        if op == "in":
            return (expr | is_null) if lit.has_null else (expr & ~is_null)
        return ~expr & ~is_null
    if v is None:
        return is_null if op == "==" else ~is_null
    if pa.types.is_timestamp(t):
        ns = _timestamp_ns(v)
        us, rem = divmod(ns, 1000)
        s = _timestamp_lit(us, t)
        if rem:
            # the column holds whole microseconds: compare with the floor, exactly
            if op == "==":
                return F.lit(False)
            if op in ("!=", "is distinct from"):
                return ~c.isNull() if op == "!=" else F.lit(True)
            op = {"<": "<=", "<=": "<=", ">": ">", ">=": ">"}[op]
    else:
        s = spark_literal(v, t)
    if op == "==":
        return c == s
    if op == "!=":
        return c != s
    if op == "<":
        return c < s
    if op == "<=":
        return c <= s
    if op in (">", ">="):
        expr = c > s if op == ">" else c >= s
        # Spark orders NaN above every number; pyarrow compares it as false
        return (expr & ~F.isnan(c)) if is_float else expr
    # is distinct from (non-null value)
    return (c != s) | is_null


def predicate_to_column(pred: Predicate | None) -> Column | None:
    """The whole DNF as one Spark column (None for no filter).

    Rows where the column is true are exactly the rows pyarrow's
    :func:`~kartoframe.plan.predicates.to_expression` keeps: nulls (and NaN, for
    ``== None``) follow kartoframe's documented semantics.
    """
    if pred is None:
        return None
    out: Column | None = None
    for conj in pred.conjunctions:
        e: Column | None = None
        for lit in conj:
            lc = _literal_column(lit)
            e = lc if e is None else (e & lc)
        assert e is not None
        out = e if out is None else (out | e)
    return out


# -- reads -----------------------------------------------------------------------------
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
            lit = _typed_literal(value, t)
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


# -- writes ----------------------------------------------------------------------------
_RECORD_SCHEMA = pa.schema([("key", pa.string()), ("payload", pa.binary())])


def _records(result: ChunkResult) -> pa.RecordBatch:
    payloads = [
        pickle.dumps((p, result.schema, result.origin), protocol=5) for p in result.partitions
    ]
    return pa.RecordBatch.from_arrays(
        [
            pa.array([p.key for p in result.partitions], pa.string()),
            pa.array(payloads, pa.binary()),
        ],
        schema=_RECORD_SCHEMA,
    )


def _chunk_from_payload(payload: bytes) -> ChunkResult:
    part, schema, origin = pickle.loads(payload)
    if not isinstance(part, WrittenPartition):
        raise errors.CorruptMetadataError("A Spark write task returned an unexpected record.")
    return ChunkResult((part,), schema, origin)


def _job_keys(store: Store, dataset_uuid: str, table_name: str, job_id: str) -> list[str]:
    prefix = naming.table_prefix(dataset_uuid, table_name)
    return [
        k
        for k in store.iter_keys(prefix)
        if k.endswith(naming.PARQUET_SUFFIX) and k.rsplit("/", 1)[-1].startswith(job_id)
    ]


def delete_job_files(
    store: Store, dataset_uuid: str, table_name: str, job_id: str, keep: Sequence[str] = ()
) -> list[str]:
    """Delete the data files a Spark write job wrote (except ``keep``); return them."""
    keep_set = set(keep)
    keys = [k for k in _job_keys(store, dataset_uuid, table_name, job_id) if k not in keep_set]
    with contextlib.suppress(Exception):
        store.delete_many(keys)
    return keys


_WORKER_ERROR = re.compile(r"(?:^|\n)kartoframe\.errors\.(\w+): ")


def _worker_error(exc: BaseException) -> BaseException | None:
    """The kartoframe error a Python worker raised, rebuilt on the driver (or None)."""
    text = str(exc)
    matches = list(_WORKER_ERROR.finditer(text))
    if not matches:
        return None
    m = matches[-1]
    cls = getattr(errors, m.group(1), None)
    message = text[m.end() :].split("\n\nJVM stacktrace", 1)[0].strip()
    message = re.sub(r"\s*SQLSTATE: \w+\s*$", "", message)
    if not (isinstance(cls, type) and issubclass(cls, errors.KartoframeError)):
        return None
    if cls in (
        errors.DatasetNotFoundError,
        errors.DatasetExistsError,
        errors.MissingDependencyError,
    ):
        return errors.KartoframeError(message)
    return cls(message)


def _job_stages(sc: Any, job_group: str) -> list[Any]:
    tracker = sc.statusTracker()
    stages = []
    for jid in tracker.getJobIdsForGroup(job_group):
        info = tracker.getJobInfo(jid)
        for sid in info.stageIds if info is not None else ():
            st = tracker.getStageInfo(sid)
            if st is not None:
                stages.append(st)
    return stages


def _wait_for_tasks(sc: Any, job_group: str, timeout: float = 30.0) -> None:
    """Wait until no task of the job group runs (killed tasks may still be writing)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(s.numActiveTasks > 0 for s in _job_stages(sc, job_group)):
            return
        time.sleep(0.1)


@contextlib.contextmanager
def _job_group(sc: Any, group: str, description: str) -> Iterator[None]:
    props = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    old = {p: sc.getLocalProperty(p) for p in props}
    sc.setJobGroup(group, description, interruptOnCancel=True)
    try:
        yield
    finally:
        for p, v in old.items():
            sc.setLocalProperty(p, v)


def write_sdf(
    sdf: DataFrame,
    store: Store,
    dataset_uuid: str,
    *,
    table_name: str = "table",
    partition_on: Sequence[str] = (),
    index_columns: Sequence[str] = (),
    serializer: ParquetSerializer | None = None,
    sort_partitions_by: Sequence[str] = (),
    timezones: Mapping[str, str | None] | None = None,
    repartition: bool = True,
    flush_bytes: int = FLUSH_BYTES,
    prepare: Callable[[pa.Table, str], pa.Table] | None = None,
    bloom_filter_columns: Sequence[str] = (),
) -> list[ChunkResult]:
    """Write a Spark DataFrame's rows as data files from the executors (no commit).

    Each Spark partition buffers its Arrow batches up to ``flush_bytes`` and writes them
    with :func:`~kartoframe.execution.write.write_chunk` (one file per partition value
    and flush). With ``partition_on`` and ``repartition`` the rows are first
    hash-partitioned on those columns, so each value is written by one task.
    ``prepare(table, origin)`` validates and transforms each chunk in the executor
    before it is written (cube writes check NULLs and duplicate cells there).
    ``bloom_filter_columns`` (the dataset's bloom-filter columns) get bloom filters in
    each file's statistics, as with the other engines.

    Returns
    -------
    list of ChunkResult
        One per written file, for :func:`~kartoframe.execution.write.commit_write`.

    Raises
    ------
    KartoframeError
        The kartoframe error an executor raised (e.g. :class:`NullPartitionValueError`);
        every file the job wrote has been deleted.
    """
    require_pyspark()
    check_store(store)
    job_id = _uuid.uuid4().hex[:16]
    pon = list(partition_on)
    idx = list(index_columns)
    sort_by = list(sort_partitions_by)
    blooms = tuple(bloom_filter_columns)
    zones = dict(timezones or {})
    ser = serializer or ParquetSerializer()
    if pon and repartition:
        sdf = sdf.repartition(*[column(c) for c in pon])

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        origin = f"Spark partition {ctx.partitionId() if ctx is not None else 0}"
        buffer: list[pa.RecordBatch] = []
        size = 0

        def flush() -> pa.RecordBatch:
            table = from_spark_table(pa.Table.from_batches(buffer), zones)
            if prepare is not None:
                table = prepare(table, origin)
            result = write_chunk(
                store,
                dataset_uuid,
                table,
                table_name=table_name,
                partition_on=pon,
                index_columns=idx,
                serializer=ser,
                sort_partitions_by=sort_by,
                origin=origin,
                file_uuid=job_id + _uuid.uuid4().hex[:16],
                bloom_filter_columns=blooms,
            )
            return _records(result)

        for b in batches:
            if b.num_rows == 0:
                continue
            buffer.append(b)
            size += b.nbytes
            if size >= flush_bytes:
                yield flush()
                buffer, size = [], 0
        if buffer:
            yield flush()

    check_python_workers(sdf.sparkSession)
    sc = sdf.sparkSession.sparkContext
    group = f"kartoframe-write-{job_id}"
    out = sdf.mapInArrow(write, spark_type(to_spark_schema(_RECORD_SCHEMA)))
    with _job_group(sc, group, f"kartoframe: write {dataset_uuid!r}"):
        try:
            rows = out.collect()
        except Exception as e:
            delete_job_files(store, dataset_uuid, table_name, job_id)
            _wait_for_tasks(sc, group)
            delete_job_files(store, dataset_uuid, table_name, job_id)
            mapped = _worker_error(e)
            if mapped is not None:
                raise mapped from e
            raise
        chunks = [_chunk_from_payload(bytes(r["payload"])) for r in rows]
        if any(s.numFailedTasks > 0 for s in _job_stages(sc, group)):
            # retried task attempts may have left files nobody will commit
            delete_job_files(store, dataset_uuid, table_name, job_id, keep=[r["key"] for r in rows])
    return chunks
