"""Sphinx configuration: the Markdown pages in docs/ (MyST) plus an API reference.

Build with ``make docs`` (``sphinx-build -W``: every warning is an error). The pages stay
plain Markdown that reads well on a code host; Sphinx adds the navigation, cross-links and
the reference generated from the numpydoc docstrings.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import kartoframe  # noqa: E402

project = "kartoframe"
author = "kartoframe developers"
copyright = "kartoframe developers"  # noqa: A001
release = kartoframe.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "numpydoc",
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"] if (HERE / "_static").is_dir() else []
html_theme = "alabaster"
html_title = f"kartoframe {release}"
pygments_style = "sphinx"

# -- MyST -------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist"]
# "#section" links and `#`-anchors of headings up to level 3
myst_heading_anchors = 3

# -- autodoc / numpydoc -------------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the signatures show them; numpydoc sections describe them
autodoc_default_options = {"members": False}
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- the API reference ------------------------------------------------------------------
# docs/api.md is the page: one section per area, autodoc directives inside (it reads as a
# list of names on a code host). `python docs/conf.py` prints those sections as generated
# from the package; public names the page lacks (added since) are appended when the page is
# built, under API_MORE_TITLE, so the HTML reference is always complete.
API_MORE_TITLE = "Not yet sorted into a section"

#: Section title -> modules whose public names it lists (in ``kartoframe.__all__`` order).
API_SECTIONS: list[tuple[str, tuple[str, ...]]] = [
    ("Reading datasets", ("kartoframe.api.read", "kartoframe.front.metadata")),
    (
        "Writing datasets",
        ("kartoframe.api.write", "kartoframe.execution.chunks", "kartoframe.storage.csv_files"),
    ),
    ("Maintaining datasets", ("kartoframe.api.maintenance", "kartoframe.api.copy")),
    (
        "Optimizing datasets and cubes",
        ("kartoframe.api.optimize", "kartoframe.dask.optimize", "kartoframe.plan.optimize"),
    ),
    (
        "Merging rows (upserts)",
        ("kartoframe.api.merge", "kartoframe.dask.merge", "kartoframe.plan.merge"),
    ),
    (
        "Schema and statistics",
        (
            "kartoframe.api.schema",
            "kartoframe.format.schema_history",
            "kartoframe.api.statistics",
            "kartoframe.dask.stats",
        ),
    ),
    (
        "Dask",
        (
            "kartoframe.dask.read",
            "kartoframe.dask.write",
            "kartoframe.dask.delayed",
            "kartoframe.dask.bag",
        ),
    ),
    (
        "Cubes",
        (
            "kartoframe.format.cube",
            "kartoframe.plan.conditions",
            "kartoframe.api.cube",
            "kartoframe.api.cube_write",
            "kartoframe.dask.cube",
            "kartoframe.api.cube_admin",
        ),
    ),
    ("History and concurrency", ("kartoframe.api.history", "kartoframe.format.history")),
    ("Checking datasets", ("kartoframe.api.check", "kartoframe.format.check")),
    ("Stores", ("kartoframe.storage.store",)),
    ("plateau utilities", ("kartoframe.api.utils", "kartoframe.format.plateau_schema")),
    ("Errors", ("kartoframe.errors",)),
]
#: Modules documented with their own names (``kartoframe.spark.read_dataset_as_sdf``).
API_MODULES: list[tuple[str, str]] = [
    ("Spark", "kartoframe.spark"),
    ("Progress bars", "kartoframe.progress"),
    ("Command line", "kartoframe.cli"),
]


def _directive(qualname: str, obj: object) -> str:
    import inspect

    if inspect.isclass(obj):
        if issubclass(obj, BaseException):
            return f".. autoexception:: {qualname}\n"
        return f".. autoclass:: {qualname}\n   :members:\n"
    return f".. autofunction:: {qualname}\n"


def _rst_block(entries: list[str]) -> str:
    return "```{eval-rst}\n" + "\n".join(entries) + "```\n"


def api_markdown() -> str:
    """The MyST text of the reference: one section per area, autodoc directives inside."""
    import importlib

    public = [n for n in kartoframe.__all__ if not n.startswith("_")]
    by_module: dict[str, list[str]] = {}
    for name in public:
        module = getattr(getattr(kartoframe, name), "__module__", None) or "kartoframe"
        by_module.setdefault(module, []).append(name)
    out: list[str] = []
    seen: set[str] = set()
    for title, modules in API_SECTIONS:
        names = [n for m in modules for n in by_module.get(m, [])]
        if not names:
            continue
        seen |= set(names)
        entries = [_directive(f"kartoframe.{n}", getattr(kartoframe, n)) for n in names]
        out.append(f"## {title}\n\n{_rst_block(entries)}")
    rest = [n for n in public if n not in seen]
    if rest:
        entries = [_directive(f"kartoframe.{n}", getattr(kartoframe, n)) for n in rest]
        out.append(f"## More\n\n{_rst_block(entries)}")
    for title, module_name in API_MODULES:
        module = importlib.import_module(module_name)
        names = ["main"] if module_name == "kartoframe.cli" else list(module.__all__)
        entries = [_directive(f"{module_name}.{n}", getattr(module, n)) for n in names]
        out.append(
            f"## {title}\n\n```{{eval-rst}}\n.. automodule:: {module_name}\n   :no-members:\n"
            f"```\n\n{_rst_block(entries)}"
        )
    return "\n".join(out)


_DIRECTIVE = re.compile(r"^\.\. auto(?:function|class|exception|module|data)::\s+(\S+)", re.M)


def api_names() -> list[str]:
    """Every public name the reference documents, qualified (``kartoframe.read_table``)."""
    import importlib

    names = [f"kartoframe.{n}" for n in kartoframe.__all__ if not n.startswith("_")]
    for _title, module_name in API_MODULES:
        module = importlib.import_module(module_name)
        public = ["main"] if module_name == "kartoframe.cli" else list(module.__all__)
        names += [f"{module_name}.{n}" for n in public]
    return names


def missing_api_names(page: str) -> list[str]:
    """Public names without a directive on the page ``page`` (the text of docs/api.md)."""
    documented = set(_DIRECTIVE.findall(page))
    return [n for n in api_names() if n not in documented]


def _complete_api(app: object, docname: str, source: list[str]) -> None:
    if docname != "api":
        return
    import importlib

    entries = []
    for qualname in missing_api_names(source[0]):
        module_name, name = qualname.rsplit(".", 1)
        entries.append(_directive(qualname, getattr(importlib.import_module(module_name), name)))
    if entries:
        source[0] += f"\n## {API_MORE_TITLE}\n\n{_rst_block(entries)}"


def setup(app: object) -> dict[str, bool]:
    """Sphinx extension hook of this configuration."""
    app.connect("source-read", _complete_api)  # type: ignore[attr-defined]
    return {"parallel_read_safe": True}


if __name__ == "__main__":
    print(api_markdown())
