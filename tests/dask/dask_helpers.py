"""Helpers shared by the dask tests (imported by name; tests/ is not a package)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

import kartoframe as kf
from kartoframe.format import naming


def sales(n: int = 12, offset: int = 0) -> pd.DataFrame:
    """Partition key ``country``, index ``product``, a nullable string ``note``."""
    i = np.arange(offset, offset + n)
    return pd.DataFrame(
        {
            "country": np.array(["DE", "FR", "IT"])[i % 3],
            "product": (i % 4).astype("int64"),
            "units": i.astype("int64"),
            "note": pd.array([None if j % 4 == 1 else f"n{j % 3}" for j in i], dtype="str"),
        }
    )


def write_sales(store: kf.Store, uuid: str = "ds", chunks: int = 3, **kw: object) -> pd.DataFrame:
    """Write ``chunks`` frames of :func:`sales` (12 rows each) eagerly; return all rows."""
    dfs = [sales(12, offset=12 * c) for c in range(chunks)]
    options: dict[str, object] = {"partition_on": ["country"], "secondary_indices": ["product"]}
    options.update(kw)
    kf.store_dataframes_as_dataset(store=store, dataset_uuid=uuid, dfs=dfs, **options)
    return pd.concat(dfs, ignore_index=True)


def header_bytes(store: kf.Store, uuid: str) -> bytes | None:
    """The raw header of a dataset, whichever format it has."""
    for fmt in ("json", "msgpack"):
        data = store.get_or_none(naming.header_key(uuid, fmt))
        if data is not None:
            return data
    return None


def data_keys(store: kf.Store, uuid: str, indices: bool = False) -> list[str]:
    """Parquet files below ``<uuid>/``: data files (and index files if ``indices``)."""
    return sorted(
        k
        for k in store.iter_keys(uuid + "/")
        if k.endswith(".parquet") and (indices or not k.startswith(f"{uuid}/indices/"))
    )


def canonical(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows sorted by ``units``, default index, columns in the given order."""
    cols = list(columns) if columns is not None else list(df.columns)
    return df[cols].sort_values("units", kind="stable").reset_index(drop=True)
