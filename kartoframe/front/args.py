"""Argument normalisation shared by the public functions (the pure checks are
:mod:`kartoframe.plan.arguments`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar, cast

from kartoframe.errors import InvalidInputError, InvalidTypeError
from kartoframe.execution.read_plan import plan_ddf_read
from kartoframe.execution.write import ParquetSerializer
from kartoframe.format.dataset import LoadedDataset
from kartoframe.plan.arguments import check_uuid, resolve_factory
from kartoframe.plan.scan import ScanPlan
from kartoframe.storage.csv_files import CsvSerializer
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store

StoreInput = Store | str | Callable[[], Any]

__all__ = [
    "Keywords",
    "StoreInput",
    "any_serializer_arg",
    "arguments_of",
    "dataset_args",
    "ensure_store",
    "maintenance_flags",
    "read_front",
    "same_parameters",
    "serializer_arg",
    "verb_like",
]


def serializer_arg(df_serializer: object) -> ParquetSerializer:
    """Validate ``df_serializer`` (Parquet only: the Spark writes)."""
    if df_serializer is None:
        return ParquetSerializer()
    if isinstance(df_serializer, ParquetSerializer):
        return df_serializer
    if isinstance(df_serializer, CsvSerializer):
        raise InvalidInputError(
            "CsvSerializer is accepted by the pandas, dask, delayed and bag writes; Spark "
            "writes Parquet only: use the ParquetSerializer here."
        )
    raise InvalidTypeError(
        f"df_serializer must be a kartoframe.ParquetSerializer, got {type(df_serializer).__name__}."
    )


def any_serializer_arg(df_serializer: object) -> ParquetSerializer | CsvSerializer:
    """Validate ``df_serializer`` of a pandas, dask, delayed or bag write: Parquet or CSV."""
    if isinstance(df_serializer, CsvSerializer):
        return df_serializer
    return serializer_arg(df_serializer)


def dataset_args(
    dataset_uuid: object, store: Any, factory: object = None, *, uuid_first: bool = False
) -> tuple[str, Store]:
    """``(uuid, Store)`` of the dataset arguments (or plateau's ``factory=``), validated
    (the store first, unless ``uuid_first``: the order of the checks the function had).
    """
    dataset_uuid, store = resolve_factory(factory, dataset_uuid, store)
    if uuid_first:
        uuid = check_uuid(dataset_uuid)
        return uuid, ensure_store(store)
    st = ensure_store(store)
    return check_uuid(dataset_uuid), st


def maintenance_flags(dry_run: object, force: object) -> None:
    """``dry_run`` and ``force`` of the maintenance functions are booleans."""
    if not isinstance(dry_run, bool) or not isinstance(force, bool):
        raise InvalidInputError("dry_run and force must be booleans.")


#: The read keywords a public read front passes on to the planner when it has them.
READ_KEYWORDS = (
    "columns",
    "predicates",
    "dispatch_by",
    "categoricals",
    "dates_as_object",
    "dask_index_on",
    "version",
    "as_of",
)


def read_front(
    arguments: Mapping[str, Any], *, uuid_first: bool, **options: Any
) -> tuple[ScanPlan, Store, LoadedDataset, list[str]]:
    """Plan the read that a public read front's ``arguments`` (its ``locals()``) ask for.

    The one forwarding of every read front (eager, iterator, dask, delayed and bag): checks
    plateau's ``predicate_pushdown_to_io`` and the dataset (``factory=`` too; ``uuid_first``
    as in :func:`dataset_args`), then hands the :data:`READ_KEYWORDS` the front has, and
    the engine's ``options``, to :func:`~kartoframe.execution.read_plan.plan_ddf_read`.
    """
    if not isinstance(arguments["predicate_pushdown_to_io"], bool):
        raise InvalidInputError("predicate_pushdown_to_io must be a bool.")
    uuid, st = dataset_args(
        arguments["dataset_uuid"], arguments["store"], arguments["factory"], uuid_first=uuid_first
    )
    keywords = {name: arguments[name] for name in READ_KEYWORDS if name in arguments}
    return plan_ddf_read(uuid, st, **keywords, **options)


P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


def same_parameters(source: Callable[P, Any]) -> Callable[[Callable[..., R]], Callable[P, R]]:
    """Decorator: the decorated function takes exactly ``source``'s parameters.

    Public functions that take the same keywords (kartothek's, positional too) are
    written once: the second one is ``def f(*args, **kwargs) -> ...`` and forwards them (or
    reads them by name with :func:`arguments_of`). ``source`` is a function or a dataclass
    whose fields are the parameters (composed of keyword groups, see
    :mod:`kartoframe.front.dataset_signatures`). ``inspect.signature``, ``help()``, Sphinx
    and mypy see ``source``'s parameters (names, kinds, order, defaults and annotations)
    and ``f``'s own return annotation. ``f`` itself is returned, not a wrapper: its name,
    module, source and doctests stay its own.
    """
    signature = inspect.signature(source)
    if isinstance(source, type):  # a dataclass of keyword groups: its fields' types, evaluated
        hints = typing.get_type_hints(source)  # where written, so get_type_hints works anywhere
        annotations = {name: hints[name] for name in signature.parameters}
    else:
        annotations = {k: v for k, v in source.__annotations__.items() if k != "return"}

    def adopt(func: Callable[..., R]) -> Callable[P, R]:
        own = inspect.signature(func).return_annotation
        func.__signature__ = signature.replace(return_annotation=own)  # type: ignore[attr-defined]
        returns = {k: v for k, v in func.__annotations__.items() if k == "return"}
        func.__annotations__ = {**annotations, **returns}
        return cast(Callable[P, R], func)

    return adopt


@typing.dataclass_transform()
class Keywords:
    """Base of a keyword group: a dataclass whose fields are parameters.

    ``class G(Keywords)`` declares parameters (positional-or-keyword; ``kw_only=True`` in
    the class statement: keyword-only); groups compose by inheritance into the signature
    source of :func:`same_parameters` (see :mod:`kartoframe.front.dataset_signatures`).
    """

    def __init_subclass__(cls, *, kw_only: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(kw_only=kw_only)(cls)


def arguments_of(func: Callable[..., Any], args: Any, kwargs: Any) -> dict[str, Any]:
    """The arguments of a call of ``func`` by parameter name, defaults filled in."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def verb_like(template: F, name: str, doc: str, run: Callable[..., Any]) -> F:
    """A public verb with ``template``'s signature (and type) that calls ``run(**arguments)``.

    Verbs that take the same keywords (``build_cube`` and ``extend_cube``, on every engine)
    are written once: the second one binds its arguments with the first one's signature
    (:func:`same_parameters`, plus ``template``'s return annotation and module).
    """

    @functools.wraps(template)
    def verb(*args: Any, **kwargs: Any) -> Any:
        return run(**arguments_of(verb, args, kwargs))

    verb.__name__ = verb.__qualname__ = name
    verb.__doc__ = doc
    return cast(F, same_parameters(template)(verb))
