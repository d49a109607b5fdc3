"""The derivation chapters run on their DEFAULT parameters, cell by cell, as the book runs them.

``test_notebooks.py`` executes every notebook in its smoke setting; only the book build runs
the defaults. The six ``dp_*`` chapters derive the privacy core and check each step with an
``assert`` in the page (a sensitivity found by brute force, a loss bound met on a grid, a
conversion plugged back in), and they are fast enough to run on their defaults here. nbval
(``--nbval-lax``: every cell must run without error; outputs are not compared, since
notebooks are stored without them) reports the failing cell by number.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DERIVATIONS = sorted((ROOT / "notebooks").glob("dp_*.ipynb"))


@pytest.mark.slow
def test_derivation_chapters_run_on_their_defaults():
    assert len(DERIVATIONS) >= 6, DERIVATIONS
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "DPKIT_PROGRESS": "0", "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-o", "addopts=", "-q", *map(str, DERIVATIONS)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    tail = proc.stdout[-4000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    passed = re.search(r"(\d+) passed", proc.stdout)
    assert passed and int(passed.group(1)) >= 6 * 5, tail
