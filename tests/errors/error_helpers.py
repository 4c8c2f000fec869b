"""Helpers of the error tests: what every raised error must satisfy."""

from __future__ import annotations

import pytest

import kartoframe as kf


def check(
    excinfo: pytest.ExceptionInfo[BaseException],
    cls: type[BaseException],
    builtin: type[BaseException],
    *fragments: str,
    cause: type[BaseException] | None = None,
) -> BaseException:
    """The error is exactly ``cls``, also a ``builtin``, names every fragment, has the cause."""
    e = excinfo.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"
    assert isinstance(e, builtin)
    assert isinstance(e, kf.KartoframeError)
    for fragment in fragments:
        assert fragment in str(e), f"{fragment!r} not in {str(e)!r}"
    if cause is not None:
        assert isinstance(e.__cause__, cause), repr(e.__cause__)
    return e
