"""What is committed under results/ is what a reader may see: releases, cells and provenance.

A ``dpkit synth`` run folder holds ``release/`` (publishable) and ``private/`` (checkpoints, the
ledger's state, the mark key, the input's digest, the private records): the second never leaves
the machine it ran on, so no committed path under ``results/`` may pass through a ``private``
folder. The train/test splits a benchmark writes beside its runs are the private input of those
runs and are not committed either (they are regenerated from the seeded data split).
"""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def committed(under: str) -> list[str]:
    try:
        done = subprocess.run(["git", "ls-files", "-z", "--", under], cwd=ROOT, capture_output=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("git is not installed")
    if done.returncode != 0:
        pytest.skip(f"not a git checkout: {done.stderr.decode(errors='replace').strip()}")
    return [path for path in done.stdout.decode().split("\0") if path]


def test_no_committed_path_under_results_has_a_private_component():
    paths = committed("results")
    assert len(paths) > 100, "results/ should hold the stored runs the book and the tests read"
    leaked = [path for path in paths if "private" in Path(path).parts]
    assert leaked == [], f"{len(leaked)} committed paths under a private/ folder, e.g. {leaked[:3]}"


def test_no_committed_input_split_under_results():
    leaked = [path for path in committed("results") if path.endswith(".csv")]
    assert leaked == [], f"committed input splits under results/: {leaked[:3]}"


def test_gitignore_keeps_private_folders_and_splits_out_of_results():
    for path in ("results/some-run/rep-0/pp/private/records.jsonl", "results/heldout-x/train.csv"):
        done = subprocess.run(["git", "check-ignore", "--no-index", "-q", path], cwd=ROOT, timeout=60)
        assert done.returncode == 0, f"{path} is not ignored by .gitignore"
