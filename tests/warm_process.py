"""``subprocess.run`` for ``python -c``/``python -m`` command lines, forked from a warm interpreter.

A ``dpkit synth`` run in a fresh interpreter spends most of a smoke run importing
torch, transformers, sentence-transformers and spaCy (about 5 of the 9.6 CPU-s of a DP-ST
fault run). The crash and failure tests run the CLI about a hundred times, each a process of
its own because it is killed at a checkpoint, so :func:`run` forks each one from a
server that has already imported them (``warm_server.py``; one server per test worker,
started on first use). What the test observes is unchanged: a separate process with its own
pid, environment, working directory and files, killed for real by ``DPKIT_FAULT``, whose
exit status, stdout and stderr come back as a :class:`subprocess.CompletedProcess`.
``tests/test_readme_own_data.py`` still runs ``python -m dpkit`` from a cold start, as a user does.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

SERVER = Path(__file__).with_name("warm_server.py")
_server: subprocess.Popen | None = None


def _start() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True, bufsize=1)
        atexit.register(_server.kill)
        ready = _read(_server, 300)
        assert ready == {"ready": True}, ready
    return _server


def _read(server: subprocess.Popen, timeout: float) -> dict:
    ready, _, _ = select.select([server.stdout], [], [], timeout)
    if not ready:
        raise TimeoutError(f"the warm server answered nothing in {timeout} s")
    line = server.stdout.readline()
    if not line:
        raise RuntimeError(f"the warm server ended (exit {server.wait()})")
    return json.loads(line)


def run(args: list[str], *, code: str | None = None, module: str | None = None, cwd: Path, env: dict[str, str],
        timeout: float = 900, fsize_limit: int | None = None) -> subprocess.CompletedProcess:
    """Run ``python -c code *args`` or ``python -m module *args`` as a forked child; its status and output.

    ``fsize_limit`` (bytes) limits the size of every file the child writes, with SIGXFSZ ignored.
    A child still running after ``timeout`` seconds is killed and :class:`subprocess.TimeoutExpired` raised.
    """
    if (code is None) == (module is None):
        raise ValueError("give exactly one of code and module")
    server = _start()
    with tempfile.TemporaryDirectory(prefix="dpkit-warm-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        request = {"args": [str(a) for a in args], "code": code, "module": module, "cwd": str(cwd), "env": dict(env),
                   "stdout": str(out), "stderr": str(err), "fsize_limit": fsize_limit}
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()
        pid = _read(server, 60)["pid"]
        try:
            returncode = _read(server, timeout)["returncode"]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            _read(server, 60)
            raise subprocess.TimeoutExpired(args, timeout) from None
        command = [sys.executable, *(["-c", "<code>"] if code is not None else ["-m", module]), *args]
        return subprocess.CompletedProcess(command, returncode, out.read_text(errors="replace"),
                                           err.read_text(errors="replace"))
