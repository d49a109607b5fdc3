"""Canary design on the three correct methods: rare-word vs echo canaries, once and repeated, stored.

    .venv/bin/python -m dpkit.audit.release.canary_design --out results/audit-release-canary-design

For each method in ``kps``, ``pp``, ``dpst`` and each design (``rare-words``:
:func:`~dpkit.audit.release.canaries.make_canaries`; ``echo``:
:func:`~dpkit.audit.release.canaries.echo_canaries`; ``echo x4``: echo canaries, each included one inserted
4 times), one release audit through the path of ``dpkit audit release METHOD`` (the CLI's own parser, then
:func:`dpkit.audit.release.method_run.run_release_audit`: ``plan`` and ``execute`` of ``dpkit synth``, the run
folder, its resume) at the claim ``--epsilon`` (default 8), on ``data/own_data_sample.csv`` (60 public
customer messages, three labels), with the methods' ``--smoke`` presets and the sizes of :data:`SIZES` (200
canaries for DP-KPS and DP-ST; private prediction decodes every input record and canary copy with the local
model, about 8 s each on a shared 2-core CPU, so it gets 32 canaries and about 12 of the 60 rows:
``--rows 60 --limit 12``, a keyed per-record sample).

Backends. Private prediction decodes with the bundled local model (its logits are the mechanism's input).
The LLM step of DP-KPS and DP-ST is post-processing of what their mechanisms released: DP-KPS runs with
:class:`~dpkit.audit.release.zoo.EchoBackend` (each prompt, with its privatized keyphrases, is its own
completion: the most revealing post-processing there is, and the cheapest) and DP-ST with
``reconstruct=false`` (its privatized triples joined as text), as in the chapter's audits.

Written as it goes: ``OUT/runs.json`` (one row per audit: counts, bounds, ROC summary, sizes and the
audit's seed; scores of public canaries only, never a record) and ``OUT/provenance.json``. A rerun skips the
cells already in ``runs.json``; an audit cut short resumes from its work folder (``--work``, default
``runs/audit-canary-design``: the synth run folders, with their ``private/`` parts, stay there, outside
``results/``). One audit per cell (one seed): each audit's seed is fresh entropy, stored in its row.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import dpkit.backends
from dpkit import runtime
from dpkit.audit.cli import _register_release
from dpkit.audit.release import method_run
from dpkit.audit.release.tightness import _commit
from dpkit.audit.release.zoo import EchoBackend
from dpkit.io import atomic_write_text

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "data" / "own_data_sample.csv"
METHODS = ("kps", "pp", "dpst")
#: (name, --canary-design, --repetitions)
DESIGNS = (("rare-words", "rare-words", 1), ("echo", "echo", 1), ("echo x4", "echo", 4))
SCORERS = ("ngram", "chars", "suffix_lm")
#: per method: extra ``dpkit audit release`` flags (see the module docstring) and whether the echo backend is used
METHOD_FLAGS = {"kps": ((), True), "pp": (("--rows", "60", "--limit", "12"), False),
                "dpst": (("--set", "reconstruct=false"), True)}
#: canaries per audit, per method (``--size METHOD=M`` changes one)
SIZES = {"kps": 200, "pp": 32, "dpst": 200}


def cell_key(method: str, design: str, canaries: int, epsilon: float) -> str:
    return f"{method}|{design}|{canaries}|{epsilon:g}"


def row_key(row: dict) -> str:
    return cell_key(row["method"], row["design"], row["canaries"], row["claimed_epsilon"])


@contextmanager
def echo_backend(on: bool):
    """``dpkit.backends.get_backend`` answering :class:`~dpkit.audit.release.zoo.EchoBackend` while ``on``."""
    if not on:
        yield
        return
    saved = dpkit.backends.get_backend
    dpkit.backends.get_backend = lambda *a, **k: EchoBackend()
    try:
        yield
    finally:
        dpkit.backends.get_backend = saved


def audit_argv(method: str, design: str, repetitions: int, canaries: int, epsilon: float, scorers, out: Path):
    """The ``dpkit audit release`` command line of one cell (without the leading ``dpkit``)."""
    flags, _ = METHOD_FLAGS[method]
    return ["audit", "release", method, "--input", str(DATA), "--text-column", "text", "--label-column", "label",
            "--epsilon", f"{epsilon:g}", "--smoke", "--canaries", str(canaries), "--canary-design", design,
            "--repetitions", str(repetitions), "--scorers", ",".join(scorers), "--json", *flags, "--out", str(out)]


def parse_audit_args(argv):
    """``argv`` through the CLI's own ``dpkit audit release`` parser."""
    parser = argparse.ArgumentParser(prog="dpkit audit")
    _register_release(parser.add_subparsers(dest="audit_command", required=True))
    return parser.parse_args(argv[1:])


def release_sizes(work: Path) -> dict:
    """Sizes of the released texts (public output): count, words, characters."""
    path = work / "run" / "release" / "synthetic.jsonl"
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {"release_texts": len(texts), "release_words": sum(len(t.split()) for t in texts),
            "release_chars": sum(len(t) for t in texts)}


