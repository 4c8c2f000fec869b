"""Adapters that run one benchmark operation on one system, and cached dataset builders.

Systems
-------
``kartoframe``
    ``import kartoframe as kf``; the store is a plain absolute directory path.
``plateau``
    ``plateau.api.dataset``; the store is ``hfs:///abs/path`` (minimalkv filesystem store).
``deltalake``
    ``write_deltalake`` / ``DeltaTable``; a Delta table directory.
``pyarrow``
    ``pyarrow.dataset`` with hive partitioning; in the dask scenario this system is
    ``dask.dataframe.read_parquet`` over the same pyarrow-written folder.

Every adapter method raises :class:`Unavailable` when the system (or the one function it
needs) is missing, so the harness can skip it with a clear message. Heavy imports are done
lazily inside the methods: the asv suite only needs kartoframe.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import datagen
import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
UUID = datagen.DATASET_UUID
PARTITION_ON = list(datagen.PARTITION_COLUMNS)
INDEX = datagen.INDEX_COLUMN

#: pyarrow ``write_dataset`` row-group bounds: without them a partitioned write of unsorted
#: input produces tiny row groups that read ~30x slower. 256 Ki .. 1 Mi rows per row group.
PA_MIN_ROWS_PER_GROUP = 1 << 18
PA_MAX_ROWS_PER_GROUP = 1 << 20


class Unavailable(Exception):
    """The system, or the function a scenario needs, is not available (skip, do not fail)."""


# --------------------------------------------------------------------------------------------
# kartoframe lookup
# --------------------------------------------------------------------------------------------


def use_checkout_kartoframe(repo: Path = REPO) -> str:
    """Make ``import kartoframe`` load the package of this checkout; return where it loads from.

    An editable install made while ``kartoframe/`` had no ``__init__.py`` registers it as a
    namespace package, which imports as an empty module (every function would look missing)
    unless the repository root is on ``sys.path``. If some regular ``kartoframe`` package is
    already importable (an installed wheel, or a ``PYTHONPATH`` override) it is left alone.
    """
    if "kartoframe" not in sys.modules:
        spec = importlib.util.find_spec("kartoframe")
        if spec is None or spec.origin is None:  # missing, or a namespace package
            if (repo / "kartoframe" / "__init__.py").exists() and str(repo) not in sys.path:
                sys.path.insert(1, str(repo))
            importlib.invalidate_caches()
    spec = importlib.util.find_spec("kartoframe")
    return str(spec.origin) if spec and spec.origin else "not importable as a package"


def kf_function(name: str) -> Callable[..., Any]:
    """Return ``kartoframe.<name>`` or raise :class:`Unavailable` with a clear message."""
    try:
        import kartoframe as kf
    except ImportError as exc:  # pragma: no cover - depends on the checkout
        raise Unavailable(f"cannot import kartoframe: {exc}") from exc
    try:
        fn = getattr(kf, name)
    except AttributeError as exc:
        raise Unavailable(f"kartoframe.{name} is not implemented yet") from exc
    if not callable(fn):
        raise Unavailable(f"kartoframe.{name} is not callable")
    return fn  # type: ignore[no-any-return]


def kf_call(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``kartoframe.<name>``; a ``NotImplementedError`` stub also counts as missing."""
    fn = kf_function(name)
    try:
        return fn(*args, **kwargs)
    except NotImplementedError as exc:
        raise Unavailable(f"kartoframe.{name} raised NotImplementedError: {exc}") from exc


def kartoframe_fingerprint() -> str:
    """Hash of the kartoframe sources (path, size, mtime), to invalidate cached datasets."""
    try:
        import kartoframe
    except ImportError as exc:
        raise Unavailable(f"cannot import kartoframe: {exc}") from exc
    version = str(getattr(kartoframe, "__version__", "?"))
    h = hashlib.sha1(version.encode())
    for root in sorted({Path(p) for p in getattr(kartoframe, "__path__", []) if Path(p).is_dir()}):
        for p in sorted(root.rglob("*.py")):
            st = p.stat()
            h.update(f"{p}:{st.st_size}:{st.st_mtime_ns};".encode())
    return f"{version}+{h.hexdigest()[:12]}"


