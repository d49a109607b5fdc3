"""``dpkit synth {kps,pp,dpst}``: a differentially private synthetic copy of your own labelled texts.

    dpkit synth kps --input data/own_data_sample.csv --text-column text --label-column label \\
        --epsilon 4 --out runs/kps --smoke

Everything is validated before anything is written (exit 2 and a message that
names the flag, the value and what is allowed). The run writes ``DIR/private/``
as it goes and ``DIR/release/`` once at the end; the same command resumes an
interrupted run and leaves a finished one unchanged (exit 0). Progress goes to
stderr, a one-line summary to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, replace

SMOKE_ROWS = 200  # the smoke preset's limit (or the method's own SMOKE_ROWS); a keep-fraction once --rows is declared
SMOKE_MAX_ROWS = 2000  # --smoke reads at most this many kept rows (or the method's own); more is refused (exit 2)
BACKENDS = ("local", "openai", "anthropic")


@dataclass
class Plan:
    """Everything a run needs, validated; nothing written yet."""

    method: object
    records: object
    config: object
    settings: dict
    params: dict
    seed: int | None
    backend: object
    executor: object = None   # pp only: who decodes the batches; not part of params (resume across executors)
    release_plan: object = None  # the planned ledger, guarantee and size (dpkit.methods.planning.ReleasePlan)


def _check_budget(args) -> tuple[float, float | None]:
    """The budget flags; their values are validated once, by the method's configuration."""
    from dpkit.validate import ParameterError

    if args.delta is not None and args.method != "pp":
        raise ParameterError("--delta", args.delta, f"does not apply to {args.method}: it is pure epsilon-DP "
                             "(delta = 0); only pp takes --delta")
    return args.epsilon, args.delta


def build_config(args: argparse.Namespace, method):
    """The method's configuration from the flags, validated once: its defaults (or ``--smoke`` preset),
    then ``--config FILE``, then each ``--set key=value`` (:mod:`dpkit.methods.settings`), with the
    budget from ``--epsilon``/``--delta``. ParameterError names the flag or the key."""
    from dpkit.methods.settings import overrides
    from dpkit.validate import ParameterError

    eps, delta = _check_budget(args)
    changes = overrides(method.Config, args.method, getattr(args, "set", None), getattr(args, "config", None))
    if delta is not None:
        changes["delta"] = delta
    try:
        return method.Config.smoke(eps, **changes) if args.smoke else method.Config(epsilon=eps, **changes)
    except ParameterError as error:
        if error.name in ("epsilon", "delta"):  # the budget came from its flag
            raise ParameterError(f"--{error.name}", error.value, error.allowed) from None
        raise


def plan_release(args: argparse.Namespace):
    """``--plan``: the configuration, the planned ledger (spend per mechanism), the composed guarantee and
    the number of texts, from the flags and the row count the user declares (``--rows``); reads no data.
    Returns a :class:`~dpkit.methods.planning.ReleasePlan`."""
    from dpkit.data.tables import parse_labels
    from dpkit.methods import METHODS
    from dpkit.methods.planning import release_plan
    from dpkit.validate import ParameterError

    method = METHODS[args.method]
    config = build_config(args, method)
    labels = parse_labels(args.labels) if args.labels is not None else None
    if args.label_column is not None and labels is None:
        raise ParameterError("--labels", None, "is needed with --plan and --label-column: the plan reads no data, "
                             "so declare the public label set (or leave out --label-column for unlabelled input)")
    return _fitting(release_plan, args.method, config, labels=labels, labelled=labels is not None,
                    rule=rows_rule(args, method), declared_rows=getattr(args, "rows", None))


def _fitting(release_plan, *args, **kwargs):
    """``release_plan(...)``; a plan over the budget is bad input (ParameterError naming --epsilon, exit 2)."""
    from dpkit.privacy.ledger import BudgetExceededError
    from dpkit.validate import ParameterError

    try:
        return release_plan(*args, **kwargs)
    except BudgetExceededError as error:
        raise ParameterError("--epsilon", args[1].epsilon, f"is exceeded by the configuration's planned spend, "
                             f"refused before anything is written: {error}") from None


