"""docs/api.md is a real page (autodoc directives per section), complete when built."""

from __future__ import annotations

import importlib
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "api.md"


def _conf():
    spec = importlib.util.spec_from_file_location("docs_conf_for_tests", ROOT / "docs" / "conf.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_page_is_not_a_placeholder() -> None:
    text = PAGE.read_text()
    assert "<!--" not in text
    conf = _conf()
    names = conf._DIRECTIVE.findall(text)
    assert "kartoframe.read_table" in names and "kartoframe.spark.local_session" in names
    assert len(names) >= 100
    for qualname in names:  # no stale entries: every directive names an existing object
        module_name, name = qualname.rsplit(".", 1)
        if qualname in ("kartoframe.spark", "kartoframe.progress", "kartoframe.cli"):
            importlib.import_module(qualname)
            continue
        assert hasattr(importlib.import_module(module_name), name), qualname


def test_build_appends_names_the_page_lacks() -> None:
    conf = _conf()
    page = PAGE.read_text()
    text = page.replace(".. autofunction:: kartoframe.read_table\n", "")
    already = conf.missing_api_names(page)  # names added to the package since the page
    assert conf.missing_api_names(text) == sorted(
        [*already, "kartoframe.read_table"], key=conf.api_names().index
    )
    source = [text]
    conf._complete_api(None, "api", source)
    head, appended = source[0].split(f"\n## {conf.API_MORE_TITLE}\n\n")
    assert head == text
    assert ".. autofunction:: kartoframe.read_table\n" in appended
    assert set(conf._DIRECTIVE.findall(appended)) == {*already, "kartoframe.read_table"}
    other = [text]
    conf._complete_api(None, "index", other)
    assert other == [text]
