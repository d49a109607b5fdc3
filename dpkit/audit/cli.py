"""``dpkit audit``: list the auditable mechanisms and audit one.

    python -m dpkit audit list [--json]
    python -m dpkit audit run NAME --epsilon E [--samples N] [--seed S] [--confidence C] [--json]
    python -m dpkit audit samples --claim C --violation V [--confidence C] [--json]
    python -m dpkit audit release METHOD --input F --text-column C --epsilon E [--canaries M] [--smoke]

``run`` builds NAME calibrated for the claimed epsilon E, draws N outputs on each
dataset of its worst-case neighbouring pair, and prints the lower confidence
bound with the witness. Exit status 0 whether the mechanism passes or not
(``passed`` in the output says which); 2 on bad arguments. ``release`` audits a
method's whole release with canaries (:mod:`dpkit.audit.release.method_run`).
"""

from __future__ import annotations

import argparse
import json
import sys

from dpkit import runtime
from dpkit.audit.mechanism import registry
from dpkit.audit.mechanism.power import samples_needed
from dpkit.audit.release import blackbox, method_run
from dpkit.audit.release.audit import summary
from dpkit.audit.release.scorers import DEFAULT_SCORERS
from dpkit.backends.base import BackendError
from dpkit.io import to_jsonable
from dpkit.methods.record import ALL_BACKENDS
from dpkit.methods.registry import method_names
from dpkit.validate import ParameterError


def _list(args: argparse.Namespace) -> int:
    specs = registry.specs()
    if args.json:
        print(json.dumps([s.to_dict() for s in specs], indent=2))
        return 0
    width = max(len(s.name) for s in specs)
    for s in specs:
        tag = "BROKEN " if s.broken else "correct"
        print(f"{s.name:<{width}}  {tag}  {s.family}: {s.summary}")
    for module, reason in registry.unavailable().items():
        print(f"(not available: {module}: {reason})")
    return 0


def _run(args: argparse.Namespace) -> int:
    try:
        spec = registry.get(args.name)
        result = registry.run_audit(spec.name, args.epsilon, samples=args.samples, seed=args.seed,
                                    confidence=args.confidence)
    except ParameterError as error:
        print(f"dpkit audit run: {error}", file=sys.stderr)
        return 2
    if args.json:
        payload = result.to_dict()
        payload.update(name=spec.name, broken=spec.broken, family=spec.family)
        print(json.dumps(to_jsonable(payload, nonfinite="string"), indent=2))
    else:
        print(f"{spec.name} ({'deliberately broken: ' + spec.bug if spec.broken else spec.family})")
        print(result)
        print(f"counts on the certification half: {result.counts} (event family: {result.family})")
        if result.witness.get("pair_loss") is not None:
            print(f"exact privacy loss of this pair: {result.witness['pair_loss']:.4g} "
                  f"({result.witness['pair_loss'] / args.epsilon:.1%} of the claim)")
        for note in result.warnings:
            print(f"warning: {note}")
        print(f"why this pair: {result.witness['why_worst_case']}")
        print(f"rerun: {result.witness['rerun']}")
    return 0


def _samples(args: argparse.Namespace) -> int:
    try:
        if not args.violation > args.claim:
            raise ParameterError("violation", args.violation, f"must exceed the claim {args.claim:g}")
        n = samples_needed(args.claim, args.violation, args.confidence)
    except ParameterError as error:
        print(f"dpkit audit samples: {error}", file=sys.stderr)
        return 2
    payload = {"claim": args.claim, "violation": args.violation, "confidence": args.confidence,
               "certification_samples_per_dataset": n, "samples_to_draw_per_dataset": None if n is None else 2 * n}
    if args.json:
        print(json.dumps(payload, indent=2))
    elif n is None:
        print("no sample size up to 10^9 certifies this violation")
    else:
        print(f"a violation of size {args.violation:g} against the claim {args.claim:g} needs at least {n:,} "
              f"certification samples per dataset at {args.confidence:.0%} confidence (the tester draws twice "
              f"that: --samples {2 * n}), with the best possible event; weaker events need more")
    return 0


def _release(args: argparse.Namespace) -> int:
    runtime.set_offline()
    try:
        if blackbox.requested(args):
            payload = blackbox.run(args)
        elif not args.method:
            raise ParameterError("method", None, "must name a dpkit method, or give --command or --python")
        else:
            payload = method_run.run_release_audit(args)
    except ParameterError as error:
        print(f"dpkit audit release: {error}", file=sys.stderr)
        return 2
    except BackendError as error:
        print(f"dpkit audit release: the backend failed: {error}. Rerun the same command with the same --out "
              "to resume", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(to_jsonable(payload, nonfinite="string"), indent=2))
    else:
        print(summary(payload))
        if payload.get("out"):
            print(f"(the full result: {payload['out']}/audit_result.json, or --json)")
    return 0


