"""Checking a dataset or a cube after an incident: ``kf.check_dataset``, ``kf.check_cube``.

The engine that walks the store is :mod:`kartoframe.execution.check_run`; the comparisons
are pure functions of :mod:`kartoframe.format.check`.
"""

from __future__ import annotations

from kartoframe.errors import FormatError, InvalidInputError, InvalidTypeError, SchemaError
from kartoframe.execution.check_run import check_dataset_files, check_prefix
from kartoframe.format import naming
from kartoframe.format.check import CheckReport, Finding
from kartoframe.format.cube import Cube, check_datasets, member_from_loaded
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.plan.arguments import check_uuid
from kartoframe.storage.store import Store

__all__ = ["CheckReport", "Finding", "check_cube", "check_dataset"]

#: Concurrent footer reads of a check (ranged reads: latency-bound on object stores).
DEFAULT_WORKERS = 16


def _check_flags(deep: object, max_workers: object) -> int:
    if not isinstance(deep, bool):
        raise InvalidTypeError(f"deep must be a boolean, got {type(deep).__name__}.")
    if not isinstance(max_workers, int) or isinstance(max_workers, bool) or max_workers < 1:
        raise InvalidInputError(f"max_workers must be a positive integer, got {max_workers!r}.")
    return max_workers


@fill
def check_dataset(
    dataset_uuid: str,
    store: StoreInput,
    *,
    deep: bool = False,
    max_workers: int = DEFAULT_WORKERS,
) -> CheckReport:
    """Check that a dataset's files agree with each other; report every problem.

    Verified: every data file the header lists exists and opens as Parquet (its footer
    is read, concurrently) with a schema the stored schema (``_common_metadata``) can read;
    every index file exists, decodes and names only partitions the header lists; the
    statistics file exists, decodes, and its rows name partitions and data files the
    header lists with the row counts of the files' footers; the transaction log replays
    (every entry's digest verified) to its checkpoints and to the stored header. A header
    that lags the log is a warning, not an error: readers roll it forward.

    Nothing is changed in the store.

    $params_dataset
    deep
        Also decode every data page of every data file and compare the values of each
        secondary-indexed column with the index (reads all data: slower).
    max_workers
        Concurrent file reads.

    Returns
    -------
    CheckReport
        ``report.ok`` is True when no finding is an error; ``report.findings`` lists each
        problem with its severity, kind, file key, partition and a message (the kinds are
        listed in ``docs/transactions.md``).

    Raises
    ------
    DatasetNotFoundError
        The dataset has no header.

    $examples
    >>> url = "memory://check-example"
    >>> df = pd.DataFrame({"p": [1, 2], "v": [1.0, 2.0]})
    >>> _ = kf.store_dataframes_as_dataset(url, "ds", [df], partition_on=["p"])
    >>> report = kf.check_dataset("ds", url)
    >>> report.ok, report.files_checked, report.findings
    (True, 2, ())
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    return check_dataset_files(st, uuid, deep, _check_flags(deep, max_workers))


@fill
def check_cube(
    cube: Cube | str,
    store: StoreInput,
    *,
    deep: bool = False,
    max_workers: int = DEFAULT_WORKERS,
) -> CheckReport:
    """Check every dataset of a cube (as :func:`check_dataset`) and the cube rules.

    Parameters
    ----------
    cube
        The :class:`kartoframe.Cube`, or its uuid prefix (the cube is then rebuilt from
        the stored metadata, as :func:`kartoframe.discover_cube` does).
    $store
    deep, max_workers
        As :func:`check_dataset`.

    Returns
    -------
    CheckReport
        The findings of all datasets (each names its dataset) and a ``cube_rules``
        finding if the datasets break a cube rule (no seed, a payload column in two
        datasets, ...); the rules are checked when no dataset has an error.

    Raises
    ------
    DatasetNotFoundError
        No dataset of the cube exists.
    """
    st = ensure_store(store)
    workers = _check_flags(deep, max_workers)
    if isinstance(cube, Cube):
        prefix = cube.uuid_prefix
    elif isinstance(cube, str):
        prefix = naming.validate_uuid(cube, "uuid_prefix")
    else:
        raise InvalidTypeError(
            f"cube must be a kartoframe.Cube or a uuid prefix, got {type(cube).__name__}."
        )
    given = cube if isinstance(cube, Cube) else None
    return check_prefix(st, prefix, deep, workers, lambda: _cube_rule_findings(st, prefix, given))


def _cube_rule_findings(store: Store, prefix: str, cube: Cube | None) -> list[Finding]:
    from kartoframe.api.cube import discover_cube
    from kartoframe.storage.cube_members import load_cube_datasets

    try:
        if cube is None:
            cube = discover_cube(prefix, store)
        datasets = load_cube_datasets(store, prefix)
        check_datasets({k: member_from_loaded(k, v) for k, v in datasets.items()}, cube)
    except (FormatError, InvalidInputError, SchemaError) as e:
        return [Finding("error", "cube_rules", prefix, f"Cube {prefix!r}: {e}")]
    return []
