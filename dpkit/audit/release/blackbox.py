"""Any generator as a black box: a shell command or a Python callable, audited with canaries in one run.

From the command line::

    dpkit audit release --command 'python gen.py {input} {output}' --input data.csv --text-column text \\
        --epsilon 1 --out runs/audit-gen
    dpkit audit release --python mypackage.gen:synthesize --input data.csv --text-column text --epsilon 1

``--command``: a command line with the placeholders ``{input}`` and ``{output}``
(split like a shell would, run without a shell). The auditor writes the input
(the user's records plus the included canaries, in a public random order) to
``{input}`` as CSV with the columns ``text`` and ``label`` (``--format jsonl``:
JSON Lines with the same keys), runs the command once, and reads ``{output}``:
JSON Lines, one object with a ``"text"`` key per released record.

``--python module:function``: ``function(records)`` gets a list of
``{"text", "label"}`` dicts and returns a list of such dicts (or of strings).

The claim is the one the user states (``--epsilon``, ``--delta``, ``--neighbouring``:
add/remove one record by default, or replace-one with a public number of
records); the unit is one record of the input file. The analysis is that of
:func:`dpkit.audit.release.audit.audit_release`.
"""

from __future__ import annotations

import csv
import importlib
import json
import secrets
import shlex
import subprocess
import tempfile
from pathlib import Path

from dpkit.audit.release.audit import NEIGHBOURING, audit_release
from dpkit.audit.release.method_run import canary_design, design_canaries
from dpkit.audit.release.scorers import scorer
from dpkit.data.tables import label_set, parse_labels, read_table
from dpkit.io import atomic_write_text
from dpkit.methods import Records
from dpkit.validate import ParameterError, check_choice, check_in_range, check_int, check_positive

FORMATS = ("csv", "jsonl")


def _as_dicts(records: Records) -> list[dict]:
    labels = [records.label_set[k] for k in records.labels] if records.labelled else [""] * len(records)
    return [{"text": t, "label": y} for t, y in zip(records.texts, labels)]


def write_input(records: Records, path: Path, fmt: str = "csv") -> None:
    """The generator's input: ``text`` and ``label`` per record (label empty when unlabelled)."""
    rows = _as_dicts(records)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        if fmt == "csv":
            writer = csv.DictWriter(handle, fieldnames=["text", "label"])
            writer.writeheader()
            writer.writerows(rows)
        else:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_output(path: Path, name: str = "--command") -> list[dict]:
    """JSON Lines with a ``text`` per line; a clear error naming the line otherwise."""
    if not path.exists():
        raise ParameterError(name, str(path), "must write its output file ({output}) as JSON Lines; it wrote none")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise ParameterError(name, f"output line {number}", "must be a JSON object with a \"text\" key") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise ParameterError(name, f"output line {number}", "must be a JSON object with a \"text\" string")
        out.append(row)
    return out


def command_generator(template: str, fmt: str = "csv", timeout: float | None = None):
    """``synthesize(records)`` that runs ``template`` once on a file of the records (see the module docstring)."""
    check_choice("--format", fmt, FORMATS)
    if not isinstance(template, str) or "{input}" not in template or "{output}" not in template:
        raise ParameterError("--command", template, "must contain the placeholders {input} and {output}")
    try:
        parts = shlex.split(template)
    except ValueError as error:
        raise ParameterError("--command", template, f"must split like a shell command line ({error})") from None

    def synthesize(records: Records) -> list[dict]:
        with tempfile.TemporaryDirectory(prefix="dpkit-blackbox-") as folder:
            source, target = Path(folder) / f"input.{fmt}", Path(folder) / "output.jsonl"
            write_input(records, source, fmt)
            argv = [p.replace("{input}", str(source)).replace("{output}", str(target)) for p in parts]
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
            except FileNotFoundError:
                raise ParameterError("--command", argv[0], "must name a program on PATH or a path to one") from None
            except subprocess.TimeoutExpired:
                raise ParameterError("--command", template, f"must finish within {timeout:g} s") from None
            if done.returncode != 0:
                tail = (done.stderr or "").strip().splitlines()[-3:]
                raise ParameterError("--command", template, f"must exit 0; it exited {done.returncode}"
                                     + (": " + " | ".join(tail) if tail else ""))
            return read_output(target)
    synthesize.__name__ = "command"
    return synthesize


