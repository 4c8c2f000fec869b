"""Store conformance: one abstract suite, bound to a local folder, memory:// and S3.

Written once in the style of fsspec's abstract test classes: :class:`StoreConformance`
holds every test and asks for two fixtures, ``kstore`` (a fresh, empty store) and
``secret_store`` (an equivalent store built with credential-like options). Each backend
subclasses it and provides those fixtures. Backend-specific extras (the process race on
local disk) live in the subclasses.
"""

from __future__ import annotations

import io
import multiprocessing
import pickle
import threading
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import kartoframe as kf

SECRET = "SuperSecret123"
NESTED_SECRET = "SuperSecret456"

UNSAFE_KEYS = [
    "",
    "..",
    "../x",
    "a/../b",
    "a/..",
    ".",
    "./a",
    "/abs",
    "/etc/passwd",
    "a\\b",
    "..\\x",
    "a\x00b",
    "a//b",
    "a/",
    "s3://other-bucket/x",
    "file:///etc/passwd",
]

# a cube-like layout: two datasets of cube "cube", look-alike prefixes, one other folder
CUBE_KEYS = [
    "cube++seed.by-dataset-metadata.json",
    "cube++seed/table/_common_metadata",
    "cube++seed/table/p=1/a.parquet",
    "cube++enrich.by-dataset-metadata.json",
    "cube++enrich/table/p=1/b.parquet",
    "cube+x.by-dataset-metadata.json",
    "cubes++other.by-dataset-metadata.json",
    "other/x",
]


def _parquet_bytes(n: int = 100) -> tuple[pa.Table, bytes]:
    table = pa.table({"i": pa.array(range(n), pa.int64()), "s": [f"v{i}" for i in range(n)]})
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=10)
    return table, sink.getvalue()


def _race(store: kf.Store, key: str, n: int) -> tuple[list[bool], list[bytes]]:
    payloads = [(f"{i:04d}" * 4096).encode() for i in range(n)]  # 16 KB each, distinct
    barrier = threading.Barrier(n)

    def go(i: int) -> bool:
        barrier.wait()
        return store.put_if_absent(key, payloads[i])

    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(go, range(n)))
    return results, payloads


