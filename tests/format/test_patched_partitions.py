"""Commits whose cost grows with the change (format/header_partitions.PatchedPartitions).

A commit's header holds its base's partitions patched (labels removed, partitions added);
the log entry, the encoded header, the checkpoint and the statistics rows come out of
that patch without walking the base. Everything here must equal what the whole-map paths
give: the same mapping in the same order, the same header bytes and digests, log entries
that replay to the same header.
"""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

import msgspec
import orjson
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.errors import KartoframeError
from kartoframe.format import log_diff, txlog
from kartoframe.format.dataset import LoadedDataset
from kartoframe.format.fold import AddPartitions, RemovePartitions, SetIndices, SetSchema, fold
from kartoframe.format.header import DatasetHeader, decode_header, encode_header
from kartoframe.format.header_partitions import (
    JSON_COLUMNAR_MIN,
    PartitionMap,
    PatchedPartitions,
    partition_columns,
    partitions_dict,
)
from kartoframe.format.header_stamp import header_digest, seal_header, stamp_header
from kartoframe.format.statistics_rows import live_statistics
from kartoframe.storage.log import list_log, read_entry
from kartoframe.storage.log import state_at as log_state_at
from kartoframe.storage.resolve import load_dataset

SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64())])
NOW = "2026-01-01T00:00:00+00:00"


def _key(label: str) -> str:
    return f"ds/table/{label}.parquet"


def _model(base: dict[str, str], removed: set[str], added: dict[str, str]) -> dict[str, str]:
    out = {lb: k for lb, k in base.items() if lb not in removed}
    out.update(added)
    return out


def _decoded_map(parts: dict[str, str], fmt: str = "json") -> PartitionMap | dict[str, str]:
    """``parts`` as a decoded header holds them (a PartitionMap when column-wise)."""
    header = DatasetHeader(uuid="ds", partitions=parts, partition_keys=("p",), storage_format=fmt)  # type: ignore[arg-type]
    return decode_header(encode_header(header), "ds", fmt).partitions  # type: ignore[return-value]


def _assert_same(patch: PatchedPartitions, model: dict[str, str]) -> None:
    assert list(patch) == list(model)
    assert len(patch) == len(model)
    assert list(patch.items()) == list(model.items())
    assert list(patch.values()) == list(model.values())
    assert patch.to_dict() == model and partitions_dict(patch) == model
    for lb, k in model.items():
        assert lb in patch and patch[lb] == k
    assert patch.get("no-such-label") is None and "no-such-label" not in patch
    labels, keys = partition_columns(patch)
    assert labels.to_pylist() == list(model) and keys.to_pylist() == list(model.values())
    assert pickle.loads(pickle.dumps(patch)) == model
    assert patch == model  # Mapping equality


labels_st = st.lists(st.integers(0, 60), unique=True, max_size=40).map(
    lambda xs: [f"p={x}/f{x}" for x in xs]
)


@settings(max_examples=150, deadline=None)
@given(
    base_labels=labels_st,
    data=st.data(),
    decoded=st.booleans(),
)
def test_a_patch_is_its_base_without_the_removed_then_the_added(
    base_labels: list[str], data: st.DataObject, decoded: bool
) -> None:
    base = {lb: _key(lb) for lb in base_labels}
    removed = set(data.draw(st.lists(st.sampled_from(base_labels), unique=True))) if base else set()
    removed |= {"p=99/not-in-base"}  # ignored
    fresh = data.draw(st.lists(st.integers(100, 160), unique=True, max_size=10))
    readd = data.draw(st.lists(st.sampled_from(sorted(removed)), unique=True)) if removed else []
    added = {f"p={x}/n{x}": _key(f"n{x}") for x in fresh}
    added.update({lb: _key(lb + "-v2") for lb in readd if lb in base})
    source: Any = _decoded_map(base) if decoded and base else base
    patch = PatchedPartitions.over(source, frozenset(removed), added)
    model = _model(base, removed, added)
    _assert_same(patch, model)
    if base:
        assert patch.change_of(source) is not None
        assert patch.change_of(dict(base)) is None  # another map: no diff from it
    # a patch of the patch is one patch over the first base, equal to the composed model
    removed2 = set(data.draw(st.lists(st.sampled_from(list(model) or ["x"]), unique=True)))
    added2 = {f"p={x}/m{x}": _key(f"m{x}") for x in range(200, 203)}
    again = PatchedPartitions.over(patch, frozenset(removed2), added2)
    assert again.base is source
    _assert_same(again, _model(model, removed2, added2))


