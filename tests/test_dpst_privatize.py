"""Whole-document privatization: determinism, contracts, bad input, and the two leaks."""

import numpy as np
import pytest

from dpkit.backends.base import Backend
from dpkit.privacy.marks import Privatized, Public
from dpkit.dpst.hashing import toy_corpus
from dpkit.dpst.privatize import DPST, NoTriplesError, document_budget
from dpkit.dpst.reconstruct import reconstruct, reconstruction_messages
from dpkit.validate import ParameterError

CORPUS, EMBEDDER = toy_corpus(k=6)
PUBLIC = set(CORPUS.texts.tolist())
TEXT = "The mayor opened a new bridge and the council approved the budget."


def length_scorer(texts):
    return np.array([len(t) for t in texts], dtype=float)


def make(variant="neighbourhood", **kw):
    return DPST(CORPUS, 4.0, variant, embedder=EMBEDDER, scorer=length_scorer, **kw)


@pytest.mark.parametrize("variant", ["neighbourhood", "document"])
def test_same_seed_same_output_and_only_public_triples(variant):
    m = make(variant)
    a = m.privatize(TEXT, np.random.default_rng(7))
    b = m.privatize(TEXT, np.random.default_rng(7))
    assert a.triples == b.triples and set(a.triples) <= PUBLIC
    assert a.contract.epsilon == 4.0 and a.contract.neighbouring == "replace-one"


def test_contracts_state_their_relation():
    assert "same neighbourhoods" in make("neighbourhood").contract.unit
    doc = make("document", slots=3).contract
    assert doc.unit.startswith("document") and doc.measure == "pure" and doc.sensitivity == 1.0
    assert make("document", slots=4, neighbourhood_share=0.25).slot_epsilons == (0.25, 0.75)


def test_neighbourhood_variant_splits_budget_over_triples():
    doc = make().privatize(TEXT, np.random.default_rng(0), trace=True)
    n = len(doc.trace["extracted"])
    assert n == len(doc.triples) == 2 and doc.trace["epsilon_per_triple"] == pytest.approx(4.0 / n)


@pytest.mark.parametrize("variant", ["neighbourhood", "document"])
@pytest.mark.parametrize("text", ["", "   ", "Wow!!!", "Der Hund beißt den Mann."])
def test_no_triple_never_returns_the_raw_text(variant, text):
    doc = make(variant).privatize(text, np.random.default_rng(0))
    assert doc.raw_text is None and doc.triples and set(doc.triples) <= PUBLIC
    assert text.strip() == "" or text not in doc.text


@pytest.mark.parametrize("variant", ["neighbourhood", "document"])
def test_no_triple_can_raise_instead(variant):
    with pytest.raises(NoTriplesError):
        make(variant, on_empty="error").privatize("Wow!!!", np.random.default_rng(0))


def test_broken_variant_hook_does_leak_the_raw_text():
    # A text from which no triple is extracted (the short-text patterns find none in it).
    doc = make(bug="raw_text_fallback").privatize("Hmm, wow!!!", np.random.default_rng(0))
    assert doc.text == "Hmm, wow!!!"


def test_document_variant_output_length_is_fixed():
    m = make("document", slots=3)
    rng = np.random.default_rng(0)
    texts = ["", "Wow.", TEXT, " ".join([TEXT] * 30)]
    assert [len(d.triples) for d in m.privatize_batch(texts, rng)] == [3, 3, 3, 3]


def test_output_does_not_depend_on_input_length_beyond_triples():
    m = make()
    short = TEXT
    long = TEXT + " " + " ".join(["Wow!"] * 300)  # 300 more words, no more triples
    a = m.privatize(short, np.random.default_rng(3))
    b = m.privatize(long, np.random.default_rng(3))
    assert a.triples == b.triples


def test_neighbourhood_variant_caps_triples():
    m = make(max_triples=1)
    assert len(m.privatize(TEXT, np.random.default_rng(0)).triples) == 1


class RecordingRemote(Backend):
    """A fake *remote* backend: the guard refuses any unmarked content before it gets here."""

    name = "fake-remote"
    remote = True

    def __init__(self):
        super().__init__("fake", cache=None)
        self.seen = []

    def _generate(self, chats, params):
        self.seen.append((chats, params))
        return ["Output text: something public."] * len(chats)


def test_reconstruction_prompt_holds_only_privatized_triples_and_fixed_budget():
    backend = RecordingRemote()
    m = make("document", slots=2)
    docs = m.privatize_batch([TEXT, " ".join([TEXT] * 20)], np.random.default_rng(0))
    out = reconstruct(docs, backend, max_new_tokens=17)
    assert out == ["something public.", "something public."]
    (chats, params), = backend.seen
    assert params.max_new_tokens == 17
    for doc, chat in zip(docs, chats):
        assert TEXT not in "".join(msg["content"] for msg in chat)
        last_user = [m_ for m_ in chat if m_["role"] == "user"][-1]   # the chat ends with the opened answer
        assert all(t in last_user["content"] for t in doc.triples)
    messages = reconstruction_messages(docs[0])
    assert all(isinstance(m_["content"], (Public, Privatized)) for m_ in messages)
    assert isinstance(messages[-1]["content"], Privatized)


def test_raw_text_document_cannot_reach_a_model():
    doc = make(bug="raw_text_fallback").privatize("Wow!!!", np.random.default_rng(0))
    with pytest.raises(ParameterError, match="raw text"):
        reconstruction_messages(doc)