def plan(args: argparse.Namespace) -> Plan:
    """Validate every argument and read the input (raises ParameterError; writes nothing).

    The planning function of ``dpkit synth`` (``dpkit audit release`` reuses it):
    the configuration is built once (:func:`build_config`), the rows are selected by
    the public rule (:func:`rows_rule`), and the release's planned ledger is
    checked against the budget (:func:`dpkit.methods.planning.release_plan`; an
    overspend raises BudgetExceededError) before anything is written. Returns a
    :class:`Plan`: method, records, config, public settings, params (what a resume
    must match), seed, backend, executor and the release plan.
    """
    from dpkit.backends import get_backend
    from dpkit.data.tables import label_set
    from dpkit.methods import METHODS, Records
    from dpkit.methods.planning import release_plan
    from dpkit.runs import file_digest
    from dpkit.validate import ParameterError, check_int

    method = METHODS[args.method]
    for flag in ("input", "text_column"):
        if getattr(args, flag, None) is None:
            raise ParameterError(f"--{flag.replace('_', '-')}", None, "is required (except with --plan)")
    if args.limit is not None:
        check_int("--limit", args.limit, minimum=1)
    if args.seed is not None:
        check_int("--seed", args.seed, minimum=0)
    if args.labels is not None and args.label_column is None:
        raise ParameterError("--labels", args.labels, "needs --label-column (the column the labels are in)")
    config = build_config(args, method)
    eps, delta = args.epsilon, args.delta
    if args.method == "pp":
        method.check_backend(args.backend)
    executor = _executor(args)
    rule = rows_rule(args, method)
    table = read_rows(args, method, rule)  # streamed; the rule applied while reading; declared labels checked
    names = label_set(table.labels, args.labels) if table.labels is not None else None
    records = Records.from_strings(table.texts, table.labels, names, declared=args.labels is not None)
    planned = _fitting(release_plan, args.method, config, labels=names, labelled=names is not None, rule=rule,
                       declared_rows=getattr(args, "rows", None))
    backend = get_backend(args.backend or "local", args.model,  # pp: local only (checked above); loads lazily
                          runtime=getattr(args, "runtime", None))
    key = getattr(backend, "key_variable", None)
    if key and not os.environ.get(key):  # checked before the run folder exists, not after the run started
        raise ParameterError("--backend", args.backend, f"needs an API key in the environment variable {key} "
                             "(it is never read from code or files); or use --backend local")
    settings = {"method": args.method, "text_column": args.text_column, "label_column": args.label_column,
                "labels": list(names) if names is not None else None, "labels_declared": args.labels is not None,
                "limit": rule.limit, "rows": rule.to_dict(), "smoke": bool(args.smoke),
                "backend": args.backend or "local",
                "model": args.model}
    from dpkit.methods.base import config_dict

    neutral = getattr(method, "OUTPUT_NEUTRAL", ())  # recorded in config.json, but a resume may change them
    params = dict(settings, method_config={k: v for k, v in config_dict(config).items() if k not in neutral},
                  epsilon=eps, delta=delta,
                  input_sha256=file_digest(args.input))
    return Plan(method, records, config, settings, params, args.seed, backend, executor, planned)


def rows_rule(args: argparse.Namespace, method):
    """The public row-selection rule of the flags (:mod:`dpkit.data.selection`); reads no data.

    Add/remove methods (kps, pp) select rows by a per-record keyed hash against a
    public fraction: ``--sample-fraction``, or ``--limit N`` (and the smoke
    preset's limit) over the row count ``--rows M`` the user declares. Without
    a declared row count the smoke preset keeps every row (its sizes are the
    method's, not the input's), up to :func:`smoke_max_rows` (more is refused by
    :func:`read_rows`). Replace-one methods (dpst) keep the first N rows.
    """
    from dpkit.data.selection import row_rule

    per_record = method.STATEMENT.neighbouring.startswith("add/remove")
    limit, rows = args.limit, getattr(args, "rows", None)
    if args.smoke:
        smoke = getattr(method, "SMOKE_ROWS", SMOKE_ROWS)
        if not per_record or rows is not None:
            limit = smoke if limit is None else min(limit, smoke)
    return row_rule(per_record=per_record, limit=limit, declared_rows=rows,
                    fraction=getattr(args, "sample_fraction", None), salt=getattr(args, "sample_salt", None))


def smoke_max_rows(args: argparse.Namespace, method) -> int | None:
    """The public bound on the rows a ``--smoke`` run of an add/remove method reads (None: no bound)."""
    if not args.smoke or not method.STATEMENT.neighbouring.startswith("add/remove"):
        return None
    return getattr(method, "SMOKE_MAX_ROWS", SMOKE_MAX_ROWS)


