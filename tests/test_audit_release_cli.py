"""``dpkit audit release``: the synth path plus canaries, JSON out, resume, exit 2 on bad flags."""

import json

import pytest

import dpkit.backends
from dpkit.cli import main

SAMPLE = "data/own_data_sample.csv"
BASE = ["audit", "release", "kps", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
        "--epsilon", "4", "--smoke", "--json", "--canaries", "64", "--scorers", "ngram,chars"]


class FakeBackend:
    name, remote, model = "fake", False, "fake"

    def generate_batch(self, prompts, **generation):
        return [f"synthetic text {len(str(p))}" for p in prompts]

    def describe(self):
        return {"name": "fake", "model": "fake"}


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: FakeBackend())


def test_prints_the_result_and_resumes_to_the_same(fake, tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(BASE + ["--out", str(out)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["method"] == "kps" and first["canaries"] == 64 and first["verdict"] == "not refuted"
    assert first["claimed_epsilon"] == 4.0 and first["neighbouring"] == "add/remove"
    assert (out / "run" / "release" / "synthetic.jsonl").exists() and (out / "audit.json").exists()
    assert json.loads((out / "audit_result.json").read_text())["epsilon_lower_bound"] == first["epsilon_lower_bound"]
    assert main(BASE + ["--out", str(out)]) == 0          # a finished run: same audit, nothing regenerated
    second = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in second.items() if k != "seconds"} == {k: v for k, v in first.items() if k != "seconds"}
    texts = [line.split(",")[0] for line in open(SAMPLE, encoding="utf-8").read().splitlines()[1:]]
    printed = json.dumps(first)
    assert not any(t and t in printed for t in texts)


@pytest.mark.parametrize("flags,needle", [(["--canaries", "1"], "--canaries"), (["--set", "bogus=1"], "--set"),
                                          (["--epsilon", "-1"], "--epsilon"), (["--set", "N=abc"], "abc"),
                                          (["--scorers", "ngram,bogus"], "scorers")])
def test_bad_flags_exit_2_and_write_nothing(fake, tmp_path, capsys, flags, needle):
    out = tmp_path / "audit"
    assert main(BASE + flags + ["--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not out.exists()


def test_another_audit_in_the_same_folder_is_refused(fake, tmp_path, capsys):
    out = tmp_path / "audit"
    assert main(BASE + ["--out", str(out)]) == 0
    capsys.readouterr()
    assert main(BASE[:-4] + ["--canaries", "32", "--scorers", "ngram,chars", "--out", str(out)]) == 2
    assert "other settings" in capsys.readouterr().err


def test_set_changes_the_method_configuration(fake, tmp_path, capsys):
    assert main(BASE + ["--set", "n_per_class=1", "--out", str(tmp_path / "audit")]) == 0
    assert json.loads(capsys.readouterr().out)["release_records"] == 3      # one text per label


def test_text_report_gives_the_three_analyses(fake, tmp_path, capsys):
    flags = [f for f in BASE if f != "--json"] + ["--strategy", "split", "--out", str(tmp_path / "audit")]
    assert main(flags) == 0
    text = capsys.readouterr().out
    assert "Steinke et al. one-run bound" in text and "f-DP one-run bound" in text and "mu >=" in text
    assert "split" in text and not text.lstrip().startswith("{")
    saved = json.loads((tmp_path / "audit" / "audit_result.json").read_text())
    assert saved["strategy"] == "split" and set(saved["analyses"]) == {"steinke", "fdp", "gdp"}
    assert saved["gdp_mu_lower_bound"] >= 0 and len(saved["gdp_epsilon_curve"]) == 5


def test_echo_canaries_repeated_through_the_cli(fake, tmp_path, capsys):
    out = tmp_path / "audit"
    flags = [f if f != "64" else "16" for f in BASE] + ["--canary-design", "echo", "--repetitions", "2"]
    assert main(flags + ["--out", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["canary_design"] == "echo" and result["repetitions"] == 2 and result["canaries"] == 16
    assert result["verdict"] == "not refuted"
    settings = json.loads((out / "audit.json").read_text())["settings"]
    assert settings["canary_design"] == "echo" and settings["repetitions"] == 2
    assert main(flags[:-4] + ["--out", str(tmp_path / "bad"), "--repetitions", "0"]) == 2
    assert "--repetitions" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    # copies that cannot fit in memory: refused by name before audit.json is written (10^9 once filled 20 GB and
    # the kernel killed the run without a message; the bad-input sweep of 29 Nov 2026)
    assert main(flags[:-4] + ["--out", str(tmp_path / "huge"), "--repetitions", str(10 ** 9)]) == 2
    error = capsys.readouterr().err
    assert "--repetitions" in error and "GiB" in error and not (tmp_path / "huge").exists()
