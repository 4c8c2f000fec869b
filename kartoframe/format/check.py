"""Consistency checks of a dataset's stored files against each other (pure: no I/O).

The functions here compare values that :func:`kartoframe.check_dataset` loaded from the
store — data-file footers, the stored schema, index and statistics tables, log entries,
checkpoints and the stored header — and return :class:`Finding` values, one per problem.
Nothing is raised for a problem: a check reports everything it finds. The checks of the
transaction log and the stored header against it are :mod:`kartoframe.format.check_log`.

Finding kinds (severity ``error`` unless noted):

==============================  =============================================================
kind                            meaning
==============================  =============================================================
``header_unreadable``           the stored header cannot be decoded
``schema_unreadable``           ``_common_metadata`` is missing or cannot be decoded
``data_file_missing``           a data file the header lists does not exist
``data_file_unreadable``        its Parquet footer cannot be read (truncated, not Parquet)
``data_file_schema``            a column has a type the stored schema cannot read it as
``data_file_extra_columns``     (warning) columns the stored schema lacks (readers skip them)
``data_file_corrupt``           (``deep``) the data pages cannot be decoded
``index_file_missing``          an index file the header lists does not exist
``index_file_unreadable``       it cannot be decoded
``index_unknown_partition``     the index names a partition the header does not list
``index_value_missing``         (``deep``) a value of the file is not indexed for its partition
``index_value_extra``           (``deep``, warning) an indexed value the file does not hold
``statistics_file_missing``     the statistics file the header references does not exist
``statistics_file_unreadable``  it cannot be decoded
``statistics_unknown_partition`` a row for a partition (file) the header does not list
``statistics_key_mismatch``     a row names another data file than the header for its partition
``statistics_duplicate``        two rows for one partition
``statistics_rows_mismatch``    a row count differs from the data file's footer
``log_entry_missing``           a version between the oldest and newest entry has no entry
``log_entry_unreadable``        an entry cannot be decoded
``log_digest_mismatch``         replaying an entry does not give the header its committer recorded
``log_replay_failed``           an entry cannot be applied to the version before it
``log_checkpoint_missing``      the oldest kept entry has neither a checkpoint nor a reset
``log_checkpoint_unreadable``   a checkpoint cannot be decoded
``log_checkpoint_mismatch``     a checkpoint differs from the version the entries replay to
``header_mismatch``             the stored header differs from the log version it claims to be
``header_ahead_of_log``         the header claims a version the log does not have
``header_lags_log``             (warning) newer versions are committed; readers roll forward
``header_external``             (warning) the header was written by another program
``header_missing``              (warning) no header, but the log has the dataset's versions
``read_failed``                 a file could not be read from the store (storage error)
``cube_rules``                  the cube's datasets break a cube rule
==============================  =============================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from kartoframe.format.index import PARTITION_COLUMN
from kartoframe.format.schema import normalize_type

__all__ = [
    "CheckReport",
    "Finding",
    "Severity",
    "MAX_FINDINGS_PER_KIND",
    "file_schema_findings",
    "index_findings",
    "index_value_findings",
    "capped",
    "index_pairs",
    "sort_findings",
    "value_set",
    "statistics_findings",
]

Severity = Literal["error", "warning"]

#: At most this many findings of one kind per file (the rest are counted in one more).
MAX_FINDINGS_PER_KIND = 20

_STRAY_INDEX_PREFIX = "__index_level_"


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """One problem found by a check.

    Attributes
    ----------
    severity
        ``"error"`` (readers may fail or return wrong rows) or ``"warning"`` (consistent,
        but worth knowing, e.g. a header lagging its transaction log).
    kind
        What is wrong (``data_file_missing``, ``log_digest_mismatch``, ...; the table in
        ``docs/transactions.md`` lists them all).
    dataset
        The dataset uuid (the cube prefix for a ``cube_rules`` finding).
    message
        A sentence saying what and where.
    key
        The storage key of the file concerned (None if no single file).
    partition
        The partition label concerned (None if none).
    """

    severity: Severity
    kind: str
    dataset: str
    message: str
    key: str | None = None
    partition: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The finding as a JSON-ready dict."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True, slots=True)
class CheckReport:
    """The result of :func:`kartoframe.check_dataset` or :func:`kartoframe.check_cube`.

    Attributes
    ----------
    target
        The dataset uuid or the cube prefix checked.
    kind
        ``"dataset"`` or ``"cube"``.
    datasets
        The uuids of the datasets checked.
    findings
        Every problem found, errors first.
    files_checked
        Number of data files looked at (those the current header lists).
    deep
        Whether the data pages and the index values were checked too.
    """

    target: str
    kind: Literal["dataset", "cube"]
    datasets: tuple[str, ...]
    findings: tuple[Finding, ...]
    files_checked: int = 0
    deep: bool = False

    @property
    def ok(self) -> bool:
        """True if no finding is an error (warnings allowed)."""
        return not self.errors

    @property
    def errors(self) -> list[Finding]:
        """The findings of severity ``error``."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """The findings of severity ``warning``."""
        return [f for f in self.findings if f.severity == "warning"]

    def kinds(self) -> list[str]:
        """The kinds of the findings, in order (handy in tests and scripts)."""
        return [f.kind for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (``ok``, counts and findings)."""
        return {
            "target": self.target,
            "kind": self.kind,
            "ok": self.ok,
            "deep": self.deep,
            "datasets": list(self.datasets),
            "files_checked": self.files_checked,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "findings": [f.to_dict() for f in self.findings],
        }


