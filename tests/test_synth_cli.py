"""`dpkit synth` contract: files, exit codes, nothing written on bad input, resume, configuration mismatch.

A fake text generator stands in for the LLM here (plumbing only); tests/test_synth_methods.py
runs every method on the bundled model.
"""

import dataclasses
import json

import pytest

import dpkit.backends
from dpkit.cli import main
from dpkit.methods.release import RELEASE_FILES

SAMPLE = "data/own_data_sample.csv"


class FakeBackend:
    name = "fake"
    remote = False
    model = "fake"

    def __init__(self, fail_after=None):
        self.calls = 0
        self.fail_after = fail_after

    def generate_batch(self, prompts, **generation):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            raise KeyboardInterrupt("simulated crash")
        return [f"synthetic text {len(str(p))} {generation.get('seed')}" for p in prompts]

    def describe(self):
        return {"name": "fake", "model": "fake"}


@pytest.fixture
def fake(monkeypatch):
    backend = FakeBackend()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: backend)
    return backend


def synth(out, *extra, method="kps", input=SAMPLE, epsilon="4"):
    return main(["synth", method, "--input", str(input), "--text-column", "text", "--label-column", "label",
                 "--epsilon", epsilon, "--out", str(out), "--smoke", *extra])


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv,needle", [
    (["kps", "--input", "missing.csv", "--text-column", "text", "--epsilon", "1"], "does not exist"),
    (["kps", "--input", SAMPLE, "--text-column", "body", "--epsilon", "1"], "['text', 'label']"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "0"], "--epsilon"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "nan"], "--epsilon"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "inf"], "--epsilon"),
    (["pp", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--delta", "1"], "--delta"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--delta", "1e-6"], "pure"),
    (["pp", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--backend", "openai"], "local model"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--labels", "a,b"], "--label-column"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--label-column", "label", "--labels", "billing",
      "--epsilon", "4"], "outside it"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--limit", "0"], "--limit"),
    (["kps", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--limit", "30"], "--rows"),
    (["pp", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--sample-fraction", "0"],
     "--sample-fraction"),
    (["dpst", "--input", SAMPLE, "--text-column", "text", "--epsilon", "4", "--sample-fraction", "0.5"],
     "replace-one"),
])
def test_bad_arguments_exit_2_and_write_nothing(tmp_path, capsys, argv, needle):
    out = tmp_path / "run"
    assert main(["synth", *argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize("data,needle", [
    (b"\x89PNG\x00\x00binary", "binary"), ("text,label\ncaf\xe9,a\n".encode("latin-1"), "UTF-8"),
    (b"text,label\na,b,c\n", "fields"), (b"", "empty"),
])
def test_bad_files_exit_2_and_write_nothing(tmp_path, capsys, data, needle):
    path = tmp_path / "in.csv"
    path.write_bytes(data)
    assert synth(tmp_path / "run", input=path) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_unknown_method_and_backend_exit_2(tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["synth", "nope", "--input", SAMPLE, "--text-column", "text", "--epsilon", "1", "--out", str(tmp_path / "r")])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        synth(tmp_path / "r", "--backend", "nope")
    assert info.value.code == 2
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("backend,variable", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_api_backend_without_key_exits_2_before_writing(tmp_path, capsys, monkeypatch, backend, variable):
    monkeypatch.delenv(variable, raising=False)
    out = tmp_path / "run"
    assert synth(out, "--backend", backend) == 2
    err = capsys.readouterr().err
    assert "--backend=" in err and variable in err and "Traceback" not in err
    assert not out.exists()


def test_backend_failure_mid_run_exits_1_and_keeps_the_run(tmp_path, capsys, monkeypatch):
    from dpkit.backends.base import BackendError

    class Failing(FakeBackend):
        def generate_batch(self, prompts, **generation):
            raise BackendError("the server keeps refusing")

    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: Failing())
    out = tmp_path / "run"
    assert synth(out) == 1
    err = capsys.readouterr().err
    assert "keeps refusing" in err and "rerun the same command" in err and "Traceback" not in err
    assert (out / "private").exists() and not (out / "release").exists()


def test_release_layout_resume_and_mismatch(tmp_path, capsys, fake):
    out = tmp_path / "run"
    assert synth(out) == 0
    summary = capsys.readouterr().out.strip().splitlines()
    assert len(summary) == 1 and "6 synthetic records" in summary[0] and "release mode" in summary[0]
    assert sorted(p.name for p in (out / "release").iterdir()) == sorted(RELEASE_FILES)
    records = [json.loads(line) for line in (out / "release" / "synthetic.jsonl").read_text().splitlines()]
    assert len(records) == 6 and all(set(r) == {"text", "label"} for r in records)
    assert {r["label"] for r in records} == {"delivery", "billing", "product"}
    config = json.loads((out / "release" / "config.json").read_text())
    assert config["labels"] == ["billing", "delivery", "product"] and config["randomness"] == "release"
    assert "input_sha256" not in json.dumps(config) and "seed" not in config
    report = (out / "release" / "privacy_report.md").read_text()
    assert report.startswith("Release mode") and "treated as public" in report
    assert (out / "private" / "manifest.json").exists() and (out / "private" / "seeds" / "keyphrases.json").exists()

    before = snapshot(out)
    assert synth(out) == 0  # finished: nothing changes
    assert "already complete" in capsys.readouterr().out
    assert snapshot(out) == before

    assert synth(out, epsilon="5") == 2
    err = capsys.readouterr().err
    assert "epsilon: 4.0 -> 5.0" in err
    other = tmp_path / "other.csv"
    other.write_text(open(SAMPLE).read().replace("parcel", "package"))
    assert synth(out, input=other) == 2
    assert "input file" in capsys.readouterr().err
    assert synth(out, "--seed", "3") == 2
    assert "randomness mode" in capsys.readouterr().err
    assert snapshot(out) == before
    (out / "release" / "synthetic.jsonl").write_text('{"text": "edited", "label": "billing"}\n')
    assert synth(out) == 2                  # the folder checks itself: an edited release is refused
    assert "release/synthetic.jsonl" in capsys.readouterr().err


def test_interrupted_run_resumes_without_new_noise(tmp_path, monkeypatch):
    out = tmp_path / "run"
    crashing = FakeBackend(fail_after=0)
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: crashing)
    assert synth(out, "--seed", "1") == 130   # Ctrl-C: one line with the resume command, no traceback
    assert not (out / "release").exists()
    seeds = (out / "private" / "seeds" / "keyphrases.json").read_bytes()
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: FakeBackend())
    assert synth(out, "--seed", "1") == 0
    assert (out / "private" / "seeds" / "keyphrases.json").read_bytes() == seeds
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumes"] == 1
    assert len(manifest["ledger"]["entries"]) == 2  # vocabulary + one parallel KDE entry: charged once


def test_reproducible_mode_repeats_and_says_so(tmp_path, fake):
    assert synth(tmp_path / "a", "--seed", "7") == 0
    assert synth(tmp_path / "b", "--seed", "7") == 0
    a, b = (tmp_path / x / "release" / "synthetic.jsonl" for x in "ab")
    assert a.read_bytes() == b.read_bytes()
    report = (tmp_path / "a" / "release" / "privacy_report.md").read_text()
    assert report.startswith("**Reproducible mode") and "NOT a differentially private release" in report
    assert "7" not in json.loads((tmp_path / "a" / "release" / "config.json").read_text()).values()


def test_smoke_on_100k_rows_and_numeric_labels(tmp_path, capsys, fake):
    path = tmp_path / "big.csv"
    path.write_text("text,label\n" + "".join(f"message number {i},{i % 3 + 1}\n" for i in range(100_000)))
    assert synth(tmp_path / "run", "--rows", "100000", input=path) == 0
    config = json.loads((tmp_path / "run" / "release" / "config.json").read_text())
    assert config["limit"] == 200 and config["labels"] == ["1", "2", "3"]
    assert config["rows"] == {"rule": "hash", "fraction": 0.002, "salt": "dpkit-rows-v1", "limit": 200,
                              "declared_rows": 100_000, "per_record": True, "max_rows": 2000}
    labels = {json.loads(x)["label"] for x in (tmp_path / "run" / "release" / "synthetic.jsonl").read_text().splitlines()}
    assert labels == {"1", "2", "3"}


def test_empty_texts_and_a_10mb_record_follow_the_public_rules(tmp_path, fake):
    path = tmp_path / "odd.csv"
    rows = ['"' + "long " * 2_000_000 + '",a', ",b", "NaN,a", "fine text here,b"]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    assert synth(tmp_path / "run", method="dpst", input=path) == 0
    lines = (tmp_path / "run" / "release" / "synthetic.jsonl").read_text().splitlines()
    assert len(lines) == 4  # one output per record, empty ones included


def test_summary_explains_a_guarantee_below_the_requested_epsilon():
    from dpkit.methods import pp
    from dpkit.methods.base import Release
    from dpkit.methods.cli import summary

    below = Release("pp", ({"text": "a"},), 3.54229, 1e-6, pp.STATEMENT, {}, reproducible=False)
    line = summary("pp", below, "runs/x", 4.0)
    assert "epsilon=3.54229 (below the requested 4" in line and "release mode" in line
    exact = Release("pp", ({"text": "a"},), 4.0, 1e-6, pp.STATEMENT, {}, reproducible=True)
    line = summary("pp", exact, "runs/x", 4.0)
    assert "epsilon=4," in line and "requested" not in line and "NOT a DP release" in line


def _planned_records(method, path, *extra):
    """The records ``dpkit synth`` would hand the method, from the CLI's own parser and planner."""
    import argparse

    from dpkit.methods.cli import register
    from dpkit.methods.request import plan

    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["synth", method, "--input", str(path), "--text-column", "text", "--label-column",
                              "label", "--epsilon", "4", "--out", "unused", *extra])
    p = plan(args)
    return p, [(t, p.records.label_set[y]) for t, y in zip(p.records.texts, p.records.labels)]


