"""Runs: records written as they exist, resume after SIGKILL, seeds and ledger never spent twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dpkit.backends import Backend
from dpkit.privacy import BudgetExceededError, Laplace, PrivacyLedger
from dpkit.privacy.marks import Privatized, Public, release_text
from dpkit.runs import Run, RunMismatchError, generate_records, progress_enabled
from dpkit.validate import ParameterError

WORKER = textwrap.dedent('''
    import hashlib, sys, time
    from pathlib import Path
    import numpy as np
    from dpkit.backends import Backend
    from dpkit.privacy import Laplace, PrivacyLedger
    from dpkit.privacy.marks import Public, compose_prompt, release_texts
    from dpkit.runs import Run

    class HashLM(Backend):
        """A deterministic stand-in for an LLM: the answer is a hash of the prompt and seed."""
        name, remote = "hash", True
        def _generate(self, chats, params):
            time.sleep(0.05)
            return [hashlib.sha256((c[-1]["content"] + str(params.seed)).encode()).hexdigest()[:16]
                    for c in chats]

    folder = Path(sys.argv[1])
    ledger = PrivacyLedger(budget_rho=1.0)
    run = Run(folder, params={"n": 12, "epsilon": 1.0}, seed=5, ledger=ledger)
    mechanism = Laplace(1.0, epsilon=1.0, unit="document")

    def release():
        with open(folder.parent / (folder.name + ".computed"), "a") as marker:
            marker.write("x")
        entry = ledger.spend(mechanism.contract, "topic counts")
        counts = mechanism.release(np.arange(12.0), np.random.default_rng(run.seed))
        return release_texts([f"{c:.3f}" for c in counts], entry)

    seeds = run.privatized_seeds("counts", release)
    backend = HashLM("hash-v1")
    prompts = {f"item{i}": compose_prompt(Public("Write about topic weight {w}."), w=w)
               for i, w in enumerate(seeds)}
    for key, prompt in run.pending(prompts):
        run.append(key, {"text": backend.generate(prompt, seed=run.seed)})
        print(key, flush=True)
    run.finish(backend=backend)
''')


def _worker(tmp_path: Path) -> Path:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return script


def _records(folder: Path) -> list[tuple[str, dict]]:
    lines = (folder / "records.jsonl").read_text().splitlines()
    return [(e["key"], e["record"]) for e in map(json.loads, lines)]


def test_sigkill_midway_then_resume_equals_an_uninterrupted_run(tmp_path):
    script = _worker(tmp_path)
    env = dict(os.environ, CI="true")
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    subprocess.run([sys.executable, str(script), str(clean)], check=True, env=env, timeout=120,
                   capture_output=True)

    proc = subprocess.Popen([sys.executable, str(script), str(killed)], stdout=subprocess.PIPE, env=env, text=True)
    seen = [proc.stdout.readline().strip() for _ in range(3)]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL and seen == ["item0", "item1", "item2"]
    before = _records(killed)
    assert 3 <= len(before) < 12
    assert json.loads((killed / "manifest.json").read_text())["status"] == "running"

    resumed = subprocess.run([sys.executable, str(script), str(killed)], check=True, env=env, timeout=120,
                             capture_output=True, text=True)
    regenerated = resumed.stdout.split()
    assert regenerated == [f"item{i}" for i in range(len(before), 12)]   # nothing finished was redone

    assert _records(killed) == _records(clean)                            # none lost, none duplicated
    assert (killed / "seeds" / "counts.json").read_text() != ""
    for folder in (clean, killed):
        assert (tmp_path / (folder.name + ".computed")).read_text() == "x"   # noise drawn once per run
    seeds_clean = json.loads((clean / "seeds" / "counts.json").read_text())["value"]
    seeds_killed = json.loads((killed / "seeds" / "counts.json").read_text())["value"]
    assert [v["text"] for v in seeds_clean] == [v["text"] for v in seeds_killed]   # seals use each run's key
    manifest = json.loads((killed / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumes"] == 1 and manifest["records"] == 12
    assert manifest["ledger"]["rho"] == pytest.approx(0.5) and len(manifest["ledger"]["entries"]) == 1
    assert manifest["backend"]["prompts_with_privatized_text"][0]["source"] == "Laplace"


def test_torn_last_line_is_cut_and_the_item_regenerated(tmp_path):
    run = Run(tmp_path, params={"k": 1})
    run.append("a", {"text": "one"})
    with open(tmp_path / "records.jsonl", "a") as handle:
        handle.write('{"key": "b", "record": {"te')          # a kill in the middle of a write
    with pytest.warns(UserWarning, match="torn last record"):
        reopened = Run(tmp_path, params={"k": 1})
    assert reopened.torn_bytes > 0 and reopened.done_keys() == {"a"}
    assert [k for k, _ in reopened.pending({"a": 1, "b": 2})] == ["b"]
    reopened.append("b", {"text": "two"})
    assert [json.loads(l)["key"] for l in (tmp_path / "records.jsonl").read_text().splitlines()] == ["a", "b"]


def test_corruption_in_the_middle_is_an_error(tmp_path):
    run = Run(tmp_path, params={})
    for key in "abc":
        run.append(key, {"text": key})
    run.close()
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    (tmp_path / "records.jsonl").write_text("\n".join([lines[0], "not json", lines[2]]) + "\n")
    with pytest.raises(ParameterError, match="records.jsonl='line 2'.*not a valid record line"):
        Run(tmp_path, params={})


def test_changed_params_or_seed_refuse_to_mix_runs(tmp_path):
    Run(tmp_path, params={"epsilon": 1.0, "n": 4}, seed=0)
    Run(tmp_path, params={"n": 4, "epsilon": 1.0}, seed=0)                # same run: fine
    with pytest.raises(RunMismatchError, match="epsilon: 1.0 -> 2.0"):
        Run(tmp_path, params={"epsilon": 2.0, "n": 4}, seed=0)
    with pytest.raises(RunMismatchError, match="seed: 0 -> 1"):
        Run(tmp_path, params={"epsilon": 1.0, "n": 4}, seed=1)


def test_a_key_is_written_once(tmp_path):
    run = Run(tmp_path, params={})
    run.append(1, {"x": 1})
    with pytest.raises(ParameterError, match="already has a record"):
        run.append("1", {"x": 2})
    with pytest.raises(ParameterError, match="keys must be unique"):
        list(run.pending([("a", 1), ("a", 2)]))


def test_seeds_replay_the_ledger_once_and_keep_marks(tmp_path):
    mechanism = Laplace(1.0, epsilon=1.0, unit="document")
    calls = []

    def release(ledger):
        def compute():
            calls.append(1)
            entry = ledger.spend(mechanism.contract, "counts")
            return {"noisy": mechanism.release([3.0, 4.0], np.random.default_rng(0)),
                    "phrase": release_text("fever", entry), "label": Public("cardio")}
        return compute

    first_ledger = PrivacyLedger(budget_rho=0.6)
    first = Run(tmp_path, params={}, ledger=first_ledger).privatized_seeds("s", release(first_ledger))
    second_ledger = PrivacyLedger(budget_rho=0.6)
    second = Run(tmp_path, params={}, ledger=second_ledger).privatized_seeds("s", release(second_ledger))
    assert calls == [1] and first == second
    assert type(second["phrase"]) is Privatized and second["phrase"].provenance[0]["source"] == "Laplace"
    assert type(second["label"]) is Public and isinstance(second["noisy"], list)
    assert first_ledger.rho == second_ledger.rho == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError):                              # the replayed spend counts
        second_ledger.spend(mechanism.contract, "again")


class EchoBackend(Backend):
    """Reverses the prompt: a deterministic stand-in for plumbing tests."""

    name, remote = "echo", False

    def _generate(self, chats, params):
        return [c[-1]["content"][::-1] for c in chats]


def test_generate_records_resumes_in_batches(tmp_path):
    prompts = {f"k{i}": f"prompt {i}" for i in range(7)}
    run = Run(tmp_path, params={"m": 1})
    for key in ("k0", "k3"):
        run.append(key, {"text": prompts[key][::-1]})
    backend = EchoBackend("echo-1")
    records = generate_records(Run(tmp_path, params={"m": 1}), backend, prompts, batch_size=3)
    assert records == {k: {"text": prompts[k][::-1]} for k in ["k0", "k3", "k1", "k2", "k4", "k5", "k6"]}
    assert list(records) == ["k0", "k3", "k1", "k2", "k4", "k5", "k6"] and backend.requests == 5
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["backend"]["backend"] == "echo" and manifest["records"] == 7
    assert "python" in manifest["versions"] and "torch" in manifest["versions"]


def test_api_keys_never_reach_run_files(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-abcdefghijklmnop")
    run = Run(tmp_path, params={})
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        run.append("a", {"oops": "sk-live-abcdefghijklmnop"})
    assert "sk-live" not in (tmp_path / "records.jsonl").read_text()


def test_progress_is_quiet_in_ci(monkeypatch):
    monkeypatch.delenv("DPKIT_PROGRESS", raising=False)
    monkeypatch.setenv("CI", "true")
    assert not progress_enabled()
    monkeypatch.setenv("DPKIT_PROGRESS", "1")
    assert progress_enabled()
