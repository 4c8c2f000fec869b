"""Hostile input: corrupt, truncated, huge, mistyped and future log entries and checkpoints,
paths that try to leave the store, credentials that must not leak.

Every bad log file gives a clear ``KartoframeError`` naming the file — never a crash, never a
silently wrong answer; the parsers are fuzzed with hypothesis.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kartoframe as kf
from kartoframe.format import header_stamp, log_diff, naming, txlog
from kartoframe.storage import log

HEADER = naming.header_key("ds", "json")


def frame(k: int, p: int = 0) -> pd.DataFrame:
    return pd.DataFrame({"p": [p, p], "k": [k, k]})


@pytest.fixture
def lagging(memory_store: kf.Store) -> kf.Store:
    """A dataset whose header says version 1 while entries 2 exist (readers apply it)."""
    kf.store_dataframes_as_dataset(
        memory_store, "ds", [frame(0)], partition_on=["p"], secondary_indices=["k"]
    )
    kf.update_dataset_from_dataframes([frame(1)], memory_store, "ds")
    v1 = memory_store.get(HEADER)
    kf.update_dataset_from_dataframes([frame(2, 1)], memory_store, "ds")
    memory_store.put(HEADER, v1)
    return memory_store


ENTRY2 = txlog.entry_key("ds", 2)


def _entry_doc(store: kf.Store) -> dict[str, Any]:
    return orjson.loads(store.get(ENTRY2))  # type: ignore[no-any-return]


def _read_fails(store: kf.Store, cls: type[Exception], *fragments: str) -> None:
    for read in (
        lambda: kf.read_table("ds", store),
        lambda: kf.read_dataset_metadata("ds", store),
        lambda: kf.read_table("ds", store, version=2),
    ):
        with pytest.raises(cls) as info:
            read()
        assert isinstance(info.value, kf.KartoframeError)
        for fragment in fragments:
            assert fragment in str(info.value), str(info.value)


def test_roll_forward_is_exact(lagging: kf.Store) -> None:
    assert sorted(kf.read_table("ds", lagging)["k"]) == [0, 0, 1, 1, 2, 2]


@pytest.mark.parametrize("cut", [0, 1, 0.5, -1])
def test_truncated_entry(lagging: kf.Store, cut: float) -> None:
    data = lagging.get(ENTRY2)
    end = int(len(data) * cut) if isinstance(cut, float) else cut
    lagging.put(ENTRY2, data[:end])
    _read_fails(lagging, kf.CorruptMetadataError, "log entry 2", "'ds'")


@pytest.mark.parametrize("garbage", [b"\xff\xfe", b"null", b"[]", b'"x"', b"{" * 5000])
def test_entry_that_is_not_an_entry(lagging: kf.Store, garbage: bytes) -> None:
    lagging.put(ENTRY2, garbage)
    _read_fails(lagging, kf.CorruptMetadataError, "log entry 2")


WRONG_TYPES = {
    "kartoframe_log": "1",
    "version": "2",
    "timestamp": -5,
    "operation": 1,
    "parameters": [],
    "writer": None,
    "commit_info": "x",
    "txn": {"app_id": 1, "app_version": 1},
    "reset": "no",
    "deleted": 0,
    "remove": "p=0",
    "add": [["only-label"]],
    "header_format": "yaml",
    "explicit_partitions": None,
    "header": [],
    "header_sha256": "abc",
    "schema": "***not base64***",
    "reverts": "1",
    "new": [1],
}


@pytest.mark.parametrize("key", sorted(WRONG_TYPES))
def test_ill_typed_entry_key(lagging: kf.Store, key: str) -> None:
    doc = _entry_doc(lagging)
    doc[key] = WRONG_TYPES[key]
    lagging.put(ENTRY2, orjson.dumps(doc))
    _read_fails(lagging, kf.CorruptMetadataError, "log entry 2")


def test_entry_from_the_future(lagging: kf.Store) -> None:
    doc = _entry_doc(lagging)
    doc["kartoframe_log"] = 2
    lagging.put(ENTRY2, orjson.dumps(doc))
    _read_fails(lagging, kf.UnsupportedVersionError, "protocol 2", "Upgrade")
    with pytest.raises(kf.UnsupportedVersionError):
        kf.update_dataset_from_dataframes([frame(3)], lagging, "ds")


def test_header_marker_from_the_future_or_malformed(memory_store: kf.Store) -> None:
    kf.store_dataframes_as_dataset(memory_store, "ds", [frame(0)], partition_on=["p"])
    doc = orjson.loads(memory_store.get(HEADER))
    doc["kartoframe"]["log"]["protocol"] = 7
    memory_store.put(HEADER, orjson.dumps(doc))
    with pytest.raises(kf.UnsupportedVersionError, match="protocol 7"):
        kf.read_table("ds", memory_store)
    doc["kartoframe"]["log"] = {"protocol": 1, "version": "x", "timestamp": 0}
    memory_store.put(HEADER, orjson.dumps(doc))
    with pytest.raises(kf.CorruptMetadataError, match=r"kartoframe\.log\.version"):
        kf.read_table("ds", memory_store)


def test_entry_with_a_wrong_version_number(lagging: kf.Store) -> None:
    lagging.put(ENTRY2, lagging.get(txlog.entry_key("ds", 1)))
    _read_fails(lagging, kf.CorruptMetadataError, "says it is version 1")


def test_edited_entry_fails_its_digest(lagging: kf.Store) -> None:
    doc = _entry_doc(lagging)
    doc["add"] = doc["add"][:0]  # drop the partition the committer added
    lagging.put(ENTRY2, orjson.dumps(doc))
    _read_fails(lagging, kf.CorruptMetadataError, "replaying entry 2")


@pytest.mark.parametrize(
    "bad",
    [
        "../other/x.parquet",
        "/etc/passwd",
        "ds/../../x.parquet",
        "ds\\..\\x",
        "ds/a\x00.parquet",
        "s3://bucket/ds/x.parquet",
        "other/table/x.parquet",
    ],
)
def test_entry_keys_outside_the_dataset(lagging: kf.Store, bad: str) -> None:
    doc = _entry_doc(lagging)
    doc["add"][0][1] = bad
    lagging.put(ENTRY2, orjson.dumps(doc))
    _read_fails(lagging, kf.UnsafePathError)


def test_entry_label_with_nul(lagging: kf.Store) -> None:
    doc = _entry_doc(lagging)
    doc["remove"] = ["p=0/\x00"]
    lagging.put(ENTRY2, orjson.dumps(doc))
    _read_fails(lagging, kf.CorruptMetadataError, "remove")


def test_huge_entry_is_refused(lagging: kf.Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(txlog, "MAX_LOG_BYTES", 100)
    _read_fails(lagging, kf.CorruptMetadataError, "over the 100-byte limit")


def test_corrupt_checkpoint(memory_store: kf.Store) -> None:
    kf.store_dataframes_as_dataset(memory_store, "ds", [frame(0)], partition_on=["p"])
    for i in range(1, 13):
        kf.update_dataset_from_dataframes([frame(i)], memory_store, "ds")
    key = txlog.checkpoint_key("ds", 10)
    good = memory_store.get(key)
    for bad in (b"", good[:-3], orjson.dumps({"kartoframe_checkpoint": 9})):
        memory_store.put(key, bad)
        with pytest.raises((kf.CorruptMetadataError, kf.UnsupportedVersionError)):
            kf.read_table("ds", memory_store, version=11)
    doc = orjson.loads(good)
    doc["header"]["partitions"] = {}
    memory_store.put(key, orjson.dumps(doc))
    with pytest.raises(kf.CorruptMetadataError, match="digest"):
        kf.read_table("ds", memory_store, version=10)
    memory_store.put(key, good)
    assert len(kf.read_table("ds", memory_store, version=11)) == 24


# ------------------------------------------------------------------------------ fuzzing
def _valid_entry() -> bytes:
    store = kf.Store("memory://kf-txn-fuzz-entry")
    if not store.exists(txlog.entry_key("ds", 1)):
        kf.store_dataframes_as_dataset(
            store, "ds", [frame(0)], partition_on=["p"], secondary_indices=["k"]
        )
        kf.update_dataset_from_dataframes(
            [frame(1, 1)], store, "ds", delete_scope=[{"p": 0}], commit_info={"a": [1]}
        )
    return store.get(txlog.entry_key("ds", 1))


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def _decode_and_apply(data: bytes) -> None:
    try:
        entry = txlog.decode_entry(data, "ds", 1)
    except kf.KartoframeError:
        return
    previous = kf.Store("memory://kf-txn-fuzz-entry")
    base = log.state_at(previous, "ds", 0).header
    try:
        header = log_diff.apply_entry(base, entry, "ds")
    except kf.KartoframeError:
        return
    # whatever passes must be a fully valid header of this dataset
    if header is not None:
        for key in header.partitions.values():
            naming.check_key_inside(key, "ds")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_fuzz_entry_bytes(data: bytes) -> None:
    _decode_and_apply(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutated_entries(data: st.DataObject) -> None:
    doc = orjson.loads(_valid_entry())
    path = [data.draw(st.sampled_from(sorted(doc)))]
    target = doc
    while isinstance(target.get(path[-1]), dict) and data.draw(st.booleans()):
        target = target[path[-1]]
        if not target:
            break
        path.append(data.draw(st.sampled_from(sorted(target))))
    if data.draw(st.booleans()):
        target[path[-1]] = data.draw(JSON)
    else:
        target.pop(path[-1], None)
    _decode_and_apply(orjson.dumps(doc))


@settings(max_examples=150, deadline=None)
@given(
    st.binary(max_size=200)
    | JSON.map(lambda v: orjson.dumps({"kartoframe_checkpoint": 1, "version": 0, "x": v}))
)
def test_fuzz_checkpoints(data: bytes) -> None:
    try:
        cp = txlog.decode_checkpoint(data, "ds", 0)
    except kf.KartoframeError:
        return
    assert cp.version == 0


@settings(max_examples=100, deadline=None)
@given(JSON)
def test_fuzz_header_marker(value: Any) -> None:
    from kartoframe.format.header import DatasetHeader

    header = DatasetHeader("ds", {}, extra={"kartoframe": {"log": value, "txn": value}})
    try:
        found = header_stamp.header_log(header)
    except kf.KartoframeError:
        return
    assert found is None or (found.version >= 0 and found.timestamp >= 0)
    assert all(isinstance(v, int) for v in header_stamp.header_txn(header).values())


# ------------------------------------------------------------------------------ paths
@pytest.mark.parametrize(
    "value",
    ["..", "../..", "a/../../b", "/etc", "\\..\\x", "x\x00y", "C:\\windows", "%2e%2e", "."],
)
def test_partition_values_cannot_leave_the_store(tmp_path: Path, value: str) -> None:
    root = tmp_path / "store"
    outside = set(tmp_path.rglob("*"))
    store = kf.Store(f"file://{root}")
    df = pd.DataFrame({"p": [value, "ok"], "k": [1, 2]})
    kf.store_dataframes_as_dataset(store, "ds", [df], partition_on=["p"], secondary_indices=["k"])
    kf.update_dataset_from_dataframes([df], store, "ds", delete_scope=[{"p": value}])
    assert sorted(kf.read_table("ds", store, version=0)["p"]) == sorted([value, "ok"])
    kf.vacuum_dataset("ds", store, retention_hours=0, force=True)
    got = kf.read_table("ds", store, predicates=[[("p", "==", value)]])
    assert got["k"].tolist() == [1]
    created = set(tmp_path.rglob("*")) - outside
    assert all(p == root or root in p.parents for p in created), "a file outside the store"
    for entry in (root / "ds" / "_kartoframe" / "log").iterdir():
        doc = orjson.loads(entry.read_bytes())
        for _, key in doc.get("add", []):
            naming.check_key_inside(key, "ds")


@pytest.mark.parametrize("uuid", ["..", "a/b", "../x", "/abs", "a\\b", "a\x00", "", "a.b"])
def test_hostile_uuids_are_refused(memory_store: kf.Store, uuid: str) -> None:
    for call in (
        lambda: kf.dataset_history(uuid, memory_store),
        lambda: kf.vacuum_dataset(uuid, memory_store),
        lambda: kf.read_table(uuid, memory_store, version=0),
        lambda: kf.store_dataframes_as_dataset(
            memory_store, uuid, [frame(1)], app_id="a", app_version=1
        ),
    ):
        with pytest.raises(kf.InvalidUUIDError):
            call()
    assert list(memory_store.iter_keys()) == []


# ------------------------------------------------------------------------------ secrets
SECRET = "kf-very-secret-" + base64.b32encode(b"do not leak").decode()


@pytest.mark.s3
def test_credentials_never_leak(
    s3_server: str, s3_store: kf.Store, caplog: pytest.LogCaptureFixture, make_faulty: Any
) -> None:
    """Secrets in storage_options appear in no repr, log record, error or log entry."""
    store = kf.Store(
        s3_store.url,
        key="testing",
        secret="testing",
        token=SECRET,  # moto ignores the session token; it travels with every request
        client_kwargs={"endpoint_url": s3_server},
        skip_instance_cache=True,
    )
    caplog.set_level(logging.DEBUG, logger="kartoframe")
    kf.store_dataframes_as_dataset(store, "ds", [frame(0)], partition_on=["p"], commit_info={})
    kf.update_dataset_from_dataframes([frame(1)], store, "ds", app_id="a", app_version=1)
    texts = [repr(store), str(kf.dataset_history("ds", store))]
    flaky, ffs = make_faulty(store, retries=2)
    ffs.inject(
        "pipe_file",
        exc=lambda p: OSError(5, f"503 while sending token {SECRET} for {p}"),
        times=None,
        match="/_kartoframe/log/",
    )
    with pytest.raises(kf.StorageError) as info:
        kf.update_dataset_from_dataframes([frame(2)], flaky, "ds")
    texts.append(str(info.value))
    texts.append(repr(info.value))
    texts += [r.getMessage() for r in caplog.records]
    texts += [
        store.get(k).decode(errors="replace")
        for k in store.iter_keys()
        if "/_kartoframe/" in k or k.endswith(".json")
    ]
    assert not [t for t in texts if SECRET in t]