class StoreConformance:
    """The behaviour every Store backend must have. Subclasses provide the fixtures."""

    race_threads = 16
    race_rounds = 5

    @pytest.fixture
    def kstore(self) -> kf.Store:
        raise NotImplementedError

    @pytest.fixture
    def secret_store(self) -> kf.Store:
        raise NotImplementedError

    # -- get / put ---------------------------------------------------------------------
    def test_put_get_round_trip(self, kstore: kf.Store) -> None:
        for i, data in enumerate([b"", b"x", bytes(range(256)) * 4, b"\x00" * 10]):
            key = f"a/b/{i}.bin"
            kstore.put(key, data)
            assert kstore.get(key) == data
            assert kstore.get_or_none(key) == data
            assert kstore.exists(key)
            assert kstore.size(key) == len(data)

    def test_large_object(self, kstore: kf.Store) -> None:
        data = uuid.uuid4().bytes * (3 << 16)  # 3 MB
        kstore.put("big", data)
        assert kstore.get("big") == data
        assert kstore.get_range("big", len(data) - 5, len(data)) == data[-5:]

    def test_put_replaces(self, kstore: kf.Store) -> None:
        kstore.put("k", b"old content, longer")
        kstore.put("k", b"new")
        assert kstore.get("k") == b"new"

    def test_keys_with_quoted_characters(self, kstore: kf.Store) -> None:
        key = "ds/table/s=a%20b%2Fc/k%3Dv/ü€ +x.parquet"
        kstore.put(key, b"1")
        assert kstore.get(key) == b"1"
        assert list(kstore.iter_keys("ds/")) == [key]

    def test_missing_key(self, kstore: kf.Store, make_faulty: Callable[..., Any]) -> None:
        store, ffs = make_faulty(kstore, retries=3)
        with pytest.raises(FileNotFoundError) as info:
            store.get("no/such/key")
        assert not isinstance(info.value, kf.StorageError)
        assert ffs.calls["cat_file"] == 1, "a missing key must not be retried"
        assert store.get_or_none("no/such/key") is None
        assert not store.exists("no/such/key")
        with pytest.raises(FileNotFoundError):
            store.get_range("no/such/key", 0, 10)
        with pytest.raises(FileNotFoundError):
            store.size("no/such/key")
        with pytest.raises(FileNotFoundError):
            store.open_input("no/such/key")
        store.delete("no/such/key")  # not an error

    def test_a_directory_is_not_a_key(self, kstore: kf.Store) -> None:
        kstore.put("d/x", b"1")
        assert not kstore.exists("d")
        assert kstore.get_or_none("d") is None
        for call in (
            lambda: kstore.get("d"),
            lambda: kstore.get_range("d", 0, 1),
            lambda: kstore.size("d"),
            lambda: kstore.open_input("d"),
        ):
            with pytest.raises(FileNotFoundError):
                call()

    # -- ranged and seekable reads -------------------------------------------------------
    def test_get_range(self, kstore: kf.Store) -> None:
        data = bytes(range(100))
        kstore.put("r", data)
        assert kstore.get_range("r", 0, 3) == data[:3]
        assert kstore.get_range("r", 40, 60) == data[40:60]
        assert kstore.get_range("r", 95, 1000) == data[95:]
        assert kstore.get_range("r", 10, 10) == b""
        for start, end in [(-1, 5), (5, 4)]:
            with pytest.raises(kf.InvalidInputError):
                kstore.get_range("r", start, end)

    def test_open_input_is_seekable(self, kstore: kf.Store) -> None:
        data = bytes(range(256)) * 8
        kstore.put("f", data)
        with kstore.open_input("f") as f:
            assert f.seekable()
            f.seek(1000)
            assert f.read(10) == data[1000:1010]
            assert f.tell() == 1010
            f.seek(-16, io.SEEK_END)
            assert f.read() == data[-16:]
            f.seek(0)
            assert f.read(4) == data[:4]

    def test_parquet_footer_and_arrow_filesystem(self, kstore: kf.Store) -> None:
        table, data = _parquet_bytes()
        kstore.put("t/x.parquet", data)
        with kstore.open_input("t/x.parquet") as f:
            meta = pq.ParquetFile(f).metadata
        assert (meta.num_rows, meta.num_row_groups) == (100, 10)
        afs = kstore.arrow_filesystem()
        assert isinstance(afs, pafs.FileSystem)
        info = afs.get_file_info(kstore.path("t/x.parquet"))
        assert info.type == pafs.FileType.File and info.size == len(data)
        assert pq.read_table(kstore.path("t/x.parquet"), filesystem=afs).equals(table)
        # the kartoframe reader goes the same way (projection + filter + schema)
        from kartoframe.storage.parquet import read_files, read_footer

        assert read_footer(kstore, "t/x.parquet").num_rows == 100
        got = read_files(kstore, ["t/x.parquet"], table.schema, columns=["s"])
        assert got.column("s").to_pylist() == table.column("s").to_pylist()

    # -- put_if_absent -------------------------------------------------------------------
    def test_put_if_absent(self, kstore: kf.Store) -> None:
        # empty payloads included: s3fs's exclusive open() overwrites with b"" (its bug)
        for i, (first, second) in enumerate([(b"a", b"b"), (b"", b"b"), (b"a", b""), (b"", b"")]):
            key = f"x/{i}"
            assert kstore.put_if_absent(key, first) is True
            # a key holding exactly our bytes is ours (our own write whose answer was lost
            # looks the same); other bytes lose
            assert kstore.put_if_absent(key, second) is (second == first)
            assert kstore.get(key) == first, "the loser must not change the content"
            kstore.delete(key)
            assert kstore.put_if_absent(key, second) is True
            assert kstore.get(key) == second

    def test_put_if_absent_thread_race(self, kstore: kf.Store) -> None:
        assert kstore.supports_conditional_put
        for r in range(self.race_rounds):
            key = f"race/{r}"
            results, payloads = _race(kstore, key, self.race_threads)
            assert results.count(True) == 1, results
            assert kstore.get(key) == payloads[results.index(True)]

    # -- delete --------------------------------------------------------------------------
    def test_delete(self, kstore: kf.Store) -> None:
        kstore.put("a/x", b"1")
        kstore.put("a/y", b"2")
        kstore.delete("a/x")
        kstore.delete("a/x")
        assert not kstore.exists("a/x")
        assert kstore.get_or_none("a/x") is None
        assert list(kstore.iter_keys()) == ["a/y"]

    def test_delete_many(self, kstore: kf.Store) -> None:
        keys = [f"m/{i}/f" for i in range(12)]
        for k in keys:
            kstore.put(k, b"1")
        kstore.delete_many([])
        kstore.delete_many([*keys[:6], "m/missing", "m/0/f"])
        assert list(kstore.iter_keys()) == sorted(keys[6:])
        kstore.delete_many(iter(keys[6:]))
        assert list(kstore.iter_keys()) == []

    def test_delete_many_checks_every_key_first(self, kstore: kf.Store) -> None:
        kstore.put("keep/a", b"1")
        with pytest.raises(kf.UnsafePathError):
            kstore.delete_many(["keep/a", "../escape"])
        assert kstore.exists("keep/a")

    # -- listing -------------------------------------------------------------------------
    def test_listing_an_empty_store(self, kstore: kf.Store) -> None:
        assert list(kstore.iter_keys()) == []
        assert list(kstore.iter_prefixes()) == []
        assert list(kstore.iter_keys("nope/")) == []
        assert list(kstore.iter_prefixes("nope/")) == []

    def test_iter_keys(self, kstore: kf.Store) -> None:
        for k in CUBE_KEYS:
            kstore.put(k, b"1")
        assert list(kstore.iter_keys()) == sorted(CUBE_KEYS)
        assert list(kstore.iter_keys("cube++")) == sorted(k for k in CUBE_KEYS if "cube++" in k)
        assert list(kstore.iter_keys("cube+")) == sorted(
            k for k in CUBE_KEYS if k.startswith("cube+")
        )
        assert list(kstore.iter_keys("cube++seed/")) == [
            "cube++seed/table/_common_metadata",
            "cube++seed/table/p=1/a.parquet",
        ]
        assert list(kstore.iter_keys("cube++seed/table/p=1/a.parquet")) == [
            "cube++seed/table/p=1/a.parquet"
        ]
        assert list(kstore.iter_keys("cube++seed/table/p=")) == ["cube++seed/table/p=1/a.parquet"]
        assert list(kstore.iter_keys("other/x/")) == []
        assert list(kstore.iter_keys("zzz")) == []

    def test_iter_prefixes_for_cube_discovery(self, kstore: kf.Store) -> None:
        for k in CUBE_KEYS:
            kstore.put(k, b"1")
        assert list(kstore.iter_prefixes("cube++")) == [
            "cube++enrich.by-dataset-metadata.json",
            "cube++enrich/",
            "cube++seed.by-dataset-metadata.json",
            "cube++seed/",
        ]
        assert list(kstore.iter_prefixes()) == [
            "cube++enrich.by-dataset-metadata.json",
            "cube++enrich/",
            "cube++seed.by-dataset-metadata.json",
            "cube++seed/",
            "cube+x.by-dataset-metadata.json",
            "cubes++other.by-dataset-metadata.json",
            "other/",
        ]
        assert list(kstore.iter_prefixes("cube++seed/table/")) == [
            "cube++seed/table/_common_metadata",
            "cube++seed/table/p=1/",
        ]
        assert list(kstore.iter_prefixes("cube++seed/table/p")) == ["cube++seed/table/p=1/"]
        assert list(kstore.iter_prefixes("cube++seed/nothing/")) == []
        with pytest.raises(kf.InvalidInputError):
            list(kstore.iter_prefixes("cube++", delimiter="+"))

    def test_listings_see_other_writers(self, kstore: kf.Store) -> None:
        """A second handle (another process, in effect) must not serve stale listings."""
        other = pickle.loads(pickle.dumps(kstore))
        assert list(kstore.iter_prefixes()) == []
        assert not kstore.exists("n/k")
        other.put("n/k", b"1")
        other.put("m", b"1")
        assert list(kstore.iter_prefixes()) == ["m", "n/"]
        assert list(kstore.iter_keys()) == ["m", "n/k"]
        assert kstore.exists("n/k") and kstore.exists("m")
        other.delete_many(["n/k", "m"])
        assert list(kstore.iter_prefixes()) == []
        assert list(kstore.iter_keys()) == []
        assert not kstore.exists("n/k") and not kstore.exists("m")

    # -- unsafe keys ---------------------------------------------------------------------
    def test_unsafe_keys_never_reach_the_filesystem(
        self, kstore: kf.Store, make_faulty: Callable[..., Any]
    ) -> None:
        store, ffs = make_faulty(kstore)
        for key in UNSAFE_KEYS:
            self._check_unsafe_key(store, key)
        assert sum(ffs.calls.values()) == 0, ffs.calls
        assert list(kstore.iter_keys()) == []

    @staticmethod
    def _check_unsafe_key(store: kf.Store, key: str) -> None:
        calls: list[Callable[[], Any]] = [
            lambda: store.path(key),
            lambda: store.get(key),
            lambda: store.get_or_none(key),
            lambda: store.get_range(key, 0, 1),
            lambda: store.put(key, b"x"),
            lambda: store.put_if_absent(key, b"x"),
            lambda: store.delete(key),
            lambda: store.delete_many(["fine", key]),
            lambda: store.exists(key),
            lambda: store.open_input(key),
            lambda: store.size(key),
        ]
        if key not in ("", "a/"):  # valid listing prefixes (the root, a folder)
            calls += [lambda: list(store.iter_keys(key)), lambda: list(store.iter_prefixes(key))]
        for n, call in enumerate(calls):
            with pytest.raises(kf.UnsafePathError):
                call()
                pytest.fail(f"call {n} accepted the key {key!r}")

    @pytest.mark.parametrize("key", [None, 5, b"a"], ids=repr)
    def test_non_string_keys_are_refused(self, kstore: kf.Store, key: Any) -> None:
        with pytest.raises(kf.UnsafePathError):
            kstore.get(key)

    # -- pickling and secrets -------------------------------------------------------------
    def test_pickles_cheaply_without_a_live_filesystem(self, kstore: kf.Store) -> None:
        fresh = pickle.dumps(kstore)
        kstore.put("p", b"1")  # opens the filesystem
        used = pickle.dumps(kstore)
        assert used == fresh, "an opened filesystem must not travel with the Store"
        assert len(used) < 2048
        for marker in (b"fsspec", b"s3fs", b"aiobotocore", b"MemoryFileSystem"):
            assert marker not in used
        clone = pickle.loads(used)
        assert clone == kstore and hash(clone) == hash(kstore)
        assert clone.get("p") == b"1"

    def test_secrets_never_shown(
        self, secret_store: kf.Store, make_faulty: Callable[..., Any]
    ) -> None:
        secret_store.put("s/k", b"1")  # the options are really used
        assert secret_store.get("s/k") == b"1"
        texts = [repr(secret_store), repr(pickle.loads(pickle.dumps(secret_store)))]
        store, ffs = make_faulty(secret_store, retries=2)
        ffs.inject(
            "cat_file",
            exc=lambda p: OSError(f"server said: bad key {SECRET}/{NESTED_SECRET} for {p}"),
            times=None,
        )
        ffs.inject("rm_file", exc=lambda p: PermissionError(f"denied {SECRET}"), times=None)
        errors: list[BaseException] = []
        for call in (
            lambda: store.get("s/k"),  # transient failures, retries exhausted
            lambda: store.delete("s/k"),  # permanent failure
            lambda: secret_store.get("s/missing"),
            lambda: secret_store.get("../x"),
        ):
            try:
                call()
            except Exception as e:
                errors.append(e)
            else:
                pytest.fail("expected an error")
        assert [type(e) for e in errors] == [
            kf.StorageError,
            kf.StorageError,
            FileNotFoundError,
            kf.UnsafePathError,
        ]
        assert "***" in str(errors[0]) and "***" in str(errors[1])
        for e in errors:
            texts.append(str(e))
            texts.append("".join(traceback.format_exception(e)))
        for text in texts:
            assert SECRET not in text and NESTED_SECRET not in text, text
        assert "***" in texts[0] and "***" in texts[1]