def test_bad_arguments():
    with pytest.raises(ParameterError, match="epsilon"):
        DPST(CORPUS, 0.0, embedder=EMBEDDER)
    with pytest.raises(ParameterError, match="epsilon"):
        DPST(CORPUS, -1.0, embedder=EMBEDDER)
    with pytest.raises(ParameterError, match="variant"):
        DPST(CORPUS, 1.0, "paper", embedder=EMBEDDER)
    with pytest.raises(ParameterError, match="slots"):
        DPST(CORPUS, 1.0, "document", slots=0, embedder=EMBEDDER)
    with pytest.raises(ParameterError, match="bug"):
        DPST(CORPUS, 1.0, "neighbourhood", bug="private_neighbourhood", embedder=EMBEDDER)
    with pytest.raises(ParameterError, match="corpus"):
        DPST(object(), 1.0)
    with pytest.raises(ParameterError, match="text"):
        make().privatize(None, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="rng"):
        make().privatize(TEXT, 0)
    with pytest.raises(ParameterError, match="base_epsilon"):
        document_budget(0, 10)


@pytest.mark.parametrize("words,budgets", [(575.21, (57.5, 287.5, 575)), (30.39, (3.0, 15.0, 30)),
                                           (141.70, (14.1, 70.5, 141)), (59.75, (5.9, 29.5, 59)),
                                           (208.62, (20.8, 104.0, 208))])
def test_document_budget_matches_table_4(words, budgets):
    assert tuple(document_budget(b, words) for b in (0.1, 0.5, 1.0)) == pytest.approx(budgets)


@pytest.mark.slow
def test_end_to_end_with_local_models(tmp_path):
    import time

    from dpkit.dpst.corpus import load_public_corpus

    corpus = load_public_corpus(k=5, n_articles=10, folder=tmp_path)
    start = time.perf_counter()
    again = load_public_corpus(k=5, n_articles=10, folder=tmp_path)
    assert time.perf_counter() - start < 2.0 and list(again.texts) == list(corpus.texts)
    for variant in ("neighbourhood", "document"):
        m = DPST(corpus, 10.0, variant)  # real MiniLM, LM-perplexity ties
        doc = m.privatize(TEXT, np.random.default_rng(0))
        assert set(doc.triples) <= set(corpus.texts.tolist())
    text, = reconstruct([doc], "local", max_new_tokens=16)
    assert isinstance(text, str) and text


class BatchDependentEmbedder:
    """Like the hashing embedder, but each row moves in its last bits with the size of the call
    (what a padded transformer batch does); a document embedded alone must not see it."""

    dim = EMBEDDER.dim

    def encode(self, texts, **_):
        rows = EMBEDDER.encode(texts)
        return rows * np.float32(1 + 1e-7 * len(rows))


@pytest.mark.parametrize("variant", ["neighbourhood", "document"])
def test_a_document_is_prepared_as_if_alone(variant):
    other = "The river flooded the old town and the army built a wall. Farmers lost their crops."
    m = DPST(CORPUS, 4.0, variant, embedder=BatchDependentEmbedder(), scorer=length_scorer)
    alone, together = m.prepare([TEXT]), m.prepare([TEXT, other])
    assert together.triples[0] == alone.triples[0]
    assert np.array_equal(together.embeddings[:len(alone.embeddings)], alone.embeddings)


@pytest.mark.parametrize("variant", ["neighbourhood", "document"])
def test_one_document_does_not_move_another_documents_output(variant):
    m = make(variant)
    first = m.privatize_batch([TEXT, "Wow!!!"], np.random.default_rng(3))
    second = m.privatize_batch(["The dog chased the cat across the garden and the cat climbed a tree.", "Wow!!!"],
                               np.random.default_rng(3))
    assert first[1].triples == second[1].triples


@pytest.mark.parametrize("variant", ["neighbourhood", "document"])
def test_a_long_document_is_cut_before_parsing(variant):
    m = make(variant, max_chars=len(TEXT))
    huge = TEXT + " The senator signed the bill." * 40_000   # 1.2 MB: over spaCy's limit uncut
    docs = m.privatize_batch([TEXT, huge], np.random.default_rng(0), trace=True)
    assert docs[0].trace["extracted"] == docs[1].trace["extracted"]
    assert str(len(TEXT)) in m.public_rules["long_document"]
    assert len(make(variant).privatize(huge, np.random.default_rng(0)).triples) >= 1   # default cap 20,000
    with pytest.raises(ParameterError, match="max_chars"):
        make(variant, max_chars=2_000_000)


def test_released_documents_are_immutable_and_cannot_be_built_by_hand():
    from dataclasses import FrozenInstanceError

    from dpkit.dpst.privatize import PrivateDocument
    from dpkit.privacy import PrivacyLedger

    ledger = PrivacyLedger()
    m = make("document", slots=2)
    doc = m.privatize(TEXT, np.random.default_rng(0), ledger=ledger)
    assert isinstance(doc.triples, tuple) and all(type(t) is Privatized for t in doc.triples)
    (entry,) = ledger.entries
    assert entry["composition"] == "parallel" and entry["groups"] == 1
    assert doc.triples[0].provenance[0]["ledger_entry"]["label"] == entry["label"]
    with pytest.raises(FrozenInstanceError):
        doc.triples = doc.triples + ("private text",)
    with pytest.raises(ValueError):
        doc.corpus_ids[0] = 0
    with pytest.raises(ParameterError, match="Privatized"):
        PrivateDocument(("Jane Doe has HIV",), np.zeros(1, np.int64), m.contract)
    with pytest.raises(ParameterError, match="tuple"):
        PrivateDocument(["Jane Doe has HIV"], np.zeros(1, np.int64), m.contract)
