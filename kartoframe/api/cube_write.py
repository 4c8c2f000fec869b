"""Eager cube writes: build, extend, append, update and remove partitions (kartothek 5.3 names)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd
import pyarrow as pa

from kartoframe.api._args import StoreInput, ensure_store, serializer_arg
from kartoframe.api.cube import _checked, load_cube_datasets
from kartoframe.api.write import DatasetMetadataResult, _already_committed, _evolution_arg
from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.cube_write import commit_all, write_plan_files
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.commit_args import (
    CommitOptions,
    check_app_transaction,
    check_commit_info,
)
from kartoframe.format.cube import (
    CUBE_COMPRESSION,
    Cube,
    dataset_columns,
    payload_subset,
    str_tuple,
)
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.schema import SchemaEvolution
from kartoframe.plan.conditions import ConditionsArg, Conjunction
from kartoframe.plan.cube_write import (
    CubeWritePlan,
    InputData,
    Operation,
    check_frame_columns,
    check_metadata,
    check_removal_conditions,
    check_user_frame,
    normalize_columns,
    normalize_input,
    plan_write,
    prepare_frame,
    prepare_partition_on,
)
from kartoframe.storage.store import Store

if TYPE_CHECKING:
    pass


__all__ = [
    "append_to_cube",
    "build_cube",
    "extend_cube",
    "remove_partitions",
    "update_cube",
]


#: The data file serializer of cube writes (kartothek's ``KTK_CUBE_DF_SERIALIZER``).
CUBE_SERIALIZER = ParquetSerializer(compression=CUBE_COMPRESSION)


def _concat(frames: list[Any]) -> Any:
    frames = [f for f in frames if f is not None]
    for f in frames:
        if not isinstance(f, pd.DataFrame):
            check_user_frame("", f)
    if not frames:
        return None
    if len(frames) == 1:
        return frames[0]
    return pd.concat([normalize_columns(f) for f in frames], ignore_index=True)


def prepare_inputs(
    cube: Cube,
    data: Mapping[str, Any],
    partition_on: Mapping[str, tuple[str, ...]],
    existing_payload: set[str],
) -> dict[str, InputData | None]:
    """Check and prepare every dataset's rows (eager writes)."""
    out: dict[str, InputData | None] = {}
    for ds_id in sorted(data):
        df = data[ds_id]
        check_user_frame(ds_id, df)
        if df is None:
            out[ds_id] = None
            continue
        df = normalize_columns(df)
        check_frame_columns(
            ds_id, [str(c) for c in df.columns], cube, existing_payload, partition_on[ds_id]
        )
        if df.empty:
            out[ds_id] = None
            continue
        table = prepare_frame(ds_id, df, cube, partition_on[ds_id])
        out[ds_id] = InputData(table.schema, table)
    return out


def execute_write(
    store: Store, plan: CubeWritePlan, serializer: ParquetSerializer
) -> dict[str, DatasetMetadataResult]:
    """Write files, then commit dataset by dataset (seed last), undoing on failure."""
    chunks = write_plan_files(store, plan, serializer)
    headers = commit_all(store, plan, dict(chunks))
    return {ds_id: DatasetMetadataResult(h.uuid, store) for ds_id, h in headers.items()}