def python_generator(spec: str):
    """``synthesize(records)`` from ``module:function`` (the function maps a list of dicts to a list)."""
    module_name, sep, attribute = str(spec).partition(":")
    if not sep or not module_name or not attribute:
        raise ParameterError("--python", spec, "must be module:function, e.g. mypackage.gen:synthesize")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ParameterError("--python", spec, f"must name an importable module ({error})") from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ParameterError("--python", spec, f"must name a callable in {module_name}")

    def synthesize(records: Records) -> list[dict]:
        out = function(_as_dicts(records))
        if not isinstance(out, (list, tuple)):
            raise ParameterError("--python", spec, "must return a list of {'text', 'label'} dicts or strings")
        return [{"text": r} if isinstance(r, str) else r for r in out]
    synthesize.__name__ = attribute
    return synthesize


def requested(args) -> bool:
    return bool(getattr(args, "command", None) or getattr(args, "python", None))


def run(args) -> dict:
    """``dpkit audit release --command/--python``: validate, audit once, write ``--out``; the result dict."""
    if getattr(args, "method", None):
        raise ParameterError("method", args.method, "must be left out with --command or --python (one generator)")
    if args.command and args.python:
        raise ParameterError("--python", args.python, "must not be given together with --command")
    synthesize = (command_generator(args.command, args.format, args.timeout) if args.command
                  else python_generator(args.python))
    check_positive("--epsilon", args.epsilon)
    delta = 0.0 if args.delta is None else args.delta
    check_in_range("--delta", delta, 0.0, 1.0, high_open=True)
    check_in_range("--confidence", args.confidence, 0.0, 1.0, low_open=True, high_open=True)
    check_choice("--neighbouring", args.neighbouring, NEIGHBOURING)
    scorers = tuple(s.strip() for s in args.scorers.split(",") if s.strip())
    if not scorers or len(set(scorers)) != len(scorers):
        raise ParameterError("--scorers", args.scorers, "must name distinct scorers: ngram, chars, embedding")
    for name in scorers:
        scorer(name)
    m = check_int("--canaries", args.canaries if args.canaries is not None else 1000, minimum=2)
    table = read_table(args.input, args.text_column, args.label_column)
    labels = table.labels if args.label_column else None
    declared = parse_labels(args.labels) if args.labels else None
    names = label_set(labels, declared) if labels is not None else None
    records = Records.from_strings(table.texts, labels, names, declared=declared is not None)
    seed = secrets.randbits(63)
    design, repetitions = canary_design(args, m)
    result = audit_release(synthesize, records, canaries=design_canaries(design, m, seed, names),
                           claimed_epsilon=args.epsilon, claimed_delta=delta, confidence=args.confidence, seed=seed,
                           scorers=scorers, neighbouring=args.neighbouring, strategy=args.strategy,
                           repetitions=repetitions)
    payload = dict(result.to_dict(), generator=args.command or args.python, out=args.out or "")
    if args.out:
        root = Path(args.out)
        root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(root / "audit_result.json", json.dumps(payload, indent=2, sort_keys=True, default=str) + "\n")
    return payload


def add_arguments(parser) -> None:
    """The black-box flags of ``dpkit audit release``."""
    parser.add_argument("--command", default=None, metavar="'CMD {input} {output}'",
                        help="audit this command instead of a dpkit method: it reads {input} and writes {output} "
                        "(JSON Lines with a \"text\" per record)")
    parser.add_argument("--python", default=None, metavar="MODULE:FUNCTION",
                        help="audit this callable instead of a dpkit method: list of {text, label} dicts -> list")
    parser.add_argument("--format", choices=FORMATS, default="csv", help="the --command input file's format")
    parser.add_argument("--timeout", type=float, default=None, help="seconds the --command may run (default none)")
    parser.add_argument("--neighbouring", default="add/remove", help="the claim's relation for --command/--python: "
                        "add/remove (default) or replace-one (the number of records is public)")
