"""The dataset schema from metadata alone, and its recorded history of changes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa

from kartoframe.api._args import StoreInput, check_uuid, ensure_store
from kartoframe.errors import DatasetNotFoundError
from kartoframe.format.header import kartoframe_section
from kartoframe.storage.resolve import load_dataset, read_header

__all__ = ["SchemaEvent", "read_dataset_schema", "schema_history"]


def read_dataset_schema(dataset_uuid: str, store: StoreInput) -> pa.Schema:
    """The dataset's Arrow schema, read from metadata only (no data file is opened).

    The schema is the one in ``<uuid>/<table>/_common_metadata`` (what plateau and
    kartothek read too): partition columns first with their types, then the other columns
    alphabetically, types normalised (``int64``, ``float64``, ``string``,
    ``timestamp[us, tz]``...), with pandas metadata restoring the written dtypes. It exists
    from :func:`~kartoframe.create_empty_dataset_header` on, before any data is written.

    Parameters
    ----------
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory.

    Returns
    -------
    pyarrow.Schema

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> _ = kf.store_dataframes_as_dataset(store="memory://schema-example",
    ...     dataset_uuid="sales", partition_on=["day"],
    ...     dfs=[pd.DataFrame({"day": pd.to_datetime(["2024-01-01"]).date, "units": [1]})])
    >>> kf.read_dataset_schema("sales", "memory://schema-example").types
    [DataType(date32[day]), DataType(int64)]
    """
    st = ensure_store(store)
    return load_dataset(st, check_uuid(dataset_uuid)).schema


@dataclasses.dataclass(frozen=True, slots=True)
class SchemaEvent:
    """One recorded schema change of a dataset.

    Attributes
    ----------
    version
        Schema version after the change (1 for the first recorded schema).
    timestamp
        When the change was committed (ISO 8601, UTC).
    change
        ``"create"`` (dataset created by kartoframe), ``"adopt"`` (first kartoframe commit
        on a dataset written by another writer, or whose history was dropped by one),
        ``"add_columns"`` (schema evolution) or ``"external"`` (the stored schema changed
        outside kartoframe).
    columns
        For ``create``, ``adopt`` and ``external``: every column with its type.
    added
        For ``add_columns``: the new columns with their types.
    widened
        For ``add_columns``: widened columns, ``name -> (old type, new type)``.
    """

    version: int
    timestamp: str
    change: str
    columns: dict[str, str] = dataclasses.field(default_factory=dict)
    added: dict[str, str] = dataclasses.field(default_factory=dict)
    widened: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)


def _str_map(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    return {str(k): str(v) for k, v in raw.items()}


def schema_history(dataset_uuid: str, store: StoreInput) -> list[SchemaEvent]:
    """The schema changes recorded in the dataset header, oldest first.

    kartoframe records an event when it creates a dataset, on its first commit to a
    dataset another writer created, and for every schema evolution. plateau drops the
    record when it rewrites a header; the next kartoframe commit then starts a new
    history with an ``adopt`` event.

    Parameters
    ----------
    dataset_uuid
        The dataset.
    store
        Store URL, :class:`kartoframe.Store` or factory.

    Returns
    -------
    list of SchemaEvent
        Empty for a dataset kartoframe never committed to.

    Raises
    ------
    DatasetNotFoundError
        The dataset does not exist.

    Examples
    --------
    >>> import pandas as pd, kartoframe as kf
    >>> url = "memory://history-example"
    >>> _ = kf.store_dataframes_as_dataset(store=url, dataset_uuid="sales",
    ...     dfs=[pd.DataFrame({"units": [1]})])
    >>> _ = kf.update_dataset_from_dataframes([pd.DataFrame({"units": [2], "price": [9.5]})],
    ...     store=url, dataset_uuid="sales", schema_evolution="add_columns")
    >>> [(e.version, e.change, e.added) for e in kf.schema_history("sales", url)]
    [(1, 'create', {}), (2, 'add_columns', {'price': 'double'})]
    """
    st = ensure_store(store)
    uuid = check_uuid(dataset_uuid)
    found = read_header(st, uuid)
    if found is None:
        raise DatasetNotFoundError(uuid, st.url)
    raw = kartoframe_section(found[0]).get("schema_history")
    events = []
    for ev in raw if isinstance(raw, list) else []:
        if not isinstance(ev, dict) or not isinstance(ev.get("version"), int):
            continue
        widened_raw = ev.get("widened")
        widened = {
            str(k): (str(v[0]), str(v[1]))
            for k, v in (widened_raw.items() if isinstance(widened_raw, dict) else [])
            if isinstance(v, list | tuple) and len(v) == 2
        }
        events.append(
            SchemaEvent(
                version=ev["version"],
                timestamp=str(ev.get("timestamp", "")),
                change=str(ev.get("change", "")),
                columns=_str_map(ev.get("columns")),
                added=_str_map(ev.get("added")),
                widened=widened,
            )
        )
    return events
