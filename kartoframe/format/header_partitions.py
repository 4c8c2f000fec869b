"""The ``partitions`` map of a header, checked column-wise and kept undecoded.

A header lists every partition as ``label: {"files": {table: key}}``. Opening a dataset of
a million partitions must not build a million Python objects per field: a read that prunes
by partition keys needs the labels, and the keys of the few partitions it keeps.

:func:`columnar_partitions` takes the map as ``msgspec`` decoded it, labels to the raw,
undecoded bytes of each entry (:class:`msgspec.Raw`, slices of the header). When every
entry has the same bytes around its key (the same table, the same spacing and, in msgpack,
the same kind of string header, checked against each key's length), the keys are cut
out and checked in Arrow and in C-level passes over all of them at once, with the rules
of the typed path
(:func:`kartoframe.format.header.decode_header`): each key a string inside the dataset's
folder, no ``//``, ``.`` or ``..`` component, no empty last component, no backslash, NUL
or newline. Anything else returns None and the caller takes the typed path, which names
the bad entry.

:class:`PartitionMap` is the result: a read-only mapping label -> key that decodes a key
when it is looked up, iterates its labels without decoding anything, and hands the keys
column-wise (:meth:`PartitionMap.values`). It pickles as a plain ``dict``.

:class:`PatchedPartitions` is the map of a header a commit derives from its base: the
base's map, some labels removed, some partitions added. Building it costs what the commit
changes, not the base's size; a log entry reads the change back from it
(:meth:`PatchedPartitions.change_of`) instead of comparing two maps, and
:func:`json_partitions` encodes it from the base's columns.
"""

from __future__ import annotations

import re
from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from typing import Any, Literal

import msgpack
import msgspec
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "PartitionMap",
    "PatchedPartitions",
    "columnar_partitions",
    "joined_keys_safe",
    "json_partitions",
    "msgpack_partitions",
    "partition_columns",
    "partitions_dict",
]

#: Key patterns that send a header to the checked path: "//", an empty component before a
#: newline, "." and ".." components. The rough pattern, which starts with the literal
#: "/", is searched fast; the exact one runs only if it hits (".hidden" is legal).
_ROUGH_SUSPECT = re.compile(rb"/[/.\n]")
_SUSPECT_KEY = re.compile(rb"/(?:/|\n|\.\.?(?:/|\n))")
#: Characters ``orjson`` escapes in a string.
_JSON_ESCAPED = re.compile(rb'["\\\x00-\x1f]')


#: Keys a :class:`PartitionMap` decodes one by one before it decodes all of them into a
#: ``dict`` (a read that keeps many partitions looks each of them up).
LOOKUPS_BEFORE_DICT = 1024


class PartitionMap(Mapping[str, str]):
    """Label -> data file key of a header, decoded on demand.

    Parameters
    ----------
    raws
        Label -> raw bytes of its ``{"files": {table: key}}`` entry.
    start, stop
        Where the key sits in every raw entry (``stop`` None: at its end).
    keys
        The keys in label order (Arrow strings), already checked.
    """

    __slots__ = ("_dict", "_keys", "_lookups", "_raws", "_start", "_stop")

    def __init__(
        self, raws: dict[str, msgspec.Raw], start: int, stop: int | None, keys: pa.Array
    ) -> None:
        self._raws = raws
        self._start = start
        self._stop = stop
        self._keys = keys
        self._dict: dict[str, str] | None = None
        self._lookups = 0

    def __getitem__(self, label: str) -> str:
        if self._dict is not None:
            return self._dict[label]
        self._lookups += 1
        if self._lookups > LOOKUPS_BEFORE_DICT:  # a read of many partitions: decode them all
            return self._decoded()[label]
        raw = self._raws[label]
        return str(memoryview(raw)[self._start : self._stop], "utf-8")

    def _decoded(self) -> dict[str, str]:
        """The whole map as a ``dict``, decoded once."""
        if self._dict is None:
            self._dict = dict(zip(self._raws, self.key_list(), strict=True))
        return self._dict

    def to_dict(self) -> dict[str, str]:
        """A new ``dict`` of the map (the whole map is decoded once, then copied: ``dict()``
        of a mapping that is not a ``dict`` would look every key up on its own).
        """
        return self._decoded().copy()

    def __contains__(self, label: object) -> bool:
        return label in self._raws

    def __iter__(self) -> Iterator[str]:
        return iter(self._raws)

    def __len__(self) -> int:
        return len(self._raws)

    def values(self) -> _Values:  # type: ignore[override]
        """The keys, in label order (decoded all at once)."""
        return _Values(self)

    def items(self) -> _Items:  # type: ignore[override]
        """``(label, key)`` pairs, in label order (keys decoded all at once)."""
        return _Items(self)

    def key_list(self) -> list[str]:
        """Every key, in label order."""
        if self._dict is not None:
            return list(self._dict.values())
        return list(self._keys.to_pylist())

    def key_column(self) -> pa.Array:
        """Every key, in label order, as Arrow ``large_string`` (nothing decoded)."""
        return self._keys

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.to_dict(),))

    def __repr__(self) -> str:
        return f"PartitionMap({len(self)} partitions)"


