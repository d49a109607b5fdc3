"""reliability-3 probe 77: Ctrl-C during `dpkit synth` is one line with the resume command, exit 130.

Before: a 35-line ``KeyboardInterrupt`` traceback, exit 1 (the resume was correct).
Also (N3's last resort): a ``MemoryError`` is an environment failure (one line,
exit 1), never a traceback.
"""

from __future__ import annotations

import pytest

from dpkit.cli import INTERRUPTED, failure_exit_code, failure_line, interrupted_line
from test_runs_failures import synth
from test_runs_faults import ledger_entries


def test_probe77_ctrl_c_is_one_line_with_the_resume_command_and_the_resume_is_whole(tmp_path):
    baseline = tmp_path / "baseline"
    assert synth(baseline).returncode == 0
    out = tmp_path / "run"
    # the run is forked from tests/warm_server.py, whose child restores Python's own SIGINT handler, as a
    # terminal's foreground job has it (a test runner's worker may ignore SIGINT, and a child would inherit that)
    stopped = synth(out, fault="record-appended:2", env={"DPKIT_FAULT_SIGNAL": "INT"})
    assert stopped.returncode == INTERRUPTED == 130
    assert "Traceback" not in stopped.stderr
    lines = [line for line in stopped.stderr.strip().splitlines() if "interrupted" in line]
    assert len(lines) == 1 and "run the same command again: dpkit synth kps --input" in lines[0]
    assert str(out) in lines[0]
    resumed = synth(out)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert ledger_entries(out) == ledger_entries(baseline)
    assert (out / "release" / "synthetic.jsonl").read_bytes() == \
        (baseline / "release" / "synthetic.jsonl").read_bytes()


def test_the_resume_command_is_quoted_for_a_shell():
    line = interrupted_line(["synth", "kps", "--out", "my runs/a b"])
    assert line.endswith("dpkit synth kps --out 'my runs/a b'")


@pytest.mark.parametrize("error", [MemoryError("Unable to allocate 2.79 TiB"), MemoryError()])
def test_a_memory_error_is_an_environment_failure_in_one_line(error):
    assert failure_exit_code(error) == 1
    line = failure_line(error, "runs/x")
    assert "out of memory" in line and "\n" not in line
