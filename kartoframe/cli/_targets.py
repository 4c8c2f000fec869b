"""What a NAME argument refers to (dataset or cube), and parsing of --where / --columns."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from kartoframe.cli._common import BadInput, NotFound
from kartoframe.format import naming
from kartoframe.format.cube import SEPARATOR, dataset_ids_from_listing

if TYPE_CHECKING:
    import pyarrow as pa

    from kartoframe.api.read import DatasetMetadata
    from kartoframe.format.cube import Cube
    from kartoframe.plan.conditions import Condition
    from kartoframe.storage.store import Store

Kind = Literal["auto", "dataset", "cube"]


@dataclasses.dataclass
class Target:
    """A resolved NAME: a dataset, or a cube with its datasets."""

    kind: Literal["dataset", "cube"]
    name: str
    store: Store
    cube: Cube | None = None
    datasets: dict[str, DatasetMetadata] = dataclasses.field(default_factory=dict)

    @property
    def is_cube(self) -> bool:
        """True for a cube."""
        return self.kind == "cube"

    def column_types(self) -> dict[str, pa.DataType]:
        """Column -> Arrow type over every dataset of the target."""
        out: dict[str, pa.DataType] = {}
        for md in self.datasets.values():
            for field in md.schema:
                out.setdefault(field.name, field.type)
        return out

    def dataset(self) -> DatasetMetadata:
        """The metadata of a plain dataset target."""
        return self.datasets[self.name]


def cube_dataset_ids(store: Store, prefix: str) -> list[str]:
    """Ids of the datasets ``<prefix>++<id>`` (from one listing)."""
    if SEPARATOR in prefix:
        return []
    return dataset_ids_from_listing(prefix, store.iter_prefixes(prefix + SEPARATOR))


def resolve(store: Store, name: str, kind: Kind = "auto", *, load: bool = True) -> Target:
    """Find out whether ``name`` is a dataset or a cube prefix and load its metadata.

    Raises
    ------
    NotFound
        Neither a dataset nor a cube of that name exists.
    BadInput
        The name is invalid, or ambiguous without ``--kind``.
    """
    from kartoframe.storage.resolve import dataset_exists

    naming.validate_uuid(name, "NAME")
    is_dataset = kind != "cube" and dataset_exists(store, name)
    cube_ids = cube_dataset_ids(store, name) if kind != "dataset" else []
    if is_dataset and cube_ids:
        raise BadInput(
            f"{name!r} is both a dataset and a cube prefix in {store.display_url}; "
            "choose with --kind dataset or --kind cube."
        )
    if is_dataset:
        target = Target("dataset", name, store)
        if load:
            from kartoframe.api.read import read_dataset_metadata

            target.datasets = {name: read_dataset_metadata(name, store)}
        return target
    if cube_ids:
        target = Target("cube", name, store)
        if load:
            import kartoframe as kf

            target.cube = kf.discover_cube(name, store)
            target.datasets = kf.discover_datasets(target.cube, store)
        return target
    what = {"auto": "dataset or cube", "dataset": "dataset", "cube": "cube"}[kind]
    raise NotFound(f"No {what} named {name!r} in {store.display_url}.")


# -- --columns ---------------------------------------------------------------------------


def split_list(text: str | None) -> list[str] | None:
    """``"a, b,c"`` -> ``["a", "b", "c"]``; None stays None."""
    if text is None:
        return None
    items = [s.strip() for s in text.split(",")]
    return [s for s in items if s]


def expand_columns(patterns: Sequence[str], available: Iterable[str]) -> list[str]:
    """Expand glob patterns (``price_*``) against the available columns, keeping order.

    Plain names are kept as given (an unknown one is reported by the library call).

    Raises
    ------
    BadInput
        A pattern matches no column.
    """
    names = list(available)
    out: list[str] = []
    for pattern in patterns:
        if any(ch in pattern for ch in "*?["):
            matched = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                raise BadInput(f"Column pattern {pattern!r} matches no column.")
        else:
            matched = [pattern]
        out += [m for m in matched if m not in out]
    return out


# -- --where -----------------------------------------------------------------------------

_IN_RE = re.compile(r"^\s*\(?\s*([^!<>=\s(]+)\s+in\s*\((.*)\)\s*\)?\s*$", re.I | re.S)
_AND_RE = re.compile(r"\s+and\s+|\s*&&?\s*", re.I)


def _split_outside_quotes(text: str, sep: re.Pattern[str]) -> list[str]:
    """Split ``text`` at matches of ``sep`` that are not inside single or double quotes."""
    parts: list[str] = []
    start = 0
    i = 0
    quote: str | None = None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            i += 1
            continue
        m = sep.match(text, i)
        if m and m.end() > i:
            parts.append(text[start:i])
            start = i = m.end()
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_where(texts: Sequence[str], types: Mapping[str, pa.DataType]) -> list[Condition]:
    """Parse ``--where`` texts into cube conditions, typed by the columns' Arrow types.

    Each text holds one or more comparisons joined by ``and`` (or ``&``):
    ``col OP value`` with ``OP`` in ``== = != < <= > >=``, or ``col in (v1, v2, ...)``.
    Values are read with the column's type (``2024-01-31`` for dates, ``true`` for
    booleans); quotes around strings are optional unless they contain a comma or ``and``.

    Raises
    ------
    InvalidInputError
        Unparsable text, unknown column, or a value not of the column's type.
    """
    from kartoframe.plan.conditions import C, Condition

    out: list[Condition] = []
    for text in texts:
        for part in _split_outside_quotes(text, _AND_RE):
            if not part:
                raise BadInput(f"Empty comparison in --where {text!r}.")
            m = _IN_RE.match(part)
            if m:
                col, raw = m.group(1), m.group(2)
                values = _split_outside_quotes(raw, re.compile(r","))
                if not values or any(not v for v in values):
                    raise BadInput(f"Cannot parse the value list of {part!r}.")
                typed = [_typed_value(col, v, types, part) for v in values]
                out.append(C(col).isin(typed))
            else:
                out.append(Condition.from_string(part, types))
    return out


def _typed_value(col: str, raw: str, types: Mapping[str, pa.DataType], text: str) -> Any:
    from kartoframe.plan.conditions import Condition, SimpleCondition

    if col not in types:
        raise BadInput(f'Unknown column "{col}" in condition "{text}"')
    cond = Condition.from_string(f"{col} == {raw}", types)
    assert isinstance(cond, SimpleCondition)
    return cond.value