class _Values(ValuesView[str]):
    _mapping: PartitionMap

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping.key_list())


class _Items(ItemsView[str, str]):
    _mapping: PartitionMap

    def __iter__(self) -> Iterator[tuple[str, str]]:
        m = self._mapping
        return zip(m, m.key_list(), strict=True)


class PatchedPartitions(Mapping[str, str]):
    """A header's partitions as its base's, ``removed`` labels dropped and ``added`` ones
    appended (in their order), built in time proportional to the change.

    Iteration gives the base's labels in their order (without the removed ones), then the
    added ones: the order a commit gives the new header. An added label may be a removed
    one (a partition replaced); any other added label must not be in the base (the caller
    checks, see :meth:`over`). A patch of a patch is built on the first base, so lookups
    never go more than one map deep.

    Parameters
    ----------
    base
        The base header's partitions (kept, not copied).
    removed
        Labels of ``base`` the new header drops (labels not in ``base`` are ignored).
    added
        New label -> data file key, in header order.
    """

    __slots__ = ("_added", "_base", "_dict", "_len", "_removed")

    def __init__(
        self, base: Mapping[str, str], removed: frozenset[str], added: dict[str, str]
    ) -> None:
        self._base = base
        self._removed = frozenset(lb for lb in removed if lb in base)
        self._added = added
        self._len = len(base) - len(self._removed) + len(added)
        self._dict: dict[str, str] | None = None

    @classmethod
    def over(
        cls, base: Mapping[str, str], removed: frozenset[str], added: Mapping[str, str]
    ) -> PatchedPartitions:
        """``base`` without ``removed``, then ``added``; a patch of a patch is folded into
        one over the first base.

        Raises
        ------
        KeyError
            An added label is still listed (the message is the label).
        """
        if isinstance(base, PatchedPartitions):
            first, gone = base._base, base._removed | removed
            kept = {lb: k for lb, k in base._added.items() if lb not in removed}
        else:
            first, gone, kept = base, removed, {}
        for label, key in added.items():
            if label in kept or (label in first and label not in gone):
                raise KeyError(label)
            kept[label] = key
        return cls(first, gone, kept)  # the constructor keeps the removed labels of first

    @property
    def base(self) -> Mapping[str, str]:
        """The map this one is derived from."""
        return self._base

    def change_of(self, base: Mapping[str, str]) -> tuple[list[str], list[tuple[str, str]]] | None:
        """``(removed labels, added (label, key) pairs)`` that turn ``base`` into this map,
        in the order a log entry replays them (removals, then additions at the end); None
        if this map is not derived from ``base`` itself.
        """
        if base is not self._base:
            return None
        return sorted(self._removed), list(self._added.items())

    def in_added_order(self, labels: Iterable[str]) -> list[str] | None:
        """``labels`` in header order if all of them are added ones (None otherwise): the
        order without walking the base's labels.
        """
        wanted = list(labels)
        if not all(lb in self._added for lb in wanted):
            return None
        at = {lb: i for i, lb in enumerate(self._added)}
        return sorted(wanted, key=at.__getitem__)

    def __getitem__(self, label: str) -> str:
        if label in self._added:
            return self._added[label]
        if label in self._removed:
            raise KeyError(label)
        return self._base[label]

    def __contains__(self, label: object) -> bool:
        return label in self._added or (label not in self._removed and label in self._base)

    def __iter__(self) -> Iterator[str]:
        removed = self._removed
        if removed:
            yield from (lb for lb in self._base if lb not in removed)
        else:
            yield from self._base
        yield from self._added

    def __len__(self) -> int:
        return self._len

    def _decoded(self) -> dict[str, str]:
        if self._dict is None:
            d = partitions_dict(self._base)
            for label in self._removed:
                del d[label]
            d.update(self._added)
            self._dict = d
        return self._dict

    def to_dict(self) -> dict[str, str]:
        """A new ``dict`` of the map."""
        return self._decoded().copy()

    def values(self) -> ValuesView[str]:  # type: ignore[override]
        """The keys, in label order."""
        return self._decoded().values()

    def items(self) -> ItemsView[str, str]:  # type: ignore[override]
        """``(label, key)`` pairs, in label order."""
        return self._decoded().items()

    def columns(self) -> tuple[pa.Array, pa.Array]:
        """Labels and keys in order, as Arrow strings (see :func:`partition_columns`)."""
        labels, keys = partition_columns(self._base)
        if self._removed:
            keep = pc.invert(pc.is_in(labels, pa.array(list(self._removed), labels.type)))
            labels, keys = labels.filter(keep), keys.filter(keep)
        if not self._added:
            return labels, keys
        return (
            pa.concat_arrays([labels, pa.array(list(self._added), labels.type)]),
            pa.concat_arrays([keys, pa.array(list(self._added.values()), keys.type)]),
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.to_dict(),))

    def __repr__(self) -> str:
        return (
            f"PatchedPartitions({len(self)} partitions: {len(self._removed)} removed, "
            f"{len(self._added)} added)"
        )


