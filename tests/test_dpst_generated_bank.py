"""DP-ST's generated public bank (``--set public_bank=generated``): written by the model from the public document
type and label set only (no record in any prompt), seeded from the run's seed tree (a resume reads it back),
stated in the report; and releases with different seeds differ."""

import functools
import numpy as np
import pytest

import dpkit.methods.dpst as method
from dpkit.cli import main
from dpkit.dpst.corpus import TripleBank, build_triple_bank, cluster_bank
from dpkit.dpst.generated_bank import bank_prompts, generated_bank_texts
from dpkit.dpst.hashing import HashEmbedder
from dpkit.methods import Records
from dpkit.methods.budget import open_ledger
from dpkit.methods.release import privacy_report, public_configuration
from dpkit.runs import Run
from dpkit.seeds import child, root_sequence
from dpkit.validate import ParameterError

EMBEDDER = HashEmbedder(32)
MARKER = "zorbquux"  # a word of every private record: it may reach no prompt
TEXTS = (f"The {MARKER} dentist filled the cavity.", f"The {MARKER} surgeon removed the appendix.",
         f"The {MARKER} dentist cleaned the teeth.", f"The {MARKER} surgeon closed the wound.")
PUBLIC_WORDS = ("nurse checked the chart", "doctor ordered a scan", "patient booked a visit",
                "dentist polished the crown", "surgeon washed the hands", "team planned the operation")


def _content(prompt) -> str:
    return str(prompt) if isinstance(prompt, str) else " ".join(str(m["content"]) for m in prompt)


class Recorder:
    """A backend that records every prompt; a public-bank prompt gets a sentence chosen by the seed, a rewrite
    prompt its own input echoed (so the release shows which triples were drawn)."""

    name, remote, model = "recorder", False, "recorder"

    def __init__(self):
        self.prompts = []

    def generate_batch(self, prompts, **generation):
        self.prompts += [_content(p) for p in prompts]
        rng = np.random.default_rng(generation.get("seed", 0))
        out = []
        for p in prompts:
            if isinstance(p, str) and p.startswith("Write a"):
                words = PUBLIC_WORDS[int(rng.integers(len(PUBLIC_WORDS)))]
                out.append(f"The {words} on day {int(rng.integers(1000))}.")
            else:
                out.append("Rewritten: " + _content(p).rsplit("Input triples: ", 1)[-1])
        return out

    def describe(self):
        return {"name": self.name, "model": self.model}


class Refuse(Recorder):
    def generate_batch(self, prompts, **generation):
        raise AssertionError("a resumed run must read its public bank and its texts back, not write them again")


@pytest.fixture
def banks(monkeypatch):
    """The bank is clustered with the hashed embedder and no cache; every list of public texts is kept."""
    seen = []

    def load(k, n_articles, texts=None):
        seen.append(texts)
        bank = build_triple_bank(texts, embedder=EMBEDDER)
        return cluster_bank(TripleBank(bank.texts, bank.embeddings, bank.meta), min(k, len(bank)))

    monkeypatch.setattr(method, "load_public_corpus", load)
    monkeypatch.setattr(method, "TopicDPST", functools.partial(method.TopicDPST, embedder=EMBEDDER))
    return seen


CONFIG = method.Config(epsilon=8.0, document_type="exam question", k=3, public_bank="generated",
                       bank_texts_per_label=3)


def _run(folder):
    return Run(folder, seed=3, fsync=False, ledger=open_ledger(CONFIG))


def _release(seed, backend, texts=TEXTS, run=None):
    records = Records(texts, (0, 1, 0, 1), ("Dental", "Surgery"))
    config = CONFIG
    return method.synthesize(records, config, run, backend, root_sequence(seed))


def test_no_private_text_reaches_any_prompt_and_the_bank_prompts_are_the_public_rows(banks):
    backend = Recorder()
    release = _release(1, backend)
    assert backend.prompts and not any(MARKER in p.lower() for p in backend.prompts)
    bank_rows = [p for p in backend.prompts if p.startswith("Write a")]
    assert sorted(set(bank_rows)) == ["Write a exam question with Label: Dental.",
                                      "Write a exam question with Label: Surgery."]
    assert len(bank_rows) == 2 * 3  # bank_texts_per_label texts for each label
    assert not any(MARKER in t.lower() for t in banks[0])
    note = release.notes[-1]
    assert note.startswith("public triple bank: 6 texts (3 per label) written by recorder from the public document "
                           "type 'exam question' and the public label set 'Dental', 'Surgery' only")
    assert "no private record was read" in note
    report = privacy_report(release, public_configuration(release, {"method": "dpst"}))
    assert f"- {note}" in report.splitlines()  # the privacy report states what the bank was built from


