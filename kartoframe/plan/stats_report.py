"""Pure parts of the statistics functions: the per-file report and the bloom-filter choice."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pyarrow as pa

from kartoframe.errors import ColumnNotFoundError, InvalidInputError
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.header import DatasetHeader
from kartoframe.format.statistics import bloom_type_supported, merge_statistics
from kartoframe.plan.pruning import partition_values_table

__all__ = ["bloom_columns_arg", "current_statistics", "statistics_frame"]

_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.uint64(): pd.UInt64Dtype(),
    pa.bool_(): pd.BooleanDtype(),
}


def current_statistics(loaded: LoadedDataset, blooms: Sequence[str]) -> pa.Table:
    """The usable statistics rows of a loaded dataset, in header order."""
    md = loaded.metadata
    return merge_statistics(
        loaded.statistics, [], md.partitions, loaded.schema, md.partition_keys, list(blooms)
    )


def statistics_frame(
    loaded: LoadedDataset, wanted: Sequence[str], blooms: Sequence[str]
) -> pd.DataFrame:
    """The report of ``kf.dataset_statistics``: one row per partition (see there)."""
    md, schema = loaded.metadata, loaded.schema
    missing = [c for c in wanted if c not in schema.names]
    if missing:
        raise ColumnNotFoundError(f"Columns {missing} are not in dataset {md.uuid!r}.")
    labels = list(md.partitions)
    stats = current_statistics(loaded, blooms)
    row_of = {lb: i for i, lb in enumerate(stats.column("label").to_pylist())}
    take = pa.array([row_of.get(lb) for lb in labels], type=pa.int64())
    rows = stats.take(take)
    out: dict[str, pa.Array | pa.ChunkedArray] = {
        "label": pa.array(labels, type=pa.string()),
        "file": pa.array([md.partitions[lb] for lb in labels], type=pa.string()),
        "rows": rows.column("rows"),
        "bytes": rows.column("bytes"),
        "has_statistics": pa.array([lb in row_of for lb in labels], type=pa.bool_()),
    }
    pk = list(md.partition_keys)
    keys = partition_values_table(labels, pk, schema) if pk else None
    for c in wanted:
        if keys is not None and c in pk:
            out[f"{c}.min"] = keys.column(c)
            out[f"{c}.max"] = keys.column(c)
            out[f"{c}.nulls"] = pa.array([0] * len(labels), type=pa.int64())
            continue
        for group, suffix in (("min", "min"), ("max", "max"), ("null_count", "nulls")):
            if group in rows.column_names:
                struct = rows.column(group).combine_chunks()
                if struct.type.get_field_index(c) >= 0:
                    out[f"{c}.{suffix}"] = struct.field(c)
    return pa.table(out).to_pandas(types_mapper=_PANDAS_TYPES.get)


def bloom_columns_arg(md: DatasetHeader, schema: pa.Schema, blooms: Sequence[str]) -> None:
    """Check the bloom-filter columns of ``kf.build_dataset_statistics``.

    Raises
    ------
    ColumnNotFoundError
        A column is not in the dataset.
    InvalidInputError
        A column is a partition key or has an unsupported type.
    """
    missing = [c for c in blooms if c not in schema.names]
    if missing:
        raise ColumnNotFoundError(f"Bloom-filter columns {missing} are not in {md.uuid!r}.")
    for c in blooms:
        if c in md.partition_keys:
            raise InvalidInputError(f"Column {c!r} is a partition key; it needs no bloom filter.")
        if not bloom_type_supported(schema.field(c).type):
            raise InvalidInputError(
                f"Column {c!r} of type {schema.field(c).type} cannot have a bloom filter "
                "(integer, string, binary, date and timestamp columns can)."
            )
