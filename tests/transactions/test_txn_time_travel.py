"""Time travel: ``version=`` and ``as_of=`` on every reader, checkpoints, bounded costs."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.storage import log
from kartoframe.storage.resolve import load_dataset


def frame(k: int, p: int = 0, **extra: Any) -> pd.DataFrame:
    return pd.DataFrame({"p": [p, p], "k": [k, k], **extra})


def build(store: kf.Store, n: int) -> list[int]:
    """Version 0 has k=0; version i appends k=i, every fifth replaces partition 0."""
    kf.store_dataframes_as_dataset(
        store, "ds", [frame(0)], partition_on=["p"], secondary_indices=["k"]
    )
    stamps = [kf.dataset_history("ds", store)[0].timestamp]
    for i in range(1, n + 1):
        if i % 5 == 0:
            kf.update_dataset_from_dataframes([frame(i, 0)], store, "ds", delete_scope=[{"p": 0}])
        else:
            kf.update_dataset_from_dataframes([frame(i, i % 3)], store, "ds")
        stamps.append(kf.dataset_history("ds", store, limit=1)[0].timestamp)
    return stamps


def expected(version: int) -> list[int]:
    rows: dict[int, set[int]] = {0: {0}}
    for i in range(1, version + 1):
        p = 0 if i % 5 == 0 else i % 3
        if i % 5 == 0:
            rows[0] = set()
        rows.setdefault(p, set()).add(i)
    return sorted(k for ks in rows.values() for k in ks for _ in range(2))


def ks(df: pd.DataFrame) -> list[int]:
    return sorted(df["k"].tolist())


def test_every_version_reads_back(any_store: kf.Store) -> None:
    n = 23 if any_store.protocol != "s3" else 12
    build(any_store, n)
    for v in range(n + 1):
        assert ks(kf.read_table("ds", any_store, version=v)) == expected(v), v
    assert ks(kf.read_table("ds", any_store)) == expected(n)
    _, checkpoints = log.list_log(any_store, "ds")
    assert checkpoints == list(range(0, n + 1, 10))


def test_all_readers_take_version_and_as_of(memory_store: kf.Store) -> None:
    stamps = build(memory_store, 6)
    v = 3
    want = expected(v)
    assert ks(kf.read_table("ds", memory_store, version=v)) == want
    assert ks(kf.read_table("ds", memory_store, as_of=stamps[v])) == want
    frames = kf.read_dataset_as_dataframes("ds", memory_store, version=v)
    assert ks(pd.concat(frames)) == want
    frames = kf.read_dataset_as_dataframes__iterator("ds", memory_store, as_of=stamps[v])
    assert ks(pd.concat(list(frames))) == want
    md = kf.read_dataset_metadata("ds", memory_store, version=v)
    assert len(md.partitions) == len(want) // 2
    # predicates use the indices of that version
    got = kf.read_table("ds", memory_store, version=2, predicates=[[("k", "in", [1, 2, 3])]])
    assert ks(got) == [1, 1, 2, 2]


def test_dask_reader_takes_version(memory_store: kf.Store) -> None:
    import dask

    stamps = build(memory_store, 6)
    with dask.config.set(scheduler="sync"):
        ddf = kf.read_dataset_as_ddf("ds", memory_store, version=4)
        assert ks(ddf.compute()) == expected(4)
        ddf = kf.read_dataset_as_ddf("ds", memory_store, as_of=stamps[5])
        assert ks(ddf.compute()) == expected(5)


@pytest.mark.parametrize(
    "convert",
    [
        lambda t: t,  # aware datetime
        lambda t: t.replace(tzinfo=None),  # naive = UTC
        lambda t: t.isoformat(),
        lambda t: t.isoformat().replace("+00:00", "Z"),
        lambda t: pd.Timestamp(t),
        lambda t: int(t.timestamp() * 1000),
    ],
    ids=["aware", "naive", "iso", "iso-z", "pandas", "millis"],
)
def test_as_of_formats(memory_store: kf.Store, convert: Callable[[dt.datetime], Any]) -> None:
    stamps = build(memory_store, 3)
    for v, t in enumerate(stamps):
        assert ks(kf.read_table("ds", memory_store, as_of=convert(t))) == expected(v)
    later = stamps[1] + (stamps[2] - stamps[1]) / 2
    if stamps[2] - stamps[1] >= dt.timedelta(milliseconds=2):
        assert ks(kf.read_table("ds", memory_store, as_of=convert(later))) == expected(1)


def test_schema_of_a_version(memory_store: kf.Store) -> None:
    kf.store_dataframes_as_dataset(memory_store, "ds", [frame(0)], partition_on=["p"])
    kf.update_dataset_from_dataframes(
        [frame(1, w=["a", "b"])], memory_store, "ds", schema_evolution="add_columns"
    )
    old = kf.read_table("ds", memory_store, version=0)
    assert list(old.columns) == ["p", "k"]
    new = kf.read_table("ds", memory_store)
    assert list(new.columns) == ["p", "k", "w"] and new["w"].isna().sum() == 2


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        ({"version": 99}, kf.InvalidInputError, "not in its transaction log"),
        ({"version": -1}, kf.InvalidInputError, "non-negative"),
        ({"version": True}, kf.InvalidTypeError, "integer"),
        ({"version": "1"}, kf.InvalidTypeError, "integer"),
        ({"as_of": "yesterday-ish"}, kf.InvalidInputError, "ISO 8601"),
        ({"as_of": 1.5}, kf.InvalidTypeError, "as_of"),
        ({"as_of": "2001-01-01"}, kf.InvalidInputError, "no version at or before"),
        ({"version": 1, "as_of": "2001-01-01"}, kf.InvalidInputError, "either"),
    ],
)
def test_bad_versions(
    memory_store: kf.Store, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    build(memory_store, 2)
    with pytest.raises(error, match=match):
        kf.read_table("ds", memory_store, **kwargs)


def test_a_dataset_without_log_has_no_versions(tmp_path: Any) -> None:
    import plateau.api.dataset as plateau

    url = f"{tmp_path}/store"
    plateau.store_dataframes_as_dataset(
        store=f"hfs://{url}", dataset_uuid="ds", dfs=[frame(1)], partition_on=["p"]
    )
    assert kf.dataset_history("ds", url) == []
    with pytest.raises(kf.InvalidInputError, match="not in its transaction log"):
        kf.read_table("ds", url, version=0)
    with pytest.raises(kf.InvalidInputError, match="no transaction log"):
        kf.read_table("ds", url, as_of=time.time_ns() // 1_000_000)
    kf.update_dataset_from_dataframes([frame(2)], url, "ds")
    assert ks(kf.read_table("ds", url, version=0)) == [1, 1]  # the EXTERNAL snapshot
    assert ks(kf.read_table("ds", url, version=1)) == [1, 1, 2, 2]


def test_reading_any_version_costs_a_bounded_number_of_requests(
    memory_store: kf.Store, make_faulty: Callable[..., tuple[kf.Store, Any]]
) -> None:
    build(memory_store, 34)
    store, ffs = make_faulty(memory_store)
    costs = {}
    for v in (1, 9, 10, 19, 33, 34):
        ffs.calls.clear()
        load_dataset(store, "ds", version=v)
        costs[v] = sum(ffs.calls.values())
    # <= 9 entries back to a checkpoint + the checkpoint + the next entry + schema lookups
    assert max(costs.values()) <= 14, costs
    assert costs[10] <= 4, costs  # a checkpoint version: checkpoint, next entry, schema
    ffs.calls.clear()
    load_dataset(store, "ds")
    assert sum(ffs.calls.values()) == 3  # header, next entry (absent), schema
