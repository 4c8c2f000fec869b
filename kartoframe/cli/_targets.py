"""What a NAME argument refers to (dataset or cube), and parsing of --where / --columns."""

from __future__ import annotations

import dataclasses
import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from kartoframe.cli._common import BadInput, NotFound, working
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
    #: A cube whose seed dataset is gone (``cube`` is None): only delete/cleanup take it.
    seedless: bool = False

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


def resolve(
    store: Store,
    name: str,
    kind: Kind = "auto",
    *,
    load: bool = True,
    seedless_ok: bool = False,
) -> Target:
    """Find out whether ``name`` is a dataset or a cube prefix and load its metadata.

    A cube whose seed dataset is gone cannot be queried; with ``seedless_ok`` (delete,
    cleanup) it resolves to a :class:`Target` with ``seedless`` set and its remaining
    datasets.

    Raises
    ------
    NotFound
        Neither a dataset nor a cube of that name exists.
    BadInput
        The name is invalid, or ambiguous without ``--kind``.
    FormatError
        A cube without its seed (unless ``seedless_ok``), or with broken metadata.
    """
    naming.validate_uuid(name, "NAME")
    # a slow store (or one retrying) shows a spinner with the elapsed time on a terminal
    with working(f"reading {name} in {store.display_url}"):
        return _resolve(store, name, kind, load=load, seedless_ok=seedless_ok)


def _resolve(store: Store, name: str, kind: Kind, *, load: bool, seedless_ok: bool) -> Target:
    from kartoframe.storage.resolve import dataset_exists

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
            from kartoframe.front.cube_query import discover_with_datasets

            try:  # one load of the headers for the cube and its datasets
                target.cube, target.datasets = discover_with_datasets(name, store)
            except kf.FormatError as e:
                left = kf.discover_datasets_unchecked(name, store)
                if any(_is_seed(md) for md in left.values()):
                    raise
                if not seedless_ok:
                    raise kf.FormatError(
                        f"{e} Its datasets ({', '.join(sorted(left)) or 'none'}) cannot be "
                        f"queried without it; remove them with `delete {name} --yes`."
                    ) from e
                target.seedless = True
                target.datasets = left
                return target
        return target
    what = {"auto": "dataset or cube", "dataset": "dataset", "cube": "cube"}[kind]
    raise NotFound(f"No {what} named {name!r} in {store.display_url}.")


def _is_seed(md: DatasetMetadata) -> bool:
    from kartoframe.format.cube import KEY_IS_SEED, LEGACY_IS_SEED

    meta = md.metadata
    return bool(meta.get(KEY_IS_SEED, meta.get(LEGACY_IS_SEED, False)))


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


def parse_where(texts: Sequence[str], types: Mapping[str, pa.DataType]) -> list[Condition]:
    """Parse ``--where`` texts into cube conditions (see :mod:`kartoframe.cli._where`).

    Raises
    ------
    BadInput
        Unparsable text, unknown column, a value not of the column's type, or what cube
        conditions cannot express (``or``, null, ``not in``).
    """
    from kartoframe.cli._where import parse_predicates, to_cube_conditions

    return to_cube_conditions(parse_predicates(texts, types))
