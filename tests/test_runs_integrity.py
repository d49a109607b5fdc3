"""Run folders: one writer, configuration and input checked on resume, ledger replayed first, self-verifying."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dpkit.privacy import Laplace, PrivacyLedger
from dpkit.privacy.marks import Privatized, Public, release_text
from dpkit.runs import Run, RunCorruptError, RunInUseError, RunMismatchError, digest

MECHANISM = Laplace(1.0, epsilon=1.0, unit="note")

# Two of these start at once on one folder (the review's race): a slow DP step, then 4 records.
WRITER = textwrap.dedent('''
    import sys, time
    import numpy as np
    from dpkit.privacy import Laplace, PrivacyLedger
    from dpkit.runs import Run, RunInUseError
    ledger = PrivacyLedger()
    mechanism = Laplace(1.0, epsilon=1.0, unit="note")
    try:
        run = Run(sys.argv[1], params={"epsilon": 1.0}, ledger=ledger)
    except RunInUseError as error:
        print(error, file=sys.stderr)
        sys.exit(3)
    def release():
        ledger.spend(mechanism.contract, "counts")
        time.sleep(1.0)
        return mechanism.release(np.array([3.0, 5.0]), np.random.default_rng()).tolist()
    seeds = run.privatized_seeds("counts", release)
    for key in ["k0", "k1", "k2", "k3"]:
        if key not in run:
            run.append(key, {"seeds": seeds})
    run.finish()
''')


def _spend_and_release(ledger):
    def compute():
        entry = ledger.spend(MECHANISM.contract, "counts")
        noisy = MECHANISM.release(np.array([3.0, 5.0]), np.random.default_rng(0))
        return {"noisy": noisy, "phrase": release_text("fever", entry)}
    return compute


def test_two_concurrent_writers_make_one_release(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    folder = tmp_path / "run"
    env = dict(os.environ, CI="true")
    procs = [subprocess.Popen([sys.executable, str(script), str(folder)], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 3], outs
    refused = next(err for p, (_, err) in zip(procs, outs) if p.returncode == 3)
    assert "in use by another process (pid" in refused and "on host" in refused
    lines = (folder / "records.jsonl").read_text().splitlines()
    releases = {json.dumps(json.loads(line)["record"]["seeds"]) for line in lines}
    assert len(lines) == 4 and len(releases) == 1                       # one writer, one release
    manifest = json.loads((folder / "manifest.json").read_text())
    assert len(manifest["ledger"]["entries"]) == 1


def test_a_stale_lock_of_a_dead_process_is_recovered(tmp_path):
    code = f"from dpkit.runs import Run; Run({str(tmp_path)!r}, params={{'a': 1}}); import os; os._exit(0)"
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, CI="true"), timeout=120)
    assert "pid" in (tmp_path / ".lock").read_text()                   # left behind by the dead process
    run = Run(tmp_path, params={"a": 1})
    assert f"pid {os.getpid()}" in (tmp_path / ".lock").read_text()
    run.close()
    assert (tmp_path / ".lock").read_text() == ""


def test_reopening_in_the_same_process_hands_the_lock_over(tmp_path):
    first = Run(tmp_path, params={})
    second = Run(tmp_path, params={})
    second.append("a", 1)
    with pytest.raises(RunInUseError, match="newer"):
        first.append("b", 2)


def test_configuration_and_input_mismatches_are_refused_by_name(tmp_path):
    DIGEST = "input-digest-not-hex"   # cannot occur by chance inside the manifest's hex digests (as "aaa" once did)
    Run(tmp_path, params={"epsilon": 6.0, "n": 2}, input_digest=DIGEST).close()
    with pytest.raises(RunMismatchError, match="epsilon: 6.0 -> 3.0") as info:
        Run(tmp_path, params={"epsilon": 3.0, "n": 2}, input_digest=DIGEST)
    assert "n: 2" not in str(info.value)                                  # only what changed
    with pytest.raises(RunMismatchError, match="input: the input data differ"):
        Run(tmp_path, params={"epsilon": 6.0, "n": 2}, input_digest="other-input-digest")
    with pytest.raises(RunMismatchError, match="input digest absent now"):
        Run(tmp_path, params={"epsilon": 6.0, "n": 2})
    assert json.loads((tmp_path / "private" / "input_digest.json").read_text()) == {"input_digest": DIGEST}
    assert DIGEST not in (tmp_path / "manifest.json").read_text()
    Run(tmp_path, params={"epsilon": 6.0, "n": 2}, input_digest=DIGEST)   # the same run resumes
    with pytest.raises(Exception, match="finite"):
        Run(tmp_path / "nan", params={"epsilon": float("nan")})


def test_the_ledger_is_replayed_before_anything_is_written(tmp_path):
    ledger = PrivacyLedger()
    run = Run(tmp_path, params={}, ledger=ledger)
    run.privatized_seeds("s", _spend_and_release(ledger))
    run.finish()
    reopened_ledger = PrivacyLedger()
    Run(tmp_path, params={}, ledger=reopened_ledger)                  # reopened, seeds not asked for yet
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert len(manifest["ledger"]["entries"]) == 1 and manifest["ledger"]["rho"] == pytest.approx(0.5)
    assert reopened_ledger.rho == pytest.approx(0.5)


def test_corruption_is_a_clear_error_never_a_re_spend(tmp_path):
    def fresh(name):
        ledger = PrivacyLedger()
        run = Run(tmp_path / name, params={"epsilon": 1.0}, ledger=ledger)
        run.privatized_seeds("s", _spend_and_release(ledger))
        run.append("k0", {"text": "x"})
        run.write_release_file("synthetic.jsonl", '{"text": "x"}\n')
        run.finish()
        run.close()
        return tmp_path / name

    folder = fresh("seeds-edited")
    saved = json.loads((folder / "seeds" / "s.json").read_text())
    saved["ledger_entries"] = []
    (folder / "seeds" / "s.json").write_text(json.dumps(saved))
    with pytest.raises(RunCorruptError, match="seeds/s.json"):
        Run(folder, params={"epsilon": 1.0}, ledger=PrivacyLedger())

    folder = fresh("ledger-edited")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["ledger"]["entries"] = []
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError, match="ledger was edited"):
        Run(folder, params={"epsilon": 1.0})

    folder = fresh("release-edited")
    (folder / "release" / "synthetic.jsonl").write_text('{"text": "y"}\n')
    with pytest.raises(RunCorruptError, match="release/synthetic.jsonl"):
        Run(folder, params={"epsilon": 1.0})

    folder = fresh("manifest-garbled")
    (folder / "manifest.json").write_text('{"params": {"eps')
    with pytest.raises(RunCorruptError, match="not valid JSON"):
        Run(folder, params={"epsilon": 1.0})

    folder = fresh("manifest-deleted")
    (folder / "manifest.json").unlink()
    with pytest.raises(RunCorruptError, match="manifest.json.*missing"):
        Run(folder, params={"epsilon": 5.0})

    folder = fresh("seeds-deleted")
    os.remove(folder / "seeds" / "s.json")
    with pytest.raises(RunCorruptError, match="seeds/s.json"):
        Run(folder, params={"epsilon": 1.0})


def test_seeds_are_never_recomputed_once_records_exist(tmp_path):
    run = Run(tmp_path, params={})
    run.append("k0", 1)
    with pytest.raises(RunCorruptError, match="second release"):
        run.privatized_seeds("late", lambda: [1.0])


def test_records_shaped_like_marks_stay_plain_and_forged_marks_are_refused(tmp_path):
    run = Run(tmp_path, params={})
    run.append("a", {"__public__": "x"})
    run.append("b", {"__privatized__": "secret", "provenance": []})
    run.append("c", {"label": Public("cardio")})
    with pytest.raises(Exception, match="reserved"):
        run.append("d", {"__dpkit_mark__": 1, "kind": "public", "text": "secret"})
    records = Run(tmp_path, params={}).records()
    assert type(records["a"]) is dict and type(records["b"]) is dict
    assert type(records["c"]["label"]) is Public
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    forged = json.loads(lines[2])
    forged["record"]["label"]["text"] = "secret"
    (tmp_path / "records.jsonl").write_text("\n".join(lines[:2] + [json.dumps(forged)]) + "\n")
    with pytest.raises(RunCorruptError, match="hash chain"):      # the edit breaks the records' chain
        Run(tmp_path, params={})
    # a forger who also recomputes the (unkeyed) chain and the manifest's head meets the manifest's seal
    from dpkit.runs.integrity import manifest_seal
    from dpkit.runs.records import chain_step

    forged["chain"] = chain_step(json.loads(lines[1])["chain"], forged["key"], forged["record"])
    (tmp_path / "records.jsonl").write_text("\n".join(lines[:2] + [json.dumps(forged)]) + "\n")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    manifest["records_chain"] = forged["chain"]
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError, match="seal"):
        Run(tmp_path, params={})
    # and one who reads the run's key and reseals the manifest still meets the mark's own seal
    manifest["seal"] = manifest_seal((tmp_path / "private" / "mark_key").read_bytes(), manifest)
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunCorruptError, match="no valid seal"):
        Run(tmp_path, params={})


def test_privatized_marks_round_trip_with_their_ledger_entry(tmp_path):
    ledger = PrivacyLedger()
    value = Run(tmp_path, params={}, ledger=ledger).privatized_seeds("s", _spend_and_release(ledger))
    again = Run(tmp_path, params={}, ledger=PrivacyLedger()).privatized_seeds("s", lambda: 1 / 0)
    assert type(again["phrase"]) is Privatized and again["phrase"].provenance == value["phrase"].provenance
    assert again["phrase"].provenance[0]["ledger_entry"]["label"] == "counts"


def test_digest_is_canonical():
    assert digest({"b": 1, "a": [1, 2]}) == digest({"a": [1, 2], "b": 1})


def test_a_bound_component_refuses_another_configuration_or_input(tmp_path):
    run = Run(tmp_path, params={"task": "demo"})
    run.bind("pipeline", {"epsilon": 6.0, "r": 6}, input_digest=digest(["a", "b"]))
    run.close()
    again = Run(tmp_path, params={"task": "demo"})
    again.bind("pipeline", {"epsilon": 6.0, "r": 6}, input_digest=digest(["a", "b"]))      # same: resumes
    with pytest.raises(RunMismatchError, match=r"pipeline.epsilon: 6.0 -> 3.0; pipeline.r: 6 -> 1"):
        again.bind("pipeline", {"epsilon": 3.0, "r": 1}, input_digest=digest(["a", "b"]))
    with pytest.raises(RunMismatchError, match="pipeline.input"):
        again.bind("pipeline", {"epsilon": 6.0, "r": 6}, input_digest=digest(["a", "c"]))
    assert digest(["a", "b"]) not in (tmp_path / "manifest.json").read_text()


def test_tracked_files_beside_the_run_are_verified_without_writing(tmp_path):
    from dpkit.runs import verify_folder

    release = tmp_path / "release"
    release.mkdir()
    (release / "synthetic.jsonl").write_text('{"text": "a"}\n')
    run = Run(tmp_path / "private", params={})
    run.track(release)
    run.finish()
    run.close()
    before = (tmp_path / "private" / "manifest.json").read_text()
    assert "../release/synthetic.jsonl" in verify_folder(tmp_path / "private")["checksums"]
    assert (tmp_path / "private" / "manifest.json").read_text() == before
    (release / "synthetic.jsonl").write_text('{"text": "b"}\n')
    with pytest.raises(RunCorruptError, match="release/synthetic.jsonl"):
        verify_folder(tmp_path / "private")
    with pytest.raises(RunCorruptError, match="release/synthetic.jsonl"):
        Run(tmp_path / "private", params={})


def test_a_refused_opening_does_not_keep_the_folder_locked(tmp_path):
    Run(tmp_path, params={"epsilon": 1.0}).close()
    with pytest.raises(RunMismatchError):
        Run(tmp_path, params={"epsilon": 2.0})
    code = f"from dpkit.runs import Run; Run({str(tmp_path)!r}, params={{'epsilon': 1.0}})"
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ, CI="true"), timeout=120)