@pytest.mark.parametrize("method,extra", [("pp", ("--smoke", "--rows", "60")), ("kps", ("--limit", "30", "--rows", "60")),
                                          ("kps", ("--sample-fraction", "0.5")), ("pp", ("--limit", "10", "--rows", "60"))])
def test_a_limit_selects_records_by_a_per_record_rule(tmp_path, fake, method, extra):
    """privacy-2 F1: the first N rows changed TWO records when one row was prepended (stability 2 under
    add/remove). The per-record rule changes at most the added record, wherever it lands."""
    from collections import Counter

    lines = open(SAMPLE, encoding="utf-8").read().splitlines(keepends=True)
    rows = lines[1:]
    for k, new in enumerate(["A refund I was promised never arrived,billing\n", rows[-1], rows[0]]):
        bigger = tmp_path / f"plus{k}.csv"
        bigger.write_text(lines[0] + new + "".join(rows), encoding="utf-8")  # one row prepended (a duplicate for k > 0)
        p, before = _planned_records(method, SAMPLE, *extra)
        q, after = _planned_records(method, bigger, *extra)
        added, removed = Counter(after) - Counter(before), Counter(before) - Counter(after)
        assert sum(removed.values()) == 0 and sum(added.values()) <= 1
        assert 0 < len(before) < 60 and p.settings["rows"]["rule"] == "hash"
        assert p.params["rows"] == q.params["rows"]  # the public rule does not depend on the data


