"""``dpkit generate``: a resumable generation run over a file of prompts.

    python -m dpkit generate prompts.txt --out runs/demo --max-new-tokens 32
    DPKIT_BACKEND=openai python -m dpkit generate prompts.txt --out runs/api --public

One prompt per line (blank lines skipped; the key of line ``i`` is ``line<i>``).
Rerunning the same command after a crash or Ctrl-C resumes the run: finished
records are kept, only the missing ones are generated. ``--public`` declares
the prompts public, which a remote backend requires (private text must first go
through a DP mechanism of dpkit).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _generate(args: argparse.Namespace) -> int:
    from dpkit.backends import BackendError, PrivateTextError

    try:
        return _run(args)
    except (PrivateTextError, BackendError) as error:
        print(f"dpkit generate: {error}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    from dpkit import runtime
    from dpkit.backends import Public, get_backend
    from dpkit.runs import Run

    runtime.setup()
    path = Path(args.prompts)
    if not path.is_file():
        raise SystemExit(f"prompts file {str(path)!r} does not exist")
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    prompts = {f"line{i}": (Public(text) if args.public else text) for i, text in enumerate(lines) if text}
    name = args.backend or os.environ.get("DPKIT_BACKEND") or "local"
    options = {"batch_size": args.batch_size} if name == "local" else {}
    backend = get_backend(name, args.model, cache=not args.no_cache, **options)
    generation = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    params = {"prompts_file": path.name, "n_prompts": len(prompts), "backend": backend.name,
              "model": backend.model, **generation}
    run = Run(args.out, params=params, seed=args.seed)
    for batch in run.pending_batches(prompts, args.batch_size, desc="generate"):
        texts = backend.generate_batch([p for _, p in batch], **generation)
        for (key, _), text in zip(batch, texts):
            run.append(key, {"text": text})
            print(f"record {key}", flush=True)
    run.finish(backend=backend)
    print(f"{len(run)} records in {run.records_path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="resumable generation over a file of prompts")
    p.add_argument("prompts", help="text file, one prompt per line")
    p.add_argument("--out", required=True, help="run folder (rerun the same command to resume)")
    p.add_argument("--backend", default=None, help="local | openai | anthropic (default: $DPKIT_BACKEND or local)")
    p.add_argument("--model", default=None, help="model name or path (default: $DPKIT_MODEL or the backend's)")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--public", action="store_true", help="declare the prompts public (needed for API backends)")
    p.add_argument("--no-cache", action="store_true", help="do not use the on-disk response cache")
    p.set_defaults(func=_generate)