def partitions_dict(partitions: Mapping[str, str]) -> dict[str, str]:
    """A new ``dict`` of a header's partitions (fast for the maps of this module)."""
    if isinstance(partitions, PartitionMap | PatchedPartitions):
        return partitions.to_dict()
    return dict(partitions)


def partition_columns(partitions: Mapping[str, str]) -> tuple[pa.Array, pa.Array]:
    """A header's labels and keys, in order, as two Arrow ``large_string`` arrays (a
    :class:`PartitionMap` hands its keys over without decoding them).
    """
    if isinstance(partitions, PatchedPartitions):
        return partitions.columns()
    labels = pa.array(list(partitions), type=pa.large_string())
    if isinstance(partitions, PartitionMap):
        return labels, partitions.key_column()
    return labels, pa.array(list(partitions.values()), type=pa.large_string())


def _str_header(first: bytes, size: int) -> int | None:
    """The size of the msgpack string header of the ``size``-byte key ending ``first``."""
    for hs, marker in ((1, None), (2, 0xD9), (3, 0xDA)):
        at = len(first) - size - hs
        if at < 0:
            continue
        m = first[at]
        if hs == 1 and size < 32 and m == 0xA0 | size:
            return hs
        if hs == 2 and m == marker and first[at + 1] == size:
            return hs
        if hs == 3 and m == marker and int.from_bytes(first[at + 1 : at + 3], "big") == size:
            return hs
    return None


def _layout(first: bytes, fmt: Literal["json", "msgpack"]) -> tuple[bytes, bytes, int, str] | None:
    """``(prefix, suffix, msgpack string header size, table)`` of the first raw entry: the
    bytes around its key; None if it is not ``{"files": {table: key}}`` with a verbatim key.
    """
    try:
        entry = orjson.loads(first) if fmt == "json" else msgpack.unpackb(first, raw=False)
    except Exception:
        return None
    files = entry.get("files") if type(entry) is dict and len(entry) == 1 else None
    if type(files) is not dict or len(files) != 1:
        return None
    ((table, key),) = files.items()
    if type(table) is not str or type(key) is not str or not key:
        return None
    encoded = key.encode("utf-8")
    if fmt == "json":
        at = first.rfind(b'"' + encoded + b'"')
        if at < 0:
            return None
        return first[: at + 1], first[at + 1 + len(encoded) :], 0, table
    hs = _str_header(first, len(encoded)) if first.endswith(encoded) else None
    if hs is None:
        return None
    return first[: len(first) - len(encoded) - hs], b"", hs, table


def _msgpack_lengths_ok(
    blob: bytes, starts: np.ndarray, lens: np.ndarray, at: int, hs: int
) -> bool:
    """Every entry's string header (at byte ``at``, ``hs`` bytes) is of the first entry's
    kind and gives the length of the rest of the entry.
    """
    u8 = np.frombuffer(blob, dtype=np.uint8)
    pos = starts[:-1] + at
    size = lens - at - hs
    marker = u8[pos].astype(np.int64)
    if hs == 1:
        return bool(((marker & 0xE0) == 0xA0).all() and ((marker & 0x1F) == size).all())
    if hs == 2:
        return bool((marker == 0xD9).all() and (u8[pos + 1] == size).all())
    high, low = u8[pos + 1].astype(np.int64), u8[pos + 2].astype(np.int64)
    return bool((marker == 0xDA).all() and ((high << 8 | low) == size).all())


