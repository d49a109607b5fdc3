"""Failures of `dpkit synth` end in one line naming the folder, never a traceback; what was written is kept.

Exit 2: a folder in use by another writer. Exit 1: the environment -- a read-only
output folder, a file-size limit (``ulimit -f``; SIGXFSZ is ignored, so a write
past the limit fails with EFBIG, as on a full disk). After an environment failure
the same command, with the environment fixed, resumes and charges once.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest
import warm_process

from test_runs_faults import FAKE_DRIVER, ROOT, SAMPLE, ledger_entries

def synth(out: Path, *, fsize_limit: int | None = None, fault: str | None = None, env: dict | None = None):
    args = ["synth", "kps", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
            "--epsilon", "4", "--out", str(out), "--smoke", "--seed", "0"]
    environment = {k: v for k, v in os.environ.items() if k != "DPKIT_FAULT"}
    environment.update(DPKIT_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1",
                       **(env or {}))
    if fault:
        environment["DPKIT_FAULT"] = fault
    return warm_process.run(args, code=FAKE_DRIVER, cwd=ROOT, env=environment, timeout=600, fsize_limit=fsize_limit)


def one_line(result) -> str:
    """The one failure line (stderr may also hold the 'starting in DIR' progress line before it)."""
    lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("dpkit synth kps: ")]
    assert "Traceback" not in result.stderr and len(lines) == 1, result.stderr[-3000:]
    return lines[0]


def test_a_second_writer_exits_2_in_one_line_naming_the_folder(tmp_path):
    out = tmp_path / "run"
    assert synth(out, fault="record-appended").returncode == -signal.SIGKILL
    fd = os.open(out / "private" / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)          # another process writes the run
    try:
        second = synth(out)
    finally:
        os.close(fd)
    assert second.returncode == 2
    assert "in use by another process" in one_line(second) and str(out) in one_line(second)
    assert synth(out).returncode == 0                         # the holder gone, the run resumes


def _mount(folder: Path, options: str) -> bool:
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True)
    return done.returncode == 0


@pytest.fixture
def tmpfs():
    """A small tmpfs of our own (root ignores file modes, so read-only is a read-only mount); skips without mount."""
    folder = Path(tempfile.mkdtemp(prefix="dpkit-tmpfs-"))
    mounted = []

    def mount(options: str) -> Path:
        if not _mount(folder, options):
            pytest.skip("cannot mount a tmpfs here (needs CAP_SYS_ADMIN)")
        mounted.append(folder)
        return folder

    def remount(options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(folder)], check=True)

    yield mount, remount
    if mounted:
        subprocess.run(["umount", str(folder)], capture_output=True)
    shutil.rmtree(folder, ignore_errors=True)


def test_a_read_only_output_folder_exits_1_in_one_line(tmpfs):
    mount, _ = tmpfs
    out = mount("ro,size=1m") / "run"
    result = synth(out)
    assert result.returncode == 1
    line = one_line(result)
    assert "the environment failed" in line and str(out) in line and "Read-only file system" in line


def test_a_run_made_read_only_mid_way_exits_1_and_keeps_what_was_written(tmpfs):
    mount, remount = tmpfs
    out = mount("size=64m") / "run"
    assert synth(out, fault="record-appended:2").returncode == -signal.SIGKILL
    before = (out / "private" / "records.jsonl").read_bytes()
    remount("ro")
    result = synth(out)
    assert result.returncode == 1 and str(out) in one_line(result)
    assert (out / "private" / "records.jsonl").read_bytes() == before
    remount("rw")
    assert synth(out).returncode == 0
    assert json.loads((out / "private" / "manifest.json").read_text())["status"] == "complete"


def test_a_full_disk_exits_1_and_the_resume_with_room_charges_once(tmp_path, tmpfs):
    mount, remount = tmpfs
    baseline = tmp_path / "baseline"
    assert synth(baseline).returncode == 0
    out = mount("size=40k") / "run"
    result = synth(out)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "No space left on device" in one_line(result) and str(out) in one_line(result)
    remount("size=64m")
    assert synth(out).returncode == 0
    assert ledger_entries(out) == ledger_entries(baseline)
    assert (out / "release" / "synthetic.jsonl").read_bytes() == (baseline / "release" / "synthetic.jsonl").read_bytes()


@pytest.mark.parametrize("limit", [6_000, 20_000])
def test_a_file_size_limit_exits_1_keeps_the_run_and_the_resume_charges_once(tmp_path, limit):
    baseline = tmp_path / "baseline"
    assert synth(baseline).returncode == 0
    out = tmp_path / "run"
    result = synth(out, fsize_limit=limit)        # SIGXFSZ ignored: a write past it fails with EFBIG
    assert result.returncode == 1, result.stderr[-3000:]
    line = one_line(result)
    assert "File too large" in line and str(out) in line
    resumed = synth(out)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert ledger_entries(out) == ledger_entries(baseline)
    assert (out / "release" / "synthetic.jsonl").read_bytes() == (baseline / "release" / "synthetic.jsonl").read_bytes()
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    assert manifest["status"] == "complete"
