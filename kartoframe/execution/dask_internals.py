"""The only module that touches dask's private classes, gated by dask's version.

kartoframe builds its read graphs with one private dask expression
(``dask.dataframe.dask_expr.io.FromMapProjectable``) whose graph layer it builds in one pass,
and ``dask._task_spec.Task`` for the layer's tasks. Both are internals that change between
dask releases, so they are used only here, only for the dask versions listed in
:data:`TESTED_DASK`, and every caller has a public fallback (``dd.from_map``) when
:func:`fast_from_map` returns ``None``.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

import dask

__all__ = ["SUPPORTED", "TESTED_DASK", "KartoFromMap", "fast_from_map", "gc_paused"]

#: dask releases (``YYYY.M`` prefixes) whose internals this module was tested against.
TESTED_DASK = ("2025.", "2026.")
#: True when the running dask is one of :data:`TESTED_DASK`.
SUPPORTED = str(getattr(dask, "__version__", "")).startswith(TESTED_DASK)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while many small objects are created.

    Building a 20,000-partition plan or graph allocates a few hundred thousand objects that
    live on; every collection the allocations trigger scans all of them, which costs more
    than the build itself. Nothing is lost: collection resumes afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_FromMapProjectable: Any = object
if SUPPORTED:
    try:
        from dask._task_spec import Task as _Task
        from dask.dataframe.dask_expr.io import FromMapProjectable as _FromMapProjectable
    except ImportError:  # pragma: no cover - other dask versions
        _FromMapProjectable = object


class KartoFromMap(_FromMapProjectable):  # type: ignore[misc, valid-type]
    """A ``FromMapProjectable`` whose graph layer is built in one pass.

    dask's generic layer construction looks up half a dozen expression operands per
    partition (about 12 µs each); for 20,000 partitions that is most of the graph build.
    The layer is identical: one ``Task(key, reader, task, columns=...)`` per partition.
    """

    def _layer(self) -> dict[Any, Any]:
        if self.enforce_metadata or self._series or self.args or len(self.iterables) != 1:
            return super()._layer()  # type: ignore[no-any-return]
        name = self._name
        func = self.func
        kwargs = self.apply_kwargs
        items = self.iterables[0]
        with gc_paused():
            return {
                (name, i): _Task((name, i), func, items[p], _data_producer=True, **kwargs)
                for i, p in enumerate(self._partitions)
            }


_KartoFromMap: Any = KartoFromMap if _FromMapProjectable is not object else None


def fast_from_map(reader: Any, tasks: Any, meta: Any, divisions: Any) -> Any:
    """``dd.from_map(reader, tasks, ...)`` with :class:`KartoFromMap` as its expression.

    Returns None (and the caller uses ``dd.from_map``) if this dask version lacks the
    internals it relies on.
    """
    if _KartoFromMap is None:
        return None
    try:
        from dask.dataframe.dask_expr._collection import (  # type: ignore[attr-defined]
            new_collection,
        )

        expr = _KartoFromMap(
            reader, [tasks], None, [], {}, False, meta, False, divisions, "kartoframe-read"
        )
        return new_collection(expr)
    except (TypeError, ValueError, AttributeError):  # pragma: no cover - other dask versions
        return None
