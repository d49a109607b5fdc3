"""``dpkit audit release --command / --python``: any generator as a black box, bad input exits 2."""

import json
import re
import sys
import warnings

import pytest

from dpkit.audit.release.blackbox import command_generator, python_generator
from dpkit.cli import main
from dpkit.methods import Records
from dpkit.validate import ParameterError

SAMPLE = "data/own_data_sample.csv"

# a generator script: copies every 2nd record of its input (CSV or JSONL) and writes JSON Lines
SCRIPT = '''
import csv, json, sys
source, target = sys.argv[1], sys.argv[2]
if source.endswith(".csv"):
    rows = list(csv.DictReader(open(source, encoding="utf-8")))
else:
    rows = [json.loads(line) for line in open(source, encoding="utf-8")]
with open(target, "w", encoding="utf-8") as out:
    for i, row in enumerate(rows):
        text = row["text"] if i % 2 == 0 else "A short note about an order."
        out.write(json.dumps({"text": text, "label": row["label"]}) + "\\n")
'''

QUIET = '''
import sys
open(sys.argv[2], "w").write('{"text": "nothing to see"}\\n')
'''


def _script(tmp_path, body, name="gen.py"):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


def _args(*flags):
    return ["audit", "release", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
            "--epsilon", "1", "--canaries", "200", "--scorers", "ngram,chars", *flags]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_copying_script_is_refuted(tmp_path, capsys, fmt):
    script = _script(tmp_path, SCRIPT)
    command = f"{sys.executable} {script} {{input}} {{output}}"
    assert main(_args("--command", command, "--format", fmt, "--json", "--out", str(tmp_path / "a"))) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["verdict"] == "refuted" and result["epsilon_lower_bound"] > 1
    assert result["release_records"] == 60 + result["canaries_included"]
    assert json.loads((tmp_path / "a" / "audit_result.json").read_text())["verdict"] == "refuted"


def test_an_input_independent_script_is_not_refuted(tmp_path, capsys):
    script = _script(tmp_path, QUIET)
    assert main(_args("--command", f"{sys.executable} {script} {{input}} {{output}}")) == 0
    text = capsys.readouterr().out
    # every canary scores the same against a constant release: the attack has no signal (AUROC exactly 0.5). The
    # guesses among tied scores are drawn at random, so a few may be right by chance and the bound may sit a
    # little above 0 (it did in 1 of many runs: a flaky "epsilon >= 0.000" was asserted here); it stays far
    # below the claim
    bound = float(re.search(r"Steinke et al. one-run bound: +epsilon >= ([0-9.]+)", text).group(1))
    assert "verdict: not refuted" in text and "AUROC 0.500" in text and bound < 0.5, text


def copy_every_third(rows):
    return [r if i % 3 == 0 else {"text": "filler", "label": r["label"]} for i, r in enumerate(rows)]


def test_a_python_callable_is_audited(capsys, monkeypatch):
    monkeypatch.syspath_prepend("tests")
    assert main(_args("--python", "test_audit_release_blackbox:copy_every_third", "--json")) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "refuted"


@pytest.mark.parametrize("flags,needle", [
    (["--command", "echo no placeholders"], "{input} and {output}"),
    (["--command", "no-such-program-dpkit {input} {output}"], "on PATH"),
    (["--command", f"{sys.executable} -c 'import sys; sys.exit(3)' {{input}} {{output}}"], "exited 3"),
    (["--command", f"{sys.executable} -c 'pass' {{input}} {{output}}"], "wrote none"),
    (["--command", f"{sys.executable} -c \"import sys; open(sys.argv[2], 'w').write('oops')\" {{input}} {{output}}"],
     "output line 1"),
    (["--python", "nomodule"], "module:function"),
    (["--python", "dpkit_no_such_module:f"], "importable"),
    (["--python", "json:no_such_function"], "callable"),
    (["--python", "json:dumps", "--command", "x {input} {output}"], "together"),
    (["--command", "x {input} {output}", "--neighbouring", "swap"], "--neighbouring"),
])
def test_bad_input_exits_2_with_a_clear_message(capsys, flags, needle):
    assert main(_args(*flags)) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_a_method_and_a_command_together_are_refused(capsys):
    argv = _args("--command", "x {input} {output}")
    argv.insert(2, "kps")
    assert main(argv) == 2 and "--command" in capsys.readouterr().err


def test_no_method_and_no_command_is_refused(capsys):
    assert main(_args()) == 2 and "method" in capsys.readouterr().err


def test_generators_as_functions(tmp_path):
    records = Records(("one text here", "two texts here"), (0, 1), ("a", "b"))
    script = _script(tmp_path, SCRIPT)
    out = command_generator(f"{sys.executable} {script} {{input}} {{output}}")(records)
    assert out[0] == {"text": "one text here", "label": "a"}
    assert python_generator("json:loads").__name__ == "loads"
    with pytest.raises(ParameterError, match="--format"):
        command_generator("x {input} {output}", fmt="xml")


def test_the_documented_python_path_works_and_the_old_one_warns():
    from dpkit.audit.release.audit import audit_release

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from dpkit.audit.release import audit_release as old
    assert old is audit_release
    assert any(issubclass(w.category, DeprecationWarning) and "dpkit.audit.release.audit" in str(w.message)
               for w in caught)


def test_a_saved_release_audit_joins_the_audit_report(tmp_path, capsys):
    from dpkit.audit import report
    from dpkit.audit.release.audit import report_row

    script = _script(tmp_path, SCRIPT)
    command = f"{sys.executable} {script} {{input}} {{output}}"
    assert main(_args("--command", command, "--out", str(tmp_path / "a"))) == 0
    row = report_row(json.loads((tmp_path / "a" / "audit_result.json").read_text()))
    assert row["passed"] is False and row["lower_bound"] > row["claimed_epsilon"] == 1.0
    ok, sentence = report.verdict([], [row])
    assert not ok and "release audit" in sentence