def test_the_first_rows_would_have_changed_two_records(tmp_path):
    """The regression the rule fixes, kept visible: a prefix of D and of D plus one row differs in two."""
    from collections import Counter

    from dpkit.data.selection import RowRule

    texts = [f"row {i}" for i in range(10)]
    prefix = RowRule("prefix", limit=5)
    a = Counter(texts[i] for i in prefix.select(texts, None))
    b = Counter((["new"] + texts)[i] for i in prefix.select(["new"] + texts, None))
    assert sum((a - b).values()) + sum((b - a).values()) == 2


def test_dpst_keeps_the_first_rows_under_replace_one(tmp_path, fake):
    p, records = _planned_records("dpst", SAMPLE, "--smoke")
    assert len(records) == 12 and p.settings["rows"] == {"rule": "prefix", "limit": 12}
    import csv

    with open(SAMPLE, encoding="utf-8", newline="") as handle:
        first = [row["text"] for row in csv.DictReader(handle)][:12]
    assert [t for t, _ in records] == first


def test_a_method_that_charges_more_than_its_configuration_is_refused(tmp_path, capsys, fake, monkeypatch):
    """The CLI gives the ledger the budget once; a charge beyond it raises before it is recorded, so no
    text is generated and no release is written."""
    from dpkit.methods import kps as kps_method

    fit = kps_method.fit_kps

    def overspending(texts, labels, names, vocabulary, embedder, config, rng, ledger):
        model = fit(texts, labels, names, vocabulary, embedder, config, rng, ledger)
        ledger.spend(model.vocabulary.contract, "kps: private vocabulary, again")  # beyond the configuration
        return model

    monkeypatch.setattr(kps_method, "fit_kps", overspending)
    out = tmp_path / "run"
    assert synth(out) == 2
    err = capsys.readouterr().err
    assert "over the budget epsilon=4" in err and "Traceback" not in err
    assert not (out / "release").exists() and fake.calls == 0
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    assert manifest["ledger"]["budget_epsilon"] == 4.0 and manifest["ledger"]["delta"] == 0.0