def test_the_bank_does_not_depend_on_the_records(banks):
    other = ("A child drew a cat.", "The pilot landed the plane.", "Rain fell on the city.", "We ate rice.")
    _release(4, Recorder()), _release(4, Recorder(), texts=other)
    assert banks[0] == banks[1]


def test_releases_with_different_seeds_differ(banks):
    first, again, second = (_release(s, Recorder()).texts() for s in (7, 7, 8))
    assert first == again
    assert first != second
    assert banks[0] != banks[2]  # each seed writes its own bank


def test_releases_with_different_seeds_differ_on_the_news_bank_too(monkeypatch):
    from dpkit.dpst.hashing import toy_corpus

    corpus, embedder = toy_corpus(k=4)
    monkeypatch.setattr(method, "load_public_corpus", lambda **kw: corpus)
    monkeypatch.setattr(method, "TopicDPST", functools.partial(method.TopicDPST, embedder=embedder))
    records = Records(TEXTS, (0, 1, 0, 1), ("Dental", "Surgery"))
    config = method.Config(epsilon=8.0, document_type="exam question", k=corpus.k)
    first, second = (method.synthesize(records, config, None, Recorder(), root_sequence(s)).texts() for s in (7, 8))
    assert first != second


def test_a_resumed_run_reads_the_bank_back_and_a_reseeded_one_rebuilds_it(banks, tmp_path):
    first = _release(3, Recorder(), run=_run(tmp_path / "run"))
    resumed = _release(3, Refuse(), run=_run(tmp_path / "run"))  # writes no bank, no text
    rebuilt = _release(3, Recorder())
    assert banks[0] == banks[1] == banks[2] and len(banks[0]) == 6
    assert first.texts() == resumed.texts() == rebuilt.texts()
    assert (tmp_path / "run" / "seeds" / "public_bank.json").exists()


def test_the_bank_is_the_seeds_node_alone():
    node = child(root_sequence(3), method.BANK_NODE)
    written = generated_bank_texts(Recorder(), "exam question", ("Dental", "Surgery"), 4, node)
    assert written == generated_bank_texts(Recorder(), "exam question", ("Dental", "Surgery"), 4, node)
    assert written != generated_bank_texts(Recorder(), "exam question", ("Dental", "Surgery"), 4,
                                           child(root_sequence(4), method.BANK_NODE))


def test_the_bank_prompts_are_private_predictions_public_rows():
    from dpkit.privpred.prompts import document_template

    assert [str(p) for p in bank_prompts("exam  question", ("good_health", "Surgery"))] == \
        [document_template("exam question").public_message(label) for label in ("Good health", "Surgery")]
    assert str(bank_prompts("exam question", None)[0]) == \
        document_template("exam question", labelled=False).public_message()


def test_unlabelled_input_gets_one_unlabelled_prompt():
    assert [str(p) for p in bank_prompts("exam question", None)] == ["Write a exam question."]
    with pytest.raises(ParameterError) as err:
        bank_prompts("exam question", [])
    assert err.value.name == "label_texts"


@pytest.mark.parametrize("changes, name", [({"public_bank": "wiki"}, "public_bank"),
                                           ({"public_bank": "generated", "public_corpus": __file__}, "public_bank"),
                                           ({"bank_texts_per_label": 0}, "bank_texts_per_label")])
def test_bad_bank_settings_are_refused_by_name(changes, name):
    with pytest.raises(ParameterError) as err:
        method.Config(epsilon=8.0, **changes)
    assert err.value.name == name
    assert method.Config(epsilon=8.0).public_bank == "news"


def test_cli_refuses_an_unknown_bank_with_exit_2_and_writes_nothing(tmp_path, capsys):
    data = tmp_path / "in.csv"
    data.write_text("text,label\nA cat sat.,a\nA dog ran.,b\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["synth", "dpst", "--epsilon", "8", "--input", str(data), "--out", str(out), "--text-column", "text",
                 "--label-column", "label", "--set", "public_bank=wiki"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpkit synth: public_bank=") and "'news', 'generated'" in err and "Traceback" not in err
    assert not out.exists()
