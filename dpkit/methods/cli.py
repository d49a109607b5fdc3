"""``dpkit synth METHOD``: a differentially private synthetic copy of your own labelled texts.

    dpkit synth kps --input data/own_data_sample.csv --text-column text --label-column label \\
        --epsilon 4 --out runs/kps --smoke

This module is the argument parser and the dispatch; the request (flags ->
configuration, rows, backend) is :mod:`dpkit.methods.request`, the plan
:mod:`dpkit.methods.planning`, the run :mod:`dpkit.methods.execution`.
Everything is validated before anything is written (exit 2 and a message that
names the flag, the value and what is allowed). The run writes ``DIR/private/``
as it goes and ``DIR/release/`` once at the end; the same command resumes an
interrupted run and leaves a finished one unchanged (exit 0). Progress goes to
stderr, a one-line summary to stdout.
"""

from __future__ import annotations

import argparse
import sys

from dpkit import runtime
from dpkit.models.named import LOCAL_MODEL_HELP
from dpkit.backends.base import BackendError
from dpkit.methods import execution
from dpkit.methods.record import ALL_BACKENDS
from dpkit.methods.request import plan, plan_release
from dpkit.methods.registry import method_names
from dpkit.privacy.ledger import BudgetExceededError
from dpkit.runs.errors import failure_line
from dpkit.runs.layout import DONE
from dpkit.validate import ParameterError



def _synth(args: argparse.Namespace) -> int:
    """``dpkit synth``: plan (validate, read), then execute; each failure is one line and an exit code."""
    runtime.set_offline()
    try:  # the method modules (PyTorch) load when the plan asks for one, never for --help
        if getattr(args, "plan", False):
            print(plan_release(args).text())
            return 0
        if args.out is None:
            raise ParameterError("--out", None, "is required (except with --plan): the run folder DIR")
        release, state = execution.execute(plan(args), args.out)
    except ParameterError as error:  # bad input, a configuration mismatch, a corrupted folder
        print(f"dpkit synth: {failure_line(error, args.out)}", file=sys.stderr)
        return 2
    except BudgetExceededError as error:  # refused before the charge was recorded: nothing was released
        print(f"dpkit synth: refused, nothing released: {error}", file=sys.stderr)
        return 2
    except BackendError as error:  # e.g. an API that keeps failing: the run is kept and resumes
        print(f"dpkit synth: the backend failed: {error}. The run in {args.out} is kept; rerun the same "
              "command to resume it (no budget is spent twice)", file=sys.stderr)
        return 1
    if state == DONE:
        print(f"dpkit synth {args.method}: {args.out}/release is already complete; nothing changed")
        return 0
    print(summary(args.method, release, args.out, args.epsilon))
    return 0


def summary(method: str, release, out, requested_epsilon: float) -> str:
    """The one-line stdout summary; says so when the guarantee is below the requested epsilon."""
    mode = "reproducible, NOT a DP release" if release.reproducible else "release mode"
    delta = "0" if release.delta == 0 else f"{release.delta:g}"
    epsilon = f"epsilon={release.epsilon:g}"
    if release.epsilon < float(requested_epsilon) * (1 - 1e-9):
        epsilon += f" (below the requested {float(requested_epsilon):g}: the method's public rules leave the rest unspent)"
    return (f"dpkit synth {method}: {len(release.records)} synthetic records in {out}/release "
            f"({epsilon}, delta={delta}, {mode})")


