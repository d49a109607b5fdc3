"""Prompts are privatized by construction; evaluation helpers; CORAL (fake backend, random embeddings)."""

import numpy as np
import pytest

from dpkit.privacy import Laplace, PrivacyLedger
from dpkit.privacy.marks import PrivateTextError, Privatized, Public, release_texts
from dpkit.kps.evaluate import coral_loss, keyphrase_documents, train_classifier, accuracy
from dpkit.experiments.kps_corpora import MemoEmbedder, kps_corpus, only_llm_corpus, real_subset, split_client
from dpkit.kps.pipeline import KPSConfig, fit_kps
from dpkit.kps.prompts import class_prompt, kps_prompt
from dpkit.validate import ParameterError
from test_kps_pipeline import LABELS, NAMES, TEXTS, VOCAB, HashEmbedder


class EchoBackend:
    """Records prompts; answers with the prompt's last line (stands in for an LLM in plumbing tests)."""

    def __init__(self):
        self.seen = []

    def generate_batch(self, prompts, max_new_tokens=64, temperature=0.0, seed=0, **kw):
        self.seen += list(prompts)
        return [f"text {seed}: {p[-40:]}" for p in prompts]


def test_kps_prompt_is_privatized_and_never_names_the_class():
    cfg = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, S=3, N=8, L=3, n_features=32)
    model = fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), cfg, np.random.default_rng(0))
    backend = EchoBackend()
    corpus = kps_corpus(model, backend, Public("medical record"), 2, np.random.default_rng(1))
    assert len(corpus["texts"]) == 6 and corpus["labels"].tolist() == [0, 0, 1, 1, 2, 2]
    for prompt, seq in zip(backend.seen, corpus["sequences"]):
        assert isinstance(prompt, Privatized)
        assert all(type(term) is Privatized for term in seq) and all(term in prompt for term in seq)
        assert {p["source"] for p in prompt.provenance} == {"dpkit.kps"}
        assert len(prompt.provenance) == len(model.ledger.entries)
        assert not any(name in prompt for name in NAMES)
        assert "medical record" in prompt


def _terms(*terms):
    entry = PrivacyLedger().spend(Laplace(1.0, epsilon=1.0).contract, "test release")
    return release_texts(list(terms), entry)


def test_few_shot_examples_must_be_public_and_class_prompt():
    p = kps_prompt(_terms("a", "b"), Public("note"), examples=[Public("example one")])
    assert isinstance(p, Privatized) and "- example one" in p
    q = class_prompt(Public("note"), Public("cardiology"))
    assert isinstance(q, Public) and "cardiology" in q
    with pytest.raises(ParameterError):
        kps_prompt([], Public("note"))
    with pytest.raises(ParameterError):
        kps_prompt(_terms("a"), Public(""))


@pytest.mark.parametrize("call", [
    lambda: kps_prompt(["raw private text"], Public("note")),                       # unreleased terms
    lambda: kps_prompt(_terms("a"), "note"),                                        # plain document type
    lambda: kps_prompt(_terms("a"), Public("note"), examples=["a private record"]),  # plain example
    lambda: class_prompt(Public("note"), "a private description"),
    lambda: class_prompt("note", Public("cardiology")),
])
def test_prompt_helpers_never_mark_a_callers_str(call):
    with pytest.raises(ParameterError, match="never marks a caller's str"):
        call()


def test_corpus_helpers_refuse_plain_text():
    backend = EchoBackend()
    with pytest.raises(ParameterError, match="never marks"):
        only_llm_corpus(backend, Public("note"), ["a private description"], 1)
    config = KPSConfig(epsilon=6.0, vocabulary_share=1 / 6, S=3, N=8, L=3, n_features=32)
    model = fit_kps(TEXTS, LABELS, NAMES, VOCAB, HashEmbedder(), config, np.random.default_rng(0))
    with pytest.raises(ParameterError, match="never marks"):
        kps_corpus(model, backend, Public("note"), 1, np.random.default_rng(1), examples=["private doc"])
    with pytest.raises(PrivateTextError):
        Privatized("fever")
    assert backend.seen == []


def test_only_llm_uses_one_seed_per_round():
    backend = EchoBackend()
    out = only_llm_corpus(backend, Public("note"), [Public("x"), Public("y")], 3, seed=5)
    assert out["labels"].tolist() == [0, 1, 0, 1, 0, 1]
    assert out["texts"][0].startswith("text 5") and out["texts"][-1].startswith("text 7")


def test_splits_and_subsets():
    rng = np.random.default_rng(0)
    client, test = split_client([str(i) for i in range(10)], list(range(10)), rng)
    assert not set(client["texts"]) & set(test["texts"]) and len(test["labels"]) == 5
    sub = real_subset([str(i) for i in range(10)], [0] * 5 + [1] * 5, 2, rng)
    assert sorted(sub["labels"].tolist()) == [0, 0, 1, 1]
    assert keyphrase_documents(["heart failure and gum", "nothing"], ["gum", "heart failure"], 5) == \
        ["heart failure, gum", ""]
    memo = MemoEmbedder(HashEmbedder())
    assert np.allclose(memo.encode(["a", "b", "a"])[0], memo.encode(["a"])[0])


def test_classifier_and_coral():
    import torch

    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(0, 1, (40, 5)) + 3, rng.normal(0, 1, (40, 5)) - 3])
    y = np.repeat([0, 1], 40)
    predict = train_classifier(x, y, 2, epochs=100)
    assert accuracy(predict, x, y) > 0.95
    predict = train_classifier(x, y, 2, x_unlabeled=x + 0.5, coral_weight=1.0, epochs=100)
    assert accuracy(predict, x, y) > 0.9
    a = torch.randn(50, 4, generator=torch.Generator().manual_seed(0))
    assert float(coral_loss(a, a)) == 0.0 and float(coral_loss(a, 3 * a)) > 0
    with pytest.raises(ParameterError, match="x_unlabeled"):
        train_classifier(x, y, 2, coral_weight=1.0)
    with pytest.raises(ParameterError, match="y_train"):
        train_classifier(x, y[:3], 2)
