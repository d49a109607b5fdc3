"""Keep every built page free of code that would fetch from the network.

jupyter-book always loads sphinx-thebe, which writes the address of the thebe bundle on a
content-delivery network into every page (used only by a "launch" button this book does not
configure). This extension drops that inline script and ``sphinx-thebe.js`` from each page,
so the HTML names no remote script at all; MathJax comes from ``_static`` (see
``_vendor/mathjax/VENDORED.md``).
"""

from __future__ import annotations


def _is_thebe(script) -> bool:
    filename = str(getattr(script, "filename", None) or "")
    body = str(getattr(script, "attributes", {}).get("body", ""))
    return filename.endswith("sphinx-thebe.js") or "THEBE_JS_URL" in body


def drop_thebe(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if scripts:
        context["script_files"] = [s for s in scripts if not _is_thebe(s)]


def setup(app):
    app.connect("html-page-context", drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
