"""Public paths are kept: every ``dpkit.`` path the README, docs/ or results/README.md shows resolves,
a path that moved keeps working with a DeprecationWarning that names its new home, and ``dpkit
evaluate`` states its output formats (``--json`` the stable one) in its --help.
"""

import argparse
import importlib
import re
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "results" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOTTED = re.compile(r"\bdpkit(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
#: paths moved in the audit split -> where they live now
MOVED = {"dpkit.audit.release.audit_release": "dpkit.audit.release.audit.audit_release",
         "dpkit.audit.scorers": "dpkit.audit.release.scorers"}


def shown_paths() -> set[str]:
    return {m.group(0).rstrip(".") for page in PAGES for m in DOTTED.finditer(page.read_text(encoding="utf-8"))}


def resolve(path: str):
    """The module or attribute a dotted path names: the longest importable prefix, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(path)


def test_the_pages_show_dpkit_paths():
    assert len(shown_paths()) >= 20


@pytest.mark.parametrize("path", sorted(shown_paths()))
def test_every_path_the_pages_show_resolves(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the pages show new paths, never a deprecated one
        assert resolve(path) is not None, path


def test_audit_release_keeps_its_old_path_and_warns():
    import dpkit.audit.release as package
    from dpkit.audit.release.audit import audit_release

    with pytest.warns(DeprecationWarning, match=re.escape(MOVED["dpkit.audit.release.audit_release"])):
        moved = package.audit_release
    assert moved is audit_release


def test_the_scorers_module_keeps_its_old_path_and_warns(monkeypatch):
    from dpkit.audit.release import scorers

    monkeypatch.delitem(sys.modules, "dpkit.audit.scorers", raising=False)
    with pytest.warns(DeprecationWarning, match=re.escape(MOVED["dpkit.audit.scorers"])):
        old = importlib.import_module("dpkit.audit.scorers")
    assert old.scorer is scorers.scorer and old.ngram_scores is scorers.ngram_scores
    assert old.DEFAULT_SCORERS == scorers.DEFAULT_SCORERS


def test_an_unknown_name_of_the_release_package_is_still_an_attribute_error():
    import dpkit.audit.release as package

    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name


def evaluate_help() -> str:
    from dpkit.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return " ".join(sub.choices["evaluate"].format_help().split())


def test_evaluate_help_states_both_output_formats_and_that_json_is_stable():
    text = evaluate_help()
    assert "without --json, a text report for reading" in text
    assert "with --json, one JSON object, the stable format for scripts" in text
    for key in ("balanced_accuracy", "majority_baseline", "n_synthetic", "n_test", "text_measures", "real"):
        assert key in text, key


def test_the_evaluate_page_lists_the_keys_the_help_names():
    page = (ROOT / "docs" / "evaluate.md").read_text(encoding="utf-8")
    help_keys = set(re.findall(r"\b[a-z]+_[a-z_0-9]+\b", evaluate_help().split("output:")[1]))
    for key in help_keys:
        assert f"`{key}`" in page, key
