"""Private prediction's executors: the release follows the public layout whoever decodes, and bad flags exit 2.

The Ray cluster itself is exercised in tests/test_pp_ray.py (one module, one cluster).
"""

import pytest

from dpkit.cli import main
from dpkit.privpred import PrivatePredictionConfig, generate_synthetic, get_template
from dpkit.privpred.executors import LocalExecutor, make_executor
from dpkit.validate import ParameterError

SAMPLE = "data/own_data_sample.csv"


def pp(out, *extra):
    return main(["synth", "pp", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--smoke", *extra])


@pytest.mark.parametrize("method, extra, flag", [
    ("pp", ["--executor", "ray", "--workers", "0"], "--workers"),
    ("pp", ["--workers", "2"], "--workers"),                        # only with --executor ray
    ("pp", ["--ray-address", "auto"], "--ray-address"),
    ("pp", ["--executor", "local", "--workers", "2"], "--workers"),
    ("pp", ["--executor", "ray", "--ray-address", " "], "--ray-address"),
    ("kps", ["--executor", "ray"], "--executor"),                   # kps and dpst decode nothing private in batches
    ("dpst", ["--workers", "2"], "--workers"),
])
def test_bad_executor_flags_exit_2_and_write_nothing(tmp_path, capsys, method, extra, flag):
    out = tmp_path / "run"
    code = main(["synth", method, "--input", SAMPLE, "--text-column", "text", "--epsilon", "4",
                 "--out", str(out), "--smoke", *extra])
    assert code == 2
    assert flag in capsys.readouterr().err
    assert not out.exists()


def test_ray_missing_is_a_parameter_error_naming_the_flag(tmp_path, capsys, monkeypatch):
    import dpkit.privpred.ray_executor as ray_executor

    monkeypatch.setattr(ray_executor, "ray_available", lambda: False)
    assert pp(tmp_path / "run", "--executor", "ray") == 2
    err = capsys.readouterr().err
    assert "--executor" in err and "dpkit[scale]" in err and not (tmp_path / "run").exists()
    with pytest.raises(ParameterError, match="executor"):
        make_executor("ray", 2)
    with pytest.raises(ParameterError, match="executor"):
        make_executor("dask")


def test_an_executor_must_be_an_executor():
    from dpkit.methods import METHODS, Records
    import numpy as np

    records = Records(("a text",), (0,), ("x",))
    with pytest.raises(ParameterError, match="executor"):
        METHODS["pp"].synthesize(records, METHODS["pp"].Config.smoke(4.0), None, None, np.random.SeedSequence(1),
                                 executor="ray")


class ReversedExecutor(LocalExecutor):
    """Finishes the batches in the opposite order (as a slow first worker would)."""

    def decode(self, lm, jobs, settings):
        return reversed(list(super().decode(lm, list(jobs), settings)))


@pytest.mark.slow
def test_completion_order_changes_neither_the_release_nor_the_run(tmp_path):
    from dpkit.models import load_lm
    from dpkit.runs import Run

    lm = load_lm()
    records = ["A warm, funny film.", "Dull and long.", "Great acting.", "A mess.", "I loved it.", "Boring."]
    cfg = PrivatePredictionConfig(epsilon=10, delta=1e-3, expected_batch_size=3, clip=2, temperature=1.5,
                                  max_new_tokens=4, max_examples_per_batch=1, top_k=20)
    common = dict(labels=[1, 0, 1, 0, 1, 0], label_names=["negative", "positive"], n_batches=2, model=lm, seed=3)
    results = []
    for name, executor in (("default", None), ("reversed", ReversedExecutor())):
        run = Run(tmp_path / name, params=cfg.to_dict(), seed=3)
        results.append(generate_synthetic(records, get_template("sentiment"), cfg, run=run, executor=executor,
                                          **common))
        written = list(run.records())
        assert sorted(written) == sorted(b["batch_id"] for b in results[-1].batches)
    default, flipped = results
    assert [(e.batch_id, e.text) for e in flipped.examples] == [(e.batch_id, e.text) for e in default.examples]
    assert [b["batch_id"] for b in default.batches] == [b["batch_id"] for b in flipped.batches]
    assert len(default.ledger.to_dict()["entries"]) == len(flipped.ledger.to_dict()["entries"]) == 1