def register(subparsers) -> None:
    names = method_names()  # the registry's lines; no method module is imported (dpkit --help stays light)
    p = subparsers.add_parser("synth", help=f"a DP synthetic copy of your own texts ({', '.join(names)})",
                              description=__doc__.splitlines()[0])
    p.add_argument("method", choices=names, help="the method (dpkit.methods.registry); `dpkit synth METHOD --plan "
                   "--smoke` prints its configuration, budget split, sizes and row bounds")
    p.add_argument("--input", default=None, help="CSV, TSV or JSON Lines file, UTF-8 (required unless --plan)")
    p.add_argument("--text-column", default=None, help="the column with the texts (required unless --plan)")
    p.add_argument("--label-column", default=None, help="the column with the labels (optional)")
    p.add_argument("--labels", default=None, help="the public label set: comma-separated, a JSON list such as "
                   "'[\"a,b\", \"c\"]', or a JSON object of public descriptions such as '{\"ham\": \"a personal "
                   "message between friends\", \"spam\": \"an unsolicited advertisement\"}' that every method's "
                   "prompts use in place of the names (default: read from the input, and the report says it is "
                   "treated as public)")
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget, > 0")
    p.add_argument("--delta", type=float, default=None, help="delta in (0, 1), for a method whose guarantee "
                   "has one (its configuration's default otherwise); a pure epsilon-DP method refuses it")
    p.add_argument("--out", default=None, help="run folder DIR: DIR/release (publishable) and DIR/private "
                   "(required unless --plan)")
    p.add_argument("--document-type", default=None, metavar="TEXT", help="what your texts are, in a few public "
                   "words (e.g. 'health news tweet'): every method's prompt asks the model for one; recorded in "
                   "config.json (same as --set document_type=TEXT; default 'short text')")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set any parameter of the "
                   "method's configuration (repeatable; typed by the field, e.g. --set clip=3 --set top_k=none); "
                   "every value is recorded in release/config.json")
    p.add_argument("--config", default=None, metavar="FILE", help="a TOML or JSON table of configuration "
                   "parameters (applied before --set)")
    p.add_argument("--plan", action="store_true", help="print the configuration, the ledger's planned spend per "
                   "mechanism, the composed guarantee and the number of texts, then exit; reads no data (give "
                   "--rows for DP-ST's size, --labels for labelled input)")
    p.add_argument("--backend", choices=ALL_BACKENDS, default=None, help="text generation backend (default "
                   "local); a method whose model reads private text runs on the local model only")
    p.add_argument("--model", default=None, help=f"model name or path for the backend; {LOCAL_MODEL_HELP}")
    p.add_argument("--runtime", default=None, choices=("auto", "llamacpp", "torch"),
                   help="local model runtime for generation and private prediction's decoding: auto | llamacpp | "
                        "torch (default: $DPKIT_RUNTIME or auto = llama.cpp on a CPU)")
    p.add_argument("--smoke", action="store_true", help="tiny method sizes, for tests, and public bounds on the "
                   "rows read, each method's own (`--plan --smoke` prints them): under add/remove, with --rows M, "
                   "each row is kept with probability min(1, R/M) by the per-record rule, and at most B rows are "
                   "kept (a larger input is refused, exit 2, unless --rows M or --sample-fraction selects fewer); "
                   "under replace-one, the first R rows are read")
    p.add_argument("--seed", type=int, default=None, help="reproducible mode: NOT a DP release (default: fresh "
                   "noise from the operating system)")
    p.add_argument("--limit", type=int, default=None, help="read about N rows: a method under add/remove keeps "
                   "each row by a public per-record rule (a keyed hash of the row below N/M; needs --rows M), a "
                   "method under replace-one reads the first N")
    p.add_argument("--rows", type=int, default=None, help="the number of rows you DECLARE the input has (public; "
                   "the file's real count is private): the keep-fraction of --limit and --smoke, and --plan's size")
    p.add_argument("--sample-fraction", type=float, default=None, help="methods under add/remove: keep each "
                   "row iff a keyed hash of the row (text and label) falls below this public fraction in (0, 1]")
    p.add_argument("--sample-salt", default=None, help="the public salt of the row hash (default "
                   "dpkit-rows-v1); recorded in config.json")
    p.add_argument("--executor", choices=("local", "ray"), default=None, help="for a method that decodes private "
                   "batches: decode them in this process (local, the default) or on Ray workers (needs "
                   "dpkit[scale]); the release is the same, and a run may be resumed with the other executor")
    p.add_argument("--workers", type=int, default=None, help="with --executor ray: the number of Ray workers, "
                   "each loads the local model once (default 2)")
    p.add_argument("--ray-address", default=None, help="with --executor ray: an existing cluster's address for "
                   "ray.init (e.g. auto); default: start a local cluster")
    p.set_defaults(func=_synth)
