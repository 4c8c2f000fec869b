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
    sdf_arrow_schema,
    spark_type,
)
from kartoframe.execution.write import (
    ChunkResult,
    ParquetSerializer,
    WrittenPartition,
    already_recorded,
    commit_resolved,
    write_chunk,
)
from kartoframe.format import naming
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.format.schema import SchemaEvolution
from kartoframe.format.spark_types import (
    from_spark_table,
    to_spark_schema,
)
from kartoframe.plan.write import check_against_base
from kartoframe.plan.write_request import ResolvedWrite
from kartoframe.storage.resolve import bloom_columns_of
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


# -- the dataset write: precheck, Spark job, one commit -----------------------------------
def conformed_schema(
    sdf: DataFrame, base: pa.Schema | None
) -> tuple[pa.Schema, dict[str, str | None]]:
    """The Arrow schema of the DataFrame, its instants in the zones of ``base``'s columns
    (Spark has no zone per column; the same instants are stored in the dataset's zone).
    """
    schema = sdf_arrow_schema(sdf)
    zones: dict[str, str | None] = {}
    if base is not None:
        for f in schema:
            if f.name in base.names and pa.types.is_timestamp(f.type) and f.type.tz:
                bt = base.field(f.name).type
                if pa.types.is_timestamp(bt) and bt.tz is not None:
                    zones[f.name] = bt.tz
    fields = [
        pa.field(f.name, pa.timestamp(f.type.unit, tz=zones[f.name])) if f.name in zones else f
        for f in schema
    ]
    return pa.schema(fields), zones


def _precheck(
    sdf: DataFrame,
    base: LoadedDataset | None,
    partition_on: Sequence[str],
    secondary_indices: Sequence[str],
    uuid: str,
    schema_evolution: SchemaEvolution = "none",
) -> tuple[pa.Schema, dict[str, str | None]]:
    """Validate the DataFrame's schema before Spark runs; return the normalised schema
    and the time zones its instants are stored in.

    With ``schema_evolution="add_columns"`` the DataFrame may add nullable columns and
    widen decimals (as the eager and dask updates); otherwise it must match the stored
    schema.
    """
    schema, zones = conformed_schema(sdf, base.schema if base is not None else None)
    norm = check_against_base(
        schema,
        base.schema if base is not None else None,
        partition_on,
        secondary_indices,
        dataset_uuid=uuid,
        origin="the Spark DataFrame",
        schema_evolution=schema_evolution,
    )
    return norm, zones


def write_and_commit(
    sdf: DataFrame | None,
    st: Store,
    target: ResolvedWrite,
    *,
    metadata: Mapping[str, Any] | None,
    remove_labels: set[str],
    serializer: ParquetSerializer,
    sort_partitions_by: Sequence[str],
    repartition: bool,
) -> DatasetHeader | None:
    """Precheck the DataFrame, let Spark write its chunks, commit once on the driver.

    Returns the committed header, or None if the dataset already records the write's
    application transaction (a retried step: nothing is written).
    """
    base, uuid = target.base, target.uuid
    if already_recorded(st, uuid, target.request.commit):
        return None
    chunks: list[ChunkResult] = []
    empty_schema = None
    if sdf is not None:
        empty_schema, zones = _precheck(
            sdf,
            base,
            target.partition_on,
            target.index_columns,
            uuid,
            target.request.schema_evolution,
        )
        chunks = write_sdf(
            sdf,
            st,
            uuid,
            serializer=serializer,
            sort_partitions_by=sort_partitions_by,
            timezones=zones,
            repartition=repartition,
            bloom_filter_columns=bloom_columns_of(base),
            **target.chunk_arguments(),
        )
        if not chunks and base is not None:
            # no rows: the DataFrame's schema still takes part (as an empty pandas frame's
            # does), so an empty DataFrame can add columns
            chunks = [ChunkResult((), empty_schema, "the Spark DataFrame")]
    md = commit_resolved(
        st,
        target,
        chunks,
        remove_labels=remove_labels,
        metadata=metadata,
        empty_schema=empty_schema if base is None else None,
    )
    return md
