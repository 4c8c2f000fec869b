"""The change data feed as a Spark DataFrame: planned on the driver, read by Spark tasks."""

from __future__ import annotations

from typing import Any

from kartoframe.execution import spark_engine
from kartoframe.execution.spark_changes import changes_to_sdf
from kartoframe.front import dataset_signatures as sig
from kartoframe.front.args import arguments_of, ensure_store, same_parameters
from kartoframe.front.changes import Changes, plan_feed
from kartoframe.front.cube_args import fill

__all__ = ["read_changes_as_sdf"]

#: ``pyspark.sql.DataFrame`` (pyspark is imported by the engine only).
DataFrame = Any


@fill
@same_parameters(sig.SparkChangesFeed)
def read_changes_as_sdf(*args: Any, **kwargs: Any) -> Changes[DataFrame]:
    """:func:`kartoframe.read_changes` as a lazy Spark DataFrame: the rows that the
    commits ``start_version`` to ``end_version`` inserted, deleted and updated, and the
    cursor of the next read.

    The versions are fixed and the feed is planned on the driver when this is called
    (only the log entries of the range are read); each Spark task reads one commit's
    change files, or the data files it added or removed, in a Python worker through the
    store, with the kernel of the other engines. The rows equal those of
    :func:`kartoframe.read_changes`.

    $spark_dataset
    $changes_range

    Returns
    -------
    Changes
        ``(sdf, next_version)``: a ``pyspark.sql.DataFrame`` with the dataset's columns,
        then ``_change_type`` (string), ``_commit_version`` (long) and
        ``_commit_timestamp`` (timestamp), and the cursor of the next read. Row order is
        not defined (as for every Spark DataFrame): order by ``_commit_version``.

    $spark_raises
    ChangesUnavailableError
        ``vacuum_dataset`` removed what the changes of ``start_version`` need.
    InvalidInputError
        A version beyond the current one, or a ``memory://`` store.
    ColumnNotFoundError, InvalidPredicateError, InvalidTypeError
        Bad columns, predicates or versions (checked before Spark runs anything).
    SparkPythonWorkerError
        A local session's Python workers cannot import kartoframe (see
        :func:`kartoframe.spark.local_session`).

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> sdf, cursor = kfs.read_changes_as_sdf(spark, "orders", "file:///data",
    ...                                       start_version=cursor)  # doctest: +SKIP
    >>> sdf.groupBy("_change_type").count().show()  # doctest: +SKIP
    """
    spark_engine.require_pyspark()
    values = arguments_of(read_changes_as_sdf, args, kwargs)
    spark = values.pop("spark")
    spark_engine.check_store(ensure_store(values["store"]))  # before reading anything
    st, plan = plan_feed(**values)
    return Changes(changes_to_sdf(spark, plan, st), plan.next_version)
