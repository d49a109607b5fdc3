"""Sphinx glue for the book's API reference, generated from dpkit's docstrings.

* ``{dpkit-modules} dpkit.privacy`` documents the package and each of its public
  modules (found at build time, so a new module appears without editing a page);
  ``{dpkit-modules} dpkit`` with ``:top-level:`` documents dpkit's single-file modules.
* Docstrings are reStructuredText with MyST's ``{cite}`key``` role (shared with the
  notebooks); it is rewritten to the bibtex role ``:cite:p:`key``` before parsing.
* Docstrings name objects the way the code imports them (``PrivacyLedger``,
  ``dpkit.privacy.PrivacyLedger``), while autodoc documents each object once, where it
  is defined (``dpkit.privacy.ledger.PrivacyLedger``). A reference that Sphinx cannot
  resolve is resolved to the one documented dpkit object of that name; a reference to
  something not documented at all (a private helper, a test module) is shown as code,
  without a link. References to other libraries are left to ``nitpick_ignore_regex``.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

MYST_CITE = re.compile(r"\{cite\}`([^`]+)`")
SKIPPED = {"__main__"}


def public_modules(package: str, top_level: bool = False) -> list[str]:
    """``package`` and its public modules (``top_level``: only dpkit's single-file modules)."""
    pkg = importlib.import_module(package)
    found = sorted(m for m in pkgutil.iter_modules(pkg.__path__)
                   if not m.name.startswith("_") and m.name not in SKIPPED
                   and (not top_level or not m.ispkg))
    names = [f"{package}.{m.name}" for m in found]
    return names if top_level else [package] + names


class ModulesDirective(SphinxDirective):
    required_arguments = 1
    option_spec = {"top-level": directives.flag}

    def run(self) -> list[nodes.Node]:
        lines = []
        package = self.arguments[0]
        for module in public_modules(package, "top-level" in self.options):
            # A package's page opens with its docstring only: its members are re-exports,
            # documented once, in the module that defines them.
            members = [] if module == package else ["   :members:", "   :show-inheritance:"]
            # The pages are MyST; autodoc's output is reStructuredText, hence eval-rst.
            lines += [f"## `{module}`" if module != package else "", "", "```{eval-rst}",
                      f".. automodule:: {module}", *members, "```", ""]
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source="dpkit-modules"), container)
        return container.children


def myst_cite_to_rst(app, what, name, obj, options, lines) -> None:
    for i, line in enumerate(lines):
        lines[i] = MYST_CITE.sub(r":cite:p:`\1`", line)


def _ours(node) -> bool:
    target = node.get("reftarget", "")
    return (target.startswith(("dpkit", "tests.")) or "." not in target
            or (target.startswith("~dpkit")) or str(node.get("py:module") or "").startswith("dpkit"))


def resolve_dpkit_reference(app, env, node, contnode):
    """``missing-reference`` handler for Python references made from dpkit docstrings."""
    if node.get("refdomain") != "py" or not _ours(node):
        return None
    target = node["reftarget"].lstrip("~.")
    first = target.split(".")[0]
    if "." in target and first not in ("dpkit", "tests") and importlib.util.find_spec(first) is not None:
        return None  # another library, e.g. numpy.ndarray
    domain = env.get_domain("py")
    # The last part, or the last two for Class.method.
    short = target if first[:1].isupper() else target.rsplit(".", 1)[-1]
    matches = [name for name in domain.objects if name.startswith("dpkit.") and name.endswith("." + short)]
    if len(matches) > 1:  # prefer the candidates inside the package the reference names or is made from
        scope = target.rsplit(".", 1)[0] if "." in target else str(node.get("py:module") or "")
        scoped = [m for m in matches if scope and m.startswith(scope.split(".")[0] + "." + scope.split(".")[1]
                                                               if scope.count(".") else scope)]
        matches = scoped if len(scoped) == 1 else matches
    if len(matches) == 1:
        found = domain.resolve_xref(env, node.get("refdoc", ""), app.builder, "obj", matches[0], node, contnode)
        if found is not None:
            return found
    return contnode


def setup(app):
    app.add_directive("dpkit-modules", ModulesDirective)
    app.connect("autodoc-process-docstring", myst_cite_to_rst)
    app.connect("missing-reference", resolve_dpkit_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
