"""The dataset schema from metadata alone, and its recorded history of changes."""

from __future__ import annotations

import pyarrow as pa

from kartoframe.errors import DatasetNotFoundError
from kartoframe.format.schema_history import SchemaEvent, schema_events
from kartoframe.front.args import StoreInput, ensure_store
from kartoframe.front.docs import fill
from kartoframe.plan.arguments import check_uuid
from kartoframe.storage.resolve import load_dataset, read_header

__all__ = ["SchemaEvent", "read_dataset_schema", "schema_history"]


@fill
def read_dataset_schema(dataset_uuid: str, store: StoreInput) -> pa.Schema:
    """The dataset's Arrow schema, read from metadata only (no data file is opened).

    The schema is the one in ``<uuid>/<table>/_common_metadata`` (what plateau and
    kartothek read too): partition columns first with their types, then the other columns
    alphabetically, types normalised (``int64``, ``float64``, ``string``,
    ``timestamp[us, tz]``...), with pandas metadata restoring the written dtypes. It exists
    from :func:`~kartoframe.create_empty_dataset_header` on, before any data is written.

    $params_dataset

    Returns
    -------
    pyarrow.Schema

    $raises_not_found

    $examples
    >>> _ = kf.store_dataframes_as_dataset(store="memory://schema-example",
    ...     dataset_uuid="sales", partition_on=["day"],
    ...     dfs=[pd.DataFrame({"day": pd.to_datetime(["2024-01-01"]).date, "units": [1]})])
    >>> kf.read_dataset_schema("sales", "memory://schema-example").types
    [DataType(date32[day]), DataType(int64)]
    """
    st = ensure_store(store)
    return load_dataset(st, check_uuid(dataset_uuid)).schema


@fill
def schema_history(dataset_uuid: str, store: StoreInput) -> list[SchemaEvent]:
    """The schema changes recorded in the dataset header, oldest first.

    kartoframe records an event when it creates a dataset, on its first commit to a
    dataset another writer created, and for every schema evolution. plateau drops the
    record when it rewrites a header; the next kartoframe commit then starts a new
    history with an ``adopt`` event.

    $params_dataset

    Returns
    -------
    list of SchemaEvent
        Empty for a dataset kartoframe never committed to.

    $raises_not_found

    $examples
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
    return schema_events(found[0])
