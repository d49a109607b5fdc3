"""A fourth method is one file and one registry line (issue 49, aesthetics-4 6.1).

:mod:`toy_method` (in tests/) declares a whole method and its ``METHOD`` record;
the test adds its one line to :data:`dpkit.methods.registry.METHOD_MODULES`
and runs it through ``dpkit synth`` in this process with a fake backend: the
choices and help, ``--plan``, the run folder, the ledger (plan == run), the
release and its report, the resume, and the flags its record refuses.
Nothing in dpkit/ names the toy.
"""

import json
from pathlib import Path

import pytest

import dpkit.backends
from dpkit.cli import build_parser, main
from dpkit.methods import registry
from dpkit.methods.release import RELEASE_FILES
from dpkit.methods.request import plan_release

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "data/own_data_sample.csv"
LABELS = "billing,delivery,product"


class FakeBackend:
    name, remote, model = "fake", False, "fake"

    def __init__(self):
        self.prompts = []

    def generate_batch(self, prompts, **generation):
        self.prompts += prompts
        return [f"synthetic text {len(self.prompts) - len(prompts) + i}" for i in range(len(prompts))]

    def describe(self):
        return {"name": "fake", "model": "fake"}


@pytest.fixture
def toy(monkeypatch):
    """The toy's one registry line, and a fake backend for its texts."""
    monkeypatch.setitem(registry.METHOD_MODULES, "toy", "toy_method")
    backend = FakeBackend()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    return backend


def flags(*extra):
    return ["synth", "toy", "--label-column", "label", "--labels", LABELS, "--epsilon", "2", "--smoke",
            "--rows", "60", "--seed", "1", *extra]


def comparable(entries):
    return [{key: entry[key] for key in ("label", "mechanism", "neighbouring", "unit", "measure", "composition",
                                         "count", "groups", "rho", "contract")} for entry in entries]


def test_the_toy_method_runs_end_to_end_through_dpkit_synth(tmp_path, toy, capsys):
    from dpkit.methods import METHOD_NAMES, METHODS

    assert METHOD_NAMES[-1] == "toy" and METHODS["toy"].title == "Toy (noisy label counts)"
    synth = build_parser()._subparsers._group_actions[0].choices["synth"]
    assert "toy" in next(a for a in synth._actions if a.dest == "method").choices

    assert main(flags("--plan")) == 0  # reads no data
    plan = capsys.readouterr().out
    assert "toy: label counts" in plan and "texts in the release: 6 (2 x the number of labels" in plan
    planned = plan_release(build_parser().parse_args(flags("--plan"))).ledger.to_dict()["entries"]

    out = tmp_path / "run"
    run = flags("--input", SAMPLE, "--text-column", "text", "--out", str(out))
    assert main(run) == 0
    assert "dpkit synth toy: 6 synthetic records" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "release").iterdir()) == sorted(RELEASE_FILES)
    records = [json.loads(line) for line in (out / "release" / "synthetic.jsonl").read_text().splitlines()]
    assert len(records) == 6 and {r["label"] for r in records} == set(LABELS.split(","))
    assert len(toy.prompts) == 6 and all("about" in p for p in toy.prompts)  # label names and noisy counts only
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    ran = manifest["ledger"]["entries"]
    assert planned and comparable(planned) == comparable(ran)  # the plan and the run charge the same ledger
    assert ran[0]["groups"] == 3 and ran[0]["contract"]["epsilon"] == 2.0
    report = (out / "release" / "privacy_report.md").read_text()
    assert "# Privacy report: Toy (noisy label counts)" in report
    assert "| neighbouring relation | add/remove (one document) |" in report and "toy: label counts: 1" in report
    config = json.loads((out / "release" / "config.json").read_text())
    assert config["method"] == "toy" and config["method_config"]["texts_per_label"] == 2
    assert config["epsilon"] == 2.0 and config["delta"] == 0

    before = {p: p.read_bytes() for p in sorted((out / "release").iterdir())}
    assert main(run) == 0  # finished: the same command changes nothing
    assert "already complete" in capsys.readouterr().out
    assert before == {p: p.read_bytes() for p in sorted((out / "release").iterdir())}


@pytest.mark.parametrize("extra,flag", [(("--delta", "1e-6"), "--delta"), (("--executor", "ray"), "--executor"),
                                        (("--backend", "openai", "--set", "texts_per_label=0"), "texts_per_label")])
def test_the_toy_records_rules_are_the_ones_the_cli_applies(tmp_path, toy, capsys, extra, flag):
    out = tmp_path / "run"
    assert main(flags("--input", SAMPLE, "--text-column", "text", "--out", str(out), *extra)) == 2
    assert flag in capsys.readouterr().err and not out.exists()


def test_register_method_adds_a_method_once(monkeypatch):
    from dpkit.methods import get_method, register_method
    from dpkit.validate import ParameterError

    monkeypatch.setattr(registry, "METHOD_MODULES", dict(registry.METHOD_MODULES))
    register_method("toy", "toy_method")
    assert get_method("toy").name == "toy" and registry.method_names()[-1] == "toy"
    with pytest.raises(ParameterError) as info:
        register_method("toy", "another_module")
    assert info.value.name == "name"
    monkeypatch.setitem(registry.METHOD_MODULES, "wrong", "toy_method")  # a module whose record is not "wrong"
    with pytest.raises(ParameterError, match="METHOD = Method"):
        get_method("wrong")


def test_nothing_in_dpkit_names_the_toy():
    """The toy touches no dpkit file: adding a method is its module and its registry line."""
    named = [p.relative_to(ROOT).as_posix() for p in (ROOT / "dpkit").rglob("*.py")
             if "toy_method" in p.read_text(encoding="utf-8") or "noisy label counts" in p.read_text(encoding="utf-8")]
    assert named == []
