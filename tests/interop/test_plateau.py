"""Live interop with plateau 4.6.2: it reads what kartoframe writes, and vice versa."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf

plateau = pytest.importorskip("plateau.api.dataset")

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def all_types_frame(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "p": np.arange(n) % 3,
            "q": np.where(np.arange(n) % 2 == 0, "a b", "ü/€"),
            "i8": rng.integers(-100, 100, n).astype("int8"),
            "i64": rng.integers(-(10**12), 10**12, n),
            "u32": rng.integers(0, 1000, n).astype("uint32"),
            "f32": rng.random(n).astype("float32"),
            "f64": rng.random(n),
            "b": rng.random(n) > 0.5,
            "s": [None if i % 5 == 0 else f"s{i}" for i in range(n)],
            "d": [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(n)],
            "ts": pd.date_range("2021-01-01", periods=n, freq="h").as_unit("us"),
            "tz": pd.date_range("2021-01-01", periods=n, freq="h", tz="Europe/Berlin").as_unit(
                "us"
            ),
            "cat": pd.Categorical(["x", "y", "z"] * (n // 3)),
        }
    )
    return df


def _norm(df: pd.DataFrame) -> pd.DataFrame:
    out = df.sort_values("i64").reset_index(drop=True)
    for c in out.columns:
        if isinstance(out[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype(str)
        elif out[c].dtype.kind in "iu":
            out[c] = out[c].astype("int64" if out[c].dtype.kind == "i" else "uint64")
        elif out[c].dtype.kind == "f":
            out[c] = out[c].astype("float64")
        elif out[c].dtype.kind == "M":
            out[c] = out[c].dt.as_unit("us")
        elif str(out[c].dtype) in ("str", "string", "object") and c in ("q", "s"):
            out[c] = out[c].astype(object).where(out[c].notna(), None)
    return out


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("partition_on", [[], ["p"], ["p", "q"]])
def test_plateau_reads_kartoframe(tmp_path, fmt: str, partition_on: list[str]) -> None:
    df = all_types_frame()
    url = f"{tmp_path}/store"
    kf.store_dataframes_as_dataset(
        store=url,
        dataset_uuid="ds",
        dfs=[df.iloc[:6], df.iloc[6:]],
        partition_on=partition_on,
        secondary_indices=["s", "i64"],
        metadata_storage_format=fmt,
    )
    got = plateau.read_table("ds", f"hfs://{url}")
    cols = list(got.columns)
    assert cols[: len(partition_on)] == partition_on
    pd.testing.assert_frame_equal(_norm(got[df.columns]), _norm(df), check_dtype=False)
    # plateau uses our secondary index for pruning
    sel = plateau.read_table("ds", f"hfs://{url}", predicates=[[("s", "==", "s3")]])
    assert sel["i64"].tolist() == df.loc[df["s"] == "s3", "i64"].tolist()


def test_plateau_updates_kartoframe_dataset(tmp_path) -> None:
    """plateau appends to a kartoframe dataset.

    kartoframe stores strings as ``string`` so that kartothek 5.3 / old pyarrow can read
    them; plateau under pandas 3 infers ``large_string`` for the ``str`` dtype and then
    refuses the update (it refuses its own pandas-2 datasets the same way), so the frame
    given to plateau uses object strings, which it stores as ``string``. For the same
    reason plateau/pandas 3 cannot update a *string* secondary index written as
    ``string``; the index here is on an integer column.
    """
    df = all_types_frame().drop(columns=["cat"])
    for c in ("q", "s"):
        df[c] = df[c].astype(object)
    url = f"{tmp_path}/store"
    kf.store_dataframes_as_dataset(
        store=url, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["u32"]
    )
    more = df.copy()
    more["i64"] = more["i64"] + 1
    plateau.update_dataset_from_dataframes(
        [more], store=f"hfs://{url}", dataset_uuid="ds", delete_scope=[{"p": 1}]
    )
    got = kf.read_table("ds", url)
    want = pd.concat([df[df["p"] != 1], more], ignore_index=True)
    pd.testing.assert_frame_equal(_norm(got[df.columns]), _norm(want), check_dtype=False)
    value = int(df["u32"].iloc[3])
    n = int((want["u32"] == value).sum())
    assert len(kf.read_table("ds", url, predicates=[[("u32", "==", value)]])) == n


def test_kartoframe_reads_and_updates_plateau_dataset(tmp_path) -> None:
    df = all_types_frame().drop(columns=["cat"])
    url = f"{tmp_path}/store"
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}",
        dataset_uuid="ds",
        dfs=[df],
        partition_on=["p", "q"],
        secondary_indices=["s"],
        metadata_storage_format="msgpack",
    )
    got = kf.read_table("ds", url)
    pd.testing.assert_frame_equal(_norm(got[df.columns]), _norm(df), check_dtype=False)
    more = df.assign(i64=df["i64"] + 7)
    kf.update_dataset_from_dataframes([more], store=url, dataset_uuid="ds", delete_scope=[{"p": 0}])
    # format stays msgpack (no second JSON header), plateau reads the result
    assert not (tmp_path / "store" / "ds.by-dataset-metadata.json").exists()
    assert (tmp_path / "store" / "ds.by-dataset-metadata.msgpack.zstd").exists()
    back = plateau.read_table("ds", f"hfs://{url}")
    want = pd.concat([df[df["p"] != 0], more], ignore_index=True)
    # plateau truncates its *own* unescaped "a/b" partition values (its bug); the values
    # kartoframe wrote (escaped as %2F) read back intact
    cols = [c for c in df.columns if c != "q"]
    pd.testing.assert_frame_equal(_norm(back[cols]), _norm(want[cols]), check_dtype=False)
    ours = back[back["i64"].isin(more["i64"])]
    assert sorted(ours["q"].unique()) == ["a b", "ü/€"]
    assert kf.read_table("ds", url)["q"].isin(["a b", "ü/€"]).all()
    # plateau's own index is maintained by our update
    assert len(kf.read_table("ds", url, predicates=[[("s", "==", "s4")]])) == 2


def test_plateau_reads_multi_row_group_index_files(tmp_path, monkeypatch) -> None:
    """Index files in value-sorted row groups (large indices) are plain Parquet to plateau."""
    import pyarrow.parquet as pq
    from plateau.core.dataset import DatasetMetadata

    from kartoframe.format import index as fi

    monkeypatch.setattr(fi, "LABELS_PER_ROW_GROUP", 16)
    monkeypatch.setattr(fi, "MIN_VALUES_PER_ROW_GROUP", 2)
    rng = np.random.default_rng(2)
    n = 2_000
    df = pd.DataFrame(
        {"p": rng.integers(0, 8, n), "i": rng.integers(0, 300, n), "s": rng.random(n)}
    )
    url = f"{tmp_path}/store"
    kf.store_dataframes_as_dataset(
        store=url, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["i"]
    )
    (key,) = kf.read_dataset_metadata("ds", url).indices.values()
    assert pq.ParquetFile(f"{url}/{key}").metadata.num_row_groups > 10
    md = DatasetMetadata.load_from_store("ds", f"hfs://{url}").load_index("i", f"hfs://{url}")
    theirs = {int(v): lb for v, lb in md.indices["i"].index_dct.items()}
    assert len(theirs) == df["i"].nunique()  # every row group was read
    for value in (0, 17, 299):
        labels = {lb.rsplit("/", 1)[0] for lb in theirs.get(value, [])}
        assert labels == {f"p={p}" for p in df.loc[df["i"] == value, "p"].unique()}
    sel = plateau.read_table("ds", f"hfs://{url}", predicates=[[("i", "==", 17)]])
    assert sorted(sel["s"]) == sorted(df.loc[df["i"] == 17, "s"])


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_optimize_a_plateau_dataset_and_plateau_reads_it(tmp_path, fmt: str) -> None:
    """A dataset plateau wrote (no statistics, no log): sizes come from the store, the
    all-types content survives the rewrite, plateau reads the result through our index.

    (plateau on pandas 3 cannot append ``str`` columns to a ``string`` schema at all, an
    optimized dataset or not: docs/format.md.)"""
    df = all_types_frame(24)
    url = f"{tmp_path}/store"
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}",
        dataset_uuid="ds",
        dfs=[df.iloc[:6]],
        partition_on=["p"],
        secondary_indices=["s"],
        metadata_storage_format=fmt,
    )
    for i in range(1, 4):
        plateau.update_dataset_from_dataframes(
            [df.iloc[6 * i : 6 * (i + 1)]], store=f"hfs://{url}", dataset_uuid="ds"
        )
    before = kf.read_table("ds", url)
    result = kf.optimize_dataset("ds", url, sort_by=["i64"])
    assert (result.files_removed, result.files_added) == (12, 3)
    key = ["p", "i64"]
    got = plateau.read_table("ds", f"hfs://{url}")
    pd.testing.assert_frame_equal(
        _norm(got[df.columns]).sort_values(key).reset_index(drop=True),
        _norm(df).sort_values(key).reset_index(drop=True),
        check_dtype=False,
    )
    pd.testing.assert_frame_equal(
        kf.read_table("ds", url).sort_values(key).reset_index(drop=True),
        before.sort_values(key).reset_index(drop=True),
    )
    sel = plateau.read_table("ds", f"hfs://{url}", predicates=[[("s", "==", "s3")]])
    assert len(sel) == (df["s"] == "s3").sum()


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_merge_into_a_plateau_dataset_and_plateau_reads_it(tmp_path, fmt: str) -> None:
    """A row-level merge into a dataset plateau wrote (all types, an index): plateau reads
    the updated and inserted rows, and finds them through the maintained index."""
    df = all_types_frame(24)
    url = f"{tmp_path}/store"
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}",
        dataset_uuid="ds",
        dfs=[df.iloc[:12], df.iloc[12:]],
        partition_on=["p"],
        secondary_indices=["s"],
        metadata_storage_format=fmt,
    )
    changes = df.iloc[[1, 2]].copy()  # two rows updated (same p and i64), one new
    changes["f64"] = [-1.0, -2.0]
    changes["s"] = ["new-s", "s2"]
    extra = df.iloc[[0]].copy()
    extra["i64"] = 123
    extra["s"] = "new-s"
    source = pd.concat([changes, extra], ignore_index=True)
    result = kf.merge_dataset(source, url, "ds", on=["p", "i64"])
    assert (result.rows_updated, result.rows_inserted) == (2, 1)
    want = pd.concat([df.drop(index=[1, 2]), source], ignore_index=True)
    got = plateau.read_table("ds", f"hfs://{url}")
    pd.testing.assert_frame_equal(
        _norm(got[df.columns]), _norm(want[df.columns]), check_dtype=False
    )
    sel = plateau.read_table("ds", f"hfs://{url}", predicates=[[("s", "==", "new-s")]])
    assert sorted(sel["i64"]) == sorted([df["i64"].iloc[1], 123])


def test_plateau_reads_a_large_write_with_encoded_strings(tmp_path) -> None:
    """A write large enough that its files' low-cardinality strings reach the Parquet
    writer still encoded (kartoframe.format.file_rows): plateau reads them as strings,
    and as categoricals of only the values each file holds.
    """
    n = 40_000
    rng = np.random.default_rng(3)
    channel = np.array(["store", "web", "app", "ü€"], dtype=object)[rng.integers(0, 4, n)]
    channel[rng.random(n) < 0.05] = None
    p = rng.integers(0, 3, n)
    channel[(p == 2) & (channel == "web")] = "app"  # partition 2 holds no "web"
    df = pd.DataFrame({"p": p, "channel": channel, "i": np.arange(n)})
    url = f"{tmp_path}/store"
    kf.store_dataframes_as_dataset(
        store=url, dataset_uuid="ds", dfs=[df], partition_on=["p"], secondary_indices=["channel"]
    )
    got = plateau.read_table("ds", f"hfs://{url}").sort_values("i").reset_index(drop=True)

    def values(s: pd.Series) -> list:
        return s.astype(object).where(s.notna(), None).tolist()

    assert values(got["channel"]) == values(df["channel"])
    part = plateau.read_table(
        "ds", f"hfs://{url}", predicates=[[("p", "==", 2)]], categoricals=["channel"]
    )
    assert sorted(part["channel"].cat.categories) == ["app", "store", "ü€"]
    sel = plateau.read_table("ds", f"hfs://{url}", predicates=[[("channel", "==", "ü€")]])
    assert sorted(sel["i"]) == df.loc[df["channel"] == "ü€", "i"].tolist()
