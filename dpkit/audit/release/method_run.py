"""``dpkit audit release METHOD``: audit a method's whole release on your data plus canaries.

    dpkit audit release kps --input data/own_data_sample.csv --text-column text \\
        --label-column label --epsilon 4 --smoke --out runs/audit-kps

The method runs through the same path as ``dpkit synth`` (``plan`` and
``execute`` of :mod:`dpkit.methods.request` and :mod:`dpkit.methods.execution`: validation first, the run folder
``DIR/run`` with its lock, checkpoints and resume), on the input's records plus
public canaries (:func:`dpkit.audit.release.audit.audit_release`): rare-word canaries by default,
``--canary-design echo`` for the Canary's Echo design (:func:`~dpkit.audit.release.canaries.echo_canaries`), and
``--repetitions N`` to insert each included canary N times (bounds per record). ``DIR/audit.json``
holds the audit's own settings and seed (written before the run, so the same
command resumes the same audit); ``DIR/audit_result.json`` and stdout get the
result as JSON: counts, bounds and scores of public canaries only, never a text
or label of the input. Exit 0 whatever the verdict; 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import secrets
import sys
import tempfile
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from dpkit.audit.release.audit import audit_release, check_repetitions, neighbouring_for
from dpkit.audit.release.canaries import DEFAULT_CANARIES, echo_canaries
from dpkit.audit.release.scorers import scorer
from dpkit.io import atomic_write_text
from dpkit.methods.base import config_dict
from dpkit.methods.execution import execute
from dpkit.methods.request import plan
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int

SMOKE_CANARIES = 200   # --smoke without --canaries: the cap on the bound is then 3.0 (see dpkit.audit.release.canaries)
CANARY_DESIGNS = ("rare-words", "echo")   # make_canaries (the default) and echo_canaries


def canary_design(args, canaries: int | None) -> tuple[str, int]:
    """(design, repetitions) of ``--canary-design`` and ``--repetitions`` (defaults: rare-words, 1), validated
    for ``canaries`` canaries (None: the default count) before anything is written."""
    design = getattr(args, "canary_design", None) or "rare-words"
    check_choice("--canary-design", design, CANARY_DESIGNS)
    repetitions = getattr(args, "repetitions", None)
    return design, check_repetitions("--repetitions", 1 if repetitions is None else repetitions,
                                     DEFAULT_CANARIES if canaries is None else canaries)


def design_canaries(design: str, m: int | None, seed, label_set):
    """What :func:`audit_release` takes as ``canaries``: the count (rare words, made inside the audit from its
    seed) or, for ``echo``, ``m`` echo canaries drawn from ``seed`` (public; labels from the public label set)."""
    if design == "rare-words":
        return m
    return echo_canaries(DEFAULT_CANARIES if m is None else m, np.random.default_rng([int(seed), 11]), label_set)


def _synth_args(args: argparse.Namespace) -> argparse.Namespace:
    """The ``dpkit synth`` flags this audit passes on (the synth defaults for everything else)."""
    return argparse.Namespace(
        method=args.method, input=args.input, text_column=args.text_column, label_column=args.label_column,
        labels=args.labels, epsilon=args.epsilon, delta=args.delta, out=None, backend=args.backend,
        model=args.model, smoke=args.smoke, seed=args.seed, limit=args.limit, rows=args.rows,
        sample_fraction=None, sample_salt=None, executor=None, workers=None, ray_address=None,
        set=list(args.set or []), config=None, plan=False)


def _value(text: str, current):
    if isinstance(current, bool):
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ParameterError("--set", text, "must be true or false for this setting")
    for kind in (int, float):
        if isinstance(current, kind):
            try:
                return kind(text)
            except ValueError:
                raise ParameterError("--set", text, f"must be a {kind.__name__} for this setting") from None
    if current is None:
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def apply_settings(config, pairs):
    """``config`` with ``--set key=value`` pairs applied, where ``dpkit synth``'s planning does not do it."""
    names = {f.name for f in fields(config)}
    changes = {}
    for pair in pairs or ():
        key, sep, text = pair.partition("=")
        if not sep or key not in names or key in ("epsilon", "delta"):
            raise ParameterError("--set", pair, f"must be key=value with key one of {sorted(names - {'epsilon', 'delta'})}"
                                 " (epsilon and delta have their own flags)")
        changes[key] = _value(text, getattr(config, key))
    return replace(config, **changes) if changes else config


