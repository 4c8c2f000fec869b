"""Ranged remote reads: a scan fetches the footer and only the column chunks (and row
groups) it needs, counted on a real S3 API server; results equal a whole-object read."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

import kartoframe as kf
from kartoframe.storage.ranged import TAIL, chunk_ranges, merge_ranges


class Counting:
    """WSGI middleware: every request's method, path, Range header and body bytes.

    A request is logged after its last byte is sent, which can be after the client has
    its answer: :meth:`data_gets` first waits until no request is in flight, so a count
    taken right after a read includes all of that read's requests.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.log: list[tuple[Any, ...]] = []
        self.lock = threading.Condition()
        self.in_flight = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
        served: list[str] = []

        def start(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            served.extend(v for k, v in headers if k.lower() == "content-range")
            return start_response(status, headers, *args)

        with self.lock:
            self.in_flight += 1
        size = 0
        try:
            for chunk in self.app(environ, start):
                size += len(chunk)
                yield chunk
        finally:
            with self.lock:
                self.log.append((method, path, environ.get("HTTP_RANGE"), size, *served[:1]))
                self.in_flight -= 1
                self.lock.notify_all()

    def data_gets(self, store: kf.Store) -> list[tuple[str, str | None, int]]:
        """GETs of ``store``'s data files, one per distinct (object, bytes served).

        Only ``store``'s own objects (each test has its own bucket): the server logs a
        request after its last byte is sent, so on a loaded machine a GET of the previous
        test can be logged after this test cleared the log. A request retried after a
        timeout is what the reader asked for once, also when the retry names the same
        bytes differently (the server's ``Content-Range`` is the same).
        """
        prefix = "/" + store.url.split("://", 1)[1].rstrip("/") + "/"
        with self.lock:
            assert self.lock.wait_for(lambda: self.in_flight == 0, timeout=120)
            seen: dict[tuple[str, str | None], tuple[str | None, int]] = {}
            for m, p, r, n, *served in self.log:
                data = p.startswith(prefix) and "/table/" in p and p.endswith(".parquet")
                if m == "GET" and data:
                    seen.setdefault((p, served[0] if served else r), (r, n))
        return [(p, r, n) for (p, _), (r, n) in seen.items()]

    def tail_gets(self, store: kf.Store) -> list[str]:
        """The objects of :meth:`data_gets` fetched up to their last byte (the footer
        read), once per distinct GET: a suffix ``bytes=-N`` and its retry as an explicit
        range serve the same bytes and count once.
        """
        self.data_gets(store)  # waits for the requests in flight
        prefix = "/" + store.url.split("://", 1)[1].rstrip("/") + "/"
        with self.lock:
            tails = set()
            for m, p, _, _, *served in self.log:
                if m != "GET" or not p.startswith(prefix) or not served:
                    continue
                span, _, total = served[0].removeprefix("bytes ").partition("/")
                if span.split("-")[1] == str(int(total) - 1) and p.endswith(".parquet"):
                    tails.add((p, served[0]))
        return sorted(p for p, _ in tails)


@pytest.fixture(scope="module")
def counted_s3(make_s3_app) -> Iterator[tuple[str, Counting]]:
    """moto's S3 application on 127.0.0.1 behind a request/byte counter."""
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = Counting(make_s3_app())
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", app
    server.shutdown()
    thread.join()


@pytest.fixture
def wide(counted_s3) -> tuple[kf.Store, Counting, pd.DataFrame]:
    """2 files of 20,000 rows x 20 float columns (~3.2 MB each), sorted by ``t``, row
    groups of 5,000 rows."""
    import boto3

    endpoint, app = counted_s3
    bucket = f"kf-{uuid.uuid4().hex[:20]}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    ).create_bucket(Bucket=bucket)
    store = kf.Store(
        f"s3://{bucket}/root",
        key="testing",
        secret="testing",
        client_kwargs={"endpoint_url": endpoint},
        skip_instance_cache=True,
    )
    rng = np.random.default_rng(0)
    n = 20_000
    frames = []
    for part in ("a", "b"):
        df = pd.DataFrame({f"c{i:02d}": rng.normal(size=n) for i in range(20)})
        df.insert(0, "t", np.arange(n, dtype="int64"))
        df.insert(0, "p", part)
        frames.append(df)
    kf.store_dataframes_as_dataset(
        store,
        "wide",
        frames,
        partition_on=["p"],
        df_serializer=kf.ParquetSerializer(chunk_size=5_000),
    )
    return store, app, pd.concat(frames, ignore_index=True)


def _needed(store: kf.Store, columns: set[str], row_groups=None) -> int:
    total = 0
    for key in kf.read_dataset_metadata("wide", store).partitions.values():
        md = pq.ParquetFile(store.open_input(key)).metadata
        groups = range(md.num_row_groups) if row_groups is None else row_groups
        total += sum(e - s for s, e in chunk_ranges(md, groups, columns))
    return total


def test_a_projection_fetches_only_its_column_chunks(wide) -> None:
    store, app, expected = wide
    file_bytes = _needed(store, None)  # type: ignore[arg-type]
    needed = _needed(store, {"c03", "c07", "c11"})
    app.log.clear()

    got = kf.read_table("wide", store, columns=["p", "c03", "c07", "c11"])

    pd.testing.assert_frame_equal(
        got.sort_values(["p", "c03"]).reset_index(drop=True),
        expected[["p", "c03", "c07", "c11"]].sort_values(["p", "c03"]).reset_index(drop=True),
        check_dtype=False,
    )
    gets = app.data_gets(store)
    fetched = sum(n for _, _, n in gets)
    assert all(r is not None for _, r, _ in gets)  # every GET is ranged
    assert fetched <= 1.3 * needed, (fetched, needed)
    assert fetched < file_bytes / 5  # a whole-object read fetched every column
    # one footer GET per file (a suffix range), then the merged column ranges
    assert any(r and r.startswith("bytes=-") for _, r, _ in gets)
    tails = app.tail_gets(store)
    assert len(tails) == len(set(tails)) == 2, tails


def test_a_filter_fetches_only_the_row_groups_it_can_match(wide) -> None:
    store, app, expected = wide
    needed = _needed(store, {"t", "c05"}, row_groups=[0])
    app.log.clear()

    got = kf.read_table("wide", store, columns=["p", "c05"], predicates=[[("t", "<", 4_000)]])

    want = expected.loc[expected.t < 4_000, ["p", "c05"]]
    assert len(got) == len(want) == 8_000
    assert sorted(got["c05"]) == sorted(want["c05"])
    fetched = sum(n for _, _, n in app.data_gets(store))
    assert fetched <= 1.3 * needed + 2 * TAIL, (fetched, needed)


def test_a_full_read_fetches_each_object_whole(wide) -> None:
    store, app, expected = wide
    app.log.clear()
    got = kf.read_table("wide", store)
    assert len(got) == len(expected)
    gets = app.data_gets(store)
    # every column, no filter: no footer GET, each object whole (s3fs may split it)
    assert not any(r is not None and r.startswith("bytes=-") for _, r, _ in gets)
    sizes = sum(store.size(k) for k in kf.read_dataset_metadata("wide", store).partitions.values())
    assert sum(n for _, _, n in gets) <= sizes + 2 * TAIL


@pytest.mark.parametrize(
    ("columns", "predicates"),
    [
        (["c00"], None),
        (["p", "t", "c19"], [[("t", ">=", 19_000)], [("t", "<", 10)]]),
        (["c01", "c02"], [[("p", "==", "b"), ("c01", ">", 1.0)]]),
        (None, [[("t", "in", [3, 5_000, 19_999])]]),
    ],
)
def test_ranged_scans_equal_local_ones(wide, tmp_path, columns, predicates) -> None:
    store, _, _ = wide
    local = kf.Store(f"file://{tmp_path}/local")
    kf.copy_dataset("wide", store, target_store=local)
    remote = kf.read_table("wide", store, columns=columns, predicates=predicates)
    here = kf.read_table("wide", local, columns=columns, predicates=predicates)
    key = list(here.columns)
    pd.testing.assert_frame_equal(
        remote.sort_values(key).reset_index(drop=True), here.sort_values(key).reset_index(drop=True)
    )


def test_merge_ranges() -> None:
    assert merge_ranges([(0, 10), (15, 20), (100, 120), (121, 130)], gap=10) == [
        (0, 20),
        (100, 130),
    ]
    assert merge_ranges([], gap=10) == []
