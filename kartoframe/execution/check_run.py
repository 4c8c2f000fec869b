"""The dataset and cube checking engine behind ``kf.check_dataset`` and ``kf.check_cube``.

It walks the store (headers, log, footers, index and statistics files, with
:mod:`kartoframe.storage.probe`) and hands what it read to the pure comparisons of
:mod:`kartoframe.format.check`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa

from kartoframe.errors import DatasetNotFoundError, FormatError, StorageError, UnsafePathError
from kartoframe.format import naming, txlog
from kartoframe.format.check import (
    CheckReport,
    Finding,
    capped,
    file_schema_findings,
    index_findings,
    index_pairs,
    index_value_findings,
    sort_findings,
    statistics_findings,
    value_set,
)
from kartoframe.format.check_log import log_findings
from kartoframe.format.cube import SEPARATOR, dataset_ids_from_listing
from kartoframe.format.header import DatasetHeader
from kartoframe.format.index import index_from_bytes, index_from_embedded
from kartoframe.format.statistics import statistics_from_bytes
from kartoframe.format.statistics_rows import live_statistics
from kartoframe.storage import log
from kartoframe.storage.csv_files import is_csv_key, probe_csv_files
from kartoframe.storage.probe import fetch_many, read_data_files, read_footers
from kartoframe.storage.resolve import loaded_from_state, statistics_ref
from kartoframe.storage.store import Store

__all__ = ["check_dataset_files", "check_prefix"]


def check_dataset_files(store: Store, uuid: str, deep: bool, workers: int) -> CheckReport:
    """The report of one dataset (arguments validated by the caller)."""
    findings, files = _check_one(store, uuid, deep, workers)
    return CheckReport(uuid, "dataset", (uuid,), sort_findings(findings), files, deep)


def check_prefix(
    store: Store,
    prefix: str,
    deep: bool,
    workers: int,
    cube_rules: Callable[[], list[Finding]],
) -> CheckReport:
    """The report of every dataset under ``<prefix>++``; ``cube_rules`` adds the cube
    rule findings when no dataset has an error.
    """
    ids = dataset_ids_from_listing(prefix, store.iter_prefixes(prefix + SEPARATOR))
    findings: list[Finding] = []
    uuids: list[str] = []
    files = 0
    for ds_id in ids:
        uuid = f"{prefix}{SEPARATOR}{ds_id}"
        try:
            found, n = _check_one(store, uuid, deep, workers)
        except DatasetNotFoundError:  # deleted between the listing and the check
            continue
        uuids.append(uuid)
        findings += found
        files += n
    if not uuids:
        raise DatasetNotFoundError(f"{prefix}{SEPARATOR}*", store.display_url)
    if not any(f.severity == "error" for f in findings):
        findings += cube_rules()
    return CheckReport(prefix, "cube", tuple(uuids), sort_findings(findings), files, deep)


def _read_failed(uuid: str, key: str, e: BaseException, label: str | None = None) -> Finding:
    return Finding("error", "read_failed", uuid, f"Reading {key!r} failed: {e}", key, label)


def _check_one(store: Store, uuid: str, deep: bool, workers: int) -> tuple[list[Finding], int]:
    """Every finding of one dataset, and the number of data files looked at."""
    out: list[Finding] = []
    stored: DatasetHeader | None = None
    raw: bytes | None = None
    try:
        found = log.read_stored_header(store, uuid)
    except (FormatError, UnsafePathError) as e:
        fmt: naming.MetadataFormat = (
            "json" if store.exists(naming.header_key(uuid, "json")) else "msgpack"
        )
        out.append(
            Finding("error", "header_unreadable", uuid, str(e), naming.header_key(uuid, fmt))
        )
        found = None
        broken = True
    else:
        broken = False
        if found is not None:
            stored, raw = found
    try:
        state = log.current_state(store, uuid)
    except (FormatError, UnsafePathError):  # a broken entry or header: reported below
        state = log.State(None, stored, raw, None, None, None) if stored is not None else None
    if stored is None and not broken:
        if state is None or state.header is None:
            raise DatasetNotFoundError(uuid, store.display_url)
        out.append(
            Finding(
                "warning",
                "header_missing",
                uuid,
                f"The dataset has no header; its transaction log has version {state.version} "
                "(a writer stopped before writing the header): readers use the log, the next "
                "commit or vacuum_dataset writes the header.",
                naming.header_key(uuid, state.header.storage_format),
            )
        )
    out += _log_findings(store, uuid, stored, raw, workers)
    if state is None or state.header is None:
        return out, 0  # the current version deletes the dataset
    header = state.header
    schema: pa.Schema | None = None
    try:
        loaded = loaded_from_state(store, state)
        header, schema = loaded.metadata, loaded.schema
    except (FormatError, UnsafePathError) as e:
        key = naming.common_metadata_key(uuid, header.table_name)
        out.append(Finding("error", "schema_unreadable", uuid, str(e), key))
    except StorageError as e:
        out.append(_read_failed(uuid, naming.common_metadata_key(uuid, header.table_name), e))
    footer_rows = _data_file_findings(store, header, schema, workers, out)
    indices = _index_findings(store, header, schema, out)
    _statistics_findings(store, header, footer_rows, out)
    if deep:
        _deep_findings(store, header, indices, set(footer_rows), workers, out)
    return out, len(set(header.partitions.values()))


def _log_findings(
    store: Store, uuid: str, stored: DatasetHeader | None, raw: bytes | None, workers: int
) -> list[Finding]:
    versions, cps = log.list_log(store, uuid)
    entry_keys = {txlog.entry_key(uuid, v): v for v in versions}
    cp_keys = {txlog.checkpoint_key(uuid, v): v for v in cps}
    fetched = fetch_many(store, [*entry_keys, *cp_keys], max_workers=workers)
    out: list[Finding] = []
    entries: dict[int, txlog.LogEntry | Exception] = {}
    checkpoints: dict[int, txlog.Checkpoint | Exception] = {}
    for key, data in fetched.items():
        if data is None:
            continue  # removed since the listing (a vacuum)
        if isinstance(data, BaseException):
            out.append(_read_failed(uuid, key, data))
            continue
        try:
            if key in entry_keys:
                entries[entry_keys[key]] = txlog.decode_entry(data, uuid, entry_keys[key])
            else:
                checkpoints[cp_keys[key]] = txlog.decode_checkpoint(data, uuid, cp_keys[key])
        except (FormatError, UnsafePathError) as e:
            if key in entry_keys:
                entries[entry_keys[key]] = e
            else:
                checkpoints[cp_keys[key]] = e
    return out + log_findings(uuid, entries, checkpoints, stored, raw)


class _CsvFooter:
    """What :func:`_data_file_findings` reads from a footer, for a parsed CSV file."""

    def __init__(self, table: pa.Table) -> None:
        self.num_rows = table.num_rows
        self._schema = table.schema

    @property
    def schema(self) -> _CsvFooter:
        return self

    def to_arrow_schema(self) -> pa.Schema:
        return self._schema


def _data_file_findings(
    store: Store,
    header: DatasetHeader,
    schema: pa.Schema | None,
    workers: int,
    out: list[Finding],
) -> dict[str, int]:
    """Footer checks of every data file; returns label -> rows of the readable ones."""
    uuid = header.uuid
    keys = list(dict.fromkeys(header.partitions.values()))
    footers = read_footers(store, [k for k in keys if not is_csv_key(k)], max_workers=workers)
    # CSV files (plateau's CsvSerializer) have no footer: parsed whole, their row count and
    # the columns they hold play its part
    csv_files = probe_csv_files(
        store, [k for k in keys if is_csv_key(k)], schema, _CsvFooter, max_workers=workers
    )
    rows: dict[str, int] = {}
    missing: list[Finding] = []
    for label, key in header.partitions.items():
        got = csv_files[key] if is_csv_key(key) else footers[key]
        if isinstance(got, FileNotFoundError):
            missing.append(
                Finding(
                    "error",
                    "data_file_missing",
                    uuid,
                    f"Data file {key!r} of partition {label!r} does not exist.",
                    key,
                    label,
                )
            )
            continue
        if isinstance(got, StorageError):
            out.append(_read_failed(uuid, key, got, label))
            continue
        try:
            if isinstance(got, BaseException):
                raise got
            file_schema = got.schema.to_arrow_schema()
        except (OSError, ValueError, pa.ArrowException) as e:
            out.append(
                Finding(
                    "error",
                    "data_file_unreadable",
                    uuid,
                    f"Data file {key!r} of partition {label!r} is not a readable "
                    f"{'CSV' if is_csv_key(key) else 'Parquet'} file: {type(e).__name__}: {e}",
                    key,
                    label,
                )
            )
            continue
        rows[label] = got.num_rows
        if schema is not None:
            out += file_schema_findings(
                uuid, label, key, file_schema, schema, header.partition_keys
            )
    out += capped(missing, "data_file_missing", "missing data files")
    return rows


def _index_findings(
    store: Store, header: DatasetHeader, schema: pa.Schema | None, out: list[Finding]
) -> dict[str, tuple[str | None, pa.Table]]:
    """Index checks; returns column -> (index key, index table) of the readable indices."""
    uuid = header.uuid
    indices: dict[str, tuple[str | None, pa.Table]] = {}
    fetched = fetch_many(store, list(header.indices.values()))
    for col, key in header.indices.items():
        missing = f"Index file {key!r} of column {col!r} does not exist."
        idx = _decode(out, uuid, key, fetched[key], "index_file", missing, index_from_bytes, col)
        if idx is not None:
            indices[col] = (key, idx)
    for col, embedded in header.embedded_indices.items():
        t = schema.field(col).type if schema is not None and col in schema.names else pa.string()
        try:
            indices[col] = (None, index_from_embedded(col, t, embedded))
        except FormatError as e:
            out.append(Finding("error", "index_file_unreadable", uuid, str(e)))
    for col, (ikey, idx) in indices.items():
        out += index_findings(uuid, col, ikey, idx, header.partitions)
    return indices


def _decode(
    out: list[Finding],
    uuid: str,
    key: str,
    data: bytes | BaseException | None,
    kind: str,
    missing: str,
    decode: Callable[..., Any],
    *args: Any,
) -> Any:
    """``decode(data, *args)`` of a fetched side file, or None after adding its finding:
    ``<kind>_missing`` (``data`` None), ``read_failed`` or ``<kind>_unreadable``.
    """
    if data is None:
        out.append(Finding("error", f"{kind}_missing", uuid, missing, key))
    elif isinstance(data, BaseException):
        out.append(_read_failed(uuid, key, data))
    else:
        try:
            return decode(data, *args, origin=repr(key))
        except FormatError as e:
            out.append(Finding("error", f"{kind}_unreadable", uuid, str(e), key))
    return None


def _statistics_findings(
    store: Store, header: DatasetHeader, footer_rows: Mapping[str, int], out: list[Finding]
) -> None:
    uuid = header.uuid
    try:
        ref = statistics_ref(header)
    except UnsafePathError as e:
        out.append(Finding("error", "statistics_file_unreadable", uuid, str(e)))
        return
    if ref is None or ref.key is None:
        return
    fetched = fetch_many(store, list(ref.keys))
    tables = []
    for key in ref.keys:
        missing = (
            f"Statistics file {key!r} does not exist (rebuild it with build_dataset_statistics)."
        )
        table = _decode(
            out, uuid, key, fetched[key], "statistics_file", missing, statistics_from_bytes
        )
        if table is None:  # unreadable, or a newer layout this version cannot judge
            return
        tables.append(table)
    if len(tables) == 1:
        out += statistics_findings(uuid, ref.key, tables[0], header.partitions, footer_rows)
        return
    # with deltas, rows of files the header no longer lists are expected (never used):
    # judge the statistics the readers see
    live = live_statistics(tables, header.partitions)
    out += statistics_findings(uuid, ref.key, live, header.partitions, footer_rows)


def _deep_findings(
    store: Store,
    header: DatasetHeader,
    indices: Mapping[str, tuple[str | None, pa.Table]],
    readable: set[str],
    workers: int,
    out: list[Finding],
) -> None:
    """Decode every data page; compare each secondary index with its files' values."""
    uuid = header.uuid
    types = {col: idx.schema.field(col).type for col, (_, idx) in indices.items()}

    def _values(table: pa.Table) -> dict[str, set[Any]]:
        got: dict[str, set[Any]] = {}
        for col, t in types.items():
            if col in table.column_names:  # unsafe: sub-microsecond times as the index has them
                got[col] = value_set(table[col].cast(t, safe=False))
        return got

    labels = [lb for lb in header.partitions if lb in readable]
    keys = list(dict.fromkeys(header.partitions[lb] for lb in labels))
    decoded = read_data_files(
        store, [k for k in keys if not is_csv_key(k)], _values, max_workers=max(1, min(workers, 4))
    )
    decoded.update(
        probe_csv_files(
            store, [k for k in keys if is_csv_key(k)], pa.schema(types), _values, max_workers=4
        )
    )
    corrupt: list[Finding] = []
    for lb in labels:
        key = header.partitions[lb]
        got = decoded[key]
        if isinstance(got, BaseException):
            corrupt.append(
                Finding(
                    "error",
                    "data_file_corrupt",
                    uuid,
                    f"The data pages of file {key!r} of partition {lb!r} cannot be decoded: "
                    f"{type(got).__name__}: {got}",
                    key,
                    lb,
                )
            )
    out += capped(corrupt, "data_file_corrupt", "undecodable data files")
    for col, (ikey, idx) in indices.items():
        pairs = index_pairs(col, idx)
        found: list[Finding] = []
        for lb in labels:
            got = decoded[header.partitions[lb]]
            if isinstance(got, BaseException):
                continue
            found += index_value_findings(
                uuid,
                col,
                ikey,
                lb,
                header.partitions[lb],
                pairs.get(lb, set()),
                got.get(col, set()),
            )
        out += capped(found, "index_value_missing", f"partitions of index {col!r} that differ")