def _register_release(sub) -> None:
    """Add ``release`` to the ``dpkit audit`` subcommands."""
    p = sub.add_parser("release", help="audit a method's whole release with canaries (one run)",
                       description=method_run.__doc__.splitlines()[0])
    p.add_argument("method", choices=method_names(), nargs="?",
                   help="the method, as in dpkit synth (dpkit.methods.registry)")
    p.add_argument("--input", required=True, help="CSV, TSV or JSON Lines file, UTF-8")
    p.add_argument("--text-column", required=True, help="the column with the texts")
    p.add_argument("--label-column", default=None, help="the column with the labels (optional)")
    p.add_argument("--labels", default=None, help="the public label set: comma-separated, or a JSON list (as for dpkit synth)")
    p.add_argument("--epsilon", type=float, required=True, help="the budget the method runs at (the claim)")
    p.add_argument("--delta", type=float, default=None, help="delta in (0, 1), for a method whose guarantee has "
                   "one (its configuration's default otherwise), as in dpkit synth")
    p.add_argument("--canaries", type=int, default=None, help="number of canaries (default 1000; 200 with --smoke)")
    p.add_argument("--canary-design", choices=method_run.CANARY_DESIGNS, default="rare-words",
                   help="rare-words (six rare words each, default) or echo (a public in-distribution prefix and a "
                   "rare-word suffix, Meeus et al. 2025)")
    p.add_argument("--repetitions", type=int, default=1, help="copies of each included canary in the input "
                   "(default 1; the bounds stay per record, by group privacy)")
    p.add_argument("--scorers", default=",".join(DEFAULT_SCORERS), help="comma-separated: ngram, chars, suffix_lm, embedding "
                   f"(default {','.join(DEFAULT_SCORERS)})")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound (default 0.95)")
    p.add_argument("--strategy", choices=("bonferroni", "split"), default="bonferroni",
                   help="how the guesses are chosen without peeking: every plan at alpha/T (bonferroni, default) or "
                   "a public half of the canaries picks the plan for the other half (split)")
    p.add_argument("--json", action="store_true", help="print the result as JSON (the keys of audit_result.json)")
    blackbox.add_arguments(p)
    p.add_argument("--smoke", action="store_true", help="the method's tiny sizes, and 200 canaries")
    p.add_argument("--set", action="append", default=None, metavar="KEY=VALUE",
                   help="a method configuration setting (repeatable), as in dpkit synth")
    p.add_argument("--out", default=None, help="audit folder DIR: DIR/run (a dpkit synth run folder), "
                   "DIR/audit.json, DIR/audit_result.json (default: a new temporary folder)")
    p.add_argument("--backend", choices=ALL_BACKENDS, default=None, help="text generation backend (default local)")
    p.add_argument("--model", default=None, help="model name or path for the backend")
    p.add_argument("--seed", type=int, default=None, help="the method's reproducible mode (NOT a DP release)")
    p.add_argument("--limit", type=int, default=None, help="as in dpkit synth")
    p.add_argument("--rows", type=int, default=None, help="as in dpkit synth")
    p.set_defaults(func=_release)


def register(subparsers) -> None:
    p = subparsers.add_parser("audit", help="empirical lower bounds on epsilon (audit list | audit run NAME)")
    sub = p.add_subparsers(dest="audit_command", required=True)
    lst = sub.add_parser("list", help="the auditable mechanisms, broken variants included")
    lst.add_argument("--json", action="store_true", help="a JSON list of objects with name and broken")
    lst.set_defaults(func=_list)
    run = sub.add_parser("run", help="audit one mechanism at a claimed epsilon")
    run.add_argument("name", help="a name from `dpkit audit list`")
    run.add_argument("--epsilon", type=float, required=True, help="the claimed epsilon the mechanism is built for")
    run.add_argument("--samples", type=int, default=100_000, help="outputs drawn per dataset (default 100000)")
    run.add_argument("--seed", type=int, default=0, help="seed of the audit's randomness (default 0)")
    run.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound (default 0.95)")
    run.add_argument("--json", action="store_true", help="one JSON object with the result and witness")
    run.set_defaults(func=_run)
    need = sub.add_parser("samples", help="samples an audit needs to refute a claim when the truth is larger")
    need.add_argument("--claim", type=float, required=True, help="the claimed epsilon")
    need.add_argument("--violation", type=float, required=True, help="the true epsilon to detect (> claim)")
    need.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    need.add_argument("--json", action="store_true", help="one JSON object")
    need.set_defaults(func=_samples)
    _register_release(sub)
