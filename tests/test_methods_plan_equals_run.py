"""Each method declares its privacy charges once: ``--plan`` and a run charge the same ledger.

For every method, the ledger ``dpkit synth METHOD --plan`` prints (from public
facts alone) must equal, entry by entry, the ledger the run writes to its
manifest: the same names, mechanisms, neighbouring relation, unit, sensitivity,
spend (epsilon, rho) and composition. The runs use the bundled local models for
what reads private data (private prediction's decoding, DP-KPS's embedder, DP-ST's
parser); DP-KPS and DP-ST write their texts with a fake generator (post-processing).
"""

import json

import pytest

import dpkit.backends
from dpkit.cli import build_parser, main
from dpkit.methods import METHODS, METHOD_NAMES
from dpkit.methods.request import plan_release

SAMPLE = "data/own_data_sample.csv"
LABELS = "billing,delivery,product"
ROWS = "60"  # the sample's row count, declared (public)
# pp decodes every kept row on the local model: it reads the first 4 rows of each label of SAMPLE, still declared
# as 60 rows, so the smoke rule keeps each row with probability 48/60 as it does on SAMPLE (a quarter of the decoding)
INPUTS = {"pp": "tests/data/own_data_small.csv"}  # every other method: SAMPLE


class FakeBackend:
    name, remote, model = "fake", False, "fake"

    def generate_batch(self, prompts, **generation):
        return [f"synthetic text {len(str(p))}" for p in prompts]

    def describe(self):
        return {"name": "fake", "model": "fake"}


def flags(method, *extra):
    return ["synth", method, "--label-column", "label", "--labels", LABELS, "--epsilon", "4", "--smoke",
            "--rows", ROWS, "--seed", "3", *extra]


def comparable(entries):
    return [{key: entry[key] for key in ("label", "mechanism", "neighbouring", "unit", "measure", "composition",
                                         "count", "groups", "rho", "contract")} for entry in entries]


@pytest.mark.parametrize("method", METHOD_NAMES)
def test_the_plan_and_the_run_charge_the_same_ledger(tmp_path, method, monkeypatch):
    if set(METHODS[method].backends) - {"local"}:  # its model sees only privatized text: a fake one writes it
        monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: FakeBackend())  # (pp decodes itself)
    planned = plan_release(build_parser().parse_args(flags(method))).ledger.to_dict()["entries"]
    out = tmp_path / "run"
    assert main(flags(method, "--input", INPUTS.get(method, SAMPLE), "--text-column", "text", "--out", str(out))) == 0
    ran = json.loads((out / "private" / "manifest.json").read_text())["ledger"]["entries"]
    assert planned and comparable(planned) == comparable(ran)
    statement = METHODS[method].STATEMENT  # the report's relation and unit are the charges' own
    assert {(e["neighbouring"], e["unit"]) for e in ran} == {(statement.neighbouring, statement.unit)}
    report = (out / "release" / "privacy_report.md").read_text()
    assert f"| neighbouring relation | {statement.neighbouring} (one {statement.unit}) |" in report
    for entry in ran:  # every charge's sensitivity is a row of the report, as charged
        assert f"{entry['label']}: {entry['contract']['sensitivity']:.6g}" in report
