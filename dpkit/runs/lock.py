"""One writer per run folder: an exclusive ``fcntl`` lock on ``<run>/.lock``.

The lock dies with its process, so a crashed run's folder is reopened at once
(its stale lock file is simply taken over). A run reopened in the same process
takes over the earlier object's lock (the earlier object is closed).
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import threading
from pathlib import Path
from typing import Any

from dpkit.runs.errors import RunInUseError

_HELD: dict[str, tuple[int, Any]] = {}
_HELD_LOCK = threading.Lock()


def acquire(folder: Path, owner: Any) -> int:
    """The lock fd for ``folder``, held for ``owner``; :class:`RunInUseError` names another holder."""
    key = os.path.realpath(folder)
    with _HELD_LOCK:
        if key in _HELD:
            fd, previous = _HELD[key]
            previous._closed = True
            _HELD[key] = (fd, owner)
            return fd
        fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            if error.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise RunInUseError(f"run folder {str(folder)!r} is in use by another process ({holder}); "
                                    f"one process writes a run at a time: wait for it or stop it") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on host {socket.gethostname()}\n".encode(), 0)
        _HELD[key] = (fd, owner)
        return fd


def release(folder: Path, owner: Any) -> None:
    """Give the lock back if ``owner`` holds it."""
    key = os.path.realpath(folder)
    with _HELD_LOCK:
        held = _HELD.get(key)
        if held is None or held[1] is not owner:
            return
        del _HELD[key]
        fd = held[0]
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
