"""The record of files written by ``optimize`` in the header's ``kartoframe`` map (pure).

``optimize_dataset`` rewrites small files of a partition into larger ones, sorted by
``sort_by``. So that the next run can skip partitions it already optimized (incremental
maintenance), every commit of an optimize records the files it wrote and their order::

    "kartoframe": {"optimized": {"<label>": ["col", ...], ...}}

A label maps to the order its rows are sorted in: the method (``"linear"`` for a
lexicographic sort, ``"zorder"`` for a z-order curve) followed by the columns, e.g.
``["linear", "date", "store"]``; ``[]`` means compacted without sorting. Only labels
the header still lists are kept: the fold drops the record of every removed label. Readers
that do not know the key ignore it (plateau and kartothek read the header unchanged).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["OPTIMIZED_KEY", "optimized_labels", "with_optimized"]

#: Key of the record in the header's ``kartoframe`` map.
OPTIMIZED_KEY = "optimized"


def optimized_labels(section: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The recorded ``label -> sort order`` of a ``kartoframe`` map (malformed entries are
    ignored: such a file counts as not optimized).
    """
    raw = section.get(OPTIMIZED_KEY)
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, tuple[str, ...]] = {}
    for label, order in raw.items():
        ok = isinstance(order, list | tuple) and all(isinstance(c, str) for c in order)
        if isinstance(label, str) and ok:
            out[label] = tuple(order)
    return out


def with_optimized(
    section: dict[str, Any],
    removed: Iterable[str],
    added: Mapping[str, Iterable[str]],
) -> None:
    """Update the record of ``section`` in place: forget ``removed``, record ``added``."""
    raw = section.get(OPTIMIZED_KEY)
    if not isinstance(raw, Mapping) and not added:
        return
    record = dict(raw) if isinstance(raw, Mapping) else {}
    for label in removed:
        record.pop(label, None)
    for label, order in added.items():
        record[label] = list(order)
    if record:
        section[OPTIMIZED_KEY] = record
    else:
        section.pop(OPTIMIZED_KEY, None)
