"""reliability-3 N1, N3 and probe 2: bad input refused in one line, exit 2, before anything is charged or written.

Before:
* N1 (probe 26): a ``--config`` file that is not UTF-8 gave a ``UnicodeDecodeError`` traceback, exit 1;
* N3 (probes 15, 16): ``--set n_features=1000000000`` / ``n_per_class=1000000000`` passed validation,
  charged the ledger, then died in a ``MemoryError`` traceback; ``--plan`` printed "2000000000 texts";
* N3 (probes 14, 18, 19): ``--set N=1e12`` (kps), ``max_new_tokens=1e20`` (pp) and ``k=1e9`` (dpst) were
  refused, but after the run folder existed, so a corrected command was refused on that folder;
* probe 2: ``--epsilon 1e308`` was refused naming an internal ``rhos[0]``.
"""

from __future__ import annotations

import os

import pytest
import warm_process

from dpkit.cli import main
from test_runs_faults import FAKE_DRIVER, ROOT, SAMPLE

BASE = ["--input", SAMPLE, "--text-column", "text", "--label-column", "label", "--epsilon", "4", "--smoke",
        "--seed", "1"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("name, data", [("latin1.toml", 'document_type = "caf\xe9"\n'.encode("latin-1")),
                                        ("ff.toml", b"N = 5\n\xff\n"),
                                        ("latin1.json", '{"document_type": "caf\xe9"}'.encode("latin-1"))])
def test_n1_a_config_file_that_is_not_utf8_is_one_line_naming_it(tmp_path, capsys, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["synth", "kps", "--plan", "--epsilon", "4", "--smoke", "--config", str(path)]) == 2
    line = _one_line(capsys)
    assert "--config" in line and name in line and "not UTF-8" in line


@pytest.mark.parametrize("setting, named", [("n_features=1000000000", "n_features"),
                                            ("n_per_class=1000000000", "n_per_class"),
                                            ("N=1000000000000", "N")])
def test_n3_sizes_that_cannot_run_are_refused_by_plan_and_before_the_run_folder_exists(
        tmp_path, capsys, setting, named):
    assert main(["synth", "kps", "--plan", "--epsilon", "4", "--smoke", "--labels", "a,b", "--label-column", "label",
                 "--set", setting]) == 2
    assert _one_line(capsys).startswith(f"dpkit synth: {named}=")
    out = tmp_path / "run"
    assert main(["synth", "kps", *BASE, "--set", setting, "--out", str(out)]) == 2
    assert f"{named}=" in _one_line(capsys) and not out.exists()      # nothing charged: no folder at all


def _fake_synth(*args):
    env = {k: v for k, v in os.environ.items() if k != "DPKIT_FAULT"}
    env.update(DPKIT_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    return warm_process.run(["synth", *args], code=FAKE_DRIVER, cwd=ROOT, env=env, timeout=900)


def test_n3_a_refusal_inside_the_method_before_its_first_charge_leaves_no_folder(tmp_path):
    out = tmp_path / "run"
    done = _fake_synth("dpst", *BASE, "--set", "k=1000000000", "--out", str(out))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "k=1000000000" in done.stderr and not out.exists()
    again = _fake_synth("dpst", *BASE, "--out", str(out))
    assert again.returncode == 0, again.stderr[-2000:]          # the corrected command is not refused


@pytest.mark.parametrize("method", ["kps", "pp", "dpst"])
def test_probe2_a_huge_epsilon_names_the_flag(capsys, method):
    assert main(["synth", method, "--plan", "--epsilon", "1e308", "--smoke", "--rows", "10"]) == 2
    line = _one_line(capsys)
    assert "--epsilon=1e+308" in line and "rho" not in line


def test_probe18_pp_max_new_tokens_beyond_the_context_leaves_no_folder(tmp_path):
    """Refused inside the method (the model's context is known once it is loaded), before the first charge."""
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k != "DPKIT_FAULT"}
    env.update(DPKIT_PROGRESS="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    done = warm_process.run(["synth", "pp", *BASE, "--set", "max_new_tokens=99999999999999999999", "--out", str(out)],
                            module="dpkit", cwd=ROOT, env=env, timeout=900)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "max_new_tokens=" in done.stderr and "context" in done.stderr and not out.exists()