def system_fingerprint(system: str) -> str:
    """Version string of a system (kartoframe: version + source hash)."""
    if system == "kartoframe":
        return kartoframe_fingerprint()
    module = {"plateau": "plateau", "deltalake": "deltalake", "pyarrow": "pyarrow"}[system]
    try:
        mod = __import__(module)
    except ImportError as exc:
        raise Unavailable(f"cannot import {module}: {exc}") from exc
    return str(getattr(mod, "__version__", "?"))


# --------------------------------------------------------------------------------------------
# adapters
# --------------------------------------------------------------------------------------------


def _plateau_url(root: Path) -> str:
    return f"hfs://{root.resolve()}"


#: A partition predicate no partition matches (the partition columns are strings).
NO_PARTITION = [[(PARTITION_ON[0], "==", "no such partition")]]


def _predicate(pid: int) -> list[list[tuple[str, str, Any]]]:
    return [[(INDEX, "==", pid)]]


@dataclass
class System:
    """Base adapter: one method per benchmark operation; each returns the result object."""

    name: str = "?"

    def write(self, df: pd.DataFrame, root: Path) -> None:
        """Write ``df`` partitioned by country/month (index on product_id where supported)."""
        raise Unavailable(f"{self.name}: write not supported")

    def read_full(self, root: Path) -> pd.DataFrame:
        """Read the whole dataset into one pandas DataFrame."""
        raise Unavailable(f"{self.name}: full read not supported")

    def read_pruned(self, root: Path, pid: int) -> pd.DataFrame:
        """Read the rows with ``product_id == pid``."""
        raise Unavailable(f"{self.name}: pruned read not supported")

    def open_header(self, root: Path) -> Any:
        """Open (parse) the dataset header."""
        raise Unavailable(f"{self.name}: header open not supported")

    def ddf(self, root: Path) -> Any:
        """Return a lazy ``dask.dataframe.DataFrame`` over the dataset."""
        raise Unavailable(f"{self.name}: dask not supported")

    def read_nothing(self, root: Path) -> pd.DataFrame:
        """Open and plan a read whose partition predicate selects no partition."""
        raise Unavailable(f"{self.name}: predicate reads not supported")


class Kartoframe(System):
    """kartoframe through its public top-level API."""

    def __init__(self) -> None:
        super().__init__("kartoframe")

    def write(self, df: pd.DataFrame, root: Path) -> None:
        kf_function("store_dataframes_as_dataset")  # fail fast before creating directories
        root.mkdir(parents=True, exist_ok=True)
        kf_call(
            "store_dataframes_as_dataset",
            store=str(root),
            dataset_uuid=UUID,
            dfs=[df],
            partition_on=PARTITION_ON,
            secondary_indices=[INDEX],
        )

    def read_full(self, root: Path) -> pd.DataFrame:
        return kf_call("read_table", UUID, str(root))  # type: ignore[no-any-return]

    def read_pruned(self, root: Path, pid: int) -> pd.DataFrame:
        return kf_call(  # type: ignore[no-any-return]
            "read_table", UUID, str(root), predicates=_predicate(pid)
        )

    def open_header(self, root: Path) -> Any:
        return kf_call("read_dataset_metadata", UUID, str(root))

    def read_nothing(self, root: Path) -> pd.DataFrame:
        return kf_call("read_table", UUID, str(root), predicates=NO_PARTITION)  # type: ignore[no-any-return]

    def ddf(self, root: Path) -> Any:
        return kf_call("read_dataset_as_ddf", UUID, str(root))


