"""Where a stored comparison cell was made: the keys every cell's ``provenance`` holds, and the two this
process can tell about itself.

Every cell ``dpkit experiment compare`` writes records :data:`PROVENANCE_KEYS`:
the git commit (:func:`git_commit`), the machine (:func:`machine`: platform,
CPU count, Python), the local model's runtime (torch and llama.cpp versions),
the model, dpkit's version and the time it was written. A stored cell that
lacks one of them is stale (:func:`~dpkit.experiments.cell_files.cell_problem`)
and a chapter refuses it (:func:`~dpkit.experiments.stored.load_cells`).

What it guarantees: the record is covered by the cell's digest and seal
(:mod:`dpkit.experiments.sealing`), so it cannot be changed unnoticed after
writing; it is a description of the run, not a proof of how it was made.
"""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

PROVENANCE_KEYS = ("git_commit", "machine", "runtime", "model", "dpkit_version", "created")


def machine() -> dict:
    """This host: platform, architecture, CPU count and Python version."""
    return {"platform": platform.platform(), "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "python": platform.python_version()}


def git_commit() -> str | None:
    """The commit of the repository dpkit runs from, with ``+dirty`` when tracked files differ from it; None when
    git cannot tell (no repository there, as in a ``git archive``, or no git)."""
    root = Path(__file__).resolve().parents[2]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")
