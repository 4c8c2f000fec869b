"""Record what a kartoframe function returns, call by call, while it keeps working."""

from __future__ import annotations

from typing import Any

import pytest


def record_results(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """Wrap ``owner.name`` (a module's function or a class's method) for the test; return
    the list that receives each call's result, in call order.
    """
    real = getattr(owner, name)
    results: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        results.append(out)
        return out

    monkeypatch.setattr(owner, name, recording)
    return results
