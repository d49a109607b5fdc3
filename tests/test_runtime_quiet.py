"""Model libraries stay quiet on book pages; progress bars only where someone watches."""

from __future__ import annotations

import subprocess
import sys

from dpkit.runs import progress_bars as runs


def test_model_libraries_are_quiet_after_set_offline():
    code = (
        "import os, sys, warnings\n"
        "for k in ('HF_HUB_DISABLE_PROGRESS_BARS', 'TRANSFORMERS_VERBOSITY'): os.environ.pop(k, None)\n"
        "from dpkit import runtime\n"
        "runtime.set_offline()\n"
        "from transformers.utils import logging as tl\n"
        "from tqdm import TqdmWarning\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.warn('IProgress not found. Please update jupyter and ipywidgets.', TqdmWarning)\n"
        "print(tl.is_progress_bar_enabled(), tl.get_verbosity() == tl.ERROR, len(caught))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "0"], out.stdout


def test_progress_is_silent_in_a_notebook_kernel_without_widgets(monkeypatch):
    monkeypatch.delenv("DPKIT_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(runs, "_in_notebook_kernel", lambda: True)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    items = [1, 2, 3]
    assert not runs.progress_enabled()
    assert runs.progress(items) is items


def test_progress_uses_tqdm_auto_when_forced(monkeypatch):
    from tqdm.auto import tqdm

    monkeypatch.setenv("DPKIT_PROGRESS", "1")
    bar = runs.progress(range(3), total=3, desc="x")
    assert isinstance(bar, tqdm)
    assert list(bar) == [0, 1, 2]
    bar.close()
    monkeypatch.setenv("DPKIT_PROGRESS", "0")
    items = [1]
    assert runs.progress(items) is items
