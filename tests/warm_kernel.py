"""Jupyter kernels forked from a warm interpreter, for the notebooks' smoke runs under papermill.

A notebook's smoke run spends 3-8 s of a fresh kernel importing ipykernel, torch,
transformers and sentence-transformers before its first cell does any work: about a
fifth of the 24 smoke runs' time. ``tests/test_notebooks.py`` therefore runs them on a
kernel spec whose command is this file's *client*; the client asks this file's *server*
(one per test worker, started by the test module, with those modules imported and MiniLM and
the spaCy pipeline loaded through dpkit's cached loaders) to fork a child that becomes the kernel:

* the child takes the client's environment, working directory and standard streams
  (passed over a Unix socket), then runs ``ipykernel_launcher -f CONNECTION_FILE`` as the
  stock kernel spec does; the notebook's cells run in a fresh namespace, so every import a
  cell makes is still executed (a missing one still fails);
* the client stands in for the kernel towards papermill's kernel manager: it passes on
  SIGINT and SIGTERM, and exits with the child's status; if the client is killed, the
  server kills the child.

The server is single-threaded (a ``select`` loop that reaps children), so nothing holds a
lock when it forks.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import traceback

import warm_server
from warm_server import end_child, exit_code, load_models

PRELOAD = (*warm_server.PRELOAD, "pandas", "ipykernel.kernelapp")


# ------------------------------------------------------------------ the server
def _become_kernel(request: dict, fds: list[int]) -> None:
    """In the forked child: take the client's streams, folder and environment, run the kernel, exit."""
    code = 1
    try:
        for fd, target in zip(fds, (0, 1, 2)):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for signum in (signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.argv = ["ipykernel_launcher", *request["args"]]
        sys.path[0] = ""
        from ipykernel import kernelapp

        kernelapp.launch_new_instance()
        code = 0
    except SystemExit as exc:
        code = exit_code(exc)
    except BaseException:  # noqa: BLE001 -- report it as the interpreter would, then exit 1
        traceback.print_exc()
    finally:
        end_child(code)


def socket_address(name: str) -> str:
    """The Unix socket address of ``name``: Linux's abstract namespace (no file, so no 107-byte path limit)."""
    return "\0" + name


def serve(name: str) -> None:
    """Import :data:`PRELOAD`, listen on ``name`` and fork a kernel per connection until stdin closes."""
    for module in PRELOAD:
        __import__(module)
    load_models()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_address(name))
    listener.listen(8)
    print("ready", flush=True)
    children: dict[int, socket.socket] = {}                  # pid -> its client's connection
    while True:
        watched = [listener, sys.stdin, *children.values()]
        readable, _, _ = select.select(watched, [], [], 0.05)
        if sys.stdin in readable and not sys.stdin.readline():   # the test worker has ended
            break
        if listener in readable:
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                for other in children.values():
                    other.close()
                _become_kernel(request, fds)
            for fd in fds:
                os.close(fd)
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            children[pid] = conn
        for pid, conn in list(children.items()):
            if conn in readable:                               # the client went away: its kernel goes too
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                try:
                    conn.sendall(json.dumps({"returncode": code}).encode() + b"\n")
                except OSError:
                    pass
                conn.close()
    for pid in children:
        os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------------ the client (the kernel spec's command)
def client(args: list[str]) -> int:
    """Stand in for a kernel: have the server fork one with this process's streams; pass signals on."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(socket_address(os.environ["DPKIT_WARM_KERNEL"]))
    request = {"args": args, "env": dict(os.environ), "cwd": os.getcwd()}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2])
    answers = conn.makefile("r")
    pid = json.loads(answers.readline())["pid"]
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda received, frame: os.kill(pid, received))
    line = answers.readline()
    return json.loads(line)["returncode"] if line else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        code = client(sys.argv[2:])
        sys.exit(code if code >= 0 else 128 - code)