class Plateau(System):
    """plateau 4.x eager and dask APIs on an ``hfs://`` store."""

    def __init__(self) -> None:
        super().__init__("plateau")

    @staticmethod
    def _api() -> Any:
        try:
            import plateau.api.dataset as api
        except ImportError as exc:
            raise Unavailable(f"cannot import plateau: {exc}") from exc
        return api

    def write(self, df: pd.DataFrame, root: Path) -> None:
        self._api().store_dataframes_as_dataset(
            store=_plateau_url(root),
            dataset_uuid=UUID,
            dfs=[df],
            partition_on=PARTITION_ON,
            secondary_indices=[INDEX],
        )

    def read_full(self, root: Path) -> pd.DataFrame:
        return self._api().read_table(UUID, _plateau_url(root))  # type: ignore[no-any-return]

    def read_pruned(self, root: Path, pid: int) -> pd.DataFrame:
        return self._api().read_table(  # type: ignore[no-any-return]
            UUID, _plateau_url(root), predicates=_predicate(pid)
        )

    def open_header(self, root: Path) -> Any:
        from plateau.core.dataset import DatasetMetadata

        return DatasetMetadata.load_from_store(UUID, _plateau_url(root))

    def read_nothing(self, root: Path) -> pd.DataFrame:
        return self._api().read_table(  # type: ignore[no-any-return]
            UUID, _plateau_url(root), predicates=NO_PARTITION
        )

    def ddf(self, root: Path) -> Any:
        return self._api().read_dataset_as_ddf(UUID, _plateau_url(root))


class DeltaLake(System):
    """delta-rs (``deltalake``) with ``partition_by``; no secondary index exists."""

    def __init__(self) -> None:
        super().__init__("deltalake")

    def write(self, df: pd.DataFrame, root: Path) -> None:
        from deltalake import write_deltalake

        write_deltalake(str(root), df, partition_by=PARTITION_ON, mode="overwrite")

    def read_full(self, root: Path) -> pd.DataFrame:
        from deltalake import DeltaTable

        return DeltaTable(str(root)).to_pandas()

    def read_pruned(self, root: Path, pid: int) -> pd.DataFrame:
        from deltalake import DeltaTable

        return DeltaTable(str(root)).to_pandas(filters=[(INDEX, "=", pid)])


class PyArrowDataset(System):
    """Raw ``pyarrow.dataset`` with hive partitioning (dask: ``dd.read_parquet``)."""

    def __init__(self) -> None:
        super().__init__("pyarrow")

    def write(self, df: pd.DataFrame, root: Path) -> None:
        import pyarrow as pa
        import pyarrow.dataset as ds

        table = pa.Table.from_pandas(df, preserve_index=False)
        ds.write_dataset(
            table,
            str(root),
            format="parquet",
            partitioning=PARTITION_ON,
            partitioning_flavor="hive",
            min_rows_per_group=PA_MIN_ROWS_PER_GROUP,
            max_rows_per_group=PA_MAX_ROWS_PER_GROUP,
            max_partitions=1 << 20,
            existing_data_behavior="overwrite_or_ignore",
        )

    @staticmethod
    def _dataset(root: Path) -> Any:
        import pyarrow.dataset as ds

        return ds.dataset(str(root), format="parquet", partitioning="hive")

    def read_full(self, root: Path) -> pd.DataFrame:
        return self._dataset(root).to_table().to_pandas()  # type: ignore[no-any-return]

    def read_pruned(self, root: Path, pid: int) -> pd.DataFrame:
        import pyarrow.compute as pc

        table = self._dataset(root).to_table(filter=pc.field(INDEX) == pid)
        return table.to_pandas()  # type: ignore[no-any-return]

    def ddf(self, root: Path) -> Any:
        import dask.dataframe as dd

        return dd.read_parquet(str(root))


SYSTEMS: dict[str, Callable[[], System]] = {
    "kartoframe": Kartoframe,
    "plateau": Plateau,
    "deltalake": DeltaLake,
    "pyarrow": PyArrowDataset,
}


# --------------------------------------------------------------------------------------------
# cached datasets
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SalesSpec:
    """A generated sales dataset: ``rows`` rows over ``partitions`` (country, month) cells."""

    rows: int
    partitions: int
    seed: int = 0
    products: int = datagen.DEFAULT_PRODUCTS

    @property
    def key(self) -> str:
        """Cache directory name."""
        params: dict[str, Any] = {"rows": self.rows, "parts": self.partitions, "seed": self.seed}
        if self.products != datagen.DEFAULT_PRODUCTS:
            params["products"] = self.products
        return "sales-" + datagen.cache_key(**params)

    def table(self, data_dir: Path) -> pd.DataFrame:
        """The generated table (memoised as Parquet under ``data_dir/tables``)."""
        return datagen.cached_sales_table(
            data_dir / "tables", self.rows, self.partitions, self.seed, self.products
        )


