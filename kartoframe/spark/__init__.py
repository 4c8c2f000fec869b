"""Spark interchange: datasets and cube queries as Spark DataFrames; datasets and cubes
written from Spark jobs.

pyspark is an optional extra (``pip install 'kartoframe[spark]'``); without it every
function raises :class:`~kartoframe.errors.MissingDependencyError`. The Spark engine runs
the plans kartoframe's planner produces — pruning by partition keys and secondary
indices happens before Spark sees a file — and writes with the same kernel and the same
single commit as the pandas and dask engines, so format, semantics and guarantees are
identical::

    import kartoframe.spark as kfs

    sdf = kfs.read_dataset_as_sdf(spark, "sales", "file:///data",
                                  predicates=[[("country", "==", "DE")]])
    kfs.store_dataset_from_sdf(sdf, "file:///data", "sales_de", partition_on=["month"])
    kfs.query_cube_sdf(spark, cube, "file:///cubes", conditions=kf.C("x") > 1)

See ``docs/spark.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kartoframe.execution import spark_engine
from kartoframe.execution.read_plan import plan_read
from kartoframe.execution.spark_engine import ReaderChoice
from kartoframe.execution.spark_read import plan_to_sdf
from kartoframe.front import cube_signatures as sig
from kartoframe.front.args import StoreInput, arguments_of, ensure_store, same_parameters
from kartoframe.front.cube_args import fill
from kartoframe.spark._changes import read_changes_as_sdf
from kartoframe.spark._cluster import check_executors, cluster_session
from kartoframe.spark._cube import (
    append_to_cube_from_sdf,
    build_cube_from_sdf,
    extend_cube_from_sdf,
    update_cube_from_sdf,
)
from kartoframe.spark._merge import merge_dataset_from_sdf
from kartoframe.spark._optimize import optimize_dataset
from kartoframe.spark._write import store_dataset_from_sdf, update_dataset_from_sdf

#: ``pyspark.sql.DataFrame`` / ``SparkSession`` (pyspark is imported by the engine only).
DataFrame = Any
SparkSession = Any

__all__ = [
    "append_to_cube_from_sdf",
    "build_cube_from_sdf",
    "check_executors",
    "cluster_session",
    "extend_cube_from_sdf",
    "local_session",
    "merge_dataset_from_sdf",
    "optimize_dataset",
    "query_cube_sdf",
    "read_changes_as_sdf",
    "read_dataset_as_sdf",
    "store_dataset_from_sdf",
    "update_cube_from_sdf",
    "update_dataset_from_sdf",
]


def local_session(
    app_name: str = "kartoframe",
    cores: int = 2,
    *,
    driver_memory: str = "1g",
    java_options: str = "",
    quiet: bool = True,
    conf: Mapping[str, object] | None = None,
) -> SparkSession:
    """A local SparkSession configured for kartoframe (``local[cores]``).

    Spark's Python workers run ``PYSPARK_PYTHON`` as it is when the session starts
    (``python3`` from ``PATH`` when unset), so in a virtual environment that is not
    activated they cannot import kartoframe or pyarrow. This sets ``PYSPARK_PYTHON`` to
    the running interpreter (``sys.executable``) before the JVM starts, and
    ``SPARK_LOCAL_IP=127.0.0.1`` unless set, then builds the session with Arrow
    conversions enabled, the session time zone UTC, ``cores`` shuffle partitions and
    default parallelism, no web UI or progress bars, and (``quiet``) error-only logging.

    Parameters
    ----------
    app_name
        The Spark application name.
    cores
        Local worker threads (``local[cores]``), also the shuffle partitions.
    driver_memory
        ``spark.driver.memory`` (takes effect only when this call starts the JVM).
    java_options
        Extra JVM options for the driver (``spark.driver.extraJavaOptions``), e.g.
        ``"-XX:TieredStopAtLevel=1"`` for a faster start of short jobs.
    quiet
        Log errors only (a log4j2 configuration shipped with kartoframe, and
        ``setLogLevel("ERROR")``).
    conf
        More Spark settings (``{"spark.sql.shuffle.partitions": "8"}``), applied last.

    Returns
    -------
    pyspark.sql.SparkSession
        A new session, or the active one (``getOrCreate``): JVM-level settings of a
        session that already runs do not change.

    Raises
    ------
    MissingDependencyError
        pyspark is not installed.
    InvalidInputError
        ``cores`` is not a positive integer.
    SparkPythonWorkerError
        A session that was already running has workers that cannot import kartoframe.

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> spark = kfs.local_session("my-job", cores=2)  # doctest: +SKIP
    >>> spark.conf.get("spark.sql.session.timeZone")  # doctest: +SKIP
    'UTC'
    """
    return spark_engine.local_session(
        app_name, cores, driver_memory, java_options, quiet, dict(conf or {})
    )


@fill
def read_dataset_as_sdf(
    spark: SparkSession,
    dataset_uuid: str,
    store: StoreInput,
    columns: Sequence[str] | None = None,
    predicates: object = None,
    *,
    reader: ReaderChoice = "auto",
    version: int | None = None,
    as_of: object = None,
) -> DataFrame:
    """Read a dataset (or the rows matching ``predicates``) as a Spark DataFrame.

    kartoframe's planner prunes partitions by partition keys and secondary indices;
    Spark reads only the surviving files. Columns carry kartoframe's types (partition
    columns included: ``"001"`` stays a string, int64 stays ``long``, booleans are
    ``boolean``, ``ü`` stays ``ü``). Residual predicates become a Spark filter with
    kartoframe's null semantics, which Spark pushes into the Parquet scan.

    $spark_dataset
    columns
        Projection, in output order (default: all, partition keys first).
    predicates
        DNF filter ``[[(col, op, value), ...], ...]``.
    reader
        ``"auto"`` (default): Spark's Parquet reader for local files it reads exactly,
        ``mapInArrow`` through the store for the rest; ``"native"`` or ``"arrow"`` to
        force one (``"native"`` raises if it cannot be exact).
    version, as_of
        Read a past version (time travel), as in :func:`kartoframe.read_table`.

    Returns
    -------
    pyspark.sql.DataFrame
        Lazy; row order is not defined (as for every Spark DataFrame).

    $spark_raises
    ColumnNotFoundError, InvalidPredicateError, InvalidTypeError
        Bad columns or predicates (checked before Spark runs anything).
    SparkPythonWorkerError
        The read needs Python workers (object stores, files Spark cannot read exactly)
        and a local session's workers cannot import kartoframe (see :func:`local_session`).

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> kfs.read_dataset_as_sdf(spark, "sales", "file:///data",
    ...                         predicates=[[("country", "==", "DE")]]).count()  # doctest: +SKIP
    2
    """
    spark_engine.require_pyspark()
    spark_engine.check_store(ensure_store(store))
    plan, st = plan_read(
        dataset_uuid,
        store,
        columns=columns,
        predicates=predicates,
        version=version,
        as_of=as_of,
        consistent_integers=False,  # Arrow to Spark types: no pandas integer dtypes to decide
    )
    return plan_to_sdf(spark, plan, st, reader=reader)


@fill
@same_parameters(sig.SparkQuery)
def query_cube_sdf(*args: Any, **kwargs: Any) -> DataFrame:
    """Query a cube as a Spark DataFrame, with :func:`kartoframe.query_cube`'s semantics.

    The cube is planned by kartoframe (metadata, needed indices, pruning, dataset
    alignment); Spark runs the plan's query groups with the join kernel of the other
    engines: the seed defines the cells, restrictive datasets are inner-joined, the others
    left-joined, appends overlay (last commit wins per cell), columns are alphabetical.

    Parameters
    ----------
    $spark
    cube, store, conditions, dimension_columns, partition_by, payload_columns, datasets
        As in :func:`kartoframe.query_cube`.
    sort
        Rows in ``query_cube``'s order: the ``partition_by`` values (in which the groups
        come anyway), then query dimensions, then cube partition columns. Without
        ``partition_by``, a query reading more than eight files per core ends with a
        Spark sort for this; ``False`` skips it (smaller queries run as one ordered task).

    Returns
    -------
    pyspark.sql.DataFrame
        The rows of all of ``query_cube``'s frames in one DataFrame (``query_cube``
        returns one frame per ``partition_by`` value); collected, they come in the same
        order as ``pd.concat(query_cube(...))``.

    Raises
    ------
    MissingDependencyError
        pyspark is not installed.
    ColumnNotFoundError, InvalidInputError, InvalidTypeError
        The query does not fit the cube (checked before Spark runs anything).
    SparkPythonWorkerError
        A local session's Python workers cannot import kartoframe (see
        :func:`local_session`).
    """
    from kartoframe.execution.spark_cube import cube_plan_to_sdf
    from kartoframe.front.cube_query import plan_cube_query

    query = arguments_of(query_cube_sdf, args, kwargs)
    spark, sort = query.pop("spark"), query.pop("sort")
    spark_engine.require_pyspark()
    spark_engine.check_store(ensure_store(query["store"]))
    return cube_plan_to_sdf(spark, *plan_cube_query(**query), sort=sort)
