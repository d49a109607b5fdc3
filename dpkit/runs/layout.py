"""The folder of ``dpkit synth``: ``DIR/release/`` (publishable) and ``DIR/private/`` (everything else).

``DIR/private/`` is a :class:`dpkit.runs.Run` folder: ``manifest.json`` (the
public configuration, the input file's SHA-256, the seed in reproducible mode,
the ledger's state, timings, a log), ``records.jsonl`` and ``seeds/``
(checkpoints). ``DIR/release/`` is written once, atomically, at the end
(:mod:`dpkit.methods.release`), and tracked by the run's checksums.

:func:`folder_state` decides, BEFORE anything is written, whether ``DIR`` is new,
a run to resume, or a finished run; a different public configuration or input
file is a :class:`~dpkit.validate.ParameterError` naming what differs, and a
finished run whose files changed is a :class:`~dpkit.runs.RunCorruptError`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from dpkit.io import TEMP_PREFIX
from dpkit.runs.codec import differences
from dpkit.runs.integrity import verify_folder
from dpkit.validate import ParameterError

NEW, RESUME, DONE = "new", "resume", "done"


def paths(out: str | os.PathLike) -> tuple[Path, Path, Path]:
    """``(DIR, DIR/release, DIR/private)``."""
    root = Path(out)
    return root, root / "release", root / "private"


def _only_a_new_runs_first_files(root: Path) -> bool:
    """True when ``root`` is empty or holds only what a Run writes before its first manifest
    (its key and input digest under ``private/private/``, the lock, temporaries): a crash there
    left nothing to resume, and a new run may start."""
    for path in root.rglob("*"):
        if path.is_dir():
            continue
        relative = path.relative_to(root).parts
        if path.name == ".lock" or path.name.startswith(TEMP_PREFIX) or relative[:2] == ("private", "private"):
            continue
        return False
    return True


def folder_state(out: str | os.PathLike, params: dict, seed: int | None) -> str:
    """``NEW``, ``RESUME`` or ``DONE`` for the folder ``out``; ParameterError if it holds something else."""
    root, release, private = paths(out)
    if root.exists() and not root.is_dir():
        raise ParameterError("--out", str(root), "exists and is not a folder")
    manifest_path = private / "manifest.json"
    if not manifest_path.exists():
        if root.exists() and not _only_a_new_runs_first_files(root):
            raise ParameterError("--out", str(root), "exists, is not empty and holds no dpkit synth run; "
                                 "give a new or empty folder")
        return NEW
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ParameterError("--out", str(root), "holds an unreadable private/manifest.json; "
                             "use a new folder") from None
    new = json.loads(json.dumps(params, sort_keys=True))
    changes = differences(manifest.get("params", {}), new)
    if manifest.get("seed") != seed:
        changes.append("--seed differs from the run's" if manifest.get("seed") is not None and seed is not None
                       else f"the randomness mode (this run was made {'with' if manifest.get('seed') is not None else 'without'} --seed)")
    if changes:
        raise ParameterError("--out", str(root), "holds a run with another configuration or input; resuming "
                             "would mix two runs. It differs in: " + "; ".join(changes)
                             + ". Use a new folder, or delete this one to start over")
    if manifest.get("status") == "complete" and release.is_dir():
        verify_folder(private)      # a finished run's records, keys, ledger and release still match
        return DONE
    return RESUME
