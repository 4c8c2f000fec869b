"""Count calls of a kartoframe function wherever a module imported it by name."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest


def count_calls(
    monkeypatch: pytest.MonkeyPatch,
    module: Any,
    name: str,
    record: Callable[..., object] | None = None,
) -> list[object]:
    """Wrap ``module.name`` in every loaded ``kartoframe`` module holding it; return the
    list that receives one entry per call (``record(*args, **kwargs)``, default the args).
    """
    real = getattr(module, name)
    calls: list[object] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(record(*args, **kwargs) if record is not None else args)
        return real(*args, **kwargs)

    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not (mod_name == "kartoframe" or mod_name.startswith("kartoframe.")):
            continue
        for attr, value in list(vars(mod).items()):
            if value is real:
                monkeypatch.setattr(mod, attr, counting)
    return calls


def count_binds(monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[tuple[str, ...]]]:
    """Count calls of :func:`kartoframe.plan.predicates.bind` with predicates (not None).

    Returns a function giving, for each such call so far, the column names of the schema
    the predicates were bound to.
    """
    from kartoframe.plan import predicates

    calls = count_calls(
        monkeypatch,
        predicates,
        "bind",
        lambda preds, schema: None if preds is None else tuple(schema.names),
    )
    return lambda: [c for c in calls if c is not None]  # type: ignore[misc]
