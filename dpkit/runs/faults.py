"""Fault injection for crash tests: ``DPKIT_FAULT=<checkpoint>[:<n>]`` kills the process at that point.

:func:`checkpoint` is called at each point where a run's files change. When the
environment variable ``DPKIT_FAULT`` names it (optionally with the occurrence,
``record-appended:3``; default the first), the process sends itself SIGKILL
there -- no cleanup, no ``finally``, exactly like a power cut or an OOM kill.
Unset (always, outside tests) it costs one dictionary lookup.
``DPKIT_FAULT_SIGNAL=INT`` (or ``TERM``) sends that signal instead, e.g. a
Ctrl-C at an exact point.

Checkpoints, in the order a run meets them:

* ``ledger-recorded``: a ledger entry is recorded in memory, not yet on disk
  (no private read has happened for it yet: ``spend`` has not returned);
* ``ledger-written``: the manifest with that entry is on disk;
* ``seeds-written``: a privatized seeds file is on disk, the manifest not yet updated;
* ``record-appended``: a record line is on disk;
* ``release-tracked``: the release is written and its checksums are in the manifest;
* ``finished``: the manifest says complete.
"""

from __future__ import annotations

import os
import signal

CHECKPOINTS = ("ledger-recorded", "ledger-written", "seeds-written", "record-appended", "release-tracked",
               "finished")
_counts: dict[str, int] = {}


def checkpoint(name: str) -> None:
    """SIGKILL this process if ``DPKIT_FAULT`` names ``name`` (at its n-th occurrence)."""
    wanted = os.environ.get("DPKIT_FAULT")
    if not wanted:
        return
    target, _, nth = wanted.partition(":")
    if target != name:
        return
    _counts[name] = _counts.get(name, 0) + 1
    if _counts[name] == (int(nth) if nth else 1):
        chosen = os.environ.get("DPKIT_FAULT_SIGNAL", "KILL").upper()
        os.kill(os.getpid(), getattr(signal, f"SIG{chosen}", signal.SIGKILL))