def _cut(column: pa.Array, start: int, stop: int | None) -> pa.Array:
    """The bytes ``[start:stop]`` of every entry.

    ``binary_slice`` sizes its output from ``stop - start``: an open end (or a huge one)
    gives "Negative buffer resize" in pyarrow 26, so the end is the longest entry's.
    """
    if stop is None:
        stop = int(pc.max(pc.binary_length(column)).as_py())
    return pc.binary_slice(column, start, stop)


def _all_equal(column: pa.Array, start: int, stop: int | None, expected: bytes) -> bool:
    """Whether the bytes ``[start:stop]`` of every entry are ``expected``."""
    cut = _cut(column, start, stop)
    return bool(pc.all(pc.equal(cut, pa.scalar(expected, type=pa.large_binary()))).as_py())


def columnar_partitions(
    raws: dict[str, msgspec.Raw], fmt: Literal["json", "msgpack"], dataset_uuid: str
) -> tuple[PartitionMap, str] | None:
    """The checked :class:`PartitionMap` of a header's ``partitions`` and its table name;
    None when any entry does not fit the first one's layout or a key is unsafe (the caller
    then takes the typed path).
    """
    n = len(raws)
    if n == 0:
        return None
    entries = list(raws.values())
    first = bytes(entries[0])
    layout = _layout(first, fmt)
    if layout is None:
        return None
    prefix, suffix, hs, table = layout
    lens = np.fromiter(map(len, entries), dtype=np.int64, count=n)
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=starts[1:])
    blob = b"".join(entries)
    column = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(starts), pa.py_buffer(blob)]
    )
    start = len(prefix) + hs
    if int(lens.min()) <= start + len(suffix) or not _all_equal(column, 0, len(prefix), prefix):
        return None
    if fmt == "json":
        if not _all_equal(column, -len(suffix), None, suffix):
            return None
    elif not _msgpack_lengths_ok(blob, starts, lens, len(prefix), hs):
        return None
    stop = -len(suffix) if suffix else None
    try:
        keys = _cut(column, start, stop).cast(pa.large_string())
    except pa.ArrowInvalid:  # not UTF-8
        return None
    del column, blob
    if not _keys_safe(keys, n, dataset_uuid, fmt):
        return None
    return PartitionMap(raws, start, stop, keys), table


def _joined(column: pa.Array, sep: str | bytes) -> bytes:
    """Every entry of a ``large_string`` or ``large_binary`` column, joined by ``sep``, as
    one bytes object (one Arrow pass, no Python object per entry).
    """
    listed = pa.LargeListArray.from_arrays(pa.array([0, len(column)], type=pa.int64()), column)
    return bytes(pc.binary_join(listed, pa.scalar(sep, type=column.type))[0].as_buffer())


def _keys_safe(keys: pa.Array, n: int, dataset_uuid: str, fmt: str) -> bool:
    """:func:`joined_keys_safe` of the cut-out keys, on their Arrow buffer (no joined copy:
    a million keys 238 -> ~100 ms); in JSON also no quote and no control character (the
    entry was then not one plain string).

    Without the newlines between keys, the same rules hold: every key starts with
    ``<uuid>/`` and holds no newline, so a ``//``, ``.`` or ``..`` component the pattern
    finds across two keys needs the first to end in ``/``, ``/.`` or ``/..``, which is
    refused on its own.
    """
    inside = dataset_uuid + "/"
    if not pc.all(pc.starts_with(keys, inside)).as_py():
        return False
    if any(pc.any(pc.ends_with(keys, end)).as_py() for end in ("/", "/.", "/..")):
        return False
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int64)[keys.offset :][: n + 1]
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    if fmt == "json":
        if np.count_nonzero(data < 0x20) or np.count_nonzero(data == ord('"')):
            return False
    elif np.count_nonzero(data == ord("\n")) or np.count_nonzero(data == 0):
        return False
    if np.count_nonzero(data == ord("\\")):
        return False
    text = memoryview(data.data)
    return not (_ROUGH_SUSPECT.search(text) and _SUSPECT_KEY.search(text))


