"""Dataset statistics as dask graphs: Parquet footers and content hashes per partition."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from kartoframe.errors import MissingDependencyError

try:
    import dask.dataframe as dd
except ImportError as _error:  # pragma: no cover - exercised in a subprocess test
    raise MissingDependencyError("dask[dataframe]", "dask") from _error

from kartoframe.execution.dask_engine import no_string_conversion
from kartoframe.storage.csv_files import csv_file_sizes, is_csv_key
from kartoframe.storage.parquet import read_footer
from kartoframe.storage.store import Store

__all__ = [
    "METADATA_COLUMNS",
    "FooterReader",
    "hash_groups",
    "hash_partition",
    "metadata_ddf",
    "metadata_frame",
]

if TYPE_CHECKING:
    pass


#: Columns (and dtypes) of :func:`kartoframe.collect_dataset_metadata`.
METADATA_COLUMNS: dict[str, str] = {
    "partition_label": "object",
    "row_group_id": "int64",
    "row_group_compressed_size": "int64",
    "row_group_uncompressed_size": "int64",
    "number_rows_total": "int64",
    "number_row_groups": "int64",
    "serialized_size": "int64",
    "number_rows_per_row_group": "int64",
}


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def _label_dtype() -> Any:
    """``str`` under pandas 3, ``object`` before (what a column of Python strings gets)."""
    return pd.Series([""]).dtype


@dataclasses.dataclass(frozen=True)
class FooterReader:
    """Reads the Parquet footer of one data file into rows of :data:`METADATA_COLUMNS`."""

    store: Store
    token: str

    def __call__(self, part: tuple[str, str]) -> pd.DataFrame:
        """``part`` is ``(label, key)``; one row per row group of the file."""
        label, key = part
        rows: dict[str, list[Any]] = {c: [] for c in METADATA_COLUMNS}
        if is_csv_key(key):  # plateau's CsvSerializer: the whole file is one "row group"
            stored, uncompressed, n = csv_file_sizes(self.store, key)
            for c, v in [
                ("partition_label", label),
                ("row_group_id", 0),
                ("row_group_compressed_size", stored),
                ("row_group_uncompressed_size", uncompressed),
                ("number_rows_total", n),
                ("number_row_groups", 1),
                ("serialized_size", 0),
                ("number_rows_per_row_group", n),
            ]:
                rows[c].append(v)
            return metadata_frame(rows)
        md = read_footer(self.store, key)
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            rows["partition_label"].append(label)
            rows["row_group_id"].append(i)
            rows["row_group_compressed_size"].append(rg.total_byte_size)
            rows["row_group_uncompressed_size"].append(
                sum(rg.column(j).total_uncompressed_size for j in range(rg.num_columns))
            )
            rows["number_rows_total"].append(md.num_rows)
            rows["number_row_groups"].append(md.num_row_groups)
            rows["serialized_size"].append(md.serialized_size)
            rows["number_rows_per_row_group"].append(rg.num_rows)
        return metadata_frame(rows)

    def __dask_tokenize__(self) -> tuple[str, str]:
        return (type(self).__name__, self.token)


def metadata_frame(rows: Mapping[str, Sequence[Any]] | None = None) -> pd.DataFrame:
    """A frame with :data:`METADATA_COLUMNS` (empty if ``rows`` is None)."""
    data = rows or {c: [] for c in METADATA_COLUMNS}
    return pd.DataFrame(
        {
            c: pd.Series(list(data[c]), dtype=_label_dtype() if t == "object" else t)
            for c, t in METADATA_COLUMNS.items()
        }
    )


def metadata_ddf(store: Store, parts: Sequence[tuple[str, str]], token: str) -> Any:
    """A dask DataFrame of footer statistics, one partition per data file."""
    with no_string_conversion():
        if not parts:
            return dd.from_pandas(metadata_frame(), npartitions=1)
        return dd.from_map(
            FooterReader(store, token),
            list(parts),
            meta=metadata_frame(),
            label="kartoframe-metadata",
            enforce_metadata=False,
        )


def hash_partition(df: pd.DataFrame, subset: Sequence[str]) -> pd.Series:
    """The ``uint64`` hash of one partition: sum of the row hashes of ``subset``."""
    total = pd.util.hash_pandas_object(df[list(subset)], index=False).sum()
    return pd.Series([total], dtype="uint64")


def hash_groups(df: pd.DataFrame, group_key: Sequence[str], subset: Sequence[str]) -> pd.Series:
    """Per-group ``uint64`` hashes (sum of row hashes of ``subset``), indexed by the group."""
    keys = list(group_key)
    if len(df) == 0:
        index = pd.MultiIndex.from_frame(df[keys]) if len(keys) > 1 else pd.Index(df[keys[0]])
        return pd.Series([], index=index, dtype="uint64")
    hashes = pd.util.hash_pandas_object(df[list(subset)], index=False)
    grouped = hashes.groupby([df[k] for k in keys], sort=True, observed=True, dropna=False).sum()
    return grouped.astype("uint64")
