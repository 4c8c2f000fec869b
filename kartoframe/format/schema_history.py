"""The schema changes a header records (``kartoframe.schema_history``), as values."""

from __future__ import annotations

import dataclasses
from typing import Any

from kartoframe.format.header import DatasetHeader, kartoframe_section

__all__ = ["SchemaEvent", "schema_events"]


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


def schema_events(header: DatasetHeader) -> list[SchemaEvent]:
    """The recorded schema changes of ``header``, oldest first (malformed events skipped)."""
    raw = kartoframe_section(header).get("schema_history")
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