def test_adding_a_listed_label_is_refused() -> None:
    base = {"p=1/a": _key("a"), "p=2/b": _key("b")}
    with pytest.raises(KeyError):
        PatchedPartitions.over(base, frozenset(), {"p=1/a": _key("a2")})
    patch = PatchedPartitions.over(base, frozenset(), {"p=3/c": _key("c")})
    with pytest.raises(KeyError):
        PatchedPartitions.over(patch, frozenset(), {"p=3/c": _key("c2")})
    # removed first, then added again: a replaced partition, at the end
    replaced = PatchedPartitions.over(patch, frozenset({"p=1/a"}), {"p=1/a": _key("a2")})
    assert list(replaced.items()) == [
        ("p=2/b", _key("b")),
        ("p=3/c", _key("c")),
        ("p=1/a", _key("a2")),
    ]


def _base_header(n: int, fmt: str) -> DatasetHeader:
    parts = {f"p={i}/f{i}": _key(f"p={i}/f{i}") for i in range(n)}
    header = DatasetHeader(
        uuid="ds",
        partitions=parts,
        partition_keys=("p",),
        storage_format=fmt,  # type: ignore[arg-type]
        metadata={"creation_time": NOW},
    )
    header = fold(
        kf_loaded(header), [SetIndices({}), SetSchema(SCHEMA)], now=NOW
    )  # a schema record, like a real header
    return decode_header(encode_header(stamp_header(header, 3, 1, {})), "ds", fmt)


def kf_loaded(header: DatasetHeader) -> LoadedDataset:
    return LoadedDataset(header, SCHEMA)


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("n", [5, JSON_COLUMNAR_MIN + 10])
def test_a_folded_append_encodes_logs_and_checkpoints_like_the_whole_map(fmt: str, n: int) -> None:
    previous = _base_header(n, fmt)
    if n > JSON_COLUMNAR_MIN:
        assert isinstance(previous.partitions, PartitionMap)  # the column-wise decode
    removed = {"p=1/f1", "p=3/f3"}
    added = {"p=1/f1": _key("p=1/g1"), "p=7/new": _key("p=7/new")}
    header = fold(
        kf_loaded(previous),
        [
            RemovePartitions(frozenset(removed)),
            AddPartitions(added),
            SetIndices({}),
            SetSchema(SCHEMA),
        ],
        now=NOW,
    )
    assert isinstance(header.partitions, PatchedPartitions)
    whole = header.replace(partitions=partitions_dict(header.partitions))
    assert list(whole.partitions) == list(
        _model(partitions_dict(previous.partitions), removed, added)
    )

    # the header: same bytes, digest and seal as the whole map's
    sealed = seal_header(stamp_header(header, 4, 2, {}))
    sealed_whole = seal_header(stamp_header(whole, 4, 2, {}))
    assert sealed.data == sealed_whole.data == encode_header(sealed.header)
    assert sealed.sha256 == header_digest(sealed.header) == header_digest(sealed_whole.header)

    # the log entry: only the change, and it replays to the same header
    entry = log_diff.make_entry(
        version=4, timestamp=2, operation="APPEND", parameters={}, writer="t",
        commit_info=None, app_id=None, app_version=None, previous=previous,
        header=sealed.header, schema=None, header_sha256=sealed.sha256,
    )  # fmt: skip
    slow = log_diff.make_entry(
        version=4, timestamp=2, operation="APPEND", parameters={}, writer="t",
        commit_info=None, app_id=None, app_version=None, previous=previous,
        header=sealed_whole.header, schema=None,
    )  # fmt: skip
    assert not entry.reset and sorted(entry.remove) == sorted(removed)
    assert list(entry.add) == list(added.items())
    assert entry.header_sha256 == slow.header_sha256
    replayed = log_diff.apply_entry(
        previous, txlog.decode_entry(txlog.encode_entry(entry), "ds", 4), "ds"
    )
    assert replayed is not None and encode_header(replayed) == sealed.data

    # the checkpoint: the canonical bytes go in as they are, the same document as before
    with_bytes = txlog.encode_checkpoint(4, 2, sealed.header, b"schema", canonical=sealed.canonical)
    assert with_bytes == txlog.encode_checkpoint(4, 2, sealed_whole.header, b"schema")
    if fmt == "json":
        assert json.loads(with_bytes)["header"] == json.loads(sealed.data)
    back = txlog.decode_checkpoint(with_bytes, "ds", 4)
    assert back.header is not None and encode_header(back.header) == sealed.data


