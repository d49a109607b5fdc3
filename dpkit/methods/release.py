"""Write a release folder: what the data owner may publish, and nothing else.

``release/`` holds exactly three files:

* ``synthetic.jsonl`` -- one JSON object per line: ``text``, and ``label`` (a name
  from the public label set) when the input is labelled;
* ``privacy_report.md`` -- method, neighbouring relation, unit of privacy,
  epsilon, delta, what the release contains, the public configuration, the
  randomness mode;
* ``config.json`` -- the public configuration only.

Nothing derived from the private data reaches these files except the
mechanism's outputs: no counts, sizes, digests, timings, seeds or file names.
The folder is written next to its final place and renamed into it, so a crash
never leaves a half-written ``release/``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dpkit.data.selection import RowRule
from dpkit.io import atomic_folder
from dpkit.methods.base import Release
from dpkit.methods.budget import composition_lines
from dpkit.methods.registry import get_method, method_names
from dpkit.privacy.contract import MEASURE_WORDS
from dpkit.validate import ParameterError

RELEASE_FILES = ("synthetic.jsonl", "privacy_report.md", "config.json")


def method_title(release: Release) -> str:
    """The report's title: the method record's (:meth:`~dpkit.methods.record.Method.heading`, which names the
    variant the configuration ran); a release of an unregistered method is titled by its name."""
    if release.method not in method_names():
        return release.method
    return get_method(release.method).heading(release.config)


def _mode_line(reproducible: bool) -> str:
    if reproducible:
        return ("**Reproducible mode: the noise can be regenerated from the seed that was given, so this is NOT a "
                "differentially private release.** Use it for teaching and tests only; rerun without `--seed` "
                "to make a release.")
    return ("Release mode: all noise was drawn from fresh operating-system entropy; nothing that could "
            "regenerate it was written anywhere.")


def _rows_line(public: dict) -> str:
    return RowRule.from_dict(public.get("rows") or {}).describe()


def _charged(release: Release) -> tuple[str, str, str, str]:
    """Neighbouring relation, unit, sensitivities and measures as the ledger's entries carry them (the method's
    declared charges); the statement's values when there is no ledger."""
    s = release.statement
    entries = release.ledger.entries if release.ledger is not None else []
    if not entries:
        return s.neighbouring, s.unit, s.sensitivity, s.measure
    sensitivities = "; ".join(f"{e.label}: {e.contract.sensitivity:.6g} ({e.contract.sensitivity_norm})"
                              for e in entries)
    measures = ", ".join(dict.fromkeys(MEASURE_WORDS[e.contract.measure] for e in entries))
    return (release.ledger.neighbouring, release.ledger.unit, f"{sensitivities}. Why: {s.sensitivity}",
            f"each charge: {measures}; the release: {s.measure}")


def privacy_report(release: Release, public: dict) -> str:
    """The markdown report (public facts only). The relation, unit and sensitivities are the ledger's."""
    s = release.statement
    neighbouring, unit, sensitivity, measure = _charged(release)
    delta = "0 (pure DP)" if release.delta == 0 else f"{release.delta:g}"
    lines = [
        _mode_line(bool(release.reproducible)), "",
        f"# Privacy report: {method_title(release)}", "",
        "| | |", "|---|---|",
        f"| method | `{release.method}` |",
        f"| neighbouring relation | {neighbouring} (one {unit}) |",
        f"| unit of privacy | {unit}: {s.unit_meaning} |",
        f"| privacy measure | {measure} |",
        f"| epsilon | {release.epsilon:g} |",
        f"| delta | {delta} |",
        f"| sensitivity | {sensitivity} |",
        f"| randomness | {'reproducible (seeded): not a DP release' if release.reproducible else 'release (fresh OS entropy)'} |",
        "",
        "The guarantee is the one at the configured budget (caps), not a number computed from what the run used.",
        "",
        "## What the release contains", "",
        "- `synthetic.jsonl`: the synthetic records, one JSON object per line with `text`"
        + (" and `label`." if public.get("label_column") else "."),
        f"- Number of records: {s.output_size}.",
        f"- Labels: {s.labels}." if public.get("label_column") else "- The input has no labels.",
        "- `config.json`: the public configuration below. Nothing else derived from the input (no counts, sizes,"
        " digests, timings or seeds) is in this folder.",
    ]
    if public.get("label_column"):
        if public.get("labels_declared"):
            lines.append("- The label set was declared by the data owner (`--labels`) and is public.")
        if public.get("label_descriptions"):
            lines.append("- Each label's description (`--labels` as a JSON object, in `config.json`) was given by "
                         "the data owner and is a **public parameter**, like the names: every method's prompts use "
                         "it in place of the label's name, and it costs no privacy only because it was written "
                         "without reading the private records.")
        else:
            lines.append("- The label set was read from the input (no `--labels` was given): it is **treated as "
                         "public** and appears in `config.json`. Give `--labels` when the label names themselves "
                         "are sensitive.")
    lines += ["", "## Public rules applied to the input", "",
              f"- Rows: {_rows_line(public)}.",
              "- A missing, empty or NaN text is kept as an empty document (rows are never dropped for their "
              "content).",
              # the cut once: as the method states it (where it cuts), else as the release applies it
              "- long document: " + release.public_rules.get(
                  "long_document", f"each text is cut at `max_chars` = {release.config.get('max_chars')} characters")
              + "."]
    lines += [f"- {name.replace('_', ' ')}: {rule}." for name, rule in release.public_rules.items()
              if name != "long_document"]
    lines += [f"- {note}" for note in release.notes]
    composition = composition_lines(release.ledger)
    if composition:
        total = (f"epsilon = {release.epsilon:g} (pure, basic composition)" if release.delta == 0
                 else f"epsilon = {release.epsilon:g} at delta = {release.delta:g} (zCDP, tight conversion)")
        lines += ["", "## Composition (the ledger)", "",
                  "Every mechanism the release ran, as charged to the privacy ledger before it ran; the "
                  f"guarantee above is their composition: {total}.", "", *composition]
    lines += ["", "## Public configuration", "", "```json", json.dumps(public, indent=2, sort_keys=True), "```", ""]
    return "\n".join(lines)


def public_configuration(release: Release, settings: dict) -> dict:
    """``config.json``: the CLI's public settings and the method's configuration."""
    out = dict(settings)
    out["method"] = release.method
    out["method_config"] = release.config
    out["epsilon"] = release.epsilon
    out["delta"] = release.delta
    out["randomness"] = "reproducible" if release.reproducible else "release"
    out["public_rules"] = dict(release.public_rules)
    return out


def write_release(folder: str | os.PathLike, release: Release, settings: dict) -> Path:
    """Write ``folder`` (the ``release/`` directory) atomically; returns its path.

    ``settings``: the public settings of the run (method, columns, limit, label
    set, backend, model...). Refuses to overwrite an existing release.
    """
    if not isinstance(release, Release):
        raise ParameterError("release", release, "must be a dpkit.methods.Release")
    folder = Path(folder)
    if folder.exists():
        raise ParameterError("release folder", str(folder), "already exists; a release is written once")
    public = public_configuration(release, settings)
    with atomic_folder(folder) as tmp:
        with open(tmp / "synthetic.jsonl", "w", encoding="utf-8") as handle:
            for record in release.records:
                handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        (tmp / "privacy_report.md").write_text(privacy_report(release, public), encoding="utf-8")
        (tmp / "config.json").write_text(json.dumps(public, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return folder
