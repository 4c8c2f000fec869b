"""Shared fixtures: stores (local folder, memory, S3-compatible server on 127.0.0.1),
fault-injecting wrappers of them (``tests/storage/faultfs.py``) and the session's local
SparkSession (used by ``tests/spark`` and the Spark conformance bindings)."""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import hypothesis
import pytest

import kartoframe as kf

os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
# Spark's Python workers must run this interpreter (the one with kartoframe installed),
# whichever test starts the first SparkSession (the docs examples do, too)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

# Compiled bytecode. The tests start hundreds of Python processes (the console script, writer
# processes, Spark's Python workers, dask worker processes, ...). Where the environment turns
# bytecode files off (PYTHONDONTWRITEBYTECODE), each of them compiled kartoframe and the test
# helpers from source again (~0.15 s CPU a process). The test session turns them back on
# (Python's default) for itself, its xdist workers and every subprocess: .pyc files go to the
# git-ignored __pycache__ folders, and Python checks each against its source's mtime and size.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Hypothesis: CI (CI=true, and `make test`) runs the same examples every time — seeded by each
# test's name, no example database, no timing-based deadline or health check — and prints the
# blob that reproduces a failure. `make test-explore` (profile "explore") draws fresh random
# examples and keeps the local example database, to look for new counterexamples.
hypothesis.settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow],
)
hypothesis.settings.register_profile(
    "explore", parent=hypothesis.settings.get_profile("default"), deadline=None, print_blob=True
)
if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
    hypothesis.settings.load_profile("ci")

_spark_modules_file = pytest.StashKey[Path]()


# xdist scheduling. `make test` runs the suite in two workers with ``--dist loadfile``: one work
# unit per test module, so module fixtures are built in one process. On top of that, every module
# that runs Spark in the test process is in one unit, so one worker starts the JVM and the other
# none (a JVM costs ~10 s of CPU to start and warm up, and holds ~1.5 GB). Which modules use the
# ``spark`` fixture only the workers know (they collect); each writes the list to a file the
# controller named, before it reports its collection, and the controller's scheduler reads it.
# (pytest-xdist's own ``--dist loadgroup`` does not group under pytest 9.2: it renames
# ``item._nodeid``, which pytest no longer reads.)

#: Test modules that start a SparkSession in the test process without the ``spark`` fixture:
#: the examples of docs/spark.md call ``kartoframe.spark.local_session`` (the same session).
IN_PROCESS_SPARK_MODULES = frozenset({"tests/test_docs_examples.py"})
SPARK_UNIT = "spark"
_SPARK_MODULES_KEY = "kf_spark_modules_file"


def _uses_loadfile(config: pytest.Config) -> bool:
    return config.pluginmanager.hasplugin("xdist") and config.getoption("dist") == "loadfile"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and _uses_loadfile(config):
        folder = Path(tempfile.mkdtemp(prefix="kf-xdist-"))
        config.stash[_spark_modules_file] = folder / "spark-modules.json"


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_spark_modules_file, None)
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """(xdist controller) Tell each worker where to write its list of Spark modules."""
    path = node.config.stash.get(_spark_modules_file, None)
    if path is not None:
        node.workerinput[_SPARK_MODULES_KEY] = str(path)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """(xdist worker) Write the modules that use Spark in the test process."""
    target = getattr(config, "workerinput", {}).get(_SPARK_MODULES_KEY)
    if target is None:
        return
    modules = set(IN_PROCESS_SPARK_MODULES)
    modules.update(
        item.nodeid.split("::")[0] for item in items if "spark" in getattr(item, "fixturenames", ())
    )
    worker_copy = Path(f"{target}.{config.workerinput['workerid']}")
    worker_copy.write_text(json.dumps(sorted(modules)))
    os.replace(worker_copy, target)  # whole files only: both workers write the same list


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """(xdist controller) ``--dist loadfile`` with the Spark modules as one work unit."""
    path = config.stash.get(_spark_modules_file, None)
    if path is None:
        return None
    from xdist.scheduler import LoadFileScheduling

    class SparkUnitScheduling(LoadFileScheduling):
        spark_modules: frozenset[str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if self.spark_modules is None:  # first call: after every worker collected
                text = path.read_text() if path.exists() else "[]"
                self.spark_modules = frozenset(json.loads(text))
            return SPARK_UNIT if module in self.spark_modules else module

    return SparkUnitScheduling(config, log)


@pytest.fixture
def file_store(tmp_path) -> kf.Store:
    """A fresh local-folder store."""
    return kf.Store(f"file://{tmp_path}/store")


@pytest.fixture
def memory_store() -> Iterator[kf.Store]:
    """A fresh in-memory store (removed afterwards)."""
    store = kf.Store(f"memory://kf-test-{uuid.uuid4().hex}")
    yield store
    store.fs.rm(store.path("x").rsplit("/", 1)[0], recursive=True) if store.fs.exists(
        store.path("x").rsplit("/", 1)[0]
    ) else None


@pytest.fixture(params=["file", "memory"])
def store(request, tmp_path) -> kf.Store:
    """Each test runs on a local folder and on memory://."""
    if request.param == "file":
        return kf.Store(f"file://{tmp_path}/store")
    return kf.Store(f"memory://kf-test-{uuid.uuid4().hex}")


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    """A two-worker ``LocalCluster(processes=False)`` client; not the default scheduler.

    ``set_as_default=False`` keeps other tests on dask's local schedulers; tests and the
    engine adapters pass this client explicitly.
    """
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture(params=["threads", "distributed"])
def compute(request) -> Callable[[Any], Any]:
    """Compute a dask object on the threaded scheduler, then (second parameter) on the
    session's ``LocalCluster`` client: ``compute(job)``.
    """
    if request.param == "threads":
        return lambda job: job.compute(scheduler="threads")
    client = request.getfixturevalue("dask_client")
    return lambda job: client.compute(job).result()


class AtomicWrites:
    """A WSGI wrapper that runs the requests that change one object one at a time.

    S3 checks a conditional write (``If-None-Match: *``, ``If-Match``) and stores the
    object as one atomic step. moto (5.2.5, ``S3Response.put_object``) looks the key up,
    then stores it, on the server's request threads without a lock: two racing
    ``If-None-Match: *`` PUTs can both pass the check and both get 200. One run of the
    suite in about twenty saw ``test_put_if_absent_thread_race`` report two winners.
    PUT, POST and DELETE requests on the same path take the same lock (one of
    :attr:`STRIPES`, by the path's hash), which makes moto's check-and-store atomic per
    object, as S3's is; writes to other objects and every read run concurrently (one lock
    for all writes made the S3 race tests 50 % slower). A request's body is read from
    the socket before its lock is taken.
    """

    STRIPES = 64

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.locks = [threading.Lock() for _ in range(self.STRIPES)]

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REQUEST_METHOD") not in ("PUT", "POST", "DELETE"):
            return self.app(environ, start_response)
        length = environ.get("CONTENT_LENGTH")
        if length:
            environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(int(length)))
        path = f"{environ.get('HTTP_HOST', '')}{environ.get('PATH_INFO', '')}"
        with self.locks[hash(path) % self.STRIPES]:
            return list(self.app(environ, start_response))


