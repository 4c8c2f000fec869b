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
product_id ``int64``            ~2,000 products, Zipf popularity, 30-100 % coverage
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
* Products have a global, Zipf-like popularity and each is listed in a random 30-100 % of the
  countries; ids are not ordered by popularity or region. A 25,000-row partition therefore
  holds most of the catalogue (a large secondary index: ~1,500 distinct products per
  partition), ids of a partition span the whole id range (min/max statistics cannot prune),
  and on a fine grid (10,000 partitions of ~100 rows) an equality predicate on a typical
  product hits only a few per cent of the partitions, which an index can exploit.
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
DATAGEN_VERSION = 2

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
#: Zipf-like exponent of the global product popularity.
POPULARITY_EXPONENT = 0.7
#: Each product is listed in a uniformly drawn fraction of the countries in this range.
COVERAGE_RANGE: tuple[float, float] = (0.3, 1.0)


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
    """Draw the product assortment of every country.

    Product ``p`` has a global popularity weight (Zipf-like, exponent
    :data:`POPULARITY_EXPONENT`, ranks randomly permuted so that popularity is not ordered by
    id) and is listed in a random fraction (uniform in :data:`COVERAGE_RANGE`) of the
    countries. Every country lists at least product ``c % n_products``.

    Returns
    -------
    keys, products
        Flat arrays sorted by country; ``keys[i] = country + cumulative weight of the product
        within its country's assortment`` (in ``(c, c + 1]``), so that
        ``products[searchsorted(keys, c + u)]`` draws from country ``c`` with ``u ~ U[0, 1)``.
    """
    weight = 1.0 / rng.permutation(np.arange(1, n_products + 1)) ** POPULARITY_EXPONENT
    coverage = rng.uniform(*COVERAGE_RANGE, size=n_products)
    listed = rng.random((n_countries, n_products)) < coverage
    listed[np.arange(n_countries), np.arange(n_countries) % n_products] = True
    ctry, prod = np.nonzero(listed)  # row-major: sorted by country, then product id
    w = weight[prod]
    cum = np.cumsum(w)
    seg_start = np.searchsorted(ctry, np.arange(n_countries))
    seg_end = np.append(seg_start[1:], len(ctry))
    before = np.concatenate([[0.0], cum])[seg_start]
    total = cum[seg_end - 1] - before
    keys = ctry + (cum - before[ctry]) / total[ctry]
    keys[seg_end - 1] = np.arange(1, n_countries + 1)  # exact upper bound of every segment
    return keys, prod


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

    # --- products: popularity-weighted pick from the country's assortment -------------------
    keys, assortment = _assortments(rng, n_countries, n_products)
    pos = np.searchsorted(keys, c_idx + rng.random(n_rows), side="right")
    product_id = assortment[pos]

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


def sales_table_for_partitions(
    n_rows: int, n_partitions: int, seed: int = 0, n_products: int = DEFAULT_PRODUCTS
) -> pd.DataFrame:
    """Generate :func:`sales_table` with exactly ``n_partitions`` (country, month) cells."""
    n_countries, n_months = partition_grid(n_partitions)
    return sales_table(
        n_rows, seed, n_countries=n_countries, n_months=n_months, n_products=n_products
    )


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
    cache_dir: str | os.PathLike[str],
    n_rows: int,
    n_partitions: int,
    seed: int = 0,
    n_products: int = DEFAULT_PRODUCTS,
) -> pd.DataFrame:
    """Like :func:`sales_table_for_partitions`, memoised as a Parquet file in ``cache_dir``.

    Reading the cached file back gives the same values and dtypes as generating it.
    """
    params: dict[str, Any] = {"rows": n_rows, "parts": n_partitions, "seed": seed}
    if n_products != DEFAULT_PRODUCTS:  # default-catalogue caches keep their names
        params["products"] = n_products
    path = Path(cache_dir) / f"table-{cache_key(**params)}.parquet"
    if path.exists():
        return pd.read_parquet(path)
    df = sales_table_for_partitions(n_rows, n_partitions, seed, n_products)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    df.to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return df


def synthesize_header(header: dict[str, Any], n_partitions: int, seed: int = 0) -> dict[str, Any]:
    """Return a copy of a real v4 header whose ``partitions`` list ``n_partitions`` entries.

    The real partitions come first (their files exist); synthetic ones follow, using the same
    label pattern (``country=XX/month=YYYY-MM/<32 hex>``) and the storage-key layout of the
    first real partition (plateau: ``<uuid>/<table>/<label>.parquet``) but pointing at files
    that do not exist. Opening the
    header or building a dask graph must not read data files, so this is a faithful and cheap
    stand-in for a dataset with ``n_partitions`` partitions. Indices, schema references and
    user metadata are kept unchanged.
    """
    partitions: dict[str, Any] = dict(header["partitions"])
    if not partitions:
        raise ValueError("the template header has no partitions")
    first_label, first = next(iter(partitions.items()))
    table = next(iter(first["files"]))
    directory, _, file_id = first_label.rpartition("/")
    template = first["files"][table]
    if directory not in template or file_id not in template:
        raise ValueError(f"cannot derive a storage-key pattern from {first_label!r}: {template!r}")
    template = template.replace(directory, "\0dir\0", 1).replace(file_id, "\0id\0", 1)
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
            directory = f"{keys[0]}={c}/{keys[1]}={m}"
            key = template.replace("\0dir\0", directory).replace("\0id\0", hexes[i])
            partitions[f"{directory}/{hexes[i]}"] = {"files": {table: key}}
            i += 1
    out = dict(header)
    out["partitions"] = partitions
    return out
