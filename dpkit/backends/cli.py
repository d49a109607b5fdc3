"""``dpkit generate``: a resumable generation run over a file of prompts.

    python -m dpkit generate prompts.txt --out runs/demo --max-new-tokens 32
    DPKIT_BACKEND=openai python -m dpkit generate prompts.txt --out runs/api --public

One prompt per line (blank lines skipped; the key of line ``i`` is ``line<i>``).
Rerunning the same command after a crash or Ctrl-C resumes the run: finished
records are kept, only the missing ones are generated. ``--public`` declares
the prompts public, which a remote backend requires (private text must first go
through a DP mechanism of dpkit). Bad arguments exit with status 2 and a message,
before anything is written; the run's parameters include a SHA-256 of the prompts
file, so a resume with edited prompts is refused.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

from dpkit import runtime
from dpkit.backends import BackendError, GenerationParams, PrivateTextError, get_backend
from dpkit.models.named import LOCAL_MODEL_HELP, is_named
from dpkit.privacy.marks import Public
from dpkit.runs import Run, RunCorruptError, RunInUseError, generate_records
from dpkit.validate import ParameterError, check_int


def _generate(args: argparse.Namespace) -> int:
    try:
        job = _prepare(args)
    except (ParameterError, OSError, UnicodeDecodeError) as error:
        print(f"dpkit generate: {_reason(error)}", file=sys.stderr)
        return 2
    try:
        return _run(args, *job)
    except (ParameterError, RunCorruptError) as error:
        print(f"dpkit generate: {error}", file=sys.stderr)
        return 2
    except (PrivateTextError, BackendError, RunInUseError, OSError) as error:
        print(f"dpkit generate: {_reason(error)}", file=sys.stderr)
        return 1


def _reason(error: BaseException) -> str:
    if isinstance(error, UnicodeDecodeError):
        return "the prompts file is not UTF-8 text"
    if isinstance(error, OSError) and error.filename:
        return f"{error.strerror or type(error).__name__}: {error.filename}"
    return str(error)


def _prepare(args: argparse.Namespace):
    """Everything is validated, and the backend built, before the run folder is created."""
    runtime.setup()
    path = Path(args.prompts)
    if not path.is_file():
        raise ParameterError("prompts", str(path), "must be an existing text file, one prompt per line")
    raw = path.read_bytes()
    lines = [line.strip() for line in raw.decode("utf-8").splitlines()]
    prompts = {f"line{i}": (Public(text) if args.public else text) for i, text in enumerate(lines) if text}
    if not prompts:
        raise ParameterError("prompts", str(path), "must hold at least one non-blank line")
    if not args.out:
        raise ParameterError("--out", args.out, "must be a folder path")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ParameterError("--out", str(out), "is a file; give a folder for the run")
    batch_size = check_int("--batch-size", args.batch_size, minimum=1)
    generation = dict(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    GenerationParams.checked(**generation)
    name = args.backend or os.environ.get("DPKIT_BACKEND") or "local"
    backend = get_backend(name, args.model, cache=not args.no_cache, batch_size=batch_size, runtime=args.runtime)
    if getattr(backend, "remote", False) and not args.public:  # refused before a run folder exists (exit 2)
        raise ParameterError("--public", False, f"is needed with the {backend.name!r} backend, which sends the "
                             "prompts off this machine: only text that was never private may go as it is (declare "
                             "it with --public); private text must first go through a dpkit DP mechanism")

    if name == "local" and args.model is not None and not is_named(args.model):
        looks_like_path = args.model.startswith(("/", ".", "~")) or args.model.count("/") != 1
        if looks_like_path and not Path(args.model).expanduser().exists():
            raise ParameterError("--model", args.model, "must be an existing local model folder or a "
                                 "Hugging Face id (org/name) already in the cache")
    params = {"prompts_sha256": hashlib.sha256(raw).hexdigest(), "n_prompts": len(prompts),
              "backend": backend.name, "model": backend.model, "public": bool(args.public),
              "runtime": getattr(backend, "runtime", None), **generation}
    return prompts, backend, generation, params, batch_size


def _run(args: argparse.Namespace, prompts, backend, generation, params, batch_size) -> int:
    run = Run(args.out, params=params, seed=args.seed)
    generate_records(run, backend, prompts, batch_size=batch_size, desc="generate",
                     on_record=lambda key: print(f"record {key}", flush=True), **generation)
    run.finish(backend=backend)
    print(f"{len(run)} records in {run.records_path}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("generate", help="resumable generation over a file of prompts")
    p.add_argument("prompts", help="text file, one prompt per line")
    p.add_argument("--out", required=True, help="run folder (rerun the same command to resume)")
    p.add_argument("--backend", default=None, help="local | openai | anthropic (default: $DPKIT_BACKEND or local)")
    p.add_argument("--model", default=None,
                   help=f"model name or path (default: $DPKIT_MODEL or the backend's); {LOCAL_MODEL_HELP}")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--runtime", default=None, help="local model runtime: auto | llamacpp | torch "
                                                  "(default: $DPKIT_RUNTIME or auto = llama.cpp on a CPU)")
    p.add_argument("--public", action="store_true", help="declare the prompts public (needed for API backends)")
    p.add_argument("--no-cache", action="store_true", help="do not use the on-disk response cache")
    p.set_defaults(func=_generate)