def s3_app() -> Callable[..., Any]:
    """moto's S3 application, with atomic writes (:class:`AtomicWrites`)."""
    from moto.moto_server.werkzeug_app import create_backend_app

    return AtomicWrites(create_backend_app("s3"))


@pytest.fixture(scope="session")
def make_s3_app() -> Callable[[], Callable[..., Any]]:
    """:func:`s3_app` for test modules that serve it behind their own wrappers."""
    return s3_app


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """An S3-compatible server (moto's S3 service) on 127.0.0.1; yields its endpoint URL.

    moto's S3 application, served as ``ThreadedMotoServer`` serves it but without the
    dispatcher in front that looks up, for every request, which of moto's services it is
    for (listing moto's package folder each time: a fifth of the server's time), and
    with atomic conditional writes (:class:`AtomicWrites`).
    """
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server(
        "127.0.0.1", 0, s3_app(), threaded=True, request_handler=MotoRequestHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="s3-server", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()


@pytest.fixture
def s3_store(s3_server) -> kf.Store:
    """A fresh bucket on the S3 server, as a kartoframe Store."""
    import boto3

    bucket = f"kf-{uuid.uuid4().hex[:20]}"
    client = boto3.client(
        "s3",
        endpoint_url=s3_server,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=bucket)
    return kf.Store(
        f"s3://{bucket}/root",
        key="testing",
        secret="testing",
        client_kwargs={"endpoint_url": s3_server},
        skip_instance_cache=True,
    )


def _load_once(name: str, relative: str) -> ModuleType:
    """Import the test helper file ``relative`` (to this folder) once, as ``name``."""
    if name not in sys.modules:
        path = Path(__file__).parent / relative
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def load_faultfs() -> ModuleType:
    """Import ``tests/storage/faultfs.py`` once, under a name no other module uses."""
    return _load_once("kf_test_faultfs", "storage/faultfs.py")


def load_standalone() -> ModuleType:
    """Import ``tests/cluster/standalone.py`` (the test Spark cluster) once, by one name."""
    return _load_once("kf_test_standalone", "cluster/standalone.py")


@pytest.fixture
def make_faulty() -> Callable[..., tuple[kf.Store, Any]]:
    """``make_faulty(store, retries=3)`` -> (store over a FaultyFileSystem, that filesystem).

    The wrapper also counts every filesystem call (``ffs.calls``): the request counts.
    """
    faultfs = load_faultfs()

    def _make(store: kf.Store, retries: int = 3) -> tuple[kf.Store, Any]:
        ffs = faultfs.FaultyFileSystem(store.fs)
        wrapped = kf.Store(store.url, retries=retries, filesystem=ffs, **store.storage_options)
        return wrapped, ffs

    return _make


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local SparkSession (2 cores) for the whole test session (with
    ``KARTOFRAME_TEST_SPARK=cluster``: a session on a standalone cluster, ``make test-cluster``).

    Built by :func:`kartoframe.spark.local_session` (the documented way): ``local[2]``,
    ``PYSPARK_PYTHON`` set to the test interpreter before the JVM starts, Arrow, UTC session
    time zone, small shuffles, no UI. On top: the tests' own log4j2 file
    (``tests/spark/log4j2.properties``, which also silences the executor logs of expected
    task failures) and a JIT setting that shortens the cold start.
    """
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java; `make test` installs it")
    import kartoframe.spark as kfs

    if os.environ.get("KARTOFRAME_TEST_SPARK", "local") == "cluster":
        # `make test-cluster`: a session on a standalone cluster (tests/cluster/standalone.py)
        standalone = load_standalone()
        yield standalone.shared_session()
        left = standalone.shutdown()
        assert not left, f"cluster processes left running: {left}"
        return
    log4j2 = Path(__file__).resolve().parent / "spark" / "log4j2.properties"
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j2} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    session = kfs.local_session("kartoframe-tests", cores=2, java_options=java_opts)
    yield session
    session.stop()