def _done_marker(root: Path) -> Path:
    return root.with_name(root.name + ".complete.json")


def _is_complete(root: Path, stamp: dict[str, Any]) -> bool:
    marker = _done_marker(root)
    if not (marker.exists() and root.exists()):
        return False
    try:
        return bool(json.loads(marker.read_text()) == stamp)
    except ValueError:
        return False


def _publish(root: Path, stamp: dict[str, Any]) -> None:
    _done_marker(root).write_text(json.dumps(stamp, sort_keys=True))


def _reset(root: Path) -> None:
    _done_marker(root).unlink(missing_ok=True)
    shutil.rmtree(root, ignore_errors=True)


def expected_stats(spec: SalesSpec, data_dir: Path) -> dict[str, Any]:
    """Facts about a generated table used to check every system's results (cached as JSON)."""
    path = data_dir / spec.key / "expected.json"
    if path.exists():
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    df = spec.table(data_dir)
    pid = datagen.typical_product_id(df)
    hit = df[df[INDEX] == pid]
    stats = {
        "rows": len(df),
        "partitions": int(df.groupby(PARTITION_ON, observed=True).ngroups),
        "revenue_sum": float(df["revenue"].sum()),
        "pruned_product_id": pid,
        "pruned_rows": len(hit),
        "pruned_partitions": int(hit.groupby(PARTITION_ON, observed=True).ngroups),
        "pruned_revenue_sum": float(hit["revenue"].sum()),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(stats, indent=1))
    return stats


def sales_dataset(
    system: str,
    spec: SalesSpec,
    data_dir: Path,
    log: Callable[[str], None] = print,
) -> Path:
    """Return the root of ``spec`` written by ``system``, building it if not cached.

    The input is sorted by (country, month) first (stable, so rows stay in date order inside a
    partition): every system then writes exactly one file per partition, which keeps the read
    benchmarks about reading rather than about how many files an unsorted write produced.
    """
    root = data_dir / spec.key / system
    stamp = {"spec": spec.key, "system": system, "version": system_fingerprint(system)}
    if _is_complete(root, stamp):
        return root
    adapter = SYSTEMS[system]()
    _reset(root)
    df = spec.table(data_dir).sort_values(PARTITION_ON, kind="stable", ignore_index=True)
    log(f"  building {spec.key}/{system} ({spec.rows:,} rows, {spec.partitions:,} partitions)")
    try:
        adapter.write(df, root)
    except BaseException:
        _reset(root)
        raise
    _publish(root, stamp)
    return root


@dataclass(frozen=True)
class HeaderSpec:
    """A dataset whose header lists ``partitions`` partitions; only a few files exist."""

    partitions: int
    fmt: str  # "json" or "msgpack"
    seed: int = 0
    real_rows: int = 2_000
    real_partitions: int = 8

    @property
    def key(self) -> str:
        """Cache directory name."""
        return "header-" + datagen.cache_key(
            parts=self.partitions, fmt=self.fmt, seed=self.seed, real=self.real_partitions
        )


def _header_files(root: Path) -> tuple[Path, Path]:
    base = root / f"{UUID}.by-dataset-metadata"
    return base.with_name(base.name + ".json"), base.with_name(base.name + ".msgpack.zstd")


def read_header_dict(root: Path) -> dict[str, Any]:
    """Load a v4 header (JSON or msgpack+zstd) from a directory store as a plain dict."""
    js, mp = _header_files(root)
    if js.exists():
        return json.loads(js.read_bytes())  # type: ignore[no-any-return]
    import msgpack
    import zstandard

    raw = zstandard.ZstdDecompressor().decompress(mp.read_bytes())
    return msgpack.unpackb(raw, raw=False)  # type: ignore[no-any-return]


def write_header_dict(root: Path, header: dict[str, Any], fmt: str) -> Path:
    """Write a v4 header as plateau does (JSON, or zstd-compressed msgpack); drop the other."""
    js, mp = _header_files(root)
    js.unlink(missing_ok=True)
    mp.unlink(missing_ok=True)
    if fmt == "json":
        js.write_bytes(json.dumps(header).encode("utf-8"))
        return js
    if fmt == "msgpack":
        import msgpack
        import zstandard

        packed = msgpack.packb(header)
        mp.write_bytes(zstandard.ZstdCompressor(write_content_size=True).compress(packed))
        return mp
    raise ValueError(f"unknown header format {fmt!r}")


