"""Statistics are maintained by every write path, by deletes, GC and builds."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import kartoframe as kf
from kartoframe.api.read import plan_read
from kartoframe.errors import CommitConflictError, CorruptMetadataError
from kartoframe.execution.write import commit_write, write_chunk
from kartoframe.storage.resolve import load_dataset, read_header, statistics_ref


def frame(n: int = 30, start: int = 0) -> pd.DataFrame:
    x = np.arange(start, start + n)
    return pd.DataFrame(
        {
            "p": x % 3,
            "x": x,
            "s": [f"s{v:04d}" for v in x],
            "f": np.where(x % 4 == 0, np.nan, x / 2),
        }
    )


def stats_key(store: kf.Store, uuid: str = "ds") -> str | None:
    found = read_header(store, uuid)
    assert found is not None
    ref = statistics_ref(found[0])
    return None if ref is None else ref.key


def described(store: kf.Store, uuid: str = "ds") -> dict[str, bool]:
    st = kf.dataset_statistics(uuid, store)
    return dict(zip(st["label"], st["has_statistics"]))


def test_eager_write_statistics_and_no_data_read(store) -> None:
    df = frame()
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[df.iloc[:15], df.iloc[15:]], partition_on=["p"]
    )
    st = kf.dataset_statistics("ds", store)
    assert len(st) == 6 and st["has_statistics"].all()
    assert st["rows"].sum() == 30
    for _, row in st.iterrows():
        part = df[(df.p == row["p.min"]) & df.x.between(0, 14 if row["x.min"] < 15 else 29)]
        part = part[part.x >= (0 if row["x.min"] < 15 else 15)]
        assert (row["x.min"], row["x.max"]) == (part.x.min(), part.x.max())
        assert row["f.nulls"] == part.f.isna().sum()
        assert row["bytes"] == store.size(row["file"])
    assert list(st.columns[:5]) == ["label", "file", "rows", "bytes", "has_statistics"]
    # metadata only: remove every data file, statistics still load
    store.delete_many(list(st["file"]))
    again = kf.dataset_statistics("ds", store, columns=["x"])
    assert list(again.columns) == [
        "label",
        "file",
        "rows",
        "bytes",
        "has_statistics",
        "x.min",
        "x.max",
        "x.nulls",
    ]
    with pytest.raises(kf.ColumnNotFoundError):
        kf.dataset_statistics("ds", store, columns=["nope"])


def stats_keys(store: kf.Store, uuid: str = "ds") -> tuple[str, ...]:
    found = read_header(store, uuid)
    assert found is not None
    ref = statistics_ref(found[0])
    return () if ref is None else ref.keys


def test_iterator_update_delete_gc_and_delete_dataset(store) -> None:
    kf.store_dataframes_as_dataset__iter(
        iter([frame(9), frame(9, 100)]), store=store, dataset_uuid="ds", partition_on=["p"]
    )
    first = stats_key(store)
    assert first is not None and all(described(store).values())
    assert stats_keys(store) == (first,)
    # an append writes only its own rows, as a delta of the same reference
    kf.update_dataset_from_dataframes([frame(6, 200)], store=store, dataset_uuid="ds")
    base, delta = stats_keys(store)
    assert base == first and len(described(store)) == 9 and all(described(store).values())
    # removing files keeps a reference with deltas (the stale rows are never used)
    kf.update_dataset_from_dataframes([], store=store, dataset_uuid="ds", delete_scope=[{"p": 0}])
    st = kf.dataset_statistics("ds", store)
    assert len(st) == 6 and set(st["p.min"]) == {1, 2} and st["has_statistics"].all()
    assert stats_keys(store) == (first, delta)
    assert kf.check_dataset("ds", store).ok
    # metadata-only commits keep the statistics files
    kf.update_dataset_from_dataframes([], store=store, dataset_uuid="ds", metadata={"a": 1})
    assert stats_keys(store) == (first, delta)
    removed = kf.garbage_collect_dataset("ds", store, retention_hours=0, grace_hours=0, force=True)
    assert first not in removed and delta not in removed
    plan, _ = plan_read("ds", store, predicates=[[("x", ">=", 200)]])
    assert plan.stats.after_statistics == 2
    kf.delete_dataset("ds", store)
    assert list(store.iter_keys("ds/_kartoframe/stats/")) == []
    assert list(store.iter_keys("ds/table/")) == []


def test_deltas_are_folded_into_one_file_every_few_commits(store) -> None:
    from kartoframe.format.statistics import MAX_STATISTICS_DELTAS

    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame(3)], partition_on=["p"]
    )
    first = stats_key(store)
    seen = [stats_keys(store)]
    for i in range(MAX_STATISTICS_DELTAS + 1):
        kf.update_dataset_from_dataframes([frame(3, 10 * (i + 1))], store=store, dataset_uuid="ds")
        seen.append(stats_keys(store))
    assert [len(k) for k in seen] == [*range(1, MAX_STATISTICS_DELTAS + 2), 1]
    folded = stats_key(store)
    assert folded != first
    assert len(described(store)) == 3 * (MAX_STATISTICS_DELTAS + 2)
    assert all(described(store).values())
    removed = kf.garbage_collect_dataset("ds", store, retention_hours=0, grace_hours=0, force=True)
    assert set(seen[-2]) <= set(removed) and folded not in removed
    assert kf.check_dataset("ds", store).ok
    # a read skips by statistics of files described in the folded file
    plan, _ = plan_read("ds", store, predicates=[[("x", "==", 20)]])
    assert plan.stats.after_statistics == 1


def test_a_reader_of_the_base_file_alone_never_skips_wrongly(store) -> None:
    """What a kartoframe that does not know deltas sees: the base file's rows only. Files
    described only in deltas have no row there: unknown statistics, never skipped."""
    kf.store_dataframes_as_dataset(
        store=store, dataset_uuid="ds", dfs=[frame(3)], partition_on=["p"]
    )
    kf.update_dataset_from_dataframes([frame(3, 100)], store=store, dataset_uuid="ds")
    from kartoframe.format.statistics import statistics_from_bytes

    base = statistics_from_bytes(store.get(stats_keys(store)[0]), origin="base")
    assert base is not None
    md = kf.read_dataset_metadata("ds", store)
    described_by_base = set(base.column("label").to_pylist())
    assert described_by_base < set(md.partitions)  # the appended files are not in it


def test_single_partition_commit_and_index_build_keep_statistics(store) -> None:
    kf.create_empty_dataset_header(store, "ds", schema=frame(3).iloc[:0], partition_on=["p"])
    assert stats_key(store) is None
    mp = kf.write_single_partition(store, "ds", frame(6))
    kf.commit_dataset(store, "ds", new_partitions=[mp])
    assert all(described(store).values()) and len(described(store)) == 3
    kf.build_dataset_indices(store, "ds", ["s"])
    assert all(described(store).values()) and len(described(store)) == 3
    got = kf.read_table("ds", store, predicates=[[("x", "==", 4)]])
    assert got["x"].tolist() == [4]


def test_dask_write_and_read_use_statistics(store) -> None:
    dd = pytest.importorskip("dask.dataframe")
    import dask

    ddf = dd.from_pandas(frame(40), npartitions=4, sort=False)
    with dask.config.set(scheduler="synchronous"):
        kf.store_dataset_from_ddf(ddf, store, "ds", partition_on=["p"]).compute()
        kf.update_dataset_from_ddf(
            dd.from_pandas(frame(8, 500), npartitions=1), store, "ds"
        ).compute()
        assert all(described(store).values()) and len(described(store)) == 15
        from kartoframe.execution.read_plan import plan_ddf_read

        plan, _ = plan_ddf_read("ds", store, predicates=[[("x", ">", 500)]])[:2]
        assert plan.stats.after_statistics == 3 and plan.stats.total == 15
        got = kf.read_dataset_as_ddf("ds", store, predicates=[[("x", ">", 500)]]).compute()
    assert sorted(got["x"]) == list(range(501, 508))


def test_cube_writes_keep_statistics(store) -> None:
    cube = kf.Cube(dimension_columns=["x"], partition_columns=["p"], uuid_prefix="c")
    kf.build_cube(
        {"seed": frame(12), "extra": frame(12).assign(v=1.0)[["p", "x", "v"]]}, cube, store
    )
    for ds in ("c++seed", "c++extra"):
        assert stats_key(store, ds) is not None
        assert all(described(store, ds).values())


def test_failed_commit_removes_its_statistics_file(memory_store) -> None:
    kf.store_dataframes_as_dataset(
        store=memory_store, dataset_uuid="ds", dfs=[frame(6)], partition_on=["p"]
    )
    base = load_dataset(memory_store, "ds")
    (label,) = [lb for lb in base.metadata.partitions if lb.startswith("p=0/")]
    # another writer deletes the partition this commit wants to replace: a conflict
    kf.update_dataset_from_dataframes(
        [], store=memory_store, dataset_uuid="ds", delete_scope=[{"p": 0}]
    )
    before = set(memory_store.iter_keys("ds/_kartoframe/stats/"))
    chunk = write_chunk(memory_store, "ds", frame(3, 90), partition_on=["p"])
    with pytest.raises(CommitConflictError):
        commit_write(memory_store, "ds", [chunk], base=base, remove_labels=[label])
    assert set(memory_store.iter_keys("ds/_kartoframe/stats/")) == before
    assert not any(memory_store.exists(p.key) for p in chunk.partitions)


def test_missing_or_corrupt_file_and_rebuild(memory_store) -> None:
    kf.store_dataframes_as_dataset(
        store=memory_store, dataset_uuid="ds", dfs=[frame(12)], partition_on=["p"]
    )
    key = stats_key(memory_store)
    assert key is not None
    memory_store.put(key, b"garbage")
    with pytest.raises(CorruptMetadataError, match="statistics file"):
        kf.read_table("ds", memory_store, predicates=[[("x", ">", 3)]])
    # reads without predicates on data columns never load the file
    assert len(kf.read_table("ds", memory_store, predicates=[[("p", "==", 1)]])) == 4
    memory_store.delete(key)
    with pytest.raises(CorruptMetadataError, match="build_dataset_statistics"):
        kf.read_table("ds", memory_store, predicates=[[("x", ">", 3)]])
    kf.build_dataset_statistics(memory_store, "ds")
    assert all(described(memory_store).values())
    assert len(kf.read_table("ds", memory_store, predicates=[[("x", ">", 3)]])) == 8


def test_stale_rows_are_never_trusted(memory_store) -> None:
    """A statistics file listing a label with another file key is ignored for it."""
    kf.store_dataframes_as_dataset(store=memory_store, dataset_uuid="ds", dfs=[frame(10)])
    raw = json.loads(memory_store.get("ds.by-dataset-metadata.json"))
    ((_label, part),) = raw["partitions"].items()
    # another writer points the label at another file (keeping our map)
    kf.store_dataframes_as_dataset(store=memory_store, dataset_uuid="other", dfs=[frame(5, 1000)])
    other_key = next(iter(load_dataset(memory_store, "other").metadata.partitions.values()))
    new_key = "ds/table/replacement.parquet"
    memory_store.put(new_key, memory_store.get(other_key))
    part["files"]["table"] = new_key
    memory_store.put("ds.by-dataset-metadata.json", json.dumps(raw).encode())
    plan, _ = plan_read("ds", memory_store, predicates=[[("x", ">=", 1000)]])
    assert plan.stats.after_statistics == 1  # the old row said max 9: not trusted
    assert len(kf.read_table("ds", memory_store, predicates=[[("x", ">=", 1000)]])) == 5
    assert not kf.dataset_statistics("ds", memory_store)["has_statistics"].any()


def test_bloom_filters(memory_store) -> None:
    # every file spans the same "a".."z" range: only the bloom filters tell them apart
    frames = [
        pd.DataFrame({"user": ["a", *(f"u{i}-{j}" for j in range(50)), "z"], "n": np.arange(52)})
        for i in range(8)
    ]
    kf.store_dataframes_as_dataset(store=memory_store, dataset_uuid="ds", dfs=frames)
    pred = [[("user", "==", "u3-17")]]
    plan, _ = plan_read("ds", memory_store, predicates=pred)
    assert plan.stats.after_statistics == 8  # min/max ranges overlap, no value lists
    kf.build_dataset_statistics(memory_store, "ds", bloom_filter_columns=["user"])
    ref = statistics_ref(load_dataset(memory_store, "ds").metadata)
    assert ref is not None and ref.bloom_filter_columns == ("user",)
    plan, _ = plan_read("ds", memory_store, predicates=pred)
    assert plan.stats.after_statistics == 1
    assert kf.read_table("ds", memory_store, predicates=pred)["n"].tolist() == [18]
    in_pred = [[("user", "in", ["u1-1", "u5-5", "nobody"])]]
    plan, _ = plan_read("ds", memory_store, predicates=in_pred)
    assert plan.stats.after_statistics == 2
    # later writes maintain the filters
    kf.update_dataset_from_dataframes(
        [pd.DataFrame({"user": ["new-1", "new-2"], "n": [1, 2]})],
        store=memory_store,
        dataset_uuid="ds",
    )
    plan, _ = plan_read("ds", memory_store, predicates=[[("user", "==", "new-2")]])
    assert plan.stats.after_statistics == 1
    kf.store_dataframes_as_dataset(
        store=memory_store, dataset_uuid="f", dfs=[pd.DataFrame({"v": [1.5], "k": [1]})]
    )
    with pytest.raises(kf.InvalidInputError, match="bloom filter"):
        kf.build_dataset_statistics(memory_store, "f", bloom_filter_columns=["v"])
    with pytest.raises(kf.ColumnNotFoundError):
        kf.build_dataset_statistics(memory_store, "ds", bloom_filter_columns=["nope"])


def test_reserved_table_name_is_refused(memory_store) -> None:
    """``<uuid>/_kartoframe/`` holds kartoframe's side files: no table may live there."""
    with pytest.raises(kf.InvalidUUIDError, match="reserved"):
        kf.store_dataframes_as_dataset(
            store=memory_store, dataset_uuid="ds", dfs=[frame(5)], table_name="_kartoframe"
        )
    assert list(memory_store.iter_keys("")) == []
