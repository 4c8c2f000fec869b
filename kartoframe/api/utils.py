"""The utilities plateau users import from ``plateau.api.dataset``, on kartoframe's schema code.

``ensure_store``, ``lazy_store``, ``make_meta``, ``empty_dataframe_from_schema``,
``normalize_column_order``, ``validate_compatible`` and ``normalize_type`` keep plateau's
names and arguments; the schema ones live in :mod:`kartoframe.format.plateau_schema`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kartoframe.format.plateau_schema import (
    empty_dataframe_from_schema,
    make_meta,
    normalize_column_order,
    normalize_type,
    validate_compatible,
)
from kartoframe.storage.store import Store
from kartoframe.storage.store_arg import ensure_store as _ensure_store

__all__ = [
    "empty_dataframe_from_schema",
    "ensure_store",
    "lazy_store",
    "make_meta",
    "normalize_column_order",
    "normalize_type",
    "validate_compatible",
]


def ensure_store(store: Any) -> Store:
    """The :class:`kartoframe.Store` of a store argument (plateau's ``ensure_store``).

    Parameters
    ----------
    store
        A :class:`kartoframe.Store`, a URL or path, a simplekv/minimalkv store, or a
        zero-argument factory returning one of those.

    Returns
    -------
    kartoframe.Store
        plateau returns a ``KeyValueStore``; kartoframe's store has ``get``, ``put``,
        ``delete``, ``iter_keys`` and ``exists`` under the same (or obvious) names.

    Examples
    --------
    >>> import kartoframe as kf
    >>> kf.ensure_store("memory://utils-example").url
    'memory://utils-example'
    """
    return _ensure_store(store)


def lazy_store(store: Any) -> Callable[[], Store]:
    """A picklable zero-argument factory returning the store (plateau's ``lazy_store``).

    Examples
    --------
    >>> import kartoframe as kf
    >>> factory = kf.lazy_store("memory://utils-example")
    >>> factory().url
    'memory://utils-example'
    """
    return functools.partial(_identity, _ensure_store(store))


def _identity(store: Store) -> Store:
    return store
