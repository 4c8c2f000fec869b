"""Row-level upserts from Spark: ``merge`` planned on the driver, run by a Spark job."""

from __future__ import annotations

from typing import Any

from kartoframe.api.merge import merge_dataset
from kartoframe.errors import InvalidTypeError
from kartoframe.execution import spark_engine
from kartoframe.execution.spark_merge import merge_with_spark
from kartoframe.front.args import arguments_of, ensure_store, same_parameters
from kartoframe.front.merge import prepared_merge
from kartoframe.plan.merge import MergeResult

__all__ = ["merge_dataset_from_sdf"]


@same_parameters(merge_dataset)
def merge_dataset_from_sdf(*args: Any, **kwargs: Any) -> MergeResult:
    """:func:`kartoframe.merge_dataset` with a Spark DataFrame as the source, run as a
    Spark job: one task per candidate file, one commit on the driver.

    The source (the change set, small beside the dataset) is collected to the driver as
    Arrow, which plans as the other engines do (the candidate files the source's keys
    cannot rule out); each candidate file is read, merged and written again by its own
    Spark task with the kernel of the other engines; the driver writes the inserted rows
    and publishes one commit. If a task fails, the files the others wrote are deleted,
    nothing is committed and the error is raised on the driver. Parameters, rules and
    result as in :func:`kartoframe.merge_dataset`.

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> changes = spark.createDataFrame([(1, 11, 8.0)],
    ...                                 "day int, id long, amount double")  # doctest: +SKIP
    >>> kfs.merge_dataset_from_sdf(changes, "file:///data", "orders",
    ...                            on=["day", "id"]).rows_updated  # doctest: +SKIP
    1
    """
    spark_engine.require_pyspark()
    values = arguments_of(merge_dataset, args, kwargs)
    sdf = values["source"]
    spark = getattr(sdf, "sparkSession", None)
    if spark is None or not hasattr(sdf, "toArrow"):
        raise InvalidTypeError(f"source must be a Spark DataFrame, got {type(sdf).__name__}.")
    values["store"] = ensure_store(values["store"])
    spark_engine.check_store(values["store"])  # before the source is collected and planned
    values["source"] = sdf.toArrow()
    st, plan, commit = prepared_merge(values)
    return merge_with_spark(spark, st, plan, commit=commit, dry_run=values["dry_run"])
