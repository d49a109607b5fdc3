"""DP-ST's rewrite told the released label as its topic (``name_label=True``): post-processing of the
randomized-response label, named from the public label set; off by default."""

import functools

import numpy as np
import pytest

import dpkit.methods.dpst as method
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.dpst.reconstruct import INSTRUCTION, TOPIC_SENTENCE, reconstruction_messages
from dpkit.methods import Records
from dpkit.privacy.marks import Public
from dpkit.seeds import root_sequence
from dpkit.validate import ParameterError

CORPUS, EMBEDDER = toy_corpus(k=4)
TEXTS = ("The dentist filled the cavity.", "The surgeon removed the appendix.",
         "The dentist cleaned the teeth.", "The surgeon closed the wound.")


class Capture:
    name, remote, model = "capture", False, "capture"

    def __init__(self):
        self.chats = []

    def generate_batch(self, prompts, **generation):
        self.chats += list(prompts)
        return ["A text." for _ in prompts]

    def describe(self):
        return {"name": self.name, "model": self.model}


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(method, "load_public_corpus", lambda **kw: CORPUS)
    monkeypatch.setattr(method, "DPST", functools.partial(DPST, embedder=EMBEDDER))
    monkeypatch.setattr(method, "TopicDPST", functools.partial(method.TopicDPST, embedder=EMBEDDER))


def _release(name_label, backend):
    records = Records(TEXTS, (0, 1, 0, 1), ("Dental", "Surgery"))
    config = method.Config(epsilon=8.0, label_share=0.5, name_label=name_label, document_type="exam question",
                           k=CORPUS.k)
    return method.synthesize(records, config, None, backend, root_sequence(5))


def test_the_topic_is_each_records_released_label(toy):
    backend = Capture()
    release = _release(True, backend)
    assert len(backend.chats) == len(TEXTS)
    for chat, label in zip(backend.chats, release.labels()):
        assert TOPIC_SENTENCE.strip() in chat[0]["content"]
        assert chat[-1]["role"] == "user" and chat[-1]["content"].startswith(f"Topic: {label}. Input triples: [")


def test_off_by_default_no_topic_and_the_same_triples(toy):
    assert method.Config(epsilon=8.0).name_label is False
    plain, topic = Capture(), Capture()
    _release(False, plain), _release(True, topic)
    for a, b in zip(plain.chats, topic.chats):
        assert a[-1]["content"].startswith("Input triples: [") and TOPIC_SENTENCE.strip() not in a[0]["content"]
        assert a[-1]["content"].split("Input triples: ", 1)[1] == b[-1]["content"].split("Input triples: ", 1)[1]


def test_the_label_must_be_a_public_mark():
    doc = DPST(CORPUS, 4.0, "document", slots=2, embedder=EMBEDDER).privatize("The dentist filled a tooth.",
                                                                           np.random.default_rng(0))
    assert reconstruction_messages(doc)[0]["content"] == INSTRUCTION
    with pytest.raises(ParameterError):
        reconstruction_messages(doc, label="Dental")  # a plain str is not a mark
    with pytest.raises(ParameterError):
        method.Config(epsilon=8.0, name_label="yes")


def test_a_rewrite_that_only_echoes_the_examples_is_replaced_by_the_released_triples(toy):
    class Echo(Capture):
        def generate_batch(self, prompts, **generation):
            return ["Fans celebrated in the square. The coach praised the players."] * len(prompts)

    release = _release(False, Echo())
    for text in release.texts():
        assert "coach" not in text.lower() and text  # the document's triples, joined as text
