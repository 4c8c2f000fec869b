"""The ``store`` argument of every public function, normalised to a :class:`Store`.

A caller may pass a :class:`~kartoframe.storage.store.Store`, a URL string or local path, a
simplekv/minimalkv key-value store (adapted by :mod:`kartoframe.storage.kvstore`), or a
zero-argument factory returning one of those (plateau's ``store_factory``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kartoframe.errors import InvalidTypeError
from kartoframe.storage import kvstore
from kartoframe.storage.store import Store

__all__ = ["ensure_store"]


def ensure_store(store: Store | str | os.PathLike[str] | Callable[[], Any]) -> Store:
    """Normalise the ``store`` argument of every public function.

    Accepts a :class:`Store`, a URL string or local path (``str`` or ``pathlib.Path``),
    a simplekv/minimalkv key-value store (see :mod:`kartoframe.storage.kvstore`), or a
    zero-argument factory returning one of those.

    Raises
    ------
    InvalidTypeError
        For any other type, or a factory returning one.
    InvalidInputError
        For an empty URL or an unknown protocol.
    """
    if isinstance(store, Store):
        return store
    if isinstance(store, str):
        return Store(store)
    if isinstance(store, os.PathLike):
        path = os.fspath(store)
        if isinstance(path, str):
            return Store(path)
    elif kvstore.is_kvstore(store):  # a simplekv/minimalkv store object
        return kvstore.store_from_kvstore(store)
    elif callable(store):
        made = store()
        if isinstance(made, Store | str) or (
            isinstance(made, os.PathLike) and isinstance(os.fspath(made), str)
        ):
            return ensure_store(made)
        if kvstore.is_kvstore(made):  # plateau's store factories
            return kvstore.store_from_kvstore(made)
        raise InvalidTypeError(
            f"The store factory {store!r} returned {type(made).__name__}; it must return a "
            "kartoframe.Store, a URL string or a simplekv/minimalkv key-value store."
        )
    raise InvalidTypeError(
        f"store must be a kartoframe.Store, a URL string or a factory, got {type(store).__name__}."
    )