def _plan_applies_set() -> bool:
    """Whether ``dpkit synth``'s planning applies ``--set`` itself (:mod:`dpkit.methods.settings`)."""
    return importlib.util.find_spec("dpkit.methods.settings") is not None


def _audit_state(root: Path, settings: dict) -> dict:
    """DIR/audit.json: created on the first run, read (and compared) on a resume."""
    path = root / "audit.json"
    if path.exists():
        state = json.loads(path.read_text(encoding="utf-8"))
        if state.get("settings") != settings:
            raise ParameterError("--out", str(root), "holds an audit with other settings; use a new folder")
        return state
    if root.exists() and any(root.iterdir()):
        raise ParameterError("--out", str(root), "exists, is not empty and holds no audit; give a new or empty folder")
    root.mkdir(parents=True, exist_ok=True)
    state = {"settings": settings, "audit_seed": secrets.randbits(63)}
    atomic_write_text(path, json.dumps(state, indent=2, sort_keys=True) + "\n")
    return state


def run_release_audit(args: argparse.Namespace) -> dict:
    """Plan, then audit; returns the result dict (raises ParameterError on bad input)."""
    scorers = tuple(s.strip() for s in args.scorers.split(",") if s.strip())
    if not scorers or len(set(scorers)) != len(scorers):
        raise ParameterError("--scorers", args.scorers, "must name distinct scorers: ngram, chars, embedding")
    for name in scorers:
        scorer(name)                    # ParameterError for an unknown name, before anything is written
    m = args.canaries if args.canaries is not None else (SMOKE_CANARIES if args.smoke else None)
    if m is not None:
        check_int("--canaries", m, minimum=2)
    check_in_range("--confidence", args.confidence, 0.0, 1.0, low_open=True, high_open=True)
    design, repetitions = canary_design(args, m)
    p = plan(_synth_args(args))
    config = p.config if _plan_applies_set() else apply_settings(p.config, args.set)
    if config != p.config:
        p = replace(p, config=config, params=dict(p.params, method_config=config_dict(config)))
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="dpkit-audit-"))
    strategy = getattr(args, "strategy", "bonferroni")
    settings = {"method": args.method, "canaries": m, "scorers": list(scorers), "confidence": args.confidence,
                "strategy": strategy,
                "params": json.loads(json.dumps(p.params, sort_keys=True, default=str))}
    if (design, repetitions) != ("rare-words", 1):   # only when set: older audit folders still resume
        settings.update(canary_design=design, repetitions=repetitions)
    state = _audit_state(root, settings)
    claimed_delta = float(getattr(p.config, "delta", 0.0) or 0.0)

    def synthesize(records):
        release, _ = execute(replace(p, records=records), root / "run")
        if release is not None:
            return list(release.records)
        lines = (root / "run" / "release" / "synthetic.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    label_names = p.records.label_set if p.records.labelled else None
    result = audit_release(synthesize, p.records, canaries=design_canaries(design, m, state["audit_seed"], label_names),
                           claimed_epsilon=args.epsilon, claimed_delta=claimed_delta, confidence=args.confidence,
                           seed=state["audit_seed"], scorers=scorers, neighbouring=neighbouring_for(args.method),
                           strategy=strategy, repetitions=repetitions)
    payload = dict(result.to_dict(), method=args.method, canary_design=design, out=str(root))
    atomic_write_text(root / "audit_result.json", json.dumps(payload, indent=2, sort_keys=True) + "\n")
    return payload
