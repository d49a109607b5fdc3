"""DP-ST's reconstruction in the data's voice, and a user's own public triple corpus."""

import numpy as np
import pytest

from dpkit.backends.base import Backend
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST
from dpkit.dpst.reconstruct import INSTRUCTION, instruction, reconstruct, reconstruction_messages
from dpkit.models.voice import BANNED_OPENINGS
from dpkit.validate import ParameterError

CORPUS, EMBEDDER = toy_corpus(k=6)
TEXT = "The mayor opened a new bridge and the council approved the budget."


class _Remote(Backend):
    """A fake remote backend (the guard checks every content); answers with two lines."""

    name = "fake-remote"
    remote = True

    def __init__(self):
        super().__init__("fake", cache=None)
        self.seen = []

    def _generate(self, chats, params):
        self.seen.append((chats, params))
        return [" The bridge opened.\nSure, here is more."] * len(chats)


def _docs():
    m = DPST(CORPUS, 4.0, "document", slots=2, embedder=EMBEDDER, scorer=lambda t: np.array([len(x) for x in t], float))
    return m.privatize_batch([TEXT, TEXT], np.random.default_rng(0))


def test_reconstruction_asks_for_the_document_type_opens_the_answer_and_stops_at_a_new_line():
    backend = _Remote()
    docs = _docs()
    out = reconstruct(docs, backend, document_type="health news tweet")
    assert out == ["The bridge opened.", "The bridge opened."]
    (chats, params), = backend.seen
    assert chats[0][0]["content"].startswith("Write one health news tweet from the given triples.")
    assert chats[0][-1] == {"role": "assistant", "content": "Output text:"}
    assert params.stop == ("\n",) and params.banned == BANNED_OPENINGS
    # without a document type: the former instruction; without the voice: the former chat
    assert reconstruction_messages(docs[0])[0]["content"] == INSTRUCTION
    plain = _Remote()
    reconstruct(docs, plain, voice=False)
    (chats, params), = plain.seen
    assert chats[0][-1]["role"] == "user" and params.stop == ()
    with pytest.raises(ParameterError):
        instruction("  ")


def test_own_public_corpus_is_used_and_cached_by_its_texts(tmp_path):
    from dpkit.dpst.corpus import load_public_corpus

    texts = ["The clinic opened a new ward.", "Doctors recommend daily walks for heart health.",
             "The hospital hired more nurses.", "A new vaccine trial starts in spring.",
             "Researchers found that sleep improves memory.", "The city funds free flu shots."]
    corpus = load_public_corpus(k=2, texts=texts, folder=tmp_path)
    assert 0 < len(corpus) and corpus.meta.get("source") == "own" and corpus.k <= 2
    joined = " ".join(texts).lower()
    assert all(any(w in joined for w in str(t).lower().split()) for t in corpus.texts)
    again = load_public_corpus(k=2, texts=texts, folder=tmp_path)
    assert list(again.texts) == list(corpus.texts)
    for bad in ("one string", [], ["", " "]):
        with pytest.raises(ParameterError) as err:
            load_public_corpus(k=2, texts=bad, folder=tmp_path)
        assert err.value.name == "texts"