def joined_keys_safe(joined: bytes, n: int, dataset_uuid: str) -> bool:
    """Whether the ``n`` keys joined by newlines in ``joined`` all keep the typed decode
    paths' rules, checked in C-level passes over all of them at once.

    Each key starts with ``<uuid>/``; none holds a newline (the count of newlines would
    differ), a backslash or a NUL (left to the checked path, which names the bad key), a
    ``//``, ``.`` or ``..`` component or an empty last component.
    """
    inside = dataset_uuid.encode() + b"/"
    if joined.count(b"\n") != n - 1 or not joined.startswith(inside):
        return False
    if joined.count(b"\n" + inside) != n - 1:
        return False
    if b"\\" in joined or b"\x00" in joined:
        return False
    if joined.endswith((b"/", b"/.", b"/..")):  # the last key (the others end at a newline)
        return False
    return not (_ROUGH_SUSPECT.search(joined) and _SUSPECT_KEY.search(joined))


#: Partitions from which :func:`json_partitions` encodes a map column-wise (below it the
#: nested dicts cost less than the Arrow set-up).
JSON_COLUMNAR_MIN = 2048


def json_partitions(partitions: Mapping[str, str], table: str) -> bytes | None:
    """The JSON of ``{label: {"files": {table: key}}}`` exactly as ``orjson`` writes it,
    without its braces, built column-wise (no nested dict per partition).

    None if a label, a key or the table holds a character ``orjson`` escapes (a quote, a
    backslash, a control character) or the map is small: the caller then encodes the
    dicts.
    """
    n = len(partitions)
    if n < JSON_COLUMNAR_MIN or _JSON_ESCAPED.search(table.encode("utf-8")):
        return None
    labels, keys = partition_columns(partitions)
    middle = '":{"files":{"' + table + '":"'

    def text(value: str) -> pa.Scalar:
        return pa.scalar(value, type=pa.large_string())

    entries = pc.binary_join_element_wise(
        text('"'), labels, text(middle), keys, text('"}}'), text("")
    )
    body = _joined(entries, ",")
    if b"\\" in body or np.frombuffer(body, dtype=np.uint8).min() < 0x20:
        return None
    # every quote is one of the template's: a label or key holding one would add more
    if body.count(b'"') != (2 + middle.count('"')) * n:
        return None
    return body


#: Partitions from which :func:`msgpack_partitions` packs a map column-wise.
MSGPACK_COLUMNAR_MIN = 2048


def _msgpack_str_headers(lengths: np.ndarray) -> pa.Array:
    """The msgpack ``str`` header of each of strings of ``lengths`` bytes (binary)."""
    n = len(lengths)
    sizes = np.where(lengths < 32, 1, np.where(lengths < 256, 2, np.where(lengths < 65536, 3, 5)))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    buf = np.zeros(int(offsets[-1]), dtype=np.uint8)
    at = offsets[:-1]
    for size, marker in ((1, None), (2, 0xD9), (3, 0xDA), (5, 0xDB)):
        pick = sizes == size
        if not pick.any():
            continue
        pos, ln = at[pick], lengths[pick]
        if marker is None:
            buf[pos] = 0xA0 | ln
            continue
        buf[pos] = marker
        for i in range(size - 1):  # big-endian length bytes
            buf[pos + 1 + i] = (ln >> (8 * (size - 2 - i))) & 0xFF
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(buf)]
    )


def _map_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x80 | n])
    if n < 65536:
        return b"\xde" + n.to_bytes(2, "big")
    return b"\xdf" + n.to_bytes(4, "big")


def msgpack_partitions(partitions: Mapping[str, str], table: str) -> bytes | None:
    """The msgpack of ``{label: {"files": {table: key}}}`` exactly as
    ``msgpack.packb(..., use_bin_type=True)`` packs it, built column-wise (no nested dict
    per partition); None for a small map (the dicts then cost less).
    """
    n = len(partitions)
    if n < MSGPACK_COLUMNAR_MIN:
        return None
    labels, keys = partition_columns(partitions)
    labels, keys = labels.cast(pa.large_binary()), keys.cast(pa.large_binary())
    middle = b"\x81" + msgpack.packb("files") + b"\x81" + msgpack.packb(table)

    def hdr(column: pa.Array) -> pa.Array:
        return _msgpack_str_headers(pc.binary_length(column).to_numpy(zero_copy_only=False))

    entries = pc.binary_join_element_wise(
        hdr(labels),
        labels,
        pa.scalar(middle, type=pa.large_binary()),
        hdr(keys),
        keys,
        pa.scalar(b"", type=pa.large_binary()),
    )
    return _map_header(n) + _joined(entries, b"")
