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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from kartoframe.api._args import (
    StoreInput,
    check_format,
    check_metadata_version,
    check_uuid,
    ensure_store,
    serializer_arg,
    str_list,
)
from kartoframe.api._write_args import new_dataset_args, update_indices, update_layout
from kartoframe.api.read import plan_read
from kartoframe.api.write import (
    DatasetMetadataResult,
    MetadataArg,
    _already_committed,
    _evolution_arg,
    _existing,
    _resolve_metadata,
    delete_scope_labels,
)
from kartoframe.errors import (
    DatasetExistsError,
    EmptyInputError,
    InvalidTypeError,
)
from kartoframe.execution import spark_engine
from kartoframe.execution.spark_engine import ReaderChoice
from kartoframe.execution.spark_read import plan_to_sdf
from kartoframe.execution.spark_write import write_sdf
from kartoframe.execution.write import ChunkResult, ParquetSerializer, commit_write
from kartoframe.format import naming
from kartoframe.format.cube import Cube
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import (
    SchemaEvolution,
    merge_into_stored,
    normalize_schema,
)
from kartoframe.plan.conditions import ConditionsArg
from kartoframe.plan.cube_write import (
    Operation,
)
from kartoframe.plan.write import check_write_columns
from kartoframe.storage.resolve import bloom_columns_of
from kartoframe.storage.store import Store

#: ``pyspark.sql.DataFrame`` / ``SparkSession`` (pyspark is imported by the engine only).
DataFrame = Any
SparkSession = Any

