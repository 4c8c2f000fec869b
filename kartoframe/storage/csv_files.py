"""CSV data files, as Kartothek's and plateau's ``CsvSerializer`` writes them.

Format (plateau 4.6.2): ``pandas.DataFrame.to_csv(index=False, sep=";")``, UTF-8, a
header row, gzip-compressed by default; the key ends in ``.csv.gz`` (``.csv`` when not
compressed) instead of ``.parquet``. Partition columns are in the path, not in the file.

Reading uses pyarrow's CSV reader typed by the dataset schema (plateau's reader lets
pandas guess the types, so timestamps come back as strings there): an empty field is a
null, as ``pandas.read_csv`` reads it.
"""

from __future__ import annotations

import dataclasses
import gzip
from collections.abc import Callable, Sequence
from typing import TypeVar, Unpack

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as ds

from kartoframe.errors import (
    CorruptDataError,
    InvalidTypeError,
    KartoframeError,
    MissingDataFileError,
    SchemaError,
)
from kartoframe.format.arrow_memory import reader
from kartoframe.format.naming import PARQUET_SUFFIX
from kartoframe.storage.io_map import thread_map
from kartoframe.storage.parquet import (
    ScanOptions,
    data_key_location,
    empty_table,
    read_files,
    scan_arguments,
)
from kartoframe.storage.store import Store

__all__ = [
    "CSV_SUFFIXES",
    "CsvSerializer",
    "csv_file_sizes",
    "csv_file_table",
    "csv_key",
    "is_csv_key",
    "probe_csv_files",
    "read_csv_files",
    "read_data_files",
    "write_csv",
]

T = TypeVar("T")

CSV_SUFFIXES = (".csv", ".csv.gz")
SEPARATOR = ";"


@dataclasses.dataclass(frozen=True, slots=True)
class CsvSerializer:
    """Write data files as CSV (plateau's and Kartothek's ``CsvSerializer``).

    For datasets that must stay readable by tools expecting CSV files; Parquet
    (:class:`kartoframe.ParquetSerializer`, the default) is smaller, typed and faster.
    Files are ``;``-separated with a header row, written by pandas as plateau does, and
    readable by plateau and kartothek.

    Parameters
    ----------
    compress
        gzip the files (``.csv.gz``; default, as plateau), else plain ``.csv``.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> url = "memory://csv-example"
    >>> df = pd.DataFrame({"p": [1, 2], "x": [0.5, 1.5]})
    >>> _ = kf.store_dataframes_as_dataset(
    ...     url, "ds", [df], partition_on=["p"], df_serializer=kf.CsvSerializer(compress=False)
    ... )
    >>> sorted(kf.read_dataset_metadata("ds", url).partitions.values())[0].endswith(".csv")
    True
    >>> kf.read_table("ds", url)["x"].tolist()
    [0.5, 1.5]
    """

    compress: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.compress, bool):
            raise InvalidTypeError(f"compress must be a bool, got {self.compress!r}.")


def is_csv_key(key: str) -> bool:
    """Whether a data key names a CSV file (``.csv`` or ``.csv.gz``)."""
    return key.endswith(CSV_SUFFIXES)


def csv_key(parquet_key: str, serializer: CsvSerializer) -> str:
    """The CSV key of a data key (``….parquet`` -> ``….csv.gz`` / ``….csv``)."""
    base = (
        parquet_key[: -len(PARQUET_SUFFIX)] if parquet_key.endswith(PARQUET_SUFFIX) else parquet_key
    )
    return base + (".csv.gz" if serializer.compress else ".csv")


def write_csv(store: Store, key: str, table: pa.Table, serializer: CsvSerializer) -> int:
    """Write a table as one CSV object (as plateau does); return its size in bytes.

    Raises
    ------
    SchemaError
        A column has a type CSV cannot hold (lists, structs, maps, binary).
    """
    bad = [
        f.name
        for f in table.schema
        if pa.types.is_nested(f.type)
        or pa.types.is_binary(f.type)
        or pa.types.is_large_binary(f.type)
    ]
    if bad:
        raise SchemaError(
            f"CsvSerializer cannot store the columns {bad} (nested or binary values); "
            "use the ParquetSerializer."
        )
    df = table.to_pandas(coerce_temporal_nanoseconds=True)
    data = df.to_csv(index=False, sep=SEPARATOR).encode("utf-8")
    if serializer.compress:
        data = gzip.compress(data, mtime=0)
    store.put(key, data)
    return len(data)


def _parse_options() -> pacsv.ParseOptions:
    return pacsv.ParseOptions(delimiter=SEPARATOR, newlines_in_values=True)


def _convert_options(schema: pa.Schema | None) -> pacsv.ConvertOptions:
    """Columns typed by ``schema`` where it names them with a type other than null."""
    types = (
        {} if schema is None else {f.name: f.type for f in schema if not pa.types.is_null(f.type)}
    )
    return pacsv.ConvertOptions(column_types=types, strings_can_be_null=True)