def test_statistics_rows_of_added_files_keep_header_order() -> None:
    base = {f"p={i}/f{i}": _key(f"f{i}") for i in range(50)}
    added = {"p=9/z": _key("z"), "p=1/a": _key("a"), "p=5/m": _key("m")}
    patch = PatchedPartitions.over(base, frozenset({"p=2/f2"}), added)
    rows = pa.table(
        {
            "label": ["p=5/m", "p=1/a", "p=9/z", "p=3/f3", "p=2/f2"],
            "key": [_key("m"), _key("a"), _key("z"), _key("f3"), _key("f2")],
        }
    )
    for tables in ([rows.slice(0, 3)], [rows]):
        got = live_statistics(tables, patch).column("label").to_pylist()
        assert got == live_statistics(tables, patch.to_dict()).column("label").to_pylist()
    assert live_statistics([rows.slice(0, 3)], patch).column("label").to_pylist() == [
        "p=9/z",
        "p=1/a",
        "p=5/m",
    ]


def test_appends_to_a_large_dataset_log_only_what_they_add(tmp_path: Any) -> None:
    """End to end on a header read column-wise: each append's entry lists its one new
    partition (not the dataset), checkpoints keep working, and the dataset reads back.
    """
    store = kf.ensure_store(str(tmp_path))
    n = JSON_COLUMNAR_MIN + 500
    df = pd.DataFrame({"p": range(n), "v": range(n)})
    kf.store_dataframes_as_dataset(store, "big", [df], partition_on=["p"])
    for i in range(11):  # crosses the checkpoint at version 10
        kf.update_dataset_from_dataframes(
            [pd.DataFrame({"p": [i], "v": [-i]})],
            store=store,
            dataset_uuid="big",
            partition_on=["p"],
        )
    versions, _ = list_log(store, "big")
    assert versions == list(range(12))
    for v in versions[1:]:
        entry = read_entry(store, "big", v)
        assert entry is not None and not entry.reset and len(entry.add) == 1 and not entry.remove
    assert store.exists(txlog.checkpoint_key("big", 10))
    cp = txlog.decode_checkpoint(store.get(txlog.checkpoint_key("big", 10)), "big", 10)
    assert cp.header is not None and len(cp.header.partitions) == n + 10
    out = kf.read_table("big", store)
    assert len(out) == n + 11 and sorted(out["v"]) == sorted([*range(n), *(-i for i in range(11))])
    at5 = kf.read_table("big", store, version=5)
    assert len(at5) == n + 5
    assert len(load_dataset(store, "big").metadata.partitions) == n + 11
    assert orjson.loads(store.get("big.by-dataset-metadata.json"))["dataset_uuid"] == "big"
    raw = msgspec.json.decode(store.get("big.by-dataset-metadata.json"))
    assert len(raw["partitions"]) == n + 11


class _NoWalk(dict[str, str]):
    """A base map that fails if anything walks all of it."""

    def __iter__(self) -> Any:
        raise AssertionError("walked the whole base")

    def keys(self) -> Any:
        raise AssertionError("walked the whole base")

    def items(self) -> Any:
        raise AssertionError("walked the whole base")

    def values(self) -> Any:
        raise AssertionError("walked the whole base")


def _append_entry(
    previous: DatasetHeader, removed: frozenset[str], label: str
) -> tuple[DatasetHeader, Any]:
    """The header folded from ``previous`` (``removed`` gone, ``label`` added) and the
    log entry describing it."""
    header = fold(
        kf_loaded(previous),
        [
            RemovePartitions(removed),
            AddPartitions({label: _key(label)}),
            SetIndices({}),
            SetSchema(SCHEMA),
        ],
        now=NOW,
    )
    entry = log_diff.make_entry(
        version=1, timestamp=1, operation="APPEND", parameters={}, writer="t",
        commit_info=None, app_id=None, app_version=None, previous=previous,
        header=header, schema=None, header_sha256="0" * 64,
    )  # fmt: skip
    return header, entry


def test_the_change_is_derived_without_walking_the_base() -> None:
    """fold, the commit plan, the log entry and the statistics rows of an append touch
    only what it changes: the base map is never iterated.
    """
    from kartoframe.plan.commit_plan import CommitShape, plan_commit
    from kartoframe.plan.write import ChunkResult, WrittenPartition

    parts = _NoWalk({f"p={i}/f{i}": _key(f"p={i}/f{i}") for i in range(100)})
    previous = DatasetHeader(uuid="ds", partitions=parts, partition_keys=("p",))
    base = kf_loaded(previous)
    written = WrittenPartition("p=7/new", _key("p=7/new"), 1, 10, {})
    plan = plan_commit(
        "ds",
        [ChunkResult((written,), SCHEMA, "test")],
        base,
        CommitShape(remove_labels=frozenset({"p=1/f1"})),
    )
    assert isinstance(plan.partitions, PatchedPartitions) and len(plan.partitions) == 100
    header, entry = _append_entry(previous, plan.removed, "p=7/new")
    assert entry.remove == ("p=1/f1",) and entry.add == (("p=7/new", _key("p=7/new")),)
    rows = pa.table({"label": ["p=7/new"], "key": [_key("p=7/new")]})
    assert live_statistics([rows], header.partitions).num_rows == 1