def read_rows(args: argparse.Namespace, method, rule):
    """The input's rows that ``rule`` keeps, streamed (:func:`dpkit.data.tables.read_table`): memory holds
    the kept rows only. Every row read must carry a declared label (``--labels``; rows named by number).
    Under ``--smoke`` more than :func:`smoke_max_rows` kept rows is refused (exit 2) as soon as the reader
    meets one more: a smoke run's work is bounded by public numbers."""
    from dpkit.data.tables import RowLimitExceeded, read_table
    from dpkit.validate import ParameterError

    bound = smoke_max_rows(args, method)
    try:
        table = read_table(args.input, args.text_column, args.label_column, rule=rule,
                           declared_labels=args.labels, max_rows=bound)
    except RowLimitExceeded:
        per_record = getattr(method, "SMOKE_ROWS", SMOKE_ROWS)
        raise ParameterError("--smoke", True, f"reads at most {bound} rows of {args.method}'s input (a public "
                             "bound on a smoke run's work), and more are selected: declare the input's row count "
                             f"with --rows M (the smoke preset then keeps each row with probability "
                             f"min(1, {per_record}/M)), give --sample-fraction F, or leave out --smoke") from None
    if not table.texts:  # the per-record rule kept nothing (identical rows are kept or dropped together)
        flag = "--sample-fraction" if getattr(args, "sample_fraction", None) is not None else "--rows"
        raise ParameterError(flag, getattr(args, flag[2:].replace("-", "_"), None),
                             f"kept no row of the input: the per-record rule keeps each distinct row with "
                             f"probability {rule.fraction:.6g}; declare fewer rows or a larger fraction")
    return table


def rule_applied(table, rule):
    """``table`` with the rows ``rule`` keeps (a new Table; file order)."""
    from dataclasses import replace as _replace

    keep = rule.select(table.texts, table.labels)
    if len(keep) == len(table.texts):
        return table
    return _replace(table, texts=tuple(table.texts[i] for i in keep),
                    labels=None if table.labels is None else tuple(table.labels[i] for i in keep))


def _executor(args: argparse.Namespace):
    """The pp executor the flags ask for (None for the default); ParameterError names the flag."""
    from dpkit.validate import ParameterError

    name = getattr(args, "executor", None)
    workers, address = getattr(args, "workers", None), getattr(args, "ray_address", None)
    if args.method != "pp":
        for flag, value in (("--executor", None if name == "local" else name), ("--workers", workers),
                            ("--ray-address", address)):
            if value is not None:
                raise ParameterError(flag, value, f"applies to pp only ({args.method} decodes nothing private "
                                     "in batches); leave it out")
        return None
    if name is None and (workers is not None or address is not None):
        raise ParameterError("--workers" if workers is not None else "--ray-address",
                             workers if workers is not None else address, "needs --executor ray")
    if name is None:
        return None
    from dpkit.privpred.executors import make_executor

    return make_executor(name, workers, address, flags=True)


def execute(p: Plan, out) -> tuple[object, str]:
    """Run (or resume) the plan in folder ``out``; returns ``(release or None, state)``."""
    from dpkit.runs.layout import DONE, folder_state, paths
    from dpkit.methods.release import write_release
    from dpkit.privacy import PrivacyLedger
    from dpkit.runs import Run
    from dpkit.seeds import root_sequence

    state = folder_state(out, p.params, p.seed)
    root, release_dir, private = paths(out)
    if state == DONE:
        return None, state
    start = time.perf_counter()
    epsilon, delta = p.config.budget()    # the budget, given to the ledger once: every charge is checked
    run = Run(private, params=p.params, seed=p.seed, ledger=PrivacyLedger(budget_epsilon=epsilon, delta=delta))
    run.note(f"{'resumed' if run.resumed else 'started'} {p.settings['method']}")
    _say(f"dpkit synth {p.settings['method']}: {'resuming' if run.resumed else 'starting'} in {root}")
    if p.executor is None:
        release = p.method.synthesize(p.records, p.config, run, p.backend, root_sequence(p.seed))
    else:
        with p.executor:
            release = p.method.synthesize(p.records, p.config, run, p.backend, root_sequence(p.seed),
                                          executor=p.executor)
    release = replace(release, reproducible=p.seed is not None)
    if not release_dir.exists():
        write_release(release_dir, release, p.settings)
    run.track(release_dir)          # verified whenever the folder is opened again
    seconds = time.perf_counter() - start
    timings = dict(run.manifest.get("timings", {}))
    timings[f"session_{run.manifest.get('resumes', 0)}_seconds"] = round(seconds, 3)
    run.note(f"finished in {seconds:.1f} s")
    run.finish(backend=p.backend, timings=timings)
    return release, state


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _synth(args: argparse.Namespace) -> int:
    from dpkit import runtime
    from dpkit.backends.base import BackendError
    from dpkit.privacy.ledger import BudgetExceededError
    from dpkit.runs.layout import DONE
    from dpkit.validate import ParameterError

    runtime.set_offline()
    try:
        if getattr(args, "plan", False):
            print(plan_release(args).text())
            return 0
        if args.out is None:
            raise ParameterError("--out", None, "is required (except with --plan): the run folder DIR")
        p = plan(args)
        release, state = execute(p, args.out)
    except ParameterError as error:  # bad input, a configuration mismatch, a corrupted folder
        from dpkit.cli import failure_line

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
        epsilon += f" (within the requested {float(requested_epsilon):g}: the method's caps are whole numbers)"
    return (f"dpkit synth {method}: {len(release.records)} synthetic records in {out}/release "
            f"({epsilon}, delta={delta}, {mode})")


