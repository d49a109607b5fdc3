"""``python -m dpkit`` / ``dpkit``: set-up, accounting and audit commands.

Each sub-command lives next to the code it exposes and registers itself here.
Exit status 2 means bad arguments.
"""

from __future__ import annotations

import argparse
import sys


def _prepare(args: argparse.Namespace) -> int:
    """Build the local model caches so that later loads are fast and offline."""
    import time

    from dpkit import runtime
    from dpkit.models.embed import load_embedder
    from dpkit.models.lm import prepare_bundled_lm

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
    from importlib import import_module

    for name in SUBCOMMAND_MODULES:
        yield import_module(name).register


SUBCOMMAND_MODULES: list[str] = ["dpkit.privacy.cli", "dpkit.backends.cli", "dpkit.audit.cli", "dpkit.data.cli",
                                   "dpkit.methods.cli", "dpkit.evaluation"]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
