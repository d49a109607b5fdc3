"""Crash and corruption tests of `dpkit synth` run folders, for the three methods.

* SIGKILL at every checkpoint (``DPKIT_FAULT``, :mod:`dpkit.runs.faults`): after the
  kill the ledger on disk shows at least the spend implied by what is in ``private/``;
  the resume exits 0, charges once (the final ledger equals an uninterrupted run's) and
  publishes the same release as the uninterrupted run (reproducible mode).
* Each kind of corruption (one changed character in a stored record, a truncated record
  file, a deleted ``mark_key``, an extra file, a deleted file) is caught by
  ``verify_folder`` and refused by the resume with exit 2 and one line naming the file.

kps and dpst run with a fake text generator, kps also with a fake embedder (their private
mechanisms are real); pp decodes on the bundled tiny model, as ``python -m dpkit synth pp
--smoke`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import warm_process

from dpkit.runs import RunCorruptError, verify_folder

SAMPLE = "data/own_data_sample.csv"
# pp: the first two rows of each label of SAMPLE (6 rows, 3 batches, so 3 records). pp's cost is the prefill
# of every prompt on the local model (SAMPLE's 48 smoke rows: ~38 CPU-s a run, 12 rows: ~14, 6 rows less); every
# checkpoint below is still reached (one ledger entry, three records, a release), and the kill, resume and
# comparison with the uninterrupted run are the same as with SAMPLE.
PP_SAMPLE = "tests/data/own_data_tiny.csv"
# each test runs the CLI two or three times (pp decodes on the local model): room for a busy machine
pytestmark = pytest.mark.timeout(1800)
ROOT = Path(__file__).resolve().parents[1]

# kps and dpst: the real CLI, with a deterministic fake text generator in place of the LLM; kps also with a fake
# embedder in place of MiniLM (hashed unit vectors for the released vocabulary's terms): the run folder, the ledger
# and the checkpoints are under test, and each kps run then skips importing sentence-transformers and loading the
# model (~3 of its ~7 CPU-s). dpst keeps MiniLM: its public triple corpus is cached under the user's cache folder,
# which a fake embedder must never write. The real embedder in a kps run: tests/test_readme_own_data.py.
FAKE_DRIVER = """
import sys
import zlib

import numpy as np

if "kps" in sys.argv[1:3]:
    import dpkit.models.embed

    class FakeEmbedder:
        name, dim = "fake-hashed-terms", 384

        def encode(self, texts, batch_size=64, progress=False):
            rows = [np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim) for t in texts]
            vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), self.dim)
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    dpkit.models.embed.load_embedder = lambda *a, **k: FakeEmbedder()   # before any module imports the name

import dpkit.backends

class Fake:
    name = model = "fake"
    remote = False
    def generate_batch(self, prompts, **generation):
        return [f"synthetic text {len(str(p))} {generation.get('seed')}" for p in prompts]
    def describe(self):
        return {"name": "fake", "model": "fake"}