def register(subparsers) -> None:
    from dpkit.models.named import LOCAL_MODEL_HELP

    p = subparsers.add_parser("synth", help="a DP synthetic copy of your own texts (kps, pp or dpst)",
                              description=__doc__.splitlines()[0])
    p.add_argument("method", choices=("kps", "pp", "dpst"), help="DP-KPS, private prediction or DP-ST")
    p.add_argument("--input", default=None, help="CSV, TSV or JSON Lines file, UTF-8 (required unless --plan)")
    p.add_argument("--text-column", default=None, help="the column with the texts (required unless --plan)")
    p.add_argument("--label-column", default=None, help="the column with the labels (optional)")
    p.add_argument("--labels", default=None, help="the public label set: comma-separated, or a JSON list such as "
                   "'[\"a,b\", \"c\"]' (default: read from the input, and the report says it is treated as public)")
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget, > 0")
    p.add_argument("--delta", type=float, default=None, help="pp only: delta in (0, 1) (default 1e-6)")
    p.add_argument("--out", default=None, help="run folder DIR: DIR/release (publishable) and DIR/private "
                   "(required unless --plan)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="set any parameter of the "
                   "method's configuration (repeatable; typed by the field, e.g. --set clip=3 --set top_k=none); "
                   "every value is recorded in release/config.json")
    p.add_argument("--config", default=None, metavar="FILE", help="a TOML or JSON table of configuration "
                   "parameters (applied before --set)")
    p.add_argument("--plan", action="store_true", help="print the configuration, the ledger's planned spend per "
                   "mechanism, the composed guarantee and the number of texts, then exit; reads no data (give "
                   "--rows for DP-ST's size, --labels for labelled input)")
    p.add_argument("--backend", choices=BACKENDS, default=None, help="text generation backend (default local; "
                   "pp runs on the local model only)")
    p.add_argument("--model", default=None, help=f"model name or path for the backend; {LOCAL_MODEL_HELP}")
    p.add_argument("--runtime", default=None, choices=("auto", "llamacpp", "torch"),
                   help="local model runtime for generation and private prediction's decoding: auto | llamacpp | "
                        "torch (default: $DPKIT_RUNTIME or auto = llama.cpp on a CPU)")
    p.add_argument("--smoke", action="store_true", help="tiny method sizes, for tests; with --rows M, kps keeps "
                   f"each row with probability min(1, {SMOKE_ROWS}/M) (pp 48/M) by the per-record rule; dpst reads "
                   f"the first 12 rows. A smoke run of kps keeps at most {SMOKE_MAX_ROWS} rows (pp 200): a larger "
                   "input is refused (exit 2) unless --rows M or --sample-fraction selects fewer")
    p.add_argument("--seed", type=int, default=None, help="reproducible mode: NOT a DP release (default: fresh "
                   "noise from the operating system)")
    p.add_argument("--limit", type=int, default=None, help="read about N rows: kps and pp keep each row by a "
                   "public per-record rule (a keyed hash of the row below N/M; needs --rows M), dpst the first N")
    p.add_argument("--rows", type=int, default=None, help="the number of rows you DECLARE the input has (public; "
                   "the file's real count is private): the keep-fraction of --limit and --smoke, and --plan's size")
    p.add_argument("--sample-fraction", type=float, default=None, help="kps and pp: keep each row iff a keyed "
                   "hash of the row (text and label) falls below this public fraction in (0, 1]")
    p.add_argument("--sample-salt", default=None, help="the public salt of the row hash (default "
                   "dpkit-rows-v1); recorded in config.json")
    p.add_argument("--executor", choices=("local", "ray"), default=None, help="pp only: decode the batches in "
                   "this process (local, the default) or on Ray workers (needs dpkit[scale]); the release is "
                   "the same, and a run may be resumed with the other executor")
    p.add_argument("--workers", type=int, default=None, help="with --executor ray: the number of Ray workers, "
                   "each loads the local model once (default 2)")
    p.add_argument("--ray-address", default=None, help="with --executor ray: an existing cluster's address for "
                   "ray.init (e.g. auto); default: start a local cluster")
    p.set_defaults(func=_synth)
