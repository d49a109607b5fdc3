"""privacy-4 N7: DP-ST's ``public_corpus`` is trusted, and the report did not state the assumption.

Before: ``--set public_corpus=FILE`` with the input's own texts released "epsilon = 4, pure" while 35 of 36
released triples were clauses of private records; ``privacy_report.md`` named the file only inside the
configuration JSON, and a corpus path that IS the ``--input`` file was accepted. Now the report states the
file (path and SHA-256), that the data owner declared it public and that the guarantee does not hold if it
holds private records; and a corpus that is the input file (by path or a link to it) is refused, exit 2,
before anything is read or written.
"""

from __future__ import annotations

import functools
import os

import pytest

import dpkit.methods.dpst as method
from dpkit.cli import main
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.methods import Records
from dpkit.methods.release import privacy_report, public_configuration
from dpkit.runs import file_digest
from dpkit.seeds import root_sequence
from test_runs_faults import SAMPLE

CORPUS, EMBEDDER = toy_corpus(k=4)
TEXTS = ("The dentist filled the cavity.", "The surgeon removed the appendix.")


class Fake:
    name, remote, model = "fake", False, "fake"

    def generate_batch(self, prompts, **generation):
        return ["A rewritten text." for _ in prompts]

    def describe(self):
        return {"name": self.name, "model": self.model}


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(method, "load_public_corpus", lambda **kw: CORPUS)
    monkeypatch.setattr(method, "DPST", functools.partial(DPST, embedder=EMBEDDER))
    monkeypatch.setattr(method, "TopicDPST", functools.partial(method.TopicDPST, embedder=EMBEDDER))


def _report(config):
    release = method.synthesize(Records(TEXTS, (0, 1), ("Dental", "Surgery")), config, None, Fake(),
                                root_sequence(3))
    return privacy_report(release, public_configuration(release, {"method": "dpst"}))


def test_n7_the_report_states_the_public_corpus_and_what_the_guarantee_rests_on(toy, tmp_path):
    corpus = tmp_path / "public.txt"
    corpus.write_text("The clinic opened a new ward.\nDoctors recommend daily walks.\n", encoding="utf-8")
    report = _report(method.Config(epsilon=4.0, k=CORPUS.k, public_corpus=str(corpus)))
    stated = [line for line in report.splitlines() if line.startswith("- public triple corpus:")]
    assert len(stated) == 1, report
    assert str(corpus) in stated[0] and f"SHA-256 {file_digest(corpus)}" in stated[0]
    assert "declared public" in stated[0] and "the guarantee does not hold if it contains private records" in stated[0]
    plain = _report(method.Config(epsilon=4.0, k=CORPUS.k))   # the packaged news articles: nothing to state
    assert "public triple corpus" not in plain


@pytest.mark.parametrize("how", ["the same path", "a link to it"])
def test_n7_a_public_corpus_that_is_the_input_file_is_refused_before_anything_is_written(
        tmp_path, monkeypatch, capsys, how):
    def no_run(*a, **k):
        raise AssertionError("the run started")

    monkeypatch.setattr("dpkit.methods.execution.execute", no_run)
    corpus = SAMPLE
    if how == "a link to it":
        corpus = str(tmp_path / "public.csv")
        os.symlink(os.path.abspath(SAMPLE), corpus)
    out = tmp_path / "run"
    assert main(["synth", "dpst", "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--smoke", "--seed", "1", "--set", f"public_corpus={corpus}",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("dpkit synth: public_corpus=") and "is the --input file" in err and not out.exists()