dpkit.backends.get_backend = lambda *a, **k: Fake()
from dpkit.cli import main
sys.exit(main(sys.argv[1:]))
"""

CHECKPOINTS = {
    "kps": ["ledger-recorded", "ledger-written", "ledger-written:2", "seeds-written", "record-appended",
            "record-appended:3", "release-tracked", "finished"],
    "dpst": ["ledger-recorded", "ledger-written", "seeds-written", "record-appended", "record-appended:3",
             "release-tracked", "finished"],
    "pp": ["ledger-recorded", "ledger-written", "record-appended", "release-tracked", "finished"],
}


def synth(method: str, out: Path, fault: str | None = None) -> subprocess.CompletedProcess:
    source = PP_SAMPLE if method == "pp" else SAMPLE
    args = ["synth", method, "--input", source, "--text-column", "text", "--label-column", "label",
            "--epsilon", "4", "--out", str(out), "--smoke", "--seed", "0"]
    if method == "pp":  # the checkpoints, not the decoding, are under test: 8 tokens keep the runs short
        args += ["--set", "max_new_tokens=8"]
    env = {k: v for k, v in os.environ.items() if k != "DPKIT_FAULT"}
    env.update(DPKIT_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    if fault:
        env["DPKIT_FAULT"] = fault
    if method == "pp":
        return warm_process.run(args, module="dpkit", cwd=ROOT, env=env, timeout=900)
    return warm_process.run(args, code=FAKE_DRIVER, cwd=ROOT, env=env, timeout=900)


def ledger_entries(out: Path) -> list[tuple]:
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    entries = (manifest.get("ledger") or {}).get("entries") or []
    return [(e["label"], e["composition"], e["count"], e["groups"], e["rho"]) for e in entries]


def implied_spend(out: Path) -> bool:
    """Whether private/ holds anything derived from the private data (seeds or records)."""
    private = out / "private"
    records = private / "records.jsonl"
    seeds = list((private / "seeds").glob("*.json")) if (private / "seeds").is_dir() else []
    return bool(seeds) or (records.exists() and records.stat().st_size > 0)


@pytest.fixture(scope="module")
def baselines(tmp_path_factory):
    """An uninterrupted run of each method: its ledger and release."""
    cache = {}

    def get(method: str):
        if method not in cache:
            out = tmp_path_factory.mktemp(f"baseline-{method}") / "run"
            done = synth(method, out)
            assert done.returncode == 0, done.stderr
            cache[method] = (out, ledger_entries(out), (out / "release" / "synthetic.jsonl").read_bytes())
        return cache[method]

    return get


def _crash_cases(methods):
    return [pytest.param(m, c, id=f"{m}-{c}", marks=[pytest.mark.slow] if m == "pp" else [])
            for m in methods for c in CHECKPOINTS[m]]


@pytest.mark.parametrize("method,fault", _crash_cases(["kps", "dpst", "pp"]))
def test_sigkill_at_every_checkpoint_leaves_the_spend_on_disk_and_resumes_charging_once(
        tmp_path, baselines, method, fault):
    _, expected, release = baselines(method)
    out = tmp_path / "run"
    killed = synth(method, out, fault)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-2000:])
    on_disk = ledger_entries(out)
    assert on_disk == expected[:len(on_disk)]             # never more, never other than one charge
    if implied_spend(out):
        assert on_disk == expected, f"private/ holds private results but the ledger on disk is {on_disk}"
    resumed = synth(method, out)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert ledger_entries(out) == expected                 # one charge, not two
    assert (out / "release" / "synthetic.jsonl").read_bytes() == release
    verify_folder(out / "private")


# ------------------------------------------------------------------ corruption
def _change_one_character(out: Path) -> str:
    path = out / "private" / "records.jsonl"
    text = path.read_text(encoding="utf-8")
    at = text.index('"text": "') + len('"text": "')
    path.write_text(text[:at] + ("X" if text[at] != "X" else "Y") + text[at + 1:], encoding="utf-8")
    return "records.jsonl"


def _truncate(out: Path) -> str:
    path = out / "private" / "records.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    return "records.jsonl"


def _delete_mark_key(out: Path) -> str:
    (out / "private" / "private" / "mark_key").unlink()
    return "private/mark_key"


def _add_extra_file(out: Path) -> str:
    (out / "release" / "extra.txt").write_text("slipped in\n")
    return "release/extra.txt"


def _delete_file(out: Path) -> str:
    (out / "release" / "config.json").unlink()
    return "release/config.json"


CORRUPTIONS = {"changed-record": _change_one_character, "truncated-records": _truncate,
               "deleted-mark-key": _delete_mark_key, "extra-file": _add_extra_file, "deleted-file": _delete_file}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
@pytest.mark.parametrize("method", ["kps", "dpst", pytest.param("pp", marks=pytest.mark.slow)])
def test_each_corruption_is_caught_and_the_resume_refuses_it_naming_the_file(tmp_path, baselines, method, kind):
    source, _, _ = baselines(method)
    out = tmp_path / "run"
    shutil.copytree(source, out)
    name = CORRUPTIONS[kind](out)
    with pytest.raises(RunCorruptError, match=name.split("/")[-1]):
        verify_folder(out / "private")
    rerun = synth(method, out)
    assert rerun.returncode == 2, rerun.stderr[-2000:]
    lines = [line for line in rerun.stderr.strip().splitlines() if not line.startswith(f"dpkit synth {method}: ")]
    assert len(lines) == 1 and name.split("/")[-1] in lines[0] and str(out) in lines[0], rerun.stderr
    assert "Traceback" not in rerun.stderr


def test_a_corrupted_record_of_an_unfinished_run_is_refused_not_published(tmp_path):
    out = tmp_path / "run"
    assert synth("kps", out, "record-appended:3").returncode == -signal.SIGKILL
    _change_one_character(out)
    rerun = synth("kps", out)
    assert rerun.returncode == 2 and "records.jsonl" in rerun.stderr and "hash chain" in rerun.stderr
    assert not (out / "release").exists()
