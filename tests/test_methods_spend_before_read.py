"""``dpkit synth``: every ledger entry is on disk before the first private read it pays for.

The readers of private data are wrapped (DP-KPS: the vocabulary histogram and the
keyphrase matching of the class DP-KDEs; DP-ST: triple extraction and the label's
randomized response); each wrapper reads the run's manifest from disk when it is
called and notes which charges the ledger there already holds.  A fake text
generator stands in for the LLM.
"""

import json

import pytest

import dpkit.backends
import dpkit.kps.pipeline as kps_pipeline
from dpkit.cli import main
from dpkit.dpst.privatize import DPST
from dpkit.methods.labels import RandomizedResponse

SAMPLE = "data/own_data_sample.csv"


class FakeBackend:
    name, remote, model = "fake", False, "fake"

    def generate_batch(self, prompts, **generation):
        return [f"synthetic text {len(str(p))}" for p in prompts]

    def describe(self):
        return {"name": "fake", "model": "fake"}


def on_disk(out):
    manifest = json.loads((out / "private" / "manifest.json").read_text())
    return [entry["label"] for entry in (manifest.get("ledger") or {}).get("entries", [])]


def watch(monkeypatch, owner, name, out, log, reader):
    real = getattr(owner, name)

    def wrapped(*args, **kwargs):
        log.append((reader, on_disk(out)))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)


def synth(out, method, *extra):
    return main(["synth", method, "--input", SAMPLE, "--text-column", "text", "--label-column", "label",
                 "--epsilon", "4", "--out", str(out), "--smoke", *extra])


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    monkeypatch.setattr(dpkit.backends, "get_backend", lambda *a, **k: FakeBackend())


def first_read(log, reader):
    return next(entries for name, entries in log if name == reader)


def test_kps_charges_before_it_reads(tmp_path, monkeypatch):
    out, log = tmp_path / "run", []
    watch(monkeypatch, kps_pipeline, "private_vocabulary", out, log, "vocabulary")
    watch(monkeypatch, kps_pipeline, "document_keyphrases", out, log, "kde")
    assert synth(out, "kps") == 0
    assert first_read(log, "vocabulary") == ["kps: private vocabulary"]
    kde = first_read(log, "kde")
    assert kde[0] == "kps: private vocabulary" and len(kde) >= 2
    assert all(label.startswith("kps: DP-KDE") for label in kde[1:])
    assert kde == on_disk(out)  # nothing was charged after the last read


@pytest.mark.parametrize("variant, text_charge", [("topic", "dpst: topic triples"),
                                                  ("document", "dpst: document-level triples")])
def test_dpst_charges_before_it_reads(tmp_path, monkeypatch, variant, text_charge):
    """The topic variant's randomized response over neighbourhoods reads the private triples too: it is
    told apart from the label's by the mechanism's name."""
    out, log = tmp_path / "run", []
    watch(monkeypatch, DPST, "prepare", out, log, "triples")
    real_sample = RandomizedResponse.sample

    def sample(self, category, rng):
        log.append(("label" if self.name == "label" else "topic", on_disk(out)))
        return real_sample(self, category, rng)

    monkeypatch.setattr(RandomizedResponse, "sample", sample)
    assert synth(out, "dpst", "--set", f"variant={variant}") == 0
    assert first_read(log, "triples") == [text_charge]
    assert first_read(log, "label") == [text_charge, "dpst: label by randomized response"]
    if variant == "topic":
        assert first_read(log, "topic") == [text_charge]
    else:
        assert not [reader for reader, _ in log if reader == "topic"]
