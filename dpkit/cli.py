"""``python -m dpkit`` / ``dpkit``: set-up, accounting and audit commands.

Each sub-command lives next to the code it exposes and registers itself here.
Exit status 2 means bad arguments.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from importlib import import_module

from dpkit import runtime
from dpkit.models.embed import load_embedder
from dpkit.runs.errors import failure_exit_code, failure_line
from dpkit.validate import ParameterError


def _prepare(args: argparse.Namespace) -> int:
    """Build the local model caches so that later loads are fast and offline."""
    from dpkit.models.lm import prepare_bundled_lm  # PyTorch: loaded only by this command

    runtime.setup()
    start = time.perf_counter()
    path = prepare_bundled_lm(force=args.force)
    print(f"local LM cached at {path} ({time.perf_counter() - start:.1f} s)")
    start = time.perf_counter()
    embedder = load_embedder()
    print(f"sentence embedder {embedder.name} ({embedder.dim}-d) loads in {time.perf_counter() - start:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="cache the bundled local models (idempotent)")
    prep.add_argument("--force", action="store_true", help="rebuild the cache")
    prep.set_defaults(func=_prepare)
    for register in _registrars():
        register(sub)
    return parser


def _registrars():
    """The sub-command modules; each defines ``register(subparsers)``."""
    for name in SUBCOMMAND_MODULES:
        yield import_module(name).register


SUBCOMMAND_MODULES: list[str] = ["dpkit.privacy.cli", "dpkit.backends.cli", "dpkit.audit.cli", "dpkit.data.cli",
                                   "dpkit.methods.cli", "dpkit.experiments.evaluate_release",
                                   "dpkit.experiments.cli"]


def main(argv: list[str] | None = None) -> int:
    """Run one command; a failure is one line on stderr, never a traceback.

    Exit 2: bad input, a run folder in use, a configuration mismatch, a corrupted
    run folder (:class:`~dpkit.validate.ParameterError`, :class:`~dpkit.runs.RunInUseError`).
    Exit 1: the environment failed (a read-only or full disk, a file-size limit:
    :class:`OSError`; memory: :class:`MemoryError`); what was written is kept and the same command resumes.
    Exit 130: interrupted (Ctrl-C): one line with the command that resumes.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_utf8_arguments(sys.argv[1:] if argv is None else argv)
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"dpkit {args.command}: {interrupted_line(sys.argv[1:] if argv is None else argv)}", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:  # noqa: BLE001 - only the kinds below are answered; the rest re-raise
        code = failure_exit_code(error)
        if code is None:
            raise
        print(f"dpkit {args.command}: {failure_line(error, getattr(args, 'out', None))}", file=sys.stderr)
        return code


def check_utf8_arguments(argv: list[str]) -> None:
    """Refuse an argument that is not UTF-8 text, naming its flag and its first bad byte.

    Python hands a byte of ``argv`` that is not UTF-8 over as a lone surrogate (``b"\\xe9"`` becomes
    ``"\\udce9"``); such a string cannot be written, hashed or tokenized, so it is refused here, before
    anything is read, charged or written."""
    for i, arg in enumerate(map(str, argv)):
        bad = next((c for c in arg if "\udc80" <= c <= "\udcff"), None)
        if bad is None:
            continue
        flag, value = arg.split("=", 1) if arg.startswith("--") and "=" in arg else (
            (argv[i - 1], arg) if i and str(argv[i - 1]).startswith("-") else (f"argument {i + 1}", arg))
        raise ParameterError(flag, value, f"is not UTF-8 text (byte 0x{ord(bad) - 0xDC00:02x}); give it in UTF-8 "
                                          "(rename a file whose name is not UTF-8)")


INTERRUPTED = 130  # the shell's code for a process ended by SIGINT


def interrupted_line(argv: list[str]) -> str:
    """The one line for Ctrl-C: what is kept and the command (quoted for a POSIX shell) that resumes."""
    return ("interrupted (Ctrl-C). What was written is kept and no budget is spent twice; to resume, run the "
            f"same command again: dpkit {shlex.join(str(a) for a in argv)}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
