"""One Spark job of per-item tasks that write data files, planned and committed on the driver.

``optimize`` (one task per rewrite unit) and ``merge`` (one task per candidate file) run
their shared per-item kernel on executors through :func:`run_spark_tasks`: every file a
task writes starts with the job's id, so files of abandoned or retried attempts are found
and deleted. A task that fails returns its exception as a value (the task succeeds, Spark
does not retry it), so the driver sees every outcome and can delete what the others wrote.
"""

from __future__ import annotations

import pickle
import uuid as _uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from kartoframe import errors
from kartoframe.execution import spark_write
from kartoframe.execution.spark_engine import check_python_workers, check_store, require_pyspark
from kartoframe.storage.store import Store

__all__ = ["run_spark_tasks"]

T = TypeVar("T")


def _outcome(work: Callable[[T, str], Any], item: T, job_id: str, what: str) -> bytes:
    """The pickled result of one item, or the exception it raised (an exception that
    cannot be pickled is replaced by a :class:`KartoframeError` naming it).
    """
    try:
        value = work(item, job_id)
    except Exception as e:
        value = e
    try:
        return pickle.dumps(value, protocol=5)
    except Exception:
        text = f"{what} failed: {type(value).__name__}: {value}"
        return pickle.dumps(errors.KartoframeError(text), protocol=5)


def run_spark_tasks(
    spark: Any,
    store: Store,
    *,
    dataset_uuid: str,
    table_name: str,
    items: Sequence[T],
    work: Callable[[T, str], Any],
    written: Callable[[Any], Iterable[str]],
    what: str,
    result_type: type,
) -> list[Any]:
    """Run ``work(item, job_id)`` for every item in its own Spark task; return the outcomes
    (results, or the exceptions items raised) in item order.

    ``work`` must start the name of every data file it writes with ``job_id`` and is
    pickled with its closure and returns a ``result_type``; ``written(result)`` lists the
    keys a result references (the files of retried attempts beside them are deleted).

    Raises
    ------
    Exception
        The job's own failure (a kartoframe error a worker raised is rebuilt); every
        file of the job has been deleted.
    """
    require_pyspark()
    check_store(store)
    check_python_workers(spark)
    if not items:
        return []
    job_id = _uuid.uuid4().hex[:16]  # starts every file name the job writes

    def run(pairs: Iterable[tuple[int, T]]) -> Iterator[tuple[int, bytes]]:
        for i, item in pairs:
            yield i, _outcome(work, item, job_id, what)

    def delete_job_files(keep: Sequence[str] = ()) -> None:
        spark_write.delete_job_files(store, dataset_uuid, table_name, job_id, keep=keep)

    sc = spark.sparkContext
    group = f"kartoframe-{what.split()[0]}-{job_id}"
    rdd = sc.parallelize(list(enumerate(items)), numSlices=len(items)).mapPartitions(run)
    with spark_write._job_group(sc, group, f"kartoframe: {what}"):
        try:
            rows = rdd.collect()
        except Exception as e:
            delete_job_files()
            spark_write._wait_for_tasks(sc, group)
            delete_job_files()
            mapped = spark_write._worker_error(e)
            if mapped is not None:
                raise mapped from e
            raise
        outcomes = [pickle.loads(payload) for _, payload in sorted(rows, key=lambda r: r[0])]
        if not all(isinstance(o, result_type | BaseException) for o in outcomes):
            delete_job_files()
            raise errors.CorruptMetadataError(
                f"A Spark task of {what} returned an unexpected value."
            )
        if any(s.numFailedTasks > 0 for s in spark_write._job_stages(sc, group)):
            # retried task attempts may have left files nobody will commit
            keep = [k for o in outcomes if not isinstance(o, BaseException) for k in written(o)]
            delete_job_files(keep=keep)
    return outcomes