def test_replaying_a_diff_entry_touches_only_its_change() -> None:
    """Time travel and a lagging header replay entries: each diff costs its change; the
    whole header is encoded once, for the digest of the last entry."""
    parts = _NoWalk({f"p={i}/f{i}": f"ds/table/p={i}/f{i}.parquet" for i in range(50)})
    previous = DatasetHeader(uuid="ds", partitions=parts, partition_keys=("p",))
    _, entry = _append_entry(previous, frozenset({"p=3/f3"}), "p=7/new")
    entry = txlog.decode_entry(txlog.encode_entry(entry), "ds", 1)
    replayed = log_diff.apply_entry(previous, entry, "ds", verify=False)
    assert replayed is not None and isinstance(replayed.partitions, PatchedPartitions)
    assert replayed.partitions["p=7/new"] == _key("p=7/new")
    assert "p=3/f3" not in replayed.partitions and len(replayed.partitions) == 50


@pytest.mark.parametrize("bad_key", ["ds/other/p=7/x.parquet", "ds/table/../x.parquet"])
def test_a_replayed_key_the_fast_check_refuses_takes_the_checked_path(bad_key: str) -> None:
    previous = _base_header(10, "json")
    changes = [AddPartitions({"p=7/x": _key("p=7/x")}), SetIndices({}), SetSchema(SCHEMA)]
    entry = log_diff.make_entry(
        version=4, timestamp=2, operation="APPEND", parameters={}, writer="t",
        commit_info=None, app_id=None, app_version=None, previous=previous,
        header=fold(kf_loaded(previous), changes, now=NOW), schema=None,
    )  # fmt: skip
    forged = dataclasses.replace(entry, add=(("p=7/x", bad_key),))
    with pytest.raises(KartoframeError):  # refused when read, or when replayed
        decoded = txlog.decode_entry(txlog.encode_entry(forged), "ds", 4)
        log_diff.apply_entry(previous, decoded, "ds", verify=False)


def test_every_version_replays_to_the_header_its_committer_recorded(tmp_path: Any) -> None:
    """Time travel over diffs, a checkpoint and a reset: each version's header is the
    one recorded (digest), its rows are right, and the patched and the whole-map
    replays agree."""
    store = kf.ensure_store(str(tmp_path))
    n = JSON_COLUMNAR_MIN + 100
    kf.store_dataframes_as_dataset(
        store, "tt", [pd.DataFrame({"p": range(n), "v": range(n)})], partition_on=["p"]
    )
    for i in range(12):
        kf.update_dataset_from_dataframes(
            [pd.DataFrame({"p": [i], "v": [-i - 1]})],
            store=store,
            dataset_uuid="tt",
            partition_on=["p"],
            delete_scope=[{"p": i + 100}] if i % 3 == 0 else None,
        )
    previous = None
    for v in range(13):
        state = log_state_at(store, "tt", v)
        entry = read_entry(store, "tt", v)
        assert state.header is not None and entry is not None
        assert header_digest(state.header) == entry.header_sha256
        whole = log_diff._rebuilt(previous, entry, "tt", "test") if v else None
        if whole is not None:
            assert encode_header(whole) == encode_header(state.header)
        previous = state.header
        rows = kf.read_table("tt", store, version=v)
        removed = sum(1 for i in range(v) if i % 3 == 0)
        assert len(rows) == n + v - removed


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_checkpoints_decode_through_the_header_decoder(fmt: str) -> None:
    """A checkpoint's header is decoded from its bytes (column-wise when large) and
    checked by their digest; one re-spaced by another writer is checked by encoding."""
    header = seal_header(stamp_header(_base_header(JSON_COLUMNAR_MIN + 5, fmt), 10, 5, {})).header
    data = txlog.encode_checkpoint(10, 5, header, b"schema")
    back = txlog.decode_checkpoint(data, "ds", 10)
    assert back.header is not None and encode_header(back.header) == encode_header(header)
    assert isinstance(back.header.partitions, PartitionMap)
    spaced = json.dumps(json.loads(data), indent=1).encode()
    again = txlog.decode_checkpoint(spaced, "ds", 10)
    assert again.header is not None and encode_header(again.header) == encode_header(header)
    doc = json.loads(data)
    if fmt == "json":
        doc["header"]["partitions"].popitem()
        with pytest.raises(KartoframeError, match="digest"):
            txlog.decode_checkpoint(json.dumps(doc).encode(), "ds", 10)
        doc["header"] = "not an object"
    else:
        doc["header"] = {"not": "base64"}
    with pytest.raises(KartoframeError, match="'header' must be"):
        txlog.decode_checkpoint(json.dumps(doc).encode(), "ds", 10)