class FrameWrite(NamedTuple):
    """The resolved arguments of a cube write (eager, dask or Spark)."""

    touched: set[str] | None
    metadata: dict[str, dict[str, Any]]
    conditions: Any
    partition_on: dict[str, tuple[str, ...]]
    existing: dict[str, LoadedDataset]
    payload: set[str]
    #: the data to write, without the datasets ``done`` already holds
    frames: dict[str, Any]
    #: datasets that already record the application transaction (an earlier attempt)
    done: frozenset[str] = frozenset()
    schema_evolution: SchemaEvolution = "none"
    app_id: str | None = None
    app_version: int | None = None
    commit_info: dict[str, Any] | None = None

    def plan(
        self,
        cube: Cube,
        operation: Operation,
        inputs: Mapping[str, InputData | None],
        *,
        overwrite: bool,
    ) -> CubeWritePlan:
        """Plan the write of the prepared ``inputs`` (rows or schemas) under these rules."""
        return plan_write(
            cube,
            operation,
            inputs,
            existing=self.existing,
            partition_on=self.partition_on,
            metadata=self.metadata,
            overwrite=overwrite,
            remove_conditions=self.conditions,
            touched=self.touched,
            schema_evolution=self.schema_evolution,
            done=self.done,
            app_id=self.app_id,
            app_version=self.app_version,
            commit_info=self.commit_info,
        )

    def schema_inputs(
        self,
        cube: Cube,
        columns: Callable[[Any], Iterable[str]],
        schema: Callable[[str, Any], pa.Schema],
    ) -> dict[str, InputData | None]:
        """Check the columns of lazy frames (dask, Spark) and describe them by schema.

        ``columns(frame)`` names a frame's columns, ``schema(dataset_id, frame)`` gives its
        Arrow schema; the rows are checked later, where the engine writes them.
        """
        inputs: dict[str, InputData | None] = {}
        for ds_id in sorted(self.frames):
            frame = self.frames[ds_id]
            if frame is None:
                inputs[ds_id] = None
                continue
            if ds_id in self.partition_on:
                cols = [str(c) for c in columns(frame)]
                check_frame_columns(ds_id, cols, cube, self.payload, self.partition_on[ds_id])
            inputs[ds_id] = InputData(schema(ds_id, frame), None)
        return inputs

    @property
    def complete(self) -> bool:
        """Every dataset of the operation is done: a retried step, nothing to write."""
        return bool(self.done) and not self.frames and not self.touched

    def handles(self, store: Store, cube: Cube) -> dict[str, DatasetMetadataResult]:
        """Handles of the datasets an earlier attempt already committed."""
        return {
            i: DatasetMetadataResult(cube.ktk_dataset_uuid(i), store) for i in sorted(self.done)
        }


def resolve_frame_operation(
    cube: Cube,
    st: Store,
    operation: Operation,
    frames: Mapping[str, Any],
    *,
    partition_on: object,
    overwrite: bool,
    metadata: object,
    dataset_ids: object,
    remove_conditions: object,
    schema_evolution: object = "none",
    app_id: object = None,
    app_version: object = None,
    commit_info: object = None,
) -> FrameWrite:
    """The argument and operation rules of a cube write, before any data is looked at.

    Checks the dataset ids an update or removal touches, the metadata and the removal
    conditions, then raises for a missing seed (build), a seed written by extend, and
    unknown datasets (append); returns what the write needs.

    With ``app_id``/``app_version``, datasets that already record that transaction (or a
    later version) are *done*: a retried step whose every dataset is done writes nothing
    (``complete``); after a crash between two dataset commits the retry writes only the
    datasets still missing, so no rows are appended twice.
    """
    txn_id, txn_version = check_app_transaction(app_id, app_version)
    evolution = _evolution_arg(schema_evolution)
    if evolution != "none" and operation not in ("append", "update"):
        raise InvalidInputError(
            "schema_evolution applies to appends and updates of a cube; "
            f"{operation} defines the schemas."
        )
    info = check_commit_info(commit_info)

    def result(**kwargs: Any) -> FrameWrite:
        return FrameWrite(
            schema_evolution=evolution,
            app_id=txn_id,
            app_version=txn_version,
            commit_info=info,
            **kwargs,
        )

    touched: set[str] | None = None
    if operation in ("update", "remove"):
        touched = set(str_tuple(dataset_ids, "ktk_cube_dataset_ids", ordered=False))
        if dataset_ids is None:
            touched = set(frames) if operation == "update" else None
    conds = None
    if operation == "remove" or (operation == "update" and remove_conditions is not None):
        conds = check_removal_conditions(cube, remove_conditions)
    if operation in ("build", "extend"):
        if operation == "build":
            existing = load_cube_datasets(st, cube.uuid_prefix)
        else:
            existing = _checked(cube, st)
    else:
        existing = _checked(cube, st)
        if operation == "remove" and touched is None:
            touched = set(existing)
    meta = check_metadata(metadata, set(frames) | (touched or set()))
    done = _done(st, cube, set(frames) | (touched or set()), txn_id, txn_version)
    frames = {k: v for k, v in frames.items() if k not in done}
    if done:
        if isinstance(partition_on, Mapping):
            partition_on = {k: v for k, v in partition_on.items() if k not in done}
        meta = {k: v for k, v in meta.items() if k not in done}
        touched = None if touched is None else touched - done
        if not frames and not touched:
            return result(
                touched=touched,
                metadata=meta,
                conditions=conds,
                partition_on={},
                existing=existing,
                payload=set(),
                frames={},
                done=done,
            )
    payload: set[str] = set()
    if operation == "build":
        pon = prepare_partition_on(cube, frames, partition_on)
        if cube.seed_dataset not in frames:
            raise InvalidInputError(f'Seed data ("{cube.seed_dataset}") is missing.')
    elif operation == "extend":
        pon = prepare_partition_on(cube, frames, partition_on)
        if cube.seed_dataset in frames:
            raise InvalidInputError(
                f'Seed data ("{cube.seed_dataset}") cannot be written during extension.'
            )
        for k, v in existing.items():
            if not (overwrite and k in frames):
                payload |= payload_subset(dataset_columns(v.schema), cube)
    else:
        unknown = sorted(set(frames) - set(existing))
        if unknown and operation == "append":
            raise InvalidInputError(f"Unknown / non-existing datasets: {', '.join(unknown)}")
        pon = {k: tuple(v.metadata.partition_keys) for k, v in existing.items()}
    return result(
        touched=touched,
        metadata=meta,
        conditions=conds,
        partition_on=pon,
        existing=existing,
        payload=payload,
        frames=frames,
        done=done,
    )