def run_cell(method: str, design_name: str, canaries: int, epsilon: float, scorers, work_root: Path) -> dict:
    """One audit; returns its stored row."""
    design, repetitions = dict((n, (d, r)) for n, d, r in DESIGNS)[design_name]
    work = work_root / f"{method}-{design_name.replace(' ', '')}-m{canaries}-eps{epsilon:g}"
    argv = audit_argv(method, design, repetitions, canaries, epsilon, scorers, work)
    runtime.set_offline()
    start = time.perf_counter()
    with echo_backend(METHOD_FLAGS[method][1]):
        payload = method_run.run_release_audit(parse_audit_args(argv))
    wall = time.perf_counter() - start
    seed = json.loads((work / "audit.json").read_text(encoding="utf-8"))["audit_seed"]
    config = payload_config(work)
    keep = ("claimed_epsilon", "claimed_delta", "confidence", "epsilon_lower_bound", "epsilon_lower_bound_pure",
            "epsilon_lower_bound_fdp", "gdp_mu_lower_bound", "gdp_epsilon_curve", "verdict", "strategy", "canaries",
            "canaries_included", "repetitions", "guesses", "correct_guesses", "best_scorer", "best_plan", "auroc",
            "tpr_at_fpr_1", "tpr_at_fpr_10", "tests", "release_records", "neighbouring", "analyses", "scorers")
    row = {"method": method, "design": design_name, "canary_design": design, **{k: payload[k] for k in keep},
           "included_records": payload["canaries_included"] * repetitions, "audit_seconds": payload["seconds"],
           "wall_seconds": round(wall, 1), "audit_seed": seed, "method_seed": None, "smoke": True,
           "backend": "echo" if METHOD_FLAGS[method][1] else "local", "method_config": config,
           "input": str(DATA.relative_to(ROOT)), "command": "dpkit " + " ".join(argv), **release_sizes(work)}
    return row


def payload_config(work: Path) -> dict:
    """The method configuration the run used (its public ``release/config.json``), or {}."""
    path = work / "run" / "release" / "config.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _write(out: Path, rows: list[dict], provenance: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "runs.json", json.dumps(rows, indent=1, sort_keys=True, default=str) + "\n")
    atomic_write_text(out / "provenance.json", json.dumps(provenance, indent=1, sort_keys=True, default=str) + "\n")


def run_study(out: Path, work: Path, methods=METHODS, designs=tuple(d[0] for d in DESIGNS), sizes=None,
              epsilon: float = 8.0, scorers=SCORERS, argv=()) -> list[dict]:
    sizes = dict(SIZES, **(sizes or {}))
    path = out / "runs.json"
    rows = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    previous = json.loads((out / "provenance.json").read_text(encoding="utf-8")) if (out / "provenance.json").exists() else {}
    done = {row_key(r) for r in rows}
    invocations = list(previous.get("invocations", []))
    session = {"commit": _commit(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
               "node": platform.node(), "python": platform.python_version(),
               "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
               "command": "python -m dpkit.audit.release.canary_design " + " ".join(argv), "cells": []}
    invocations.append(session)
    provenance = {"study": "canary design on the three methods (dpkit.audit.release.canary_design)",
                  "input": str(DATA.relative_to(ROOT)), "canaries": sizes, "claimed_epsilon": epsilon,
                  "method_flags": {k: list(v[0]) for k, v in METHOD_FLAGS.items()},
                  "backends": {k: "echo" if v[1] else "local" for k, v in METHOD_FLAGS.items()},
                  "scorers": list(scorers), "designs": [list(d) for d in DESIGNS], "seeds": "one audit per cell; "
                  "each audit's seed is fresh entropy, stored in its row (audit_seed); the methods run without "
                  "--seed (a DP release)", "invocations": invocations}
    for method in methods:
        canaries = sizes[method]
        for design in designs:
            key = cell_key(method, design, canaries, epsilon)
            if key in done:
                print(f"skip {key} (stored)", flush=True)
                continue
            row = run_cell(method, design, canaries, epsilon, scorers, work)
            rows.append(row)
            session["cells"].append(key)
            session["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            _write(out, rows, provenance)
            print(json.dumps({k: row[k] for k in ("method", "design", "canaries", "canaries_included",
                                                  "epsilon_lower_bound", "epsilon_lower_bound_fdp",
                                                  "gdp_mu_lower_bound", "tpr_at_fpr_1", "auroc", "release_texts",
                                                  "wall_seconds")}), flush=True)
    if session["cells"]:       # a rerun that found every cell stored changes nothing
        _write(out, rows, provenance)
    return rows


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="results/audit-release-canary-design")
    parser.add_argument("--work", default="runs/audit-canary-design",
                        help="the audits' work folders (synth runs with their private/ parts; never under results/)")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--designs", nargs="+", default=[d[0] for d in DESIGNS], choices=[d[0] for d in DESIGNS])
    parser.add_argument("--size", action="append", default=[], metavar="METHOD=CANARIES",
                        help=f"canaries per audit of one method (defaults {SIZES})")
    parser.add_argument("--epsilon", type=float, default=8.0)
    args = parser.parse_args(argv)
    if Path(args.work).resolve().is_relative_to((ROOT / "results").resolve()):
        print("--work must lie outside results/ (it holds the runs' private/ folders)", file=sys.stderr)
        return 2
    sizes = {}
    for pair in args.size:
        method, _, m = pair.partition("=")
        if method not in METHODS or not m.isdigit() or int(m) < 2:
            print(f"--size {pair}: must be METHOD=CANARIES with METHOD in {METHODS}", file=sys.stderr)
            return 2
        sizes[method] = int(m)
    run_study(Path(args.out), Path(args.work), args.methods, args.designs, sizes, args.epsilon, argv=argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