class TestLocalStore(StoreConformance):
    race_rounds = 10

    @pytest.fixture
    def kstore(self, tmp_path) -> kf.Store:
        return kf.Store(f"file://{tmp_path}/store")

    @pytest.fixture
    def secret_store(self, tmp_path) -> kf.Store:
        return kf.Store(
            f"file://{tmp_path}/store",
            secret=SECRET,
            client_kwargs={"password": NESTED_SECRET},
        )

    def test_publish_leaves_no_temp_files(self, kstore: kf.Store) -> None:
        kstore.put("a/k", b"1")
        kstore.put("a/k", b"2")
        kstore.put_if_absent("a/k", b"3")
        kstore.put_if_absent("a/j", b"4")
        assert list(kstore.iter_keys()) == ["a/j", "a/k"]

    def test_permanent_local_failure_is_a_storage_error(self, kstore: kf.Store) -> None:
        kstore.put("f", b"1")
        with pytest.raises(kf.StorageError, match="after 1 attempt") as info:
            kstore.put("f/x", b"2")  # "f" is a file, not a folder
        assert isinstance(info.value, OSError)
        assert info.value.errno is not None

    @pytest.mark.slow
    def test_put_if_absent_process_race(self, kstore: kf.Store) -> None:
        """N processes race put_if_absent on the same keys: exactly one winner each."""
        n, rounds = 6, 8
        ctx = multiprocessing.get_context("spawn")
        barrier = ctx.Barrier(n)
        queue = ctx.Queue()
        procs = [
            ctx.Process(target=_process_racer, args=(kstore, i, rounds, barrier, queue))
            for i in range(n)
        ]
        for p in procs:
            p.start()
        results = [queue.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(timeout=60)
            assert p.exitcode == 0
        for r in range(rounds):
            winners = [i for i, won in results if won[r]]
            assert len(winners) == 1, (r, results)
            assert kstore.get(f"prace/{r}") == _process_payload(winners[0], r)


def _process_payload(i: int, r: int) -> bytes:
    return (f"{i:03d}-{r:03d}|" * 8192).encode()  # 64 KB


def _process_racer(store: kf.Store, i: int, rounds: int, barrier: Any, queue: Any) -> None:
    won = []
    for r in range(rounds):
        barrier.wait()
        won.append(store.put_if_absent(f"prace/{r}", _process_payload(i, r)))
    queue.put((i, won))


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def kstore(self) -> Any:
        store = kf.Store(f"memory://kf-conf-{uuid.uuid4().hex}")
        yield store
        store.delete_many(list(store.iter_keys()))

    @pytest.fixture
    def secret_store(self) -> kf.Store:
        return kf.Store(
            f"memory://kf-conf-{uuid.uuid4().hex}",
            secret=SECRET,
            client_kwargs={"password": NESTED_SECRET},
        )


@pytest.mark.s3
class TestS3Store(StoreConformance):
    race_rounds = 3

    @pytest.fixture
    def kstore(self, s3_store: kf.Store) -> kf.Store:
        return s3_store

    @pytest.fixture
    def secret_store(self, s3_store: kf.Store, s3_server: str) -> kf.Store:
        return kf.Store(
            s3_store.url,
            key="AKIAKARTOFRAMETEST",
            secret=SECRET,
            client_kwargs={"endpoint_url": s3_server, "aws_session_token": NESTED_SECRET},
            skip_instance_cache=True,
        )
