"""Deterministic generator of a realistic "daily sales" table for the benchmarks.

The table mimics the fact table of a retailer: one row per (day, store, product, channel)
sale line, partitioned by ``country`` and ``month`` (hive style ``country=DE/month=2024-01``)
and carrying a secondary index on ``product_id``.

Columns and dtypes
------------------
========== ==================== ===================================================
column     dtype                content
========== ==================== ===================================================
country    ``str``              ISO-like code; 25 real codes, synthetic ``Zxx`` beyond
month      ``str``              ``"YYYY-MM"``; the last month is always ``2024-08``
date       ``datetime64[ns]``   a day inside ``month`` (midnight)
product_id ``int64``            ~2,000 products, each sold in ~3 countries
store_id   ``int32``            ``country_index * 1000 + local store number``
units      ``int16``            1 + geometric, capped at 50
price      ``float64``          per-product list price with ±5 % noise, in cents
revenue    ``float64``          ``units * price`` (20 % off when ``promo``)
channel    ``str``              ``store`` / ``online`` / ``app`` / ``marketplace``
promo      ``bool``             ~15 % of rows
========== ==================== ===================================================

Design choices that matter for the benchmarks:

* Every (country, month) cell gets at least one row, so ``n_countries * n_months`` is the exact
  partition count.
* Country sizes follow a Zipf-like law (big and small markets) and months a mild seasonality,
  so partitions have realistically uneven sizes.
* Each product is sold in about three countries chosen at random ("regional assortment"), so
  product ids of a partition are scattered over the whole id range: min/max statistics cannot
  prune, a secondary index can (an equality predicate hits ~3 countries x all months).
* Rows are ordered by ``date`` (the order in which a daily ETL would append them), not by
  partition.

Everything is a pure function of ``(n_rows, seed, n_countries, n_months, n_products)``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

#: Bump when the generated data changes, so every on-disk cache keyed on it is invalidated.
DATAGEN_VERSION = 1

#: Default grid: 25 countries x 8 months = 200 partitions.
DEFAULT_COUNTRIES = 25
DEFAULT_MONTHS = 8
DEFAULT_PRODUCTS = 2000

#: Partition columns, in directory order.
PARTITION_COLUMNS: tuple[str, str] = ("country", "month")
#: Secondary-index column.
INDEX_COLUMN = "product_id"
#: Dataset UUID used by all benchmarks.
DATASET_UUID = "sales"

REAL_COUNTRIES: tuple[str, ...] = (
    "DE", "FR", "GB", "IT", "ES", "NL", "PL", "SE", "BE", "AT", "CH", "DK", "NO",
    "FI", "IE", "PT", "CZ", "HU", "RO", "GR", "US", "CA", "BR", "JP", "AU",
)  # fmt: skip
CHANNELS: tuple[str, ...] = ("store", "online", "app", "marketplace")
CHANNEL_WEIGHTS: tuple[float, ...] = (0.55, 0.30, 0.10, 0.05)
#: The last month of every grid, so the default 8-month grid is 2024-01 .. 2024-08.
LAST_MONTH = (2024, 8)
#: Number of countries a product is sold in (before de-duplication).
COUNTRIES_PER_PRODUCT = 3


def country_codes(n: int) -> list[str]:
    """Return ``n`` distinct country codes: the 25 real ones, then ``ZAA``, ``ZAB``, ..."""
    if n <= len(REAL_COUNTRIES):
        return list(REAL_COUNTRIES[:n])
    codes = list(REAL_COUNTRIES)
    k = 0
    while len(codes) < n:
        a, b = divmod(k, 26)
        c, a = divmod(a, 26)
        codes.append(f"Z{chr(65 + c) if c else ''}{chr(65 + a)}{chr(65 + b)}")
        k += 1
    return codes


def month_labels(n: int) -> list[str]:
    """Return ``n`` consecutive ``"YYYY-MM"`` labels ending with :data:`LAST_MONTH`."""
    year, month = LAST_MONTH
    last = year * 12 + (month - 1)
    return [f"{m // 12:04d}-{m % 12 + 1:02d}" for m in range(last - n + 1, last + 1)]


def partition_grid(n_partitions: int) -> tuple[int, int]:
    """Choose ``(n_countries, n_months)`` with ``n_countries * n_months == n_partitions``.

    200 gives the canonical 25 x 8 grid. Other sizes use a number of months that divides
    ``n_partitions``, close to its square root and at most 120 (ten years), for example
    400 -> 20 x 20, 10,000 -> 100 x 100, 20,000 -> 200 x 100, 100,000 -> 1,000 x 100.
    """
    if n_partitions < 1:
        raise ValueError("n_partitions must be >= 1")
    if n_partitions == DEFAULT_COUNTRIES * DEFAULT_MONTHS:
        return DEFAULT_COUNTRIES, DEFAULT_MONTHS
    target = min(math.isqrt(n_partitions), 120)
    divisors = [d for d in range(1, 121) if n_partitions % d == 0]
    months = min(divisors, key=lambda d: (abs(d - target), -d))
    return n_partitions // months, months


def _assortments(
    rng: np.random.Generator, n_countries: int, n_products: int
) -> tuple[np.ndarray, np.ndarray]:
    """Assign every product to ~3 random countries; return CSR ``(offsets, products)``.

    Each country also receives product ``c % n_products`` so that no country is empty.
    Within a country products are shuffled; the position in that order defines popularity.
    """
    per = min(COUNTRIES_PER_PRODUCT, n_countries)
    # argsort of random keys gives ``per`` distinct countries per product without a Python loop
    # for small grids; for large grids draw with replacement (duplicates removed below).
    if n_countries <= 4096:
        keys = rng.random((n_products, n_countries))
        chosen = np.argsort(keys, axis=1)[:, :per]
    else:
        chosen = rng.integers(0, n_countries, size=(n_products, per))
    prod = np.repeat(np.arange(n_products, dtype=np.int64), per)
    ctry = chosen.reshape(-1).astype(np.int64)
    extra_c = np.arange(n_countries, dtype=np.int64)
    prod = np.concatenate([prod, extra_c % n_products])
    ctry = np.concatenate([ctry, extra_c])
    pairs = np.unique(ctry * n_products + prod)
    ctry, prod = np.divmod(pairs, n_products)
    # shuffle within each country: sort by (country, random key)
    order = np.lexsort((rng.random(len(prod)), ctry))
    prod = prod[order]
    counts = np.bincount(ctry, minlength=n_countries)
    offsets = np.zeros(n_countries + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets, prod


def sales_table(
    n_rows: int,
    seed: int = 0,
    *,
    n_countries: int = DEFAULT_COUNTRIES,
    n_months: int = DEFAULT_MONTHS,
    n_products: int = DEFAULT_PRODUCTS,
) -> pd.DataFrame:
    """Generate the daily-sales table (see the module docstring for the columns).

    Parameters
    ----------
    n_rows
        Number of rows; must be at least ``n_countries * n_months``.
    seed
        Seed of the ``numpy`` generator; the output is a pure function of all arguments.
    n_countries, n_months
        Partition grid; ``n_countries * n_months`` partitions, each with >= 1 row.
    n_products
        Number of distinct ``product_id`` values in the catalogue.

    Returns
    -------
    pandas.DataFrame
        ``n_rows`` rows ordered by ``date`` with a default ``RangeIndex``.
    """
    n_cells = n_countries * n_months
    if n_rows < n_cells:
        raise ValueError(f"n_rows={n_rows} < number of partitions {n_cells}")
    rng = np.random.default_rng([seed, n_countries, n_months, n_products, DATAGEN_VERSION])

    # --- partition cell of each row: one row per cell, the rest weighted -----------------
    c_weight = 1.0 / np.arange(1, n_countries + 1) ** 0.8
    m_weight = 1.0 + 0.2 * np.sin(np.arange(n_months) * (2 * np.pi / 12))
    cell_p = np.outer(c_weight, m_weight).reshape(-1)
    cell_p /= cell_p.sum()
    cell = np.concatenate(
        [np.arange(n_cells, dtype=np.int64), rng.choice(n_cells, size=n_rows - n_cells, p=cell_p)]
    )
    c_idx, m_idx = np.divmod(cell, n_months)

    # --- dates: a day inside the month ------------------------------------------------------
    months = month_labels(n_months)
    month_start = np.array([np.datetime64(m + "-01", "D") for m in months])
    month_days = (
        np.array([np.datetime64(m, "M") + 1 for m in months]).astype("datetime64[D]") - month_start
    ).astype(np.int64)
    day = month_start[m_idx] + (rng.random(n_rows) * month_days[m_idx]).astype("timedelta64[D]")

    # --- products: popularity-skewed pick from the country's assortment ---------------------
    offsets, assortment = _assortments(rng, n_countries, n_products)
    sizes = offsets[1:] - offsets[:-1]
    pos = (rng.random(n_rows) ** 2 * sizes[c_idx]).astype(np.int64)
    product_id = assortment[offsets[c_idx] + pos]

    # --- measures ---------------------------------------------------------------------------
    base_price = np.round(np.exp(rng.normal(2.7, 0.8, size=n_products)), 2) + 0.49
    price = np.round(base_price[product_id] * rng.uniform(0.95, 1.05, size=n_rows), 2)
    units = np.minimum(rng.geometric(0.35, size=n_rows), 50).astype(np.int16)
    promo = rng.random(n_rows) < 0.15
    revenue = np.round(units * price * np.where(promo, 0.8, 1.0), 2)
    stores_per_country = 40 + (np.arange(n_countries) * 37) % 160
    store_id = (
        c_idx * 1000 + (rng.random(n_rows) * stores_per_country[c_idx]).astype(np.int64)
    ).astype(np.int32)
    channel = rng.choice(len(CHANNELS), size=n_rows, p=np.asarray(CHANNEL_WEIGHTS))

    # --- order by date (stable, so ties keep the generation order), build the frame ---------
    order = np.argsort(day, kind="stable")

    def _strings(codes: np.ndarray, labels: list[str]) -> pd.Series:
        # ``take`` on an Arrow array is ~10x faster than building Python strings; to_pandas gives
        # the default string dtype of the installed pandas (``str`` on pandas 3).
        arr = pa.array(labels, type=pa.string()).take(pa.array(codes[order]))
        return pa.chunked_array([arr]).to_pandas()

    df = pd.DataFrame(
        {
            "country": _strings(c_idx, country_codes(n_countries)),
            "month": _strings(m_idx, months),
            "date": day[order].astype("datetime64[ns]"),
            "product_id": product_id[order].astype(np.int64),
            "store_id": store_id[order],
            "units": units[order],
            "price": price[order],
            "revenue": revenue[order],
            "channel": _strings(channel, list(CHANNELS)),
            "promo": promo[order],
        }
    )
    return df


def sales_table_for_partitions(n_rows: int, n_partitions: int, seed: int = 0) -> pd.DataFrame:
    """Generate :func:`sales_table` with exactly ``n_partitions`` (country, month) cells."""
    n_countries, n_months = partition_grid(n_partitions)
    return sales_table(n_rows, seed, n_countries=n_countries, n_months=n_months)


def typical_product_id(df: pd.DataFrame) -> int:
    """Return a deterministic "typical" product: the one whose row count is the median.

    Ties are broken by the smallest id. Used as the equality predicate of the index-pruned
    read benchmarks.
    """
    counts = df[INDEX_COLUMN].value_counts()
    median = float(counts.median())
    dist = (counts.astype("float64") - median).abs()
    best = dist[dist == dist.min()].index.min()
    return int(best)


def cache_key(**params: Any) -> str:
    """Return a short, stable directory name for a parameter set (includes the datagen version)."""
    params = {"datagen_version": DATAGEN_VERSION, **params}
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    readable = "-".join(f"{k}{v}" for k, v in sorted(params.items()) if k != "datagen_version")
    return f"{readable}-{hashlib.sha1(blob).hexdigest()[:8]}"[:120]


def cached_sales_table(
    cache_dir: str | os.PathLike[str], n_rows: int, n_partitions: int, seed: int = 0
) -> pd.DataFrame:
    """Like :func:`sales_table_for_partitions`, memoised as a Parquet file in ``cache_dir``.

    Reading the cached file back gives the same values and dtypes as generating it.
    """
    path = (
        Path(cache_dir) / f"table-{cache_key(rows=n_rows, parts=n_partitions, seed=seed)}.parquet"
    )
    if path.exists():
        return pd.read_parquet(path)
    df = sales_table_for_partitions(n_rows, n_partitions, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return df


def synthesize_header(header: dict[str, Any], n_partitions: int, seed: int = 0) -> dict[str, Any]:
    """Return a copy of a real v4 header whose ``partitions`` list ``n_partitions`` entries.

    The real partitions come first (their files exist); synthetic ones follow, using the same
    label pattern (``country=XX/month=YYYY-MM/<32 hex>``) and the same storage-key layout
    (``<uuid>/<table>/<label>.parquet``) but pointing at files that do not exist. Opening the
    header or building a dask graph must not read data files, so this is a faithful and cheap
    stand-in for a dataset with ``n_partitions`` partitions. Indices, schema references and
    user metadata are kept unchanged.
    """
    partitions: dict[str, Any] = dict(header["partitions"])
    if not partitions:
        raise ValueError("the template header has no partitions")
    first_label, first = next(iter(partitions.items()))
    table = next(iter(first["files"]))
    prefix = first["files"][table][: -len(first_label + ".parquet")]
    keys = list(header.get("partition_keys") or PARTITION_COLUMNS)
    if len(keys) != 2:
        raise ValueError(f"expected two partition keys (country, month), got {keys}")
    n_countries, n_months = partition_grid(n_partitions)
    countries = country_codes(n_countries)
    months = month_labels(n_months)
    rng = np.random.default_rng([seed, n_partitions, DATAGEN_VERSION])
    hexes = [f"{a:016x}{b:016x}" for a, b in rng.integers(0, 2**63, size=(n_partitions, 2))]
    i = 0
    for c in countries:
        for m in months:
            if len(partitions) >= n_partitions:
                break
            label = f"{keys[0]}={c}/{keys[1]}={m}/{hexes[i]}"
            i += 1
            partitions[label] = {"files": {table: f"{prefix}{label}.parquet"}}
    out = dict(header)
    out["partitions"] = partitions
    return out
