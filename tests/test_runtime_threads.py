"""``runtime.set_threads`` sets torch's threads now, or the moment torch is imported, without importing it.

A kernel that never needs torch (the chapters on the DP mechanisms alone) then never pays its import
(~2.5 CPU-s); one that imports torch later still gets the count. Each case runs in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _run(code: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "DPKIT_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.parametrize("first, second, expected", [(3, None, "3"), (3, 1, "1"), (1, 2, "2")])
def test_torch_imported_later_gets_the_last_count_and_setup_does_not_import_it(first, second, expected):
    again = f"runtime.setup({second}); " if second else ""
    out = _run("import sys; from dpkit import runtime; "
               f"runtime.setup({first}); {again}print('torch' in sys.modules); "
               "import torch; print(torch.get_num_threads()); "
               "print(sum(type(f).__name__ == '_TorchThreadsOnImport' for f in sys.meta_path))")
    assert out == ["False", expected, "0"]


def test_torch_imported_before_is_set_at_once():
    assert _run("import torch; from dpkit import runtime; runtime.setup(1); print(torch.get_num_threads())") == ["1"]


def test_dpkit_threads_overrides_the_argument():
    code = "from dpkit import runtime; runtime.setup(3); import torch; print(torch.get_num_threads())"
    env = dict(os.environ, DPKIT_THREADS="1")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and done.stdout.split() == ["1"], done.stderr