@pytest.mark.parametrize("method", ["kps", "dpst"])
def test_the_release_states_the_ledgers_composition(tmp_path, fake, method):
    from dpkit.privacy import PrivacyLedger

    out = tmp_path / "run"
    assert synth(out, method=method) == 0
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    ledger = PrivacyLedger.from_dict(manifest["ledger"])
    config = json.loads((out / "release" / "config.json").read_text())
    assert ledger.guarantee() == (config["epsilon"], config["delta"]) and ledger.budget_epsilon == 4.0
    report = (out / "release" / "privacy_report.md").read_text()
    assert "## Composition (the ledger)" in report
    assert all(f"| {e['label']} |" in report for e in ledger.entries)


def test_set_and_config_file_reach_every_parameter_and_are_recorded(tmp_path, fake, capsys):
    settings = tmp_path / "kps.toml"
    settings.write_text('n_per_class = 3\nL = 5\ndocument_type = "support ticket"\n', encoding="utf-8")
    out = tmp_path / "run"
    assert synth(out, "--config", str(settings), "--set", "n_per_class=1", "--set", "distinct=false") == 0
    config = json.loads((out / "release" / "config.json").read_text())["method_config"]
    assert (config["n_per_class"], config["L"], config["document_type"], config["distinct"]) == (
        1, 5, "support ticket", False)  # --set wins over the file; the file over the smoke preset
    assert len((out / "release" / "synthetic.jsonl").read_text().splitlines()) == 3  # 1 per label
    as_json = tmp_path / "pp.json"
    as_json.write_text(json.dumps({"top_k": None, "clip": 3}), encoding="utf-8")
    p, _ = _planned_records("pp", SAMPLE, "--smoke", "--config", str(as_json), "--set", "svt_threshold=0.5",
                            "--set", "svt_sigma=20")
    assert (p.config.top_k, p.config.clip, p.config.svt_threshold) == (None, 3.0, 0.5)
    assert p.params["method_config"]["svt_sigma"] == 20.0


@pytest.mark.parametrize("extra,needle", [
    (("--set", "no_such_knob=1"), "no_such_knob"), (("--set", "L=three"), "L='three' is invalid: must be an integer"),
    (("--set", "L=0"), "L=0"), (("--set", "epsilon=3"), "--epsilon"), (("--set", "L"), "key=value"),
    (("--set", "distinct=maybe"), "distinct='maybe' is invalid: must be true or false"),
    (("--set", "bandwidth=nan"), "bandwidth='nan' is invalid: must be a finite number"),
])
def test_bad_settings_exit_2_naming_the_key(tmp_path, capsys, fake, extra, needle):
    out = tmp_path / "run"
    assert synth(out, *extra) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not out.exists()


def test_bad_config_files_exit_2(tmp_path, capsys, fake):
    for name, text, needle in (("a.toml", "L = [", "TOML"), ("b.json", '{"L": "x"}', "L='x'"),
                               ("c.yaml", "L: 3", ".toml or .json"), ("d.json", '{"secret_key": 1}', "secret_key")):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        assert synth(tmp_path / "run", "--config", str(path)) == 2
        assert needle in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_plan_prints_config_spend_guarantee_and_size_without_reading_data(tmp_path, capsys, fake):
    argv = ["synth", "kps", "--epsilon", "4", "--plan", "--label-column", "label", "--labels",
            "billing,delivery,product", "--smoke", "--set", "n_per_class=2"]
    assert main(argv) == 0  # no --input, --text-column or --out: nothing is read or written
    text = capsys.readouterr().out
    assert '"n_per_class": 2' in text and "kps: private vocabulary" in text and "kps: DP-KDE of each class" in text
    assert "guarantee: epsilon = 4, delta = 0 (pure)" in text and "texts in the release: 6 " in text
    out = tmp_path / "run"
    assert synth(out, "--labels", "billing,delivery,product") == 0  # the run spends what the plan said
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    assert [e["label"] for e in manifest["ledger"]["entries"]] == ["kps: private vocabulary",
                                                                    "kps: DP-KDE of each class"]
    assert len((out / "release" / "synthetic.jsonl").read_text().splitlines()) == 6

    assert main(["synth", "pp", "--epsilon", "4", "--delta", "1e-6", "--plan", "--smoke"]) == 0
    from dpkit.methods import pp

    guarantee = pp.Config.smoke(4.0, delta=1e-6).guarantee()
    text = capsys.readouterr().out
    assert f"guarantee: epsilon = {guarantee['epsilon']:.6g}, delta = 1e-06" in text
    assert f"private prediction, r={guarantee['max_private_tokens']} " in text and "texts in the release: 1 " in text
    assert main(["synth", "dpst", "--epsilon", "4", "--plan", "--rows", "30", "--limit", "20"]) == 0
    assert "texts in the release: 20 " in capsys.readouterr().out
    assert main(["synth", "kps", "--epsilon", "4", "--plan", "--label-column", "label"]) == 2  # labels unknown
    assert "--labels" in capsys.readouterr().err