def _done(
    st: Store, cube: Cube, ids: set[str], app_id: str | None, app_version: int | None
) -> frozenset[str]:
    """The datasets among ``ids`` that already record the application transaction."""
    if app_id is None or not ids:
        return frozenset()
    ordered = sorted(ids)
    uuids = [cube.ktk_dataset_uuid(i) for i in ordered]
    with ThreadPoolExecutor(max_workers=min(8, len(ordered))) as pool:
        commit = CommitOptions(app_id, app_version)
        flags = list(pool.map(lambda u: _already_committed(st, u, commit), uuids))
    return frozenset(i for i, f in zip(ordered, flags) if f)


def _write(
    operation: Operation,
    data: object,
    cube: Cube,
    store: StoreInput,
    *,
    metadata: object,
    overwrite: bool = False,
    partition_on: object = None,
    df_serializer: ParquetSerializer | None = None,
    remove_conditions: object = None,
    dataset_ids: object = None,
    schema_evolution: object = "none",
    app_id: object = None,
    app_version: object = None,
    commit_info: object = None,
) -> dict[str, DatasetMetadataResult]:
    if not isinstance(cube, Cube):
        raise InvalidTypeError(f"cube must be a kartoframe.Cube, got {type(cube).__name__}.")
    st = ensure_store(store)
    raw = normalize_input(data, cube) if data is not None else {}
    fw = resolve_frame_operation(
        cube,
        st,
        operation,
        {k: _concat(v) for k, v in raw.items()},
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
    if fw.complete:
        return fw.handles(st, cube)
    inputs = prepare_inputs(cube, fw.frames, fw.partition_on, fw.payload)
    plan = fw.plan(cube, operation, inputs, overwrite=overwrite)
    out = execute_write(st, plan, serializer_arg(df_serializer or CUBE_SERIALIZER))
    return {**fw.handles(st, cube), **out}


def build_cube(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    overwrite: bool = False,
    partition_on: Mapping[str, Iterable[str]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Create a cube: the seed and any other datasets, in one operation.

    Parameters
    ----------
    data
        A DataFrame (the seed), a dict ``{dataset_id: DataFrame}``, or a list of those
        (concatenated per dataset).
    cube
        The cube spec.
    store
        Store URL, :class:`kartoframe.Store` or factory.
    metadata
        ``{dataset_id: {key: value}}`` user metadata per dataset.
    overwrite
        Replace an existing cube; every existing dataset must then be rewritten.
    partition_on
        ``{dataset_id: [columns]}`` for non-seed datasets (default: the cube partition
        columns; the seed's are fixed).
    df_serializer
        Default: ZSTD Parquet.
    app_id, app_version
        Application transaction (both or neither): every dataset commit records it, and
        a retried call whose datasets already record ``app_version`` (or a later one)
        for ``app_id`` writes nothing; after a crash between dataset commits the retry
        writes only the datasets still missing.
    commit_info
        A JSON-serialisable dict recorded with each dataset's commit.

    Returns
    -------
    dict
        Dataset id -> handle of the committed dataset.

    Raises
    ------
    InvalidInputError, InvalidTypeError, SchemaError, DatasetExistsError, EmptyInputError
        Any rule of the cube write path; nothing is written then.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> cube = kf.Cube(["COUNTRY_CODE"], ["YEAR"], uuid_prefix="docs_build")
    >>> df = pd.DataFrame({"COUNTRY_CODE": ["DE", "FR"], "YEAR": [2024, 2024],
    ...                    "SALES": [10.0, 20.0]})
    >>> sorted(kf.build_cube(df, cube, "memory://docs-build"))
    ['seed']
    """
    return _write(
        "build",
        data,
        cube,
        store,
        metadata=metadata,
        overwrite=overwrite,
        partition_on=partition_on,
        df_serializer=df_serializer,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def extend_cube(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    overwrite: bool = False,
    partition_on: Mapping[str, Iterable[str]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Add (or with ``overwrite`` replace) non-seed datasets of an existing cube.

    ``data`` is a dict ``{dataset_id: DataFrame}`` (or a list of those). Payload columns
    must not exist in other datasets (except in datasets being replaced, so
    ``overwrite=True`` can move columns). Other parameters as in :func:`build_cube`.
    """
    return _write(
        "extend",
        data,
        cube,
        store,
        metadata=metadata,
        overwrite=overwrite,
        partition_on=partition_on,
        df_serializer=df_serializer,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def append_to_cube(
    data: Any,
    cube: Cube,
    store: StoreInput,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Add rows to existing datasets (no removal): newer rows win per cell at query time.

    ``partition_on`` is taken from the stored datasets and all their secondary indices are
    maintained.

    Parameters
    ----------
    schema_evolution
        ``"add_columns"``: the rows may add nullable payload columns (and safe
        widenings) to their dataset, recorded as schema events; older files read the new
        columns as nulls. Default ``"none"``: the stored schemas must match.
    app_id, app_version, commit_info, metadata, df_serializer
        As in :func:`build_cube`.
    """
    return _write(
        "append",
        data,
        cube,
        store,
        metadata=metadata,
        df_serializer=df_serializer,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def update_cube(
    data: Any,
    cube: Cube,
    store: StoreInput,
    remove_conditions: ConditionsArg = None,
    ktk_cube_dataset_ids: Iterable[str] | None = None,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    df_serializer: ParquetSerializer | None = None,
    schema_evolution: SchemaEvolution = "none",
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Remove partitions and append rows, in one commit per dataset.

    Parameters
    ----------
    data
        Rows to append (a frame for the seed, a dict, a list, or None).
    remove_conditions
        Conditions on cube partition columns selecting the partitions to remove from
        every touched dataset (None: remove nothing).
    ktk_cube_dataset_ids
        Datasets to touch (default: those in ``data``); data for other ids is refused.
    metadata, df_serializer
        As in :func:`build_cube`.
    schema_evolution
        ``"add_columns"``: the rows may add nullable payload columns (and safe
        widenings) to their dataset, recorded as schema events; older files read the new
        columns as nulls. Default ``"none"``: the stored schemas must match.
    app_id, app_version
        Application transaction (both or neither): every dataset commit records it, and
        a retried call whose datasets already record ``app_version`` (or a later one)
        for ``app_id`` writes nothing; after a crash between dataset commits the retry
        writes only the datasets still missing.
    commit_info
        A JSON-serialisable dict recorded with each dataset's commit.
    """
    return _write(
        "update",
        data,
        cube,
        store,
        metadata=metadata,
        df_serializer=df_serializer,
        remove_conditions=remove_conditions,
        dataset_ids=ktk_cube_dataset_ids,
        schema_evolution=schema_evolution,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )


def remove_partitions(
    cube: Cube,
    store: StoreInput,
    conditions: ConditionsArg = None,
    ktk_cube_dataset_ids: Iterable[str] | None = None,
    metadata: Mapping[str, Mapping[str, Any]] | None = None,
    app_id: str | None = None,
    app_version: int | None = None,
    commit_info: Mapping[str, Any] | None = None,
) -> dict[str, DatasetMetadataResult]:
    """Remove the physical partitions selected by conditions on cube partition columns.

    A dataset without partition keys (or not partitioned by the condition's columns) loses
    all its partitions, as in kartothek; ``conditions=None`` removes everything.

    Parameters
    ----------
    conditions
        Conditions on cube partition columns only.
    ktk_cube_dataset_ids
        Datasets to touch (default: all).
    metadata
        ``{dataset_id: {key: value}}``: keys to set (none can be deleted).
    app_id, app_version
        Application transaction (both or neither): every dataset commit records it, and
        a retried call whose datasets already record ``app_version`` (or a later one)
        for ``app_id`` writes nothing; after a crash between dataset commits the retry
        writes only the datasets still missing.
    commit_info
        A JSON-serialisable dict recorded with each dataset's commit.
    """
    return _write(
        "remove",
        None,
        cube,
        store,
        metadata=metadata,
        remove_conditions=Conjunction(conditions),
        dataset_ids=ktk_cube_dataset_ids,
        app_id=app_id,
        app_version=app_version,
        commit_info=commit_info,
    )
