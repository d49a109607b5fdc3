"""A warm interpreter that runs command lines in forked children (the server half of ``warm_process``).

Started once per test worker by :mod:`warm_process`. It imports the heavy third-party
modules a ``dpkit`` command line needs (torch, transformers, sentence-transformers, spaCy)
and loads MiniLM and the spaCy pipeline through dpkit's cached loaders, importing only
``dpkit.models.embed`` and ``dpkit.dpst`` for that: a test's own patches (a fake text
generator, a fake embedder) still apply before ``dpkit.cli`` or a method binds a name.
Then, per request (one JSON line on stdin), it forks a child that:

* takes the request's working directory and environment (``os.environ`` replaced whole);
* has stdin on ``/dev/null`` and stdout/stderr on the request's files;
* optionally limits the size of the files it writes (``RLIMIT_FSIZE``, SIGXFSZ ignored,
  so a write past the limit fails with EFBIG as on a full disk);
* runs ``python -c CODE ARGS`` or ``python -m MODULE ARGS`` as the interpreter would,
  exit status included (``SystemExit``, an uncaught exception's 1, a signal's death),
  then runs its ``atexit`` functions, flushes its standard streams and calls ``os._exit``.

It answers ``{"pid": ...}`` after the fork and ``{"returncode": ...}`` (negative: the
signal) when the child has ended. Every child is a process of its own: a SIGKILL at a
checkpoint kills it as it would kill ``python -m dpkit``.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import runpy
import signal
import sys
import traceback

PRELOAD = ("numpy", "scipy.special", "sklearn.linear_model", "torch", "transformers", "sentence_transformers",
           "spacy", "llama_cpp")


def exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(request: dict) -> int:
    """Become the requested command line; its exit status (the caller exits the interpreter with it)."""
    stdin = os.open(os.devnull, os.O_RDONLY)           # the streams first: a later failure lands in stderr
    stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for source, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(source, target)
        os.close(source)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if request.get("fsize_limit") is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize_limit"], request["fsize_limit"]))
    sys.path[0] = request["cwd"] if request.get("module") else ""
    try:
        if request.get("module"):
            sys.argv = [request["module"], *request["args"]]
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        else:
            sys.argv = ["-c", *request["args"]]
            exec(compile(request["code"], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        return exit_code(exc)
    except BaseException:  # noqa: BLE001 -- the interpreter's own rule: print it, exit 1
        traceback.print_exc()
        return 1
    return 0


def end_child(code: int) -> None:
    """End a child: its ``atexit`` functions, its standard streams flushed, then ``os._exit``.

    Not the interpreter's full shutdown: with torch and transformers imported, collecting
    every object costs about 2 s a child (copy-on-write page faults), the import time saved.
    What a run writes goes through ``with`` blocks and explicit flushes, which do not wait
    for the shutdown.
    """
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _answer(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def load_models() -> None:
    """Load MiniLM and the spaCy pipeline through dpkit's own cached loaders, so every child has them.

    Only ``dpkit.models.embed`` and ``dpkit.dpst`` are imported for it: ``dpkit.cli`` and the DP-KPS
    method, which bind ``load_embedder`` by name, are imported in the child, after a test's fake
    embedder has replaced it.
    """
    from dpkit.dpst.triples import load_parser
    from dpkit.models.embed import load_embedder

    load_embedder()
    load_parser()


def serve() -> None:
    """Answer requests until stdin closes."""
    for name in PRELOAD:
        __import__(name)
    load_models()
    _answer({"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:                          # the child never returns to this loop, whatever happens
            code = 1
            try:
                code = _child(request)
            except BaseException:  # noqa: BLE001 -- a setup failure (a missing folder): report it, exit 1
                traceback.print_exc()
            finally:
                end_child(code)
        _answer({"pid": pid})
        _, status = os.waitpid(pid, 0)
        returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        _answer({"returncode": returncode})


if __name__ == "__main__":
    serve()
