"""tz-aware timestamps keep their zone end to end; µs on disk."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read

BERLIN = "Europe/Berlin"


def frame() -> pd.DataFrame:
    # an hour around the DST switch, in Berlin time: offsets +01:00 and +02:00
    at = pd.date_range("2021-03-28 00:30", periods=6, freq="30min", tz=BERLIN).as_unit("ns")
    return pd.DataFrame(
        {
            "day": at.floor("h"),  # tz-aware partition column
            "at": at,  # tz-aware payload column (secondary index)
            "at_stats": at + pd.Timedelta(minutes=1),  # statistics only
            "n": range(6),
        }
    )


def test_zone_is_kept_in_keys_schema_index_statistics_and_results(store) -> None:
    df = frame()
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[df.iloc[:3], df.iloc[3:]],
        partition_on=["day"],
        secondary_indices=["at"],
    )
    schema = kf.read_dataset_schema("ds", store)
    for c in ("day", "at", "at_stats"):
        assert schema.field(c).type == pa.timestamp("us", tz=BERLIN)
    # partition labels carry the local time with its offset
    labels = sorted(kf.read_dataset_metadata("ds", store).partitions)
    assert any("%2B01%3A00" in lb for lb in labels) and any("%2B02%3A00" in lb for lb in labels)
    # data files hold µs (Spark reads them exactly); results come back in the zone
    md = kf.read_dataset_metadata("ds", store)
    key = next(iter(md.partitions.values()))
    with store.open_input(key) as f:
        assert pq.read_schema(f).field("at").type == pa.timestamp("us", tz=BERLIN)
    got = kf.read_table("ds", store).sort_values("n").reset_index(drop=True)
    for c in ("day", "at", "at_stats"):
        assert str(got[c].dtype).endswith(f", {BERLIN}]")
        assert got[c].tolist() == df[c].tolist()
    # the index keeps the zone
    index = md.load_index("at")
    assert str(index["at"].dtype).endswith(f", {BERLIN}]")
    # statistics keep it too
    st = kf.dataset_statistics("ds", store)
    for c in ("day", "at_stats"):
        assert str(st[f"{c}.min"].dtype).endswith(f", {BERLIN}]")
    assert st["at_stats.max"].max() == df["at_stats"].max()


@pytest.mark.parametrize("column", ["day", "at", "at_stats"])
def test_predicates_in_another_zone_compare_instants(store, column: str) -> None:
    df = frame()
    kf.store_dataframes_as_dataset(
        store=store,
        dataset_uuid="ds",
        dfs=[df.iloc[i : i + 1] for i in range(6)],
        partition_on=["day"],
        secondary_indices=["at"],
    )
    value = df[column].iloc[4].tz_convert("UTC")  # same instant, other zone
    for op, want in (("==", df[column] == value), (">=", df[column] >= value)):
        pred = [[(column, op, value)]]
        got = kf.read_table("ds", store, predicates=pred)
        assert sorted(got["n"]) == df.loc[want, "n"].tolist(), (column, op)
        plan, _ = plan_read("ds", store, predicates=pred)
        assert plan.stats.after_statistics == len(plan.tasks) < 6
    naive = dt.datetime(2021, 3, 28, 1, 0)
    with pytest.raises(kf.InvalidTypeError, match="tz-aware"):
        kf.read_table("ds", store, predicates=[[(column, "==", naive)]])


def test_sub_microsecond_literals(store) -> None:
    df = frame()
    kf.store_dataframes_as_dataset(store=store, dataset_uuid="ds", dfs=[df.iloc[:3], df.iloc[3:]])
    t = df["at_stats"].iloc[3]
    between = t + pd.Timedelta(nanoseconds=500)
    assert kf.read_table("ds", store, predicates=[[("at_stats", "==", between)]]).empty
    assert kf.read_table("ds", store, predicates=[[("at_stats", "in", [between])]]).empty
    got = kf.read_table("ds", store, predicates=[[("at_stats", "<", between)]])
    assert sorted(got["n"]) == [0, 1, 2, 3]
    got = kf.read_table("ds", store, predicates=[[("at_stats", ">", between)]])
    assert sorted(got["n"]) == [4, 5]
