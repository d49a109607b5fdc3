"""reliability-3 probes 95, 96 and 97: a run folder resists an editor who recomputes the plain digests.

The manifest is sealed (HMAC-SHA-256 under ``private/mark_key``), so an edited
``params`` field, a re-chained record with a recomputed chain head, and a
re-digested seeds file are refused by :func:`verify_folder` and on reopening.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpkit.privacy import Laplace, PrivacyLedger
from dpkit.runs import Run, RunCorruptError, digest, verify_folder
from dpkit.runs.integrity import RUN_FORMAT
from dpkit.runs.records import chain_step


MECHANISM = Laplace(1.0, epsilon=1.0, unit="note")


def _spend(ledger):
    def compute():
        ledger.spend(MECHANISM.contract, "counts")
        return MECHANISM.release(np.array([3.0, 5.0]), np.random.default_rng(0)).tolist()
    return compute


def _finished(folder, records=3):
    ledger = PrivacyLedger()
    run = Run(folder, params={"epsilon": 4.0}, seed=1, ledger=ledger)
    run.privatized_seeds("s", _spend(ledger))
    for i in range(records):
        run.append(f"k{i}", {"text": f"plain record {i}"})
    run.finish()
    run.close()
    return folder


def _manifest(folder):
    return json.loads((folder / "manifest.json").read_text())


def test_probe95_edited_params_of_a_finished_run_fail_verify_folder(tmp_path):
    folder = _finished(tmp_path / "run")
    assert verify_folder(folder)["format"] == RUN_FORMAT
    manifest = _manifest(folder)
    manifest["params"]["epsilon"] = 1.0
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError, match="seal"):
        verify_folder(folder)
    manifest["params_digest"] = digest({"params": manifest["params"], "seed": manifest["seed"]})
    (folder / "manifest.json").write_text(json.dumps(manifest))   # the plain digest recomputed as well
    with pytest.raises(RunCorruptError, match="seal"):
        verify_folder(folder)


@pytest.mark.parametrize("reopen", [False, True])
def test_probe96_97_a_rechained_plain_record_with_a_recomputed_head_is_refused(tmp_path, reopen):
    folder = _finished(tmp_path / "run")
    lines = (folder / "records.jsonl").read_text().splitlines()
    forged = json.loads(lines[1])
    forged["record"]["text"] = "FORGED"
    forged["chain"] = chain_step(json.loads(lines[0])["chain"], forged["key"], forged["record"])
    chain = forged["chain"]
    rest = []
    for line in lines[2:]:
        entry = json.loads(line)
        chain = entry["chain"] = chain_step(chain, entry["key"], entry["record"])
        rest.append(json.dumps(entry))
    (folder / "records.jsonl").write_text("\n".join([lines[0], json.dumps(forged)] + rest) + "\n")
    manifest = _manifest(folder)
    manifest["records_chain"] = chain
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError, match="seal"):
        if reopen:
            Run(folder, params={"epsilon": 4.0}, seed=1)
        else:
            verify_folder(folder)


def test_a_redigested_seeds_file_is_refused(tmp_path):
    folder = _finished(tmp_path / "run")
    path = folder / "seeds" / "s.json"
    saved = json.loads(path.read_text())
    saved["ledger_entries"] = []
    saved["digest"] = digest({k: v for k, v in saved.items() if k != "digest"})  # the unkeyed digest
    path.write_text(json.dumps(saved))
    manifest = _manifest(folder)
    del manifest["checksums"]["seeds/s.json"]   # as if written just before a crash
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError):
        Run(folder, params={"epsilon": 4.0}, seed=1, ledger=PrivacyLedger())


def test_a_stripped_seal_or_missing_key_is_refused(tmp_path):
    folder = _finished(tmp_path / "a")
    manifest = _manifest(folder)
    del manifest["seal"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError, match="seal"):
        verify_folder(folder)
    folder = _finished(tmp_path / "b")
    (folder / "private" / "mark_key").unlink()
    with pytest.raises(RunCorruptError, match="mark_key"):
        verify_folder(folder)


def test_an_untouched_run_verifies_and_resumes(tmp_path):
    folder = _finished(tmp_path / "run")
    verify_folder(folder)
    run = Run(folder, params={"epsilon": 4.0}, seed=1, ledger=PrivacyLedger())
    assert len(run) == 3 and run.records()["k1"] == {"text": "plain record 1"}
    run.close()
    verify_folder(folder)