def test_plan_refuses_a_configuration_that_overspends(tmp_path, capsys, monkeypatch):
    from dpkit.methods import kps

    from dpkit.privacy import Charge

    real = kps.charges

    def overspending(config, n_labels, n_records=None):  # a plan that charges the vocabulary twice
        declared = real(config, n_labels, n_records)
        return (*declared, Charge("kps: private vocabulary, again", declared[0].contract))

    monkeypatch.setattr(kps, "METHOD", dataclasses.replace(kps.METHOD, charges=overspending))
    assert main(["synth", "kps", "--epsilon", "4", "--plan"]) == 2
    assert "--epsilon=4.0 is invalid" in (err := capsys.readouterr().err) and "over the budget" in err
    out = tmp_path / "run"
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: FakeBackend())
    assert synth(out) == 2  # the run's own planning refuses it before the run folder exists
    assert "over the budget" in capsys.readouterr().err and not out.exists()


def test_labels_accept_a_json_list(tmp_path, fake):
    path = tmp_path / "commas.csv"
    path.write_text('text,label\n"first text",a\n"second text","b,c"\n"third text",a\n', encoding="utf-8")
    out = tmp_path / "run"
    assert synth(out, "--labels", '["a", "b,c"]', input=path) == 0
    config = json.loads((out / "release" / "config.json").read_text())
    assert config["labels"] == ["a", "b,c"] and config["labels_declared"] is True


def test_errors_never_print_a_label_or_text_of_the_input(tmp_path, capsys, fake):
    """privacy-2 F7: an unknown label in the input was printed on stderr. Errors name rows and counts only."""
    path = tmp_path / "secret.csv"
    path.write_text("text,label\nA private sentence about SECRET-TEXT-QQQ,billing\nAnother one,SECRET-LABEL-XYZ\n",
                    encoding="utf-8")
    from dpkit.methods import METHOD_NAMES

    for method in METHOD_NAMES:
        assert synth(tmp_path / "run", "--labels", "billing,delivery", method=method, input=path) == 2
        err = capsys.readouterr().err
        assert "SECRET-LABEL-XYZ" not in err and "SECRET-TEXT-QQQ" not in err and "data row 2" in err
    assert not (tmp_path / "run").exists()
    from dpkit.methods import Records
    from dpkit.validate import ParameterError

    for call in (lambda: Records.from_strings(["SECRET-TEXT-QQQ"], ["SECRET-LABEL-XYZ"], ("a",)),
                 lambda: Records("SECRET-TEXT-QQQ"), lambda: Records(("ok", 3, "SECRET-TEXT-QQQ"))):
        with pytest.raises(ParameterError) as info:
            call()
        assert "SECRET" not in str(info.value)


@pytest.mark.slow
def test_pp_states_the_ledgers_composition(tmp_path):
    """Private prediction on the bundled model: the release's epsilon is the ledger's zCDP total at delta."""
    from dpkit.methods import pp
    from dpkit.privacy import PrivacyLedger

    out = tmp_path / "run"
    assert synth(out, "--delta", "1e-6", "--rows", "60", "--limit", "12", method="pp") == 0
    ledger = PrivacyLedger.from_dict(json.loads((out / "private" / "manifest.json").read_text())["ledger"])
    config = json.loads((out / "release" / "config.json").read_text())
    assert ledger.guarantee() == (config["epsilon"], config["delta"]) == (
        pp.Config.smoke(4.0, delta=1e-6).guarantee()["epsilon"], 1e-6)
    assert (ledger.budget_epsilon, ledger.delta) == (4.0, 1e-6)


def test_memory_bounds_are_recorded_but_a_resume_may_change_them(fake):
    from dataclasses import fields

    from dpkit.methods import pp

    if not pp.OUTPUT_NEUTRAL:
        pytest.skip("private prediction declares no output-neutral memory bounds")
    key = pp.OUTPUT_NEUTRAL[0]
    assert key in {f.name for f in fields(pp.Config)}
    a, _ = _planned_records("pp", SAMPLE, "--smoke")
    b, _ = _planned_records("pp", SAMPLE, "--smoke", "--set", f"{key}=3")
    assert getattr(b.config, key) == 3 and a.params == b.params  # the same run folder accepts either
