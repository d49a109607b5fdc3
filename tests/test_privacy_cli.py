"""``dpkit account``: answers, JSON keys, exit status 2 naming the bad argument."""

import json
import subprocess
import sys

import pytest

from dpkit.cli import main
from dpkit.privacy import (epsilon_to_zcdp, max_private_tokens, private_prediction_rho, zcdp_to_epsilon,
                           zcdp_to_epsilon_bun_steinke)


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_zcdp_forward(capsys):
    out = run_json(capsys, ["account", "zcdp", "--rho", "0.1", "--delta", "1e-6", "--json"])
    assert out["rho"] == 0.1 and out["delta"] == 1e-6
    assert out["epsilon"] == pytest.approx(zcdp_to_epsilon(0.1, 1e-6), rel=1e-12)
    assert out["epsilon_bun_steinke"] == pytest.approx(zcdp_to_epsilon_bun_steinke(0.1, 1e-6), rel=1e-12)


def test_zcdp_inverse(capsys):
    out = run_json(capsys, ["account", "zcdp", "--epsilon", "1", "--delta", "1e-6", "--json"])
    assert out["rho"] == pytest.approx(epsilon_to_zcdp(1.0, 1e-6), rel=1e-12)
    assert out["epsilon"] <= 1.0


def test_private_prediction_both_ways(capsys):
    base = ["--batch-size", "250", "--clip", "10", "--temperature", "2", "--delta", "1e-6", "--json"]
    out = run_json(capsys, ["account", "private-prediction", "--tokens", "100", *base])
    assert out["rho"] == pytest.approx(private_prediction_rho(100, 250, 10, 2)) and out["tokens"] == 100
    out = run_json(capsys, ["account", "private-prediction", "--tokens", "100", "--svt-sigma", "0.2", *base])
    assert out["rho"] == pytest.approx(private_prediction_rho(100, 250, 10, 2, 0.2))
    assert out["epsilon"] == pytest.approx(zcdp_to_epsilon(out["rho"], 1e-6))
    out = run_json(capsys, ["account", "private-prediction", "--epsilon", "1", *base])
    assert out["tokens"] == max_private_tokens(1.0, 1e-6, 250, 10, 2) and out["epsilon"] <= 1.0


def test_human_output(capsys):
    assert main(["account", "zcdp", "--rho", "1", "--delta", "1e-6"]) == 0
    text = capsys.readouterr().out
    assert "tight" in text and "Bun" in text and "7.766" in text


@pytest.mark.parametrize("argv, flag", [
    (["zcdp", "--rho", "-1", "--delta", "1e-6"], "--rho"),
    (["zcdp", "--epsilon", "0", "--delta", "1e-6"], "--epsilon"),
    (["zcdp", "--rho", "1", "--delta", "1"], "--delta"),
    (["zcdp", "--rho", "1", "--delta", "0"], "--delta"),
    (["private-prediction", "--tokens", "5", "--batch-size", "0", "--clip", "1", "--temperature", "1",
      "--delta", "1e-6"], "--batch-size"),
    (["private-prediction", "--tokens", "5", "--batch-size", "0.5", "--clip", "1", "--temperature", "1",
      "--delta", "1e-6"], "--batch-size"),   # the review: s < 1 was accepted although the library refuses it
    (["private-prediction", "--tokens", "5", "--batch-size", "10", "--clip", "-1", "--temperature", "1",
      "--delta", "1e-6"], "--clip"),
    (["private-prediction", "--tokens", "5", "--batch-size", "10", "--clip", "1", "--temperature", "0",
      "--delta", "1e-6"], "--temperature"),
    (["private-prediction", "--tokens", "5", "--batch-size", "10", "--clip", "1", "--temperature", "1",
      "--svt-sigma", "0", "--delta", "1e-6"], "--svt-sigma"),
    (["private-prediction", "--tokens", "-2", "--batch-size", "10", "--clip", "1", "--temperature", "1",
      "--delta", "1e-6"], "--tokens"),
])
def test_bad_arguments_exit_2(capsys, argv, flag):
    assert main(["account", *argv, "--json"]) == 2
    err = capsys.readouterr().err
    assert flag in err


def test_console_entry_points():
    proc = subprocess.run([sys.executable, "-m", "dpkit", "account", "zcdp", "--rho", "-1", "--delta", "1e-6"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--rho" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "dpkit", "account", "zcdp", "--rho", "0.001", "--delta", "1e-6",
                           "--json"], capture_output=True, text=True)
    assert proc.returncode == 0 and json.loads(proc.stdout)["epsilon"] == pytest.approx(0.18289537, rel=1e-6)
    proc = subprocess.run([sys.executable, "-m", "dpkit", "account", "zcdp", "--delta", "1e-6"],
                          capture_output=True, text=True)
    assert proc.returncode == 2


def test_the_batch_size_rule_is_stated_once(capsys):
    """"s >= 1" has one owner (dpkit.privacy.private_prediction.MIN_BATCH_SIZE): the check's error and the
    help text of ``dpkit account private-prediction --batch-size`` read it (the review's fact 18)."""
    from dpkit.privacy.private_prediction import BATCH_SIZE_RULE, MIN_BATCH_SIZE, check_batch_size
    from dpkit.validate import ParameterError

    with pytest.raises(SystemExit):
        main(["account", "private-prediction", "--help"])
    assert f"expected batch size {BATCH_SIZE_RULE}" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(ParameterError, match=f">= {MIN_BATCH_SIZE:g}"):
        check_batch_size(MIN_BATCH_SIZE / 2)
    assert check_batch_size(MIN_BATCH_SIZE) == MIN_BATCH_SIZE
    for bad in (0, -1, float("nan"), float("inf"), "x"):  # the message states the rule, not "> 0" (sweep, 29 Nov)
        with pytest.raises(ParameterError, match=f"finite number >= {MIN_BATCH_SIZE:g}"):
            check_batch_size(bad)
