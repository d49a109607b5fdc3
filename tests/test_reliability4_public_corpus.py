"""reliability-4 C7 and C8: DP-ST's ``public_corpus`` file unbounded, and changed between a kill and the resume.

Before:
* C8: the corpus file's content changed between a kill (after the first charge) and the resume, same path:
  the run resumed without a word and released from the other corpus; ``config.json`` held only the path;
* C7: a 115 MB corpus (1.8 M lines) had no size bound and was read in full on every check and run.
Now the run binds the corpus's SHA-256 before its first charge, so a resume with another content under the
same path is refused naming it (the report states the digest: tests/test_privacy4_public_corpus.py); and a
corpus file over 16 MiB is refused by name before anything is read or written.
"""

from __future__ import annotations

import functools

import pytest

import dpkit.methods.dpst as method
from dpkit.cli import main
from dpkit.dpst.corpus import MAX_PUBLIC_BYTES
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.methods import Records
from dpkit.methods.budget import open_ledger
from dpkit.runs import Run, RunMismatchError
from dpkit.seeds import root_sequence

CORPUS, EMBEDDER = toy_corpus(k=4)
RECORDS = Records(("The dentist filled the cavity.", "The surgeon removed the appendix."), (0, 1),
                  ("Dental", "Surgery"))


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


def _run(folder, config):
    run = Run(folder, params={"method": "dpst", "epsilon": config.epsilon}, seed=1, fsync=False,
              ledger=open_ledger(config))
    try:
        return method.synthesize(RECORDS, config, run, Fake(), root_sequence(1)), run.manifest
    finally:
        run.close()


def test_c8_a_resume_with_another_corpus_under_the_same_path_is_refused(toy, tmp_path):
    corpus = tmp_path / "public.txt"
    corpus.write_text("The clinic opened a new ward.\nDoctors recommend daily walks.\n", encoding="utf-8")
    config = method.Config(epsilon=4.0, k=CORPUS.k, public_corpus=str(corpus))
    first, manifest = _run(tmp_path / "run", config)
    charged = len(first.ledger.entries)
    assert charged >= 1
    again, _ = _run(tmp_path / "run", config)                       # the same corpus: resumes as before
    assert again.records == first.records
    corpus.write_text("A different public text entirely.\nAnd another one.\n", encoding="utf-8")
    ledger = open_ledger(config)
    run = Run(tmp_path / "run", params={"method": "dpst", "epsilon": 4.0}, seed=1, fsync=False, ledger=ledger)
    try:
        with pytest.raises(RunMismatchError, match="public_corpus.sha256"):
            method.synthesize(RECORDS, config, run, Fake(), root_sequence(1))
        assert len(ledger.entries) == charged          # the resumed ledger: nothing charged by the refused resume
    finally:
        run.close()


def test_c7_a_corpus_file_over_the_bound_is_refused_by_name(tmp_path, capsys):
    big = tmp_path / "big.txt"
    line = b"A public sentence about the clinic and its new ward.\n"
    with open(big, "wb") as handle:
        handle.write(line * (MAX_PUBLIC_BYTES // len(line) + 1))
    assert big.stat().st_size > MAX_PUBLIC_BYTES
    assert main(["synth", "dpst", "--plan", "--epsilon", "4", "--smoke", "--set", f"public_corpus={big}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("dpkit synth: public_corpus=") and "at most 16 MiB" in err
