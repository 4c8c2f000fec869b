"""Spark writes: :func:`~kartoframe.execution.write.write_chunk` inside ``mapInArrow``.

Each task returns one small record per written file; the caller commits once on the driver.
File names carry a per-job prefix, so a failed job removes every file it wrote.
"""

from __future__ import annotations

import contextlib
import pickle
import re
import time
import uuid as _uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kartoframe import errors
from kartoframe.execution.spark_engine import (
    FLUSH_BYTES,
    check_python_workers,
    check_store,
    column,
    require_pyspark,
    spark_type,
)
from kartoframe.execution.write import (
    ChunkResult,
    ParquetSerializer,
    WrittenPartition,
    write_chunk,
)
from kartoframe.format import naming
from kartoframe.format.spark_types import (
    from_spark_table,
    to_spark_schema,
)
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


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
