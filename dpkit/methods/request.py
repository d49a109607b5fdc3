"""From ``dpkit synth``'s flags to a validated request: configuration, rows, backend, executor; nothing written.

:func:`plan` is the planning function of ``dpkit synth`` (``dpkit audit release``
reuses it): the configuration is built once (:func:`build_config`), the rows
are selected by the method's public rule (:func:`rows_rule`, which reads the
method's declared neighbouring relation) and read (:func:`read_rows`), and the
release's planned ledger -- the method's declared charges -- is checked against
the budget (:func:`dpkit.methods.planning.release_plan`) before anything is
written. What the CLI needs to know about a method it reads from the method's
record (:class:`~dpkit.methods.record.Method`, through :mod:`dpkit.methods.registry`):
``takes_delta``, ``backends``, ``executors``, ``smoke_rows``, ``smoke_max_rows``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from dpkit import backends
from dpkit.data.selection import row_rule
from dpkit.data.tables import RowLimitExceeded, label_set, parse_label_descriptions, parse_labels, read_table
from dpkit.methods.base import Records, config_dict
from dpkit.methods.planning import ReleasePlan, release_plan
from dpkit.methods.registry import all_methods, get_method
from dpkit.methods.settings import overrides
from dpkit.privacy.ledger import BudgetExceededError
from dpkit.runs import file_digest
from dpkit.validate import ParameterError, check_int


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


#: the longest document type (``--document-type``, ``--set document_type=``): a few words, named in every prompt
MAX_DOCUMENT_TYPE_CHARS = 200


def build_config(args: argparse.Namespace, method):
    """The method's configuration from the flags, validated once: its defaults (or ``--smoke`` preset),
    then ``--config FILE``, then each ``--set key=value`` (:mod:`dpkit.methods.settings`), with the
    budget from ``--epsilon``/``--delta``. ParameterError names the flag or the key."""
    if args.delta is not None and not method.takes_delta:
        raise ParameterError("--delta", args.delta, f"does not apply to {args.method}: it is pure epsilon-DP "
                             f"(delta = 0); --delta applies to {_those(lambda m: m.takes_delta)} only")
    changes = overrides(method.Config, args.method, getattr(args, "set", None), getattr(args, "config", None))
    document_type = getattr(args, "document_type", None)
    if document_type is not None:
        if not document_type.strip():
            raise ParameterError("--document-type", document_type, "must be a few words such as 'health news tweet'")
        if "document_type" in changes and changes["document_type"] != document_type:
            raise ParameterError("--document-type", document_type, "differs from the document_type of --set/--config "
                                 f"({changes['document_type']!r}); give it once")
        changes["document_type"] = document_type
    named = changes.get("document_type")
    if isinstance(named, str) and len(named) > MAX_DOCUMENT_TYPE_CHARS:
        flag = "--document-type" if document_type is not None else "document_type"
        raise ParameterError(flag, named, f"must be at most {MAX_DOCUMENT_TYPE_CHARS} characters (it has "
                             f"{len(named):,}): a few words such as 'health news tweet', repeated in every prompt")
    if args.delta is not None:
        changes["delta"] = args.delta
    try:
        return (method.Config.smoke(args.epsilon, **changes) if args.smoke
                else method.Config(epsilon=args.epsilon, **changes))
    except ParameterError as error:
        if error.name in ("epsilon", "delta"):  # the budget came from its flag
            raise ParameterError(f"--{error.name}", error.value, error.allowed) from None
        raise


def plan_release(args: argparse.Namespace) -> ReleasePlan:
    """``--plan``: the configuration, the planned ledger (spend per mechanism), the composed guarantee and
    the number of texts, from the flags and the row count the user declares (``--rows``); reads no data."""
    method = get_method(args.method)
    config = build_config(args, method)
    labels = parse_labels(args.labels) if args.labels is not None else None
    descriptions = parse_label_descriptions(args.labels) if args.labels is not None else None
    if descriptions:  # the sizes are checked on the prompts the run would build: the descriptions in them
        labels = tuple(descriptions[name] for name in labels)
    if args.label_column is not None and labels is None:
        raise ParameterError("--labels", None, "is needed with --plan and --label-column: the plan reads no data, "
                             "so declare the public label set (or leave out --label-column for unlabelled input)")
    check_backend(args, method)
    return _fitting(args.method, config, labels=labels, labelled=labels is not None,
                    rule=rows_rule(args, method), declared_rows=getattr(args, "rows", None), backend=backend_of(args))


def _fitting(method_name: str, config, **kwargs) -> ReleasePlan:
    """``release_plan(...)``; a plan over the budget is bad input (ParameterError naming --epsilon, exit 2)."""
    try:
        return release_plan(method_name, config, **kwargs)
    except BudgetExceededError as error:
        raise ParameterError("--epsilon", config.epsilon, f"is exceeded by the configuration's planned spend, "
                             f"refused before anything is written: {error}") from None


def check_public_corpus(config, private_input: str) -> None:
    """A ``public_corpus`` (DP-ST) that is the ``--input`` file itself is refused: its triples are released
    verbatim, and the guarantee rests on that file holding no private record."""
    corpus = getattr(config, "public_corpus", "")
    try:
        same = bool(corpus) and os.path.samefile(os.path.expanduser(corpus), private_input)
    except OSError:
        same = False
    if same:
        raise ParameterError("public_corpus", corpus, "is the --input file (the private records): it must be a file "
                             "of PUBLIC texts, whose triples are released verbatim")


def plan(args: argparse.Namespace) -> Plan:
    """Validate every argument and read the input (raises ParameterError; writes nothing).

    Returns a :class:`Plan`: method, records, config, public settings, params (what a
    resume must match), seed, backend, executor and the release plan.
    """
    method = get_method(args.method)
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
    check_public_corpus(config, args.input)
    check_backend(args, method)
    executor = _executor(args, method)
    rule = rows_rule(args, method)
    table = read_rows(args, method, rule)  # streamed; the rule applied while reading; declared labels checked
    names = label_set(table.labels, args.labels) if table.labels is not None else None
    descriptions = parse_label_descriptions(args.labels) if args.labels is not None else None  # public
    records = Records.from_strings(table.texts, table.labels, names, declared=args.labels is not None,
                                   descriptions=descriptions)
    backend = backend_of(args)
    planned = _fitting(args.method, config, labels=records.prompt_labels, labelled=names is not None, rule=rule,
                       declared_rows=getattr(args, "rows", None), backend=backend)
    key = getattr(backend, "key_variable", None)
    if key and not os.environ.get(key):  # checked before the run folder exists, not after the run started
        raise ParameterError("--backend", args.backend, f"needs an API key in the environment variable {key} "
                             "(it is never read from code or files); or use --backend local")
    settings = {"method": args.method, "text_column": args.text_column, "label_column": args.label_column,
                "labels": list(names) if names is not None else None, "labels_declared": args.labels is not None,
                "limit": rule.limit, "rows": rule.to_dict(), "smoke": bool(args.smoke),
                "backend": args.backend or "local",
                "model": args.model}
    if descriptions:  # recorded only when given, so the settings of earlier runs (and their resumes) are unchanged
        settings["label_descriptions"] = descriptions
    neutral = method.output_neutral  # recorded in config.json, but a resume may change them
    params = dict(settings, method_config={k: v for k, v in config_dict(config).items() if k not in neutral},
                  epsilon=args.epsilon, delta=args.delta,
                  input_sha256=file_digest(args.input))
    return Plan(method, records, config, settings, params, args.seed, backend, executor, planned)


def check_backend(args: argparse.Namespace, method) -> None:
    """The backend must be one the method declares (``method.backends``); ParameterError names the flag."""
    name = args.backend or "local"
    if name not in method.backends:
        raise ParameterError("--backend", args.backend, method.backend_refusal())


def backend_of(args: argparse.Namespace):
    """The backend the flags name (checked by :func:`check_backend`); it loads its model lazily."""
    return backends.get_backend(args.backend or "local", args.model, runtime=getattr(args, "runtime", None))


def rows_rule(args: argparse.Namespace, method):
    """The public row-selection rule of the flags (:mod:`dpkit.data.selection`); reads no data.

    Add/remove methods (kps, pp) select rows by a per-record keyed hash against a
    public fraction: ``--sample-fraction``, or ``--limit N`` (and the smoke
    preset's limit) over the row count ``--rows M`` the user declares. Without
    a declared row count the smoke preset keeps every row (its sizes are the
    method's, not the input's), up to the method's ``smoke_max_rows`` (more is
    refused by :func:`read_rows`). Replace-one methods (dpst) keep the first N rows.
    """
    per_record = method.statement.per_record
    limit, rows = args.limit, getattr(args, "rows", None)
    if args.smoke and (not per_record or rows is not None):
        limit = method.smoke_rows if limit is None else min(limit, method.smoke_rows)
    return row_rule(per_record=per_record, limit=limit, declared_rows=rows,
                    fraction=getattr(args, "sample_fraction", None), salt=getattr(args, "sample_salt", None),
                    max_rows=smoke_max_rows(args, method))  # stated in the report (RowRule.existence)


def smoke_max_rows(args: argparse.Namespace, method) -> int | None:
    """The public bound on the rows a ``--smoke`` run of an add/remove method reads (None: no bound)."""
    if not args.smoke or not method.statement.per_record:
        return None
    return method.smoke_max_rows


def read_rows(args: argparse.Namespace, method, rule):
    """The input's rows that ``rule`` keeps, streamed (:func:`dpkit.data.tables.read_table`): memory holds
    the kept rows only. Every row read must carry a declared label (``--labels``; rows named by number).
    Under ``--smoke`` more than :func:`smoke_max_rows` kept rows is refused (exit 2) as soon as the reader
    meets one more: a smoke run's work is bounded by public numbers."""
    bound = smoke_max_rows(args, method)
    try:
        table = read_table(args.input, args.text_column, args.label_column, rule=rule,
                           declared_labels=args.labels, max_rows=bound)
    except RowLimitExceeded:
        raise ParameterError("--smoke", True, f"reads at most {bound} rows of {args.method}'s input (a public "
                             "bound on a smoke run's work), and more are selected: declare the input's row count "
                             f"with --rows M (the smoke preset then keeps each row with probability "
                             f"min(1, {method.smoke_rows}/M)), give --sample-fraction F, or leave out "
                             "--smoke") from None
    if not table.texts:  # the per-record rule kept nothing (identical rows are kept or dropped together)
        flag = "--sample-fraction" if getattr(args, "sample_fraction", None) is not None else "--rows"
        raise ParameterError(flag, getattr(args, flag[2:].replace("-", "_"), None),
                             f"kept no row of the input: the per-record rule keeps each distinct row with "
                             f"probability {rule.fraction:.6g}; declare fewer rows or a larger fraction")
    return table


def _executor(args: argparse.Namespace, method):
    """The executor the flags ask for (None for the default), among ``method.executors``; ParameterError
    names the flag."""
    name = getattr(args, "executor", None)
    workers, address = getattr(args, "workers", None), getattr(args, "ray_address", None)
    if not method.executors:
        for flag, value in (("--executor", None if name == "local" else name), ("--workers", workers),
                            ("--ray-address", address)):
            if value is not None:
                raise ParameterError(flag, value, f"applies to {_those(lambda m: m.executors)} only ({args.method} "
                                     "decodes nothing private in batches); leave it out")
        return None
    if name is None and (workers is not None or address is not None):
        raise ParameterError("--workers" if workers is not None else "--ray-address",
                             workers if workers is not None else address, "needs --executor ray")
    if name is None:
        return None
    return method.make_executor(name, workers, address, flags=True)


def _those(has) -> str:
    """The registered methods a rule applies to, named for an error message (``pp``; ``kps and pp``)."""
    names = [name for name, method in all_methods().items() if has(method)]
    return " and ".join(names) if names else "no method"
