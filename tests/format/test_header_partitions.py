"""The column-wise ``partitions`` path of header decoding (format/header_partitions.py).

It must accept exactly the headers the typed and untyped paths accept, give the same
label -> key map, and take over only when every entry has the first one's layout.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import msgpack
import msgspec
import orjson
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from test_header_decode_paths import _outcome, _untyped  # the untyped path, an outcome

from kartoframe.errors import KartoframeError
from kartoframe.format import header as header_mod
from kartoframe.format.header import decode_header
from kartoframe.format.header_partitions import (
    PartitionMap,
    columnar_partitions,
    joined_keys_safe,
    partitions_dict,
)

DECODERS = {
    "json": msgspec.json.Decoder(dict[str, msgspec.Raw]),
    "msgpack": msgspec.msgpack.Decoder(dict[str, msgspec.Raw]),
}


def _doc(partitions: Any) -> dict[str, Any]:
    return {
        "dataset_metadata_version": 4,
        "dataset_uuid": "ds",
        "metadata": {"creation_time": "2024-01-01T00:00:00"},
        "partitions": partitions,
        "partition_keys": ["p"],
    }


def _encode(doc: Any, fmt: str, plateau_spacing: bool = False) -> bytes:
    if fmt == "json":
        return json.dumps(doc).encode() if plateau_spacing else orjson.dumps(doc)
    return zstandard.ZstdCompressor().compress(msgpack.packb(doc, use_bin_type=True))


def _raw_parts(data: bytes, fmt: str) -> dict[str, msgspec.Raw]:
    if fmt == "msgpack":
        data = zstandard.ZstdDecompressor().decompress(data)
    return DECODERS[fmt].decode(DECODERS[fmt].decode(data)["partitions"])


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
@pytest.mark.parametrize("length", [20, 100, 300])  # msgpack: fixstr, str8 and str16 keys
def test_well_formed_maps_decode_column_wise(fmt: str, length: int) -> None:
    pad = "x" * max(0, length - 24)
    parts = {
        f"p={i}/f{i}": {"files": {"table": f"ds/table/p={i}/{pad}f{i}.parquet"}} for i in range(50)
    }
    for plateau_spacing in (False, True):
        data = _encode(_doc(parts), fmt, plateau_spacing)
        h = decode_header(data, "ds", fmt)  # type: ignore[arg-type]
        assert isinstance(h.partitions, PartitionMap)
        expected = {lb: p["files"]["table"] for lb, p in parts.items()}
        assert dict(h.partitions) == expected and h.partitions == expected
        assert list(h.partitions) == list(expected) and len(h.partitions) == 50
        assert list(h.partitions.values()) == list(expected.values())
        assert list(h.partitions.items()) == list(expected.items())
        assert "p=3/f3" in h.partitions and "p=3" not in h.partitions
        assert h.partitions["p=7/f7"] == expected["p=7/f7"]
        assert h.to_dict() == _doc(parts)
        back = pickle.loads(pickle.dumps(h.partitions))
        assert type(back) is dict and back == expected


def test_non_ascii_keys_are_decoded_once_as_utf8() -> None:
    parts = {"p=é/f": {"files": {"table": "ds/table/p=é/ünïcode-ключ.parquet"}}}
    h = decode_header(orjson.dumps(_doc(parts)), "ds", "json")
    assert isinstance(h.partitions, PartitionMap)
    assert h.partitions["p=é/f"] == "ds/table/p=é/ünïcode-ключ.parquet"
    # json.dumps escapes them (\u00e9): the escaped entries take the typed path, same result
    escaped = decode_header(json.dumps(_doc(parts)).encode(), "ds", "json")
    assert not isinstance(escaped.partitions, PartitionMap)
    assert dict(escaped.partitions) == dict(h.partitions)


@pytest.mark.parametrize(
    "odd",
    [
        {"files": {"other": "ds/other/b.parquet"}},  # another table
        {"files": {"table": "ds/table/b.parquet"}, "x": 1},  # an extra field
        {"files": {"table": "ds/table/b.parquet", "t2": "ds/t2/b.parquet"}},  # two tables
        {"files": {"table": 7}},  # not a string
        {"files": {"table": "ds/table/a\\b.parquet"}},  # an escape
        {"files": {"table": "ds/table//b.parquet"}},  # unsafe
        {"files": {"table": "ds/table/../b.parquet"}},
        {"files": {"table": "ds/table/b/"}},
        {"files": {"table": "other/table/b.parquet"}},  # outside the dataset
        {"files": {"table": "ds/table/a\nb.parquet"}},
        {"files": {"table": "ds/table/a\tb.parquet"}},  # JSON: an unescaped control character
    ],
)
@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_an_odd_entry_hands_the_map_to_the_checked_paths(fmt: str, odd: dict[str, Any]) -> None:
    parts = {
        "a": {"files": {"table": "ds/table/a.parquet"}},
        "b": odd,
        "c": {"files": {"table": "ds/table/c.parquet"}},
    }
    data = _encode(_doc(parts), fmt)
    found = columnar_partitions(_raw_parts(data, fmt), fmt, "ds")  # type: ignore[arg-type]
    msgpack_tab = fmt == "msgpack" and "\t" in str(odd["files"].get("table"))
    assert (found is not None) == msgpack_tab  # a tab is a legal msgpack string character
    assert _outcome(lambda: decode_header(data, "ds", fmt)) == _outcome(  # type: ignore[arg-type]
        lambda: _untyped(data, fmt)
    )


SEGMENT = st.one_of(
    st.sampled_from(["table", "p=1", "p=%2F", ".hidden", "..x", ".", "..", "", "a\\b", "\x00"]),
    st.text(min_size=1, max_size=40),
)
KEY = st.one_of(
    st.lists(SEGMENT, min_size=1, max_size=5).map(lambda c: "ds/" + "/".join(c)),
    st.sampled_from(["ds/" + "y" * 300, "ds/" + "z" * 40, "other/x", "ds"]),
)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(KEY, min_size=1, max_size=6),
    table=st.sampled_from(["table", "core", "tä ble"]),
    fmt=st.sampled_from(["json", "msgpack"]),
    plateau_spacing=st.booleans(),
)
def test_column_wise_and_untyped_paths_agree(
    keys: list[str], table: str, fmt: str, plateau_spacing: bool
) -> None:
    parts = {f"l{i}": {"files": {table: k}} for i, k in enumerate(keys)}
    data = _encode(_doc(parts), fmt, plateau_spacing)
    assert _outcome(lambda: decode_header(data, "ds", fmt)) == _outcome(  # type: ignore[arg-type]
        lambda: _untyped(data, fmt)
    )


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(KEY, min_size=1, max_size=6),
    fmt=st.sampled_from(["json", "msgpack"]),
    plateau_spacing=st.booleans(),
)
def test_column_wise_keys_are_checked_by_the_joined_rules(
    keys: list[str], fmt: str, plateau_spacing: bool
) -> None:
    """The column-wise check of the cut-out keys (on their Arrow buffer, no separators)
    accepts exactly the maps the joined check of the same keys accepts: in JSON, of keys
    written verbatim (the encoders escape quotes, backslashes and control characters), in
    msgpack of keys whose string headers are of one kind."""
    parts = {f"l{i}": {"files": {"table": k}} for i, k in enumerate(keys)}
    data = _encode(_doc(parts), fmt, plateau_spacing)
    found = columnar_partitions(_raw_parts(data, fmt), fmt, "ds")  # type: ignore[arg-type]
    kinds = {(n >= 32) + (n >= 256) for n in (len(k.encode()) for k in keys)}
    if fmt == "msgpack" and len(kinds) > 1:  # string headers of several kinds: no one layout
        assert found is None
        return
    verbatim = fmt == "msgpack" or not any(
        c in '"\\' or ord(c) < 0x20 or (plateau_spacing and ord(c) > 0x7E) for k in keys for c in k
    )
    want = verbatim and joined_keys_safe("\n".join(keys).encode(), len(keys), "ds")
    assert (found is not None) == want
    if found is not None:
        assert found[0].key_list() == keys


def test_whole_map_copies_are_dicts_of_their_own() -> None:
    parts = {f"p={i}/f": {"files": {"table": f"ds/table/p={i}/f.parquet"}} for i in range(20)}
    h = decode_header(orjson.dumps(_doc(parts)), "ds", "json")
    pm = h.partitions
    assert isinstance(pm, PartitionMap)
    expected = {lb: p["files"]["table"] for lb, p in parts.items()}
    first = partitions_dict(pm)
    assert type(first) is dict and first == expected
    first["p=0/f"] = "changed"
    del first["p=1/f"]
    second = partitions_dict(pm)  # from the cached decode, unchanged by the first copy
    assert second == expected and second is not first
    assert pm["p=1/f"] == expected["p=1/f"] and list(pm.values()) == list(expected.values())
    assert partitions_dict({"a": "b"}) == {"a": "b"}


def test_many_lookups_decode_the_map_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from kartoframe.format import header_partitions

    monkeypatch.setattr(header_partitions, "LOOKUPS_BEFORE_DICT", 3)
    parts = {f"p={i}/f": {"files": {"table": f"ds/table/p={i}/f.parquet"}} for i in range(10)}
    pm = decode_header(orjson.dumps(_doc(parts)), "ds", "json").partitions
    assert isinstance(pm, PartitionMap)
    got = [pm[lb] for lb in reversed(list(parts))]  # one by one, then from one decode
    assert got == [p["files"]["table"] for p in reversed(list(parts.values()))]
    assert pm._dict is not None and len(pm._dict) == 10
    with pytest.raises(KeyError):
        pm["missing"]


def test_threads_looking_keys_up_at_once_all_get_the_right_keys() -> None:
    """A header is shared by the threads of a read: the first thousand lookups decode one
    key each, the next one decodes the whole map; threads crossing that point together
    must all see the right keys."""
    from concurrent.futures import ThreadPoolExecutor

    parts = {f"p={i}/f": {"files": {"table": f"ds/table/p={i}/f.parquet"}} for i in range(5000)}
    expected = {lb: p["files"]["table"] for lb, p in parts.items()}
    for _ in range(3):
        pm = decode_header(orjson.dumps(_doc(parts)), "ds", "json").partitions
        assert isinstance(pm, PartitionMap)
        labels = list(expected)

        def look(offset: int, pm: PartitionMap = pm, labels: list[str] = labels) -> list[str]:
            return [pm[labels[(i + offset) % len(labels)]] for i in range(len(labels))]

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(look, range(0, 8 * 613, 613)))
        for offset, got in zip(range(0, 8 * 613, 613), results, strict=True):
            assert got == [expected[labels[(i + offset) % len(labels)]] for i in range(5000)]


TEXT = st.one_of(
    st.text(min_size=1, max_size=12),
    st.sampled_from(['a"b', "a\\b", "a\nb", "é/ключ", "p=1/f", "\x1f", "x" * 40]),
)


def _encoding_case(
    labels: list[str], keys: list[str], table: str, fmt: str, note: str
) -> header_mod.DatasetHeader:
    """A header of ``labels`` -> keys in ``table`` whose metadata holds ``note`` (text
    that looks like the placeholder the encoder splices at)."""
    return header_mod.DatasetHeader(
        uuid="ds",
        partitions={lb: f"ds/{table}/{k}" for lb, k in zip(labels, keys, strict=False)},
        table_name=table,
        partition_keys=("p",),
        storage_format=fmt,  # type: ignore[arg-type]
        metadata={"creation_time": "2024-01-01", "note": note},
        extra={"zz": 1},
    )


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(TEXT, min_size=1, max_size=8, unique=True),
    keys=st.lists(TEXT, min_size=8, max_size=8),
    table=st.sampled_from(["table", "core", 'ta"ble', "tä ble"]),
    as_map=st.booleans(),
)
def test_column_wise_json_encoding_is_orjsons(
    labels: list[str], keys: list[str], table: str, as_map: bool
) -> None:
    """encode_header splices a column-wise partitions map into the header: the bytes must
    be exactly those of orjson encoding the nested dicts, whatever the labels and keys."""
    from kartoframe.format import header as header_mod
    from kartoframe.format import header_partitions

    header = _encoding_case(labels, keys, table, "json", '"partitions":"x"')
    if as_map:  # the same header decoded column-wise, when it is valid and its keys allow it
        try:
            decoded = decode_header(
                orjson.dumps(header.to_dict(), option=header_mod._JSON_OPTIONS), "ds", "json"
            )
        except KartoframeError:
            decoded = header
        header = decoded if isinstance(decoded.partitions, PartitionMap) else header
    expected = orjson.dumps(header.to_dict(), option=header_mod._JSON_OPTIONS)
    old = header_partitions.JSON_COLUMNAR_MIN
    header_partitions.JSON_COLUMNAR_MIN = 1
    try:
        assert header_mod.encode_header(header) == expected
    finally:
        header_partitions.JSON_COLUMNAR_MIN = old


MSGPACK_TEXT = st.one_of(
    st.text(min_size=0, max_size=40),
    st.sampled_from(["", "x" * 31, "x" * 32, "é" * 16, "x" * 255, "x" * 256, "x" * 65536]),
)


@settings(max_examples=150, deadline=None)
@given(
    labels=st.lists(MSGPACK_TEXT, min_size=1, max_size=20, unique=True),
    keys=st.lists(MSGPACK_TEXT, min_size=20, max_size=20),
    table=st.sampled_from(["table", "core", "x" * 40, "tä ble"]),
    as_map=st.booleans(),
    patched=st.booleans(),
)
def test_column_wise_msgpack_packing_is_msgpacks(
    labels: list[str], keys: list[str], table: str, as_map: bool, patched: bool
) -> None:
    """The msgpack map packed column-wise (every string-header size: fixstr, str8, str16,
    str32; map16 and fixmap) is byte for byte ``msgpack.packb`` of the nested dicts,
    for a plain map, a decoded one and a patched one."""
    from kartoframe.format import header as header_mod
    from kartoframe.format import header_partitions

    header = _encoding_case(labels, keys, table, "msgpack", "partitions")
    if as_map:
        try:
            decoded = decode_header(header_mod.encode_header(header), "ds", "msgpack")
        except KartoframeError:
            decoded = header
        header = decoded if isinstance(decoded.partitions, PartitionMap) else header
    if patched:
        drop = frozenset(list(header.partitions)[::2])
        patch = header_partitions.PatchedPartitions.over(
            header.partitions, drop, {"new/label": "ds/table/new.parquet"}
        )
        header = header.replace(partitions=patch)
    expected = msgpack.packb(header.to_dict(), use_bin_type=True)
    old = header_partitions.MSGPACK_COLUMNAR_MIN
    header_partitions.MSGPACK_COLUMNAR_MIN = 1
    try:
        canonical, data = header_mod.encode_header_parts(header)
    finally:
        header_partitions.MSGPACK_COLUMNAR_MIN = old
    assert canonical == expected
    assert zstandard.ZstdDecompressor().decompress(data) == expected


def test_a_map_of_65536_partitions_gets_a_map32_header() -> None:
    from kartoframe.format.header_partitions import msgpack_partitions

    parts = {str(i): f"ds/table/{i}" for i in range(65536)}
    packed = msgpack.packb({lb: {"files": {"table": k}} for lb, k in parts.items()})
    assert msgpack_partitions(parts, "table") == packed
    assert packed[:1] == b"\xdf"


def test_a_large_json_header_is_encoded_column_wise() -> None:
    from kartoframe.format import header as header_mod
    from kartoframe.format.header_partitions import JSON_COLUMNAR_MIN, json_partitions

    n = JSON_COLUMNAR_MIN
    parts = {f"p={i}/f": {"files": {"table": f"ds/table/p={i}/f.parquet"}} for i in range(n)}
    data = orjson.dumps(_doc(parts))
    h = decode_header(data, "ds", "json")
    assert json_partitions(h.partitions, "table") is not None  # the column-wise path ran
    assert header_mod.encode_header(h) == data
    small = dict(list(partitions_dict(h.partitions).items())[: n - 1])
    assert json_partitions(small, "table") is None


@pytest.mark.parametrize("fmt", ["json", "msgpack"])
def test_many_entries_decode_column_wise(fmt: str) -> None:
    """Arrow sizes a slice's output from its bounds and the entry count: a map of many
    entries must still be cut (an open-ended slice failed at this size)."""
    parts = {f"p={i}/f": {"files": {"table": f"ds/table/p={i}/f.parquet"}} for i in range(20000)}
    h = decode_header(_encode(_doc(parts), fmt), "ds", fmt)  # type: ignore[arg-type]
    assert isinstance(h.partitions, PartitionMap)
    assert h.partitions["p=19999/f"] == "ds/table/p=19999/f.parquet"