def _csv_format(schema: pa.Schema) -> ds.CsvFileFormat:
    return ds.CsvFileFormat(
        parse_options=_parse_options(),
        convert_options=_convert_options(schema),
        read_options=pacsv.ReadOptions(encoding="utf8"),
    )


def read_csv_files(
    store: Store, keys: Sequence[str], schema: pa.Schema, **options: Unpack[ScanOptions]
) -> pa.Table:
    """Read CSV objects as one table with the dataset ``schema`` (as
    :func:`kartoframe.storage.parquet.read_files` reads Parquet).

    Raises
    ------
    MissingDataFileError
        A key does not exist.
    CorruptDataError
        A file cannot be parsed with the dataset's types.
    """
    exprs, cols, filter, use_threads = scan_arguments(schema, keys, options)
    fmt = _csv_format(schema)
    fragments = []
    for key, e in zip(keys, exprs, strict=True):
        uuid, partition = data_key_location(key)
        where = {"dataset_uuid": uuid, "partition": partition, "key": key}
        try:
            data = store.get(key)
        except FileNotFoundError as err:
            raise MissingDataFileError(
                f"Data file {key!r} of dataset {uuid!r} in {store.display_url} is "
                "missing: the header references it but the store has no such object.",
                **where,
            ) from err
        try:
            if key.endswith(".gz"):
                data = gzip.decompress(data)
            dataset = ds.FileSystemDataset(
                [fmt.make_fragment(reader(data), partition_expression=e)], schema, fmt
            )
            fragments.append(dataset.to_table(columns=cols, filter=filter, use_threads=use_threads))
        except KartoframeError:
            raise
        except (pa.ArrowException, OSError, EOFError, ValueError) as err:
            if isinstance(err, pa.ArrowInvalid) and "Empty CSV file" in str(err):
                fragments.append(empty_table(schema, cols))  # a frame without columns or rows
                continue
            raise CorruptDataError(
                f"Data file {key!r} of dataset {uuid!r} in {store.display_url} cannot be "
                f"read as CSV with the dataset's schema: {type(err).__name__}: {err}",
                **where,
            ) from err
    if not fragments:
        return empty_table(schema, cols)
    return pa.concat_tables(fragments)


def read_data_files(
    store: Store, keys: Sequence[str], schema: pa.Schema, **options: Unpack[ScanOptions]
) -> pa.Table:
    """Read data files of either format as one table, in order.

    Parquet files (all of them, in datasets that hold no CSV) go to one multi-threaded
    Parquet scan; runs of CSV files to :func:`read_csv_files`.
    """
    if not any(is_csv_key(k) for k in keys):
        return read_files(store, keys, schema, **options)
    pvs = options.get("partition_values") or [()] * len(keys)
    tables = []
    start = 0
    while start < len(keys):
        csv = is_csv_key(keys[start])
        end = start
        while end < len(keys) and is_csv_key(keys[end]) == csv:
            end += 1
        read = read_csv_files if csv else read_files
        run: ScanOptions = {**options, "partition_values": pvs[start:end]}
        tables.append(read(store, keys[start:end], schema, **run))
        start = end
    return pa.concat_tables(tables)


def csv_file_table(data: bytes, key: str, schema: pa.Schema | None) -> pa.Table:
    """Parse one CSV object as a table of the columns it holds (typed by ``schema`` where
    it names them; inferred otherwise): what a footer is to a Parquet file.
    """
    if key.endswith(".gz"):
        data = gzip.decompress(data)
    try:
        return pacsv.read_csv(
            reader(data), parse_options=_parse_options(), convert_options=_convert_options(schema)
        )
    except pa.ArrowInvalid as e:
        if "Empty CSV file" in str(e):
            return pa.table({})
        raise


def probe_csv_files(
    store: Store,
    keys: Sequence[str],
    schema: pa.Schema | None,
    reduce: Callable[[pa.Table], T],
    *,
    max_workers: int = 4,
) -> dict[str, T | BaseException]:
    """Each CSV object parsed (:func:`csv_file_table`) and reduced, or its error
    (``FileNotFoundError`` when missing): for :func:`kartoframe.check_dataset`.
    """

    def _one(key: str) -> T | BaseException:
        try:
            return reduce(csv_file_table(store.get(key), key, schema))
        except (OSError, EOFError, ValueError, pa.ArrowException) as e:
            return e

    return dict(zip(keys, thread_map(_one, keys, max_workers)))


def csv_file_sizes(store: Store, key: str) -> tuple[int, int, int]:
    """``(stored bytes, uncompressed bytes, rows)`` of one CSV object (the numbers
    :func:`kartoframe.collect_dataset_metadata` reports for a Parquet file's one row group).
    """
    data = store.get(key)
    raw = gzip.decompress(data) if key.endswith(".gz") else data
    return len(data), len(raw), csv_file_table(raw, key.removesuffix(".gz"), None).num_rows