__all__ = [
    "append_to_cube_from_sdf",
    "build_cube_from_sdf",
    "extend_cube_from_sdf",
    "local_session",
    "query_cube_sdf",
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

    Parameters
    ----------
    spark
        The SparkSession.
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory. Local folders and fsspec
        object stores work; ``memory://`` does not (executors are other processes).
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

    Raises
    ------
    MissingDependencyError
        pyspark is not installed.
    DatasetNotFoundError
        The dataset does not exist.
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


def _check_sdf(sdf: object, name: str = "sdf") -> None:
    if not hasattr(sdf, "mapInArrow") or not hasattr(sdf, "schema"):
        raise InvalidTypeError(f"{name} must be a pyspark.sql.DataFrame, got {type(sdf).__name__}.")


def _conformed_schema(
    sdf: DataFrame, base: pa.Schema | None
) -> tuple[pa.Schema, dict[str, str | None]]:
    """The Arrow schema of the DataFrame, its instants in the zones of ``base``'s columns
    (Spark has no zone per column; the same instants are stored in the dataset's zone).
    """
    schema = spark_engine.sdf_arrow_schema(sdf)
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
    schema, zones = _conformed_schema(sdf, base.schema if base is not None else None)
    check_write_columns(schema, partition_on, secondary_indices, what="the Spark DataFrame")
    norm = normalize_schema(schema, partition_on)
    if base is not None:
        merge_into_stored(
            base.schema,
            norm,
            schema_evolution=schema_evolution,
            dataset_uuid=uuid,
            origin="the Spark DataFrame",
            partition_keys=partition_on,
        )
    return norm, zones


def _write_and_commit(
    sdf: DataFrame | None,
    st: Store,
    uuid: str,
    *,
    base: LoadedDataset | None,
    partition_on: list[str],
    secondary_indices: list[str],
    index_columns: list[str],
    remove_labels: set[str],
    metadata: Mapping[str, Any] | None,
    serializer: ParquetSerializer,
    storage_format: naming.MetadataFormat,
    table_name: str,
    sort_partitions_by: list[str],
    expect_absent: bool,
    repartition: bool,
    schema_evolution: SchemaEvolution = "none",
    create_or_update: bool = False,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> DatasetMetadataResult:
    if _already_committed(st, uuid, app_id, app_version):
        return DatasetMetadataResult(uuid, st)  # a retried step: already committed
    chunks: list[ChunkResult] = []
    empty_schema = None
    if sdf is not None:
        empty_schema, zones = _precheck(
            sdf, base, partition_on, index_columns, uuid, schema_evolution
        )
        chunks = write_sdf(
            sdf,
            st,
            uuid,
            table_name=table_name,
            partition_on=partition_on,
            index_columns=index_columns,
            serializer=serializer,
            sort_partitions_by=sort_partitions_by,
            timezones=zones,
            repartition=repartition,
            bloom_filter_columns=bloom_columns_of(base),
        )
        if not chunks and base is not None:
            # no rows: the DataFrame's schema still takes part (as an empty pandas frame's
            # does), so an empty DataFrame can add columns
            chunks = [ChunkResult((), empty_schema, "the Spark DataFrame")]
    md = commit_write(
        st,
        uuid,
        chunks,
        base=base,
        partition_on=partition_on,
        secondary_indices=secondary_indices,
        remove_labels=remove_labels,
        metadata=metadata,
        storage_format=storage_format,
        table_name=table_name,
        expect_absent=expect_absent,
        create_or_update=create_or_update,
        empty_schema=empty_schema if base is None else None,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )
    return DatasetMetadataResult(md.uuid, st)


def store_dataset_from_sdf(
    sdf: DataFrame,
    store: StoreInput,
    dataset_uuid: str,
    partition_on: Sequence[str] | None = None,
    secondary_indices: Sequence[str] | None = None,
    metadata: MetadataArg = None,
    overwrite: bool = False,
    df_serializer: ParquetSerializer | None = None,
    metadata_storage_format: str = "json",
    metadata_version: int = 4,
    table_name: str = "table",
    sort_partitions_by: Sequence[str] | None = None,
    schema_evolution: SchemaEvolution = "none",
    *,
    repartition: bool = True,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> DatasetMetadataResult:
    """Write a Spark DataFrame as a new dataset, committing once on the driver.

    Executors write the Parquet files (``mapInArrow`` over the DataFrame's partitions,
    hash-partitioned on ``partition_on`` first) and return one small record per file;
    the driver validates the schemas of all files, builds the secondary indices and
    publishes the header. If the job or the commit fails, the files written for it are
    deleted and an existing dataset is unchanged.

    Parameters
    ----------
    sdf
        The data. Spark ``timestamp`` columns are stored as UTC instants,
        ``timestamp_ntz`` as naive timestamps (both in microseconds).
    store
        Store URL, :class:`kartoframe.Store` or factory (not ``memory://``).
    dataset_uuid
        Name of the dataset.
    partition_on
        Columns to partition by (must not hold nulls).
    secondary_indices
        Columns to build inverted indices for.
    metadata
        User metadata stored in the header.
    overwrite
        Replace an existing dataset.
    df_serializer
        :class:`kartoframe.ParquetSerializer` (compression, row-group size).
    metadata_storage_format
        ``"json"`` or ``"msgpack"``.
    metadata_version
        Must be 4.
    table_name
        Table directory name.
    sort_partitions_by
        Sort each written file by these columns.
    schema_evolution
        ``"none"`` (default) or ``"add_columns"``, as in
        :func:`kartoframe.store_dataframes_as_dataset` (one DataFrame has one schema, so
        this only matters for the commit record); see ``docs/schema.md``.
    repartition
        Hash-partition the rows on ``partition_on`` before writing, so that each
        partition value is written as one file per flush (default). False keeps the
        DataFrame's partitioning: one file per Spark partition and value.
    app_id, app_version
        Application transaction id (as in Delta): if the dataset already records
        ``app_version`` (or a higher one) for ``app_id``, nothing is written, so a
        retried pipeline step commits once.
    commit_info
        User data recorded with the commit in the dataset's history.

    Returns
    -------
    DatasetMetadataResult

    Raises
    ------
    DatasetExistsError
        The dataset exists and ``overwrite`` is False.
    NullPartitionValueError, SchemaError, InvalidInputError
        Invalid data (raised on the driver, also when an executor found it).
    SparkPythonWorkerError
        A local session's Python workers cannot import kartoframe (checked before any
        file is written; see :func:`local_session`).

    Examples
    --------
    >>> import kartoframe.spark as kfs  # doctest: +SKIP
    >>> kfs.store_dataset_from_sdf(sdf, "file:///data", "sales",
    ...                            partition_on=["country"]).uuid  # doctest: +SKIP
    'sales'
    """
    spark_engine.require_pyspark()
    _check_sdf(sdf)
    uuid, st, fmt, pon, sidx = new_dataset_args(
        dataset_uuid,
        store,
        metadata_storage_format=metadata_storage_format,
        metadata_version=metadata_version,
        table_name=table_name,
        partition_on=partition_on,
        secondary_indices=secondary_indices,
        check_store=spark_engine.check_store,
    )
    evolution = _evolution_arg(schema_evolution)
    if _existing(st, uuid) is not None and not overwrite:
        raise DatasetExistsError(uuid)
    return _write_and_commit(
        sdf,
        st,
        uuid,
        base=None,
        partition_on=pon,
        secondary_indices=sidx,
        index_columns=sidx,
        remove_labels=set(),
        metadata=_resolve_metadata(metadata, {}),
        serializer=serializer_arg(df_serializer),
        storage_format=fmt,
        table_name=table_name,
        sort_partitions_by=str_list(sort_partitions_by, "sort_partitions_by"),
        expect_absent=not overwrite,
        repartition=repartition,
        schema_evolution=evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def update_dataset_from_sdf(
    sdf: DataFrame | None,
    store: StoreInput,
    dataset_uuid: str,
    delete_scope: Sequence[Mapping[str, Any]] | None = None,
    metadata: MetadataArg = None,
    df_serializer: ParquetSerializer | None = None,
    default_metadata_version: int = 4,
    partition_on: Sequence[str] | None = None,
    sort_partitions_by: Sequence[str] | None = None,
    secondary_indices: Sequence[str] | None = None,
    table_name: str = "table",
    metadata_storage_format: str = "json",
    schema_evolution: SchemaEvolution = "none",
    *,
    repartition: bool = True,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> DatasetMetadataResult:
    """Add a Spark DataFrame's rows to a dataset and/or delete partitions, in one commit.

    Creates the dataset if it does not exist. The DataFrame's schema is checked against
    the stored one before Spark runs; tz-aware columns are stored in the dataset's
    time zone. All existing secondary indices are maintained.

    Parameters
    ----------
    sdf
        Rows to add, or None for a delete/metadata-only update.
    store
        Store URL, :class:`kartoframe.Store` or factory (not ``memory://``).
    dataset_uuid
        The dataset.
    delete_scope
        ``[{column: value, ...}, ...]``: partitions matching any dict are removed
        (columns must be partition keys or indexed).
    metadata
        User metadata merged over the existing metadata.
    df_serializer
        :class:`kartoframe.ParquetSerializer`.
    default_metadata_version
        Must be 4.
    partition_on
        Must equal the dataset's partition keys (default: the dataset's).
    sort_partitions_by
        Sort each written file by these columns.
    secondary_indices
        Indices to create (a new dataset) or a subset of the existing ones.
    table_name
        Must match the dataset's table.
    metadata_storage_format
        Format of a new dataset.
    schema_evolution
        ``"none"`` (default): the DataFrame must match the stored schema.
        ``"add_columns"``: it may add nullable columns and widen decimals; the change is
        recorded in the header (see :func:`kartoframe.schema_history`). Files written
        before read the new columns as nulls. Dropping or retyping a column is always
        refused. Checked on the driver before Spark runs anything.
    repartition
        See :func:`store_dataset_from_sdf`.
    app_id, app_version, commit_info
        As in :func:`store_dataset_from_sdf`.

    Returns
    -------
    DatasetMetadataResult
    """
    spark_engine.require_pyspark()
    if sdf is not None:
        _check_sdf(sdf)
    uuid = check_uuid(dataset_uuid)
    st = ensure_store(store)
    spark_engine.check_store(st)
    check_metadata_version(default_metadata_version)
    fmt = check_format(metadata_storage_format)
    evolution = _evolution_arg(schema_evolution)
    base = _existing(st, uuid)
    pon, table_name = update_layout(base, uuid, partition_on, table_name)
    if base is not None:
        fmt = base.metadata.storage_format
    else:
        naming.validate_name(table_name, "table_name")
    sidx, all_idx = update_indices(base, pon, secondary_indices)
    if sdf is None and base is None:
        raise EmptyInputError(f"Dataset {uuid!r} does not exist and no data was given.")
    if sdf is None and delete_scope is None and metadata is None:
        raise EmptyInputError("Nothing to update: no data, no delete_scope, no metadata.")
    remove = delete_scope_labels(base, st, delete_scope) if base is not None else set()
    return _write_and_commit(
        sdf,
        st,
        uuid,
        base=base,
        partition_on=pon,
        secondary_indices=sidx,
        index_columns=all_idx,
        remove_labels=remove,
        metadata=_resolve_metadata(metadata, base.metadata.metadata if base else {}),
        serializer=serializer_arg(df_serializer),
        storage_format=fmt,
        table_name=table_name,
        sort_partitions_by=str_list(sort_partitions_by, "sort_partitions_by"),
        expect_absent=base is None,
        create_or_update=True,
        repartition=repartition,
        schema_evolution=evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


# -- cubes -------------------------------------------------------------------------------


def query_cube_sdf(
    spark: SparkSession,
    cube: Cube,
    store: StoreInput,
    conditions: ConditionsArg = None,
    dimension_columns: Iterable[str] | None = None,
    partition_by: Iterable[str] | None = None,
    payload_columns: Iterable[str] | None = None,
    datasets: Iterable[str] | None = None,
    *,
    sort: bool = True,
) -> DataFrame:
    """Query a cube as a Spark DataFrame, with :func:`kartoframe.query_cube`'s semantics.

    The cube is planned by kartoframe (metadata, needed indices, pruning, dataset
    alignment); Spark runs the plan's query groups with the join kernel of the other
    engines: the seed defines the cells, restrictive datasets are inner-joined, the others
    left-joined, appends overlay (last commit wins per cell), columns are alphabetical.

    Parameters
    ----------
    spark
        The SparkSession.
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
    from kartoframe.api.cube import plan_cube_query
    from kartoframe.execution.spark_cube import cube_plan_to_sdf

    spark_engine.require_pyspark()
    spark_engine.check_store(ensure_store(store))
    plan, st = plan_cube_query(
        cube,
        store,
        conditions=conditions,
        datasets=datasets,
        dimension_columns=dimension_columns,
        partition_by=partition_by,
        payload_columns=payload_columns,
    )
    return cube_plan_to_sdf(spark, plan, st, sort=sort)


def _cube_frames(data: object, cube: Cube) -> dict[str, DataFrame]:
    if data is None:
        return {}
    dct = data if isinstance(data, dict) else {cube.seed_dataset: data}
    out: dict[str, DataFrame] = {}
    for ds_id, sdf in dct.items():
        cube.ktk_dataset_uuid(ds_id)  # validates the id
        if sdf is not None:
            _check_sdf(sdf, f'the data of dataset "{ds_id}"')
        out[ds_id] = sdf
    return out


def _write_cube(
    operation: Operation,
    data: object,
    cube: Cube,
    store: StoreInput,
    *,
    metadata: object = None,
    overwrite: bool = False,
    partition_on: object = None,
    df_serializer: ParquetSerializer | None = None,
    remove_conditions: object = None,
    dataset_ids: object = None,
    repartition: bool = True,
    schema_evolution: object = "none",
    app_id: object = None,
    app_version: object = None,
    commit_info: object = None,
) -> dict[str, DatasetMetadataResult]:
    """Validate everything the schemas allow, plan, then let Spark write and commit."""
    from kartoframe.api.cube_write import CUBE_SERIALIZER, resolve_frame_operation
    from kartoframe.execution.spark_cube import write_cube_sdfs

    spark_engine.require_pyspark()
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    st = ensure_store(store)
    spark_engine.check_store(st)
    fw = resolve_frame_operation(
        cube,
        st,
        operation,
        _cube_frames(data, cube),
        partition_on=partition_on,
        overwrite=overwrite,
        metadata=metadata,
        dataset_ids=dataset_ids,
        remove_conditions=remove_conditions,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )
    if fw.complete:  # a retried step: every dataset already records the transaction
        return fw.handles(st, cube)

    def schema(ds_id: str, sdf: DataFrame) -> pa.Schema:
        base = fw.existing.get(ds_id) if operation in ("append", "update") else None
        return _conformed_schema(sdf, base.schema if base is not None else None)[0]

    inputs = fw.schema_inputs(cube, lambda sdf: sdf.columns, schema)
    plan = fw.plan(cube, operation, inputs, overwrite=overwrite)
    headers = write_cube_sdfs(
        st,
        plan,
        {k: v for k, v in fw.frames.items() if v is not None},
        serializer_arg(df_serializer or CUBE_SERIALIZER),
        repartition=repartition,
        require_rows=operation != "update",
    )
    return {
        **fw.handles(st, cube),
        **{k: DatasetMetadataResult(h.uuid, st) for k, h in headers.items()},
    }


def build_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    overwrite: bool = False,
    partition_on: Mapping[str, Iterable[str]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Build a cube from Spark DataFrames (a DataFrame for the seed, or ``{id: sdf}``).

    Everything the schemas allow is checked before Spark runs (columns, seed and
    dimension rules, payload ownership, the resulting cube); executors check the rows
    (NULLs in dimension/partition/index columns, duplicate cells within a task — with
    ``repartition`` every physical partition is written by one task) and write the
    files; the driver commits one dataset at a time, the seed last. On any failure no
    header changes and every file written is deleted.

    Parameters
    ----------
    data, cube, store, metadata, overwrite, partition_on, df_serializer
        As in :func:`kartoframe.build_cube`.
    repartition
        Hash-partition each DataFrame on its ``partition_on`` columns first (one file
        per physical partition and task; duplicate cells are then found across the
        whole input).
    app_id, app_version, commit_info
        As in :func:`kartoframe.build_cube`: every dataset commit records them, and a
        retried call whose datasets already record the transaction writes nothing.

    Returns
    -------
    dict
        Dataset id -> handle of the committed dataset.
    """
    return _write_cube(
        "build",
        data,
        cube,
        store,
        metadata=metadata,
        overwrite=overwrite,
        partition_on=partition_on,
        df_serializer=df_serializer,
        repartition=repartition,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def extend_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    overwrite: bool = False,
    partition_on: Mapping[str, Iterable[str]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Add (or with ``overwrite`` replace) non-seed datasets from Spark DataFrames.

    See :func:`kartoframe.extend_cube` and :func:`build_cube_from_sdf`.
    """
    return _write_cube(
        "extend",
        data,
        cube,
        store,
        metadata=metadata,
        overwrite=overwrite,
        partition_on=partition_on,
        df_serializer=df_serializer,
        repartition=repartition,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def append_to_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Append Spark DataFrames to existing cube datasets (newer rows win per cell).

    See :func:`kartoframe.append_to_cube` (``schema_evolution``) and
    :func:`build_cube_from_sdf` (``repartition``, ``app_id``, ``app_version``,
    ``commit_info``).
    """
    return _write_cube(
        "append",
        data,
        cube,
        store,
        metadata=metadata,
        df_serializer=df_serializer,
        repartition=repartition,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def update_cube_from_sdf(
    data: Any,
    cube: Cube,
    store: StoreInput,
    remove_conditions: ConditionsArg = None,
    ktk_cube_dataset_ids: Iterable[str] | None = None,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    *,
    repartition: bool = True,
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Remove partitions and append Spark DataFrames, one commit per dataset.

    See :func:`kartoframe.update_cube` (``schema_evolution``) and
    :func:`build_cube_from_sdf` (``repartition``, ``app_id``, ``app_version``,
    ``commit_info``).
    """
    return _write_cube(
        "update",
        data,
        cube,
        store,
        metadata=metadata,
        df_serializer=df_serializer,
        remove_conditions=remove_conditions,
        dataset_ids=ktk_cube_dataset_ids,
        repartition=repartition,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )
