"""Private prediction on a local Ray cluster (two workers, the bundled SmolLM2): same bytes, crash-safe, resumable.

One module-scoped cluster (``ray.init(num_cpus=2)`` in a private temp folder) and ONE
test that uses it, so that two pytest-xdist workers never start two clusters.
"""

import json
import shutil
import tempfile

import pytest
import ray  # the optional [scale] dependency: make setup installs it, so a missing Ray fails here

from dpkit.cli import main

# the first two rows of each label of data/own_data_sample.csv: still one batch per label (3), an eighth of the
# prompts to prefill (the smoke preset would read 48 rows), so each of the four runs below decodes ~8x less
SAMPLE = "tests/data/own_data_tiny.csv"


@pytest.fixture(scope="module")
def cluster():
    folder = tempfile.mkdtemp(prefix="dpkit-ray-")  # short: Ray's socket paths must stay under 107 bytes
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR", _temp_dir=folder)
    yield
    ray.shutdown()
    shutil.rmtree(folder, ignore_errors=True)


def pp(out, *extra):
    return main(["synth", "pp", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--smoke", "--seed", "5", *extra])


def written(out) -> list[str]:
    lines = (out / "private" / "records.jsonl").read_text().splitlines()
    return [json.loads(line)["key"] for line in lines]


def ledger_entries(out) -> list:
    return json.loads((out / "private" / "manifest.json").read_text())["ledger"]["entries"]


@pytest.mark.slow
def test_ray_release_is_byte_identical_survives_a_killed_worker_and_resumes(cluster, tmp_path, monkeypatch):
    import dpkit.privpred.executors as executors

    local = tmp_path / "local"
    assert pp(local) == 0
    expected = (local / "release" / "synthetic.jsonl").read_bytes()
    batches = sorted(written(local))
    assert len(batches) == 3                                        # smoke: one batch per label

    # A worker is killed (os._exit) in the middle of its first batch: Ray restarts it and retries the batch.
    marker = tmp_path / "crashed"
    monkeypatch.setenv("DPKIT_RAY_CRASH_ONCE", str(marker))
    on_ray = tmp_path / "ray"
    assert pp(on_ray, "--executor", "ray", "--workers", "2") == 0
    monkeypatch.delenv("DPKIT_RAY_CRASH_ONCE")
    assert marker.exists()                                          # the crash did happen
    assert (on_ray / "release" / "synthetic.jsonl").read_bytes() == expected
    assert sorted(written(on_ray)) == batches                       # each batch written once
    assert len(ledger_entries(on_ray)) == 1                         # charged once, for the whole layout
    assert json.loads((on_ray / "release" / "config.json").read_text()) == \
        json.loads((local / "release" / "config.json").read_text())

    # A run interrupted after its first batch on the local executor resumes on Ray: finished batches are skipped.
    decode_job, calls = executors.decode_job, []

    def interrupted(*args):
        if calls:
            raise KeyboardInterrupt("simulated Ctrl-C")
        calls.append(1)
        return decode_job(*args)

    monkeypatch.setattr(executors, "decode_job", interrupted)
    resumed = tmp_path / "resumed"
    assert pp(resumed) == 130                                       # Ctrl-C: one line and the resume command
    monkeypatch.setattr(executors, "decode_job", decode_job)
    first = written(resumed)
    assert len(first) == 1 and not (resumed / "release").exists()
    assert pp(resumed, "--executor", "ray", "--workers", "1") == 0
    assert written(resumed)[0] == first[0] and sorted(written(resumed)) == batches
    assert (resumed / "release" / "synthetic.jsonl").read_bytes() == expected
    assert len(ledger_entries(resumed)) == 1
    manifest = json.loads((resumed / "private" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumes"] == 1
    assert ray.is_initialized()                                     # the executor leaves a caller's Ray running

    # A worker that dies more often than max_restarts allows stops the run with a BackendError (the CLI keeps
    # the run and exits 1; the same command resumes it).
    from dpkit.backends.base import BackendError
    from dpkit.models import load_lm
    from dpkit.privpred import PrivatePredictionConfig, generate_synthetic, get_template
    from dpkit.privpred.ray_executor import RayExecutor, WorkerFailure

    monkeypatch.setenv("DPKIT_RAY_CRASH_ONCE", str(tmp_path / "crashed-for-good"))
    cfg = PrivatePredictionConfig(epsilon=10, delta=1e-3, expected_batch_size=2, clip=2, max_new_tokens=2,
                                  max_examples_per_batch=1)
    with RayExecutor(workers=1, max_restarts=0) as executor, pytest.raises(WorkerFailure) as failure:
        generate_synthetic(["A warm film.", "Dull."], get_template("sentiment"), cfg, labels=[1, 0],
                           label_names=["negative", "positive"], n_batches=1, model=load_lm(), seed=0,
                           executor=executor)
    assert isinstance(failure.value, BackendError) and "max_restarts=0" in str(failure.value)