def header_dataset(
    writer: str,
    spec: HeaderSpec,
    data_dir: Path,
    log: Callable[[str], None] = print,
) -> Path:
    """Return a store root holding a synthesised ``spec.partitions``-partition header.

    ``writer`` (``plateau`` or ``kartoframe``) writes a small real dataset (a few partitions,
    index on product_id, ``_common_metadata``); its header is then re-written listing
    ``spec.partitions`` partitions in the requested format (see
    :func:`datagen.synthesize_header`). The same directory is read by every system.
    """
    root = data_dir / spec.key / f"written-by-{writer}"
    stamp = {"spec": spec.key, "writer": writer, "version": system_fingerprint(writer)}
    if _is_complete(root, stamp):
        return root
    adapter = SYSTEMS[writer]()
    _reset(root)
    n_countries, n_months = datagen.partition_grid(spec.real_partitions)
    df = datagen.sales_table(
        spec.real_rows, spec.seed, n_countries=n_countries, n_months=n_months
    ).sort_values(PARTITION_ON, kind="stable", ignore_index=True)
    log(f"  building {spec.key} ({spec.partitions:,}-partition {spec.fmt} header, {writer})")
    try:
        adapter.write(df, root)
        header = datagen.synthesize_header(read_header_dict(root), spec.partitions, spec.seed)
        path = write_header_dict(root, header, spec.fmt)
    except BaseException:
        _reset(root)
        raise
    _publish(root, stamp)
    log(f"    header {path.name}: {path.stat().st_size / 1e6:.1f} MB")
    return root


def json_worker(
    argv: Sequence[str],
    *,
    what: str,
    python: Path | str = sys.executable,
    drop_env: Iterable[str] = (),
) -> Any:
    """Run a benchmark worker process (``python argv...``) and return the JSON object on
    the last line of its output that starts with ``{`` (None if there is none).

    ``drop_env`` names environment variables the worker runs without (the allocator
    hygiene of a parent that times warm calls, say).

    Raises
    ------
    RuntimeError
        The worker exited with an error (its message ends with the worker's stderr).
    """
    dropped = set(drop_env)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    proc = subprocess.run(
        [str(python), *map(str, argv)], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{proc.stderr.strip()[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def finish_worker(result: Any) -> NoReturn:
    """Print a worker's result as one JSON line (for :func:`json_worker`), then end the
    process at once.

    The interpreter's teardown is skipped: native threads of a peer may still be releasing
    buffers then. deltalake's read worker aborted there ("terminate called without an
    active exception") in 2 of 24 runs on a loaded machine, after printing its result.
    """
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def proc_status(field: str) -> int:
    """A memory line of ``/proc/self/status`` (``VmRSS``, ``VmHWM``...), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def reset_peak_rss() -> tuple[int, bool]:
    """Reset this process's RSS high-water mark (``VmHWM``) to its current RSS.

    Returns the current RSS (the baseline of a later :func:`proc_status` ``("VmHWM")``) and
    whether the reset worked (``/proc/self/clear_refs`` is writable). ``ru_maxrss`` is no
    use in a worker: Linux carries the parent's high-water mark across ``exec``.
    """
    try:
        Path("/proc/self/clear_refs").write_text("5")
        reset = True
    except OSError:
        reset = False
    return proc_status("VmRSS"), reset


def frame_revenue(df: Any) -> float:
    """Sum of the ``revenue`` column (for result checks)."""
    return float(np.asarray(df["revenue"], dtype="float64").sum())


def check_frame(df: Any, rows: int, revenue: float | None = None) -> str | None:
    """Return an error message if ``df`` does not hold ``rows`` rows (and the revenue sum)."""
    if len(df) != rows:
        return f"wrong result: {len(df):,} rows, expected {rows:,}"
    if revenue is not None and "revenue" in df.columns:
        got = frame_revenue(df)
        if not np.isclose(got, revenue, rtol=1e-9, atol=1e-6):
            return f"wrong result: revenue sum {got:.2f}, expected {revenue:.2f}"
    return None
