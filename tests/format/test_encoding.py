"""Which columns of a data file are dictionary-encoded (``format.encoding``), and what
the files written with that choice look like."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq

import kartoframe as kf
from kartoframe.format.encoding import SAMPLE_ROWS, dictionary_columns


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
            "value": rng.random(n),
            "kind": pa.array(rng.choice(["a", "b", "c"], n)),
            "country": pa.array(rng.choice(["de", "fr"], n)).dictionary_encode(),
            "half": np.arange(n) // 2,  # every value twice: a dictionary halves it
            # 2 in 3 sampled values distinct, as compare.py's prices: a dictionary pays
            "price": rng.integers(0, 5000, n) / 4,
            "sparse": pa.array([None] * (n - 3) + [1, 2, 3], type=pa.int64()),
        }
    )


def _encodings(path) -> dict[str, tuple[str, ...]]:
    meta = pq.ParquetFile(path).metadata.row_group(0)
    return {
        meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)
    }


def test_repeating_and_dictionary_typed_columns_keep_dictionaries() -> None:
    table = _table(10_000)
    share = pa.compute.count_distinct(table["price"].slice(0, SAMPLE_ROWS)).as_py() / SAMPLE_ROWS
    assert 0.5 < share < 0.9
    assert dictionary_columns(table) == ["kind", "country", "half", "price"]


def test_only_the_first_rows_decide() -> None:
    n = 3 * SAMPLE_ROWS
    table = pa.table({"x": np.concatenate([np.zeros(SAMPLE_ROWS), np.arange(n - SAMPLE_ROWS)])})
    assert dictionary_columns(table) == ["x"]
    assert dictionary_columns(table.slice(SAMPLE_ROWS)) == []


def test_small_and_nested_tables_keep_the_writers_default() -> None:
    assert dictionary_columns(_table(64)) is True
    nested = _table(1000).append_column("l", pa.array([[1, 2]] * 1000))
    assert dictionary_columns(nested) is True


def test_data_files_use_dictionaries_where_values_repeat(tmp_path) -> None:
    df = _table(20_000).to_pandas().assign(p=1)
    kf.store_dataframes_as_dataset(
        store=str(tmp_path), dataset_uuid="e", dfs=[df], partition_on=["p"]
    )
    (path,) = tmp_path.glob("e/table/p=1/*.parquet")
    encodings = _encodings(path)
    for name in ["kind", "country", "half", "price"]:
        assert "RLE_DICTIONARY" in encodings[name], name
    for name in ["id", "value"]:
        assert "RLE_DICTIONARY" not in encodings[name], name
    back = kf.read_table("e", str(tmp_path))
    pd.testing.assert_frame_equal(
        back[list(df.columns)].drop(columns="p").sort_values("id").reset_index(drop=True),
        df.drop(columns="p").reset_index(drop=True),
        check_dtype=False,
        check_categorical=False,
    )


def test_one_decision_for_every_file_of_a_write(tmp_path) -> None:
    """The largest partition's first rows decide for all files of one input frame.

    Partition ``big`` has a unique ``u``; in partition ``small`` it repeats. Decided file
    by file, ``small`` would get a dictionary for ``u``; decided once (the encoding
    decision cost 8 % of the sales table's 200-file write), both files are plain there.
    """
    n_big, n_small = 6_000, 500
    df = pd.DataFrame(
        {
            "p": ["small"] * n_small + ["big"] * n_big,
            "u": np.concatenate([np.arange(n_small) % 7, np.arange(n_big) + 1_000]),
            "k": np.arange(n_small + n_big) % 3,
        }
    )
    kf.store_dataframes_as_dataset(
        store=str(tmp_path), dataset_uuid="e", dfs=[df], partition_on=["p"]
    )
    for part in ("big", "small"):
        (path,) = tmp_path.glob(f"e/table/p={part}/*.parquet")
        enc = _encodings(path)
        assert "RLE_DICTIONARY" not in enc["u"], part
        assert "RLE_DICTIONARY" in enc["k"], part
    back = kf.read_table("e", str(tmp_path)).sort_values(["p", "u"]).reset_index(drop=True)
    want = df.sort_values(["p", "u"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back[list(want.columns)], want, check_dtype=False)
    # one file alone still decides from its own rows
    kf.store_dataframes_as_dataset(
        store=str(tmp_path), dataset_uuid="one", dfs=[df[df.p == "small"]], partition_on=["p"]
    )
    (path,) = tmp_path.glob("one/table/p=small/*.parquet")
    assert "RLE_DICTIONARY" in _encodings(path)["u"]


def test_a_dictionary_of_many_repeated_values_is_kept_over_the_whole_chunk(tmp_path) -> None:
    """16,000 distinct int64 values in 50,000 rows (a product catalogue): their dictionary
    (128 KiB) stays the whole chunk's. A 64 KiB cap, as before, fell back to plain half
    way: the chunk was much larger and the sales table's reads 8-10 % slower."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"p": 1, "product": rng.integers(0, 16_000, 50_000)})
    kf.store_dataframes_as_dataset(
        store=str(tmp_path), dataset_uuid="e", dfs=[df], partition_on=["p"]
    )
    (path,) = tmp_path.glob("e/table/p=1/*.parquet")
    ours = pq.ParquetFile(path).metadata.row_group(0).column(0)
    capped = tmp_path / "capped.parquet"
    pq.write_table(
        pa.table({"product": df["product"]}),
        capped,
        compression="snappy",
        dictionary_pagesize_limit=64 * 1024,
    )
    fallback = pq.ParquetFile(capped).metadata.row_group(0).column(0)
    assert "RLE_DICTIONARY" in ours.encodings
    assert ours.total_uncompressed_size < 0.7 * fallback.total_uncompressed_size
    assert kf.read_table("e", str(tmp_path))["product"].tolist() == df["product"].tolist()