def sort_findings(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """Errors first, then warnings; otherwise in the order found."""
    items = list(findings)
    return tuple(sorted(items, key=lambda f: f.severity != "error"))


def capped(findings: list[Finding], kind: str, what: str) -> list[Finding]:
    """Keep at most :data:`MAX_FINDINGS_PER_KIND` findings, plus one counting the rest."""
    if len(findings) <= MAX_FINDINGS_PER_KIND:
        return findings
    head = findings[:MAX_FINDINGS_PER_KIND]
    rest = len(findings) - len(head)
    first = findings[0]
    head.append(
        Finding(first.severity, kind, first.dataset, f"... and {rest:,} more {what}.", first.key)
    )
    return head


# ---------------------------------------------------------------------------- data files
def _readable_as(file_type: pa.DataType, stored: pa.DataType) -> bool:
    """Whether readers can cast a file column of ``file_type`` to the stored type."""
    if pa.types.is_null(file_type) or pa.types.is_null(stored):
        return True
    a, b = normalize_type(file_type), normalize_type(stored)
    if a == b:
        return True
    if pa.types.is_decimal(a) and pa.types.is_decimal(b):  # schema evolution widens decimals
        return bool(b.scale >= a.scale and b.precision - b.scale >= a.precision - a.scale)
    return False


def file_schema_findings(
    dataset_uuid: str,
    label: str,
    key: str,
    file_schema: pa.Schema,
    stored: pa.Schema,
    partition_keys: Sequence[str],
) -> list[Finding]:
    """Compare the schema of one data file (from its footer) with the stored schema.

    A file may lack stored columns (files written before a column was added read it as
    nulls) and hold narrower types of the same family (int8 for int64); a column whose
    type readers cannot cast to the stored one is an error, columns the stored schema
    does not know are a warning (readers ignore them).
    """
    out: list[Finding] = []
    stored_types = {f.name: f.type for f in stored}
    bad: list[str] = []
    extra: list[str] = []
    for field in file_schema:
        if field.name.startswith(_STRAY_INDEX_PREFIX):
            continue
        want = stored_types.get(field.name)
        if want is None:
            extra.append(field.name)
        elif not _readable_as(field.type, want):
            bad.append(f"{field.name!r} is {field.type} in the file, {want} in the stored schema")
    if bad:
        out.append(
            Finding(
                "error",
                "data_file_schema",
                dataset_uuid,
                f"Data file {key!r} does not fit the stored schema: " + "; ".join(bad) + ".",
                key,
                label,
            )
        )
    extra = [c for c in extra if c not in partition_keys]
    if extra:
        out.append(
            Finding(
                "warning",
                "data_file_extra_columns",
                dataset_uuid,
                f"Data file {key!r} has columns the stored schema lacks (readers ignore "
                f"them): {', '.join(map(repr, extra))}.",
                key,
                label,
            )
        )
    return out


# ---------------------------------------------------------------------------- indices
def index_findings(
    dataset_uuid: str, column: str, key: str | None, index: pa.Table, partitions: Mapping[str, str]
) -> list[Finding]:
    """Labels an index names that the header does not list (one finding per label)."""
    flat = pc.list_flatten(index[PARTITION_COLUMN].combine_chunks())
    labels = pc.unique(flat).to_pylist() if len(flat) else []
    where = f"index file {key!r}" if key is not None else "embedded index"
    found = [
        Finding(
            "error",
            "index_unknown_partition",
            dataset_uuid,
            f"The {where} of column {column!r} names partition {lb!r}, which the header "
            "does not list.",
            key,
            lb,
        )
        for lb in sorted(str(x) for x in labels if x is not None and x not in partitions)
    ]
    return capped(found, "index_unknown_partition", "partitions the header does not list")


class _NaN:
    """NaN as a set member equal to itself (``float("nan")`` objects never are)."""

    def __repr__(self) -> str:
        return "nan"


_NAN = _NaN()


def _member(value: Any) -> Any:
    return _NAN if isinstance(value, float) and value != value else value


def value_set(values: pa.Array | pa.ChunkedArray) -> set[Any]:
    """The distinct non-null values of an array as a Python set (NaN included once)."""
    return {_member(v) for v in pc.unique(values).drop_null().to_pylist()}


def index_pairs(column: str, index: pa.Table) -> dict[str, set[Any]]:
    """Label -> the values an index lists for it."""
    lengths = pc.list_value_length(index[PARTITION_COLUMN]).to_numpy(zero_copy_only=False)
    values = [_member(v) for v in index[column].to_pylist()]
    labels = pc.list_flatten(index[PARTITION_COLUMN].combine_chunks()).to_pylist()
    out: dict[str, set[Any]] = {}
    pos = 0
    for value, n in zip(values, lengths):
        for lb in labels[pos : pos + int(n)]:
            out.setdefault(lb, set()).add(value)
        pos += int(n)
    return out


def _first_values(values: list[Any]) -> str:
    """The first five values (reprs), ``...`` when there are more."""
    return ", ".join(repr(v) for v in values[:5]) + (" ..." if len(values) > 5 else "")


def index_value_findings(
    dataset_uuid: str,
    column: str,
    index_key: str | None,
    label: str,
    data_key: str,
    indexed: set[Any],
    in_file: set[Any],
) -> list[Finding]:
    """Compare the values an index lists for a partition with those its file holds."""
    missing = sorted(in_file - indexed, key=repr)
    extra = sorted(indexed - in_file, key=repr)
    cases: list[tuple[Severity, str, list[Any], str]] = [
        (
            "error",
            "index_value_missing",
            missing,
            f"Data file {data_key!r} holds {len(missing):,} value(s) of column {column!r} "
            f"that the index does not list for partition {label!r} ({_first_values(missing)}): "
            "reads filtering on them skip its rows.",
        ),
        (
            "warning",
            "index_value_extra",
            extra,
            f"The index of column {column!r} lists {len(extra):,} value(s) for partition "
            f"{label!r} that data file {data_key!r} does not hold ({_first_values(extra)}).",
        ),
    ]
    return [
        Finding(severity, kind, dataset_uuid, message, index_key, label)
        for severity, kind, values, message in cases
        if values
    ]


# ---------------------------------------------------------------------------- statistics
def statistics_findings(
    dataset_uuid: str,
    key: str,
    stats: pa.Table,
    partitions: Mapping[str, str],
    footer_rows: Mapping[str, int],
) -> list[Finding]:
    """Compare a statistics table with the header's partitions and the files' row counts.

    ``footer_rows`` maps labels to the row counts read from their data files' footers.
    Partitions without a row are fine (their statistics are unknown).
    """
    labels = stats.column("label").to_pylist()
    keys = stats.column("key").to_pylist()
    rows = stats.column("rows").to_pylist()
    unknown: list[Finding] = []
    other: list[Finding] = []
    counts: list[Finding] = []
    seen: set[str] = set()
    for lb, k, n in zip(labels, keys, rows):
        if lb not in partitions:
            unknown.append(
                Finding(
                    "error",
                    "statistics_unknown_partition",
                    dataset_uuid,
                    f"Statistics file {key!r} has a row for partition {lb!r} (data file "
                    f"{k!r}), which the header does not list.",
                    key,
                    lb,
                )
            )
            continue
        if lb in seen:
            other.append(
                Finding(
                    "error",
                    "statistics_duplicate",
                    dataset_uuid,
                    f"Statistics file {key!r} has more than one row for partition {lb!r}.",
                    key,
                    lb,
                )
            )
            continue
        seen.add(lb)
        if partitions[lb] != k:
            other.append(
                Finding(
                    "error",
                    "statistics_key_mismatch",
                    dataset_uuid,
                    f"Statistics file {key!r}: the row of partition {lb!r} describes data file "
                    f"{k!r}, the header lists {partitions[lb]!r}.",
                    key,
                    lb,
                )
            )
            continue
        actual = footer_rows.get(lb)
        if actual is not None and n is not None and n != actual:
            counts.append(
                Finding(
                    "error",
                    "statistics_rows_mismatch",
                    dataset_uuid,
                    f"Statistics file {key!r} says partition {lb!r} has {n:,} rows; its data "
                    f"file {k!r} has {actual:,}.",
                    key,
                    lb,
                )
            )
    return (
        capped(unknown, "statistics_unknown_partition", "rows for unlisted partitions")
        + capped(other, "statistics_key_mismatch", "rows naming other files")
        + capped(counts, "statistics_rows_mismatch", "wrong row counts")
    )
