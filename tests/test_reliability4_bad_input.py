"""reliability-4 F1, F2, F3, V2 and D2: bad or unusual input refused in one line before anything is charged, or run.

Before:
* F1 (D9, D10): pp ``--document-type 日本語のツイート`` (or ``ab``) passed validation and ``--plan``, charged the
  ledger, decoded, then every released text died in ``echo_pattern`` ("must contain a word of at least 3
  letters"): a charge in a folder that could never finish;
* F2 (D4): a ``--document-type`` holding a byte that is not UTF-8 (Python's lone surrogate ``\\udce9``) gave a
  traceback, exit 1 (kps and dpst in the parameters' digest, pp in the tokenizer);
* F3 (V3): pp ``expected_batch_size=1e308``, ``temperature=1e308`` or ``clip=1e-300`` (a run, ``--plan``,
  ``dpkit account private-prediction``) gave a ``ZeroDivisionError`` traceback: one token's rho underflowed to 0;
* V2: ``clip=1e308`` / ``temperature=1e-300`` were refused as ``rho=inf``, an internal name;
* D2: a 10.8 kB ``--document-type`` passed validation (no length bound); now at most 200 characters.
"""

from __future__ import annotations

import pytest

from dpkit.cli import main
from dpkit.privpred.prompts import document_template
from test_runs_faults import SAMPLE

BASE = ["--input", SAMPLE, "--text-column", "text", "--label-column", "label", "--epsilon", "4", "--smoke",
        "--seed", "1"]
PLAN = ["--plan", "--epsilon", "4", "--smoke", "--rows", "10"]


def _one_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("document_type", ["日本語のツイート", "ab", "??", "новость"])
def test_f1_any_document_type_pp_accepts_is_one_it_can_finish_texts_with(document_type):
    """The echo rule runs on every decoded text, after the charge: it must not refuse what validation accepted."""
    template = document_template(document_type)
    assert template.finish("A plain text about the billing of the account.", "billing") == \
        "A plain text about the billing of the account."
    assert template.finish("Label: billing: the invoice came twice this month", "billing") == \
        "the invoice came twice this month"                          # "label" and the label name still echo


def test_f1_a_document_type_in_another_script_is_its_own_echo_word():
    template = document_template("новость")
    assert template.finish("Новость: врачи советуют больше ходить пешком каждый день", "health") == \
        "врачи советуют больше ходить пешком каждый день"


@pytest.mark.parametrize("method", ["kps", "pp", "dpst"])
@pytest.mark.parametrize("flag", [["--document-type", "caf\udce9 review"], ["--set", "document_type=caf\udce9"],
                                  ["--labels=billing,sh\udcffipping"]])
def test_f2_an_argument_that_is_not_utf8_is_one_line_naming_it_and_nothing_is_written(tmp_path, capsys, method,
                                                                                       flag):
    out = tmp_path / "run"
    assert main(["synth", method, *BASE, *flag, "--out", str(out)]) == 2
    line = _one_line(capsys)
    named = flag[0].split("=")[0] if flag[0] != "--set" else "--set"
    assert line.startswith(f"dpkit synth: {named}=") and "is not UTF-8 text (byte 0x" in line, line
    assert not out.exists()


@pytest.mark.parametrize("setting, way", [("expected_batch_size=1e308", "underflows"),
                                          ("temperature=1e308", "underflows"), ("clip=1e-300", "underflows"),
                                          ("clip=1e308", "overflows"), ("temperature=1e-300", "overflows")])
@pytest.mark.parametrize("variant", ["amin", "invisibleink"])
def test_f3_v2_extreme_pp_sizes_name_the_parameters_in_plan_and_run(tmp_path, capsys, setting, way, variant):
    assert main(["synth", "pp", *PLAN, "--set", f"variant={variant}", "--set", setting]) == 2
    line = _one_line(capsys)
    assert line.startswith("dpkit synth: clip/(expected_batch_size*temperature)=") and way in line, line
    assert "rho=inf" not in line and setting.split("=")[0] in line
    out = tmp_path / "run"
    assert main(["synth", "pp", *BASE, "--set", f"variant={variant}", "--set", setting, "--out", str(out)]) == 2
    assert "clip/(expected_batch_size*temperature)=" in _one_line(capsys) and not out.exists()


@pytest.mark.parametrize("flags", [["--batch-size", "1e308", "--clip", "2", "--temperature", "1"],
                                   ["--batch-size", "8", "--clip", "1e-300", "--temperature", "1"],
                                   ["--batch-size", "8", "--clip", "2", "--temperature", "1",
                                    "--svt-sigma", "1e-300"]])
def test_f3_dpkit_account_private_prediction_names_the_flags(capsys, flags):
    assert main(["account", "private-prediction", "--epsilon", "4", "--delta", "1e-6", *flags]) == 2
    line = _one_line(capsys)
    assert line.startswith("dpkit account: error: argument ") and "--batch-size" in line, line


@pytest.mark.parametrize("method", ["kps", "pp", "dpst"])
@pytest.mark.parametrize("flag, named", [(["--document-type", "health news tweet " * 600], "--document-type"),
                                         (["--set", "document_type=" + "x" * 201], "document_type")])
def test_d2_a_document_type_of_10_kb_is_refused_by_name(tmp_path, capsys, method, flag, named):
    """D2: a 10.8 kB ``--document-type`` passed validation on all three methods (no length bound)."""
    out = tmp_path / "run"
    assert main(["synth", method, *BASE, *flag, "--out", str(out)]) == 2
    line = _one_line(capsys)
    assert line.startswith(f"dpkit synth: {named}=") and "must be at most 200 characters" in line
    assert not out.exists()
    assert main(["synth", method, *PLAN, "--document-type", "x" * 200]) == 0   # the bound itself is allowed
