"""Bytes a remote projection fetches (issue 15): 3 of 40 float columns of 400,000 rows in 4
files, read from moto's S3 API server on 127.0.0.1 behind a request and byte counter.

Run: ``.venv/bin/python asv_benchmarks/remote_projection.py``. Prints the bytes and GETs
of data files the read fetched, the bytes of the column chunks it needs (from the
footers), their ratio (goal: <= 1.3) and the read's time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

import kartoframe as kf

COLUMNS = {"c03", "c17", "c31"}


class Counting:
    """WSGI middleware recording method, path, Range header and body bytes per request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.log: list[tuple[str, str, str | None, int]] = []
        self.lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        size = 0
        for chunk in self.app(environ, start_response):
            size += len(chunk)
            yield chunk
        with self.lock:
            self.log.append(
                (environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("HTTP_RANGE"), size)
            )

    def data_gets(self) -> list[int]:
        """Body bytes of every GET of a data file."""
        with self.lock:
            return [n for m, p, _, n in self.log if m == "GET" and p.endswith(".parquet")]


def needed_bytes(metadata: pq.FileMetaData, columns: set[str]) -> int:
    """Bytes of the column chunks of ``columns`` in every row group."""
    total = 0
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        for j in range(rg.num_columns):
            col = rg.column(j)
            if col.path_in_schema in columns:
                total += col.total_compressed_size
    return total


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = Counting(create_backend_app("s3"))
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="t",
        aws_secret_access_key="t",
        region_name="us-east-1",
    ).create_bucket(Bucket="bench-bucket")
    store = kf.Store(
        "s3://bench-bucket/root",
        key="t",
        secret="t",
        client_kwargs={"endpoint_url": endpoint},
        skip_instance_cache=True,
    )
    rng = np.random.default_rng(0)
    frames = [
        pd.DataFrame({f"c{i:02d}": rng.normal(size=100_000) for i in range(40)}) for _ in range(4)
    ]
    kf.store_dataframes_as_dataset(store, "wide", frames)
    keys = kf.read_dataset_metadata("wide", store).partitions.values()
    needed = sum(needed_bytes(pq.ParquetFile(store.open_input(k)).metadata, COLUMNS) for k in keys)
    app.log.clear()
    start = time.perf_counter()
    df = kf.read_table("wide", store, columns=sorted(COLUMNS))
    elapsed = time.perf_counter() - start
    gets = app.data_gets()
    print(
        f"rows {len(df):,}: fetched {sum(gets) / 1e6:.1f} MB in {len(gets)} GETs; the column "
        f"chunks it needs: {needed / 1e6:.1f} MB; ratio {sum(gets) / needed:.2f} "
        f"(goal <= 1.3); read {elapsed:.2f} s"
    )
    server.shutdown()


if __name__ == "__main__":
    main()
