"""Triple extraction and near-duplicate removal."""

import numpy as np
import pytest

from dpkit.dpst.dedup import deduplicate, near_duplicate_groups
from dpkit.dpst.triples import Triple, extract_triples, extract_triples_batch
from dpkit.validate import ParameterError


def test_svo_triples_from_simple_sentences():
    got = [t.text for t in extract_triples("Mark Zuckerberg founded Facebook. The company bought Instagram and WhatsApp.")]
    assert "Mark Zuckerberg founded Facebook" in got
    assert "The company bought Instagram" in got and "The company bought WhatsApp" in got


def test_prepositional_object_joins_the_verb():
    got = extract_triples("The vaccine was approved by regulators.")
    assert Triple("The vaccine", "was approved by", "regulators") in got


@pytest.mark.parametrize("text", ["", "   \n", "Wow!!!", "Hello."])
def test_no_triple_gives_empty_list(text):
    assert extract_triples(text) == []


def test_non_english_text_is_parsed_without_error():
    out = extract_triples_batch(["Der Hund beißt den Mann.", "这是一个测试。"])
    assert len(out) == 2 and all(isinstance(t, list) for t in out)


def test_bad_arguments():
    with pytest.raises(ParameterError, match="text"):
        extract_triples(3)
    with pytest.raises(ParameterError, match="texts"):
        extract_triples_batch("one string")
    with pytest.raises(ParameterError, match="max_phrase_tokens"):
        extract_triples("a b c", max_phrase_tokens=0)


def test_phrases_are_capped():
    text = "The very old big red wooden broken little house near the river had a roof."
    for t in extract_triples(text, max_phrase_tokens=3):
        assert len(t.subject.split()) <= 3 and len(t.object.split()) <= 3


def test_near_duplicates_grouped_without_chaining():
    texts = ["the company bought Instagram", "the company bought WhatsApp", "I was so angry", "I was angry",
             "Mark founded Facebook"]
    assert near_duplicate_groups(texts) == [[0, 1], [2, 3], [4]]


def test_dedup_keeps_lowest_score_in_original_order():
    texts = ["the company bought Instagram", "the company bought WhatsApp", "Mark founded Facebook"]
    scores = {"the company bought Instagram": 5.0, "the company bought WhatsApp": 1.0}
    kept = deduplicate(texts, scorer=lambda ts: np.array([scores[t] for t in ts]))
    assert kept == ["the company bought WhatsApp", "Mark founded Facebook"]


def test_dedup_is_deterministic_and_scores_only_contested():
    calls = []

    def scorer(ts):
        calls.append(list(ts))
        return np.zeros(len(ts))

    texts = ["a b c d", "w x y z"]
    assert deduplicate(texts, scorer=scorer) == texts
    assert calls == []


def test_dedup_bad_arguments():
    with pytest.raises(ParameterError, match="threshold"):
        near_duplicate_groups(["a"], threshold=1.5)
    with pytest.raises(ParameterError, match="num_perm"):
        near_duplicate_groups(["a"], num_perm=1)
    with pytest.raises(ParameterError, match="scorer"):
        deduplicate(["a b c", "a b c d"], scorer=lambda ts: np.array([np.nan, 1.0]))
    with pytest.raises(ParameterError, match="texts"):
        deduplicate(["a", "b"], texts=["a"])


@pytest.mark.slow
def test_lm_perplexity_prefers_fluent_triples():
    from dpkit.dpst.dedup import lm_perplexity

    ppl = lm_perplexity(["The company bought Instagram", "company the Instagram bought"])
    assert ppl[0] < ppl[1]


def test_deduplicate_many_equals_per_document_and_batches_scoring():
    from dpkit.dpst.dedup import deduplicate_many

    docs = [["the company bought Instagram", "the company bought WhatsApp"], [], ["I was so angry", "I was angry", "x y z"]]
    calls = []

    def scorer(ts):
        calls.append(len(ts))
        return np.array([len(t) for t in ts], dtype=float)

    got = deduplicate_many(docs, scorer=scorer)
    assert got == [deduplicate(d, scorer=lambda ts: np.array([len(t) for t in ts], float)) for d in docs]
    assert calls == [4]
    calls.clear()
    assert deduplicate_many(docs, scorer=scorer, independent=True) == got
    assert calls == [2, 2]  # one call per document with ties: no document's scores depend on another's


def test_participle_takes_the_noun_it_modifies_as_subject():
    got = [t.text for t in extract_triples("Judge issues order enforcing Ebola isolation of defiant Maine nurse")]
    assert any(t.endswith("enforcing Ebola isolation") for t in got)


def test_short_texts_fall_back_to_prepositional_copular_and_noun_phrase_triples():
    assert Triple("The case", "for", "a uniform unit") in extract_triples("The case for a uniform unit for liquid medicines")
    assert Triple("it", "is", "Silly and loud and goofy") in extract_triples("Silly, loud and goofy.")
    assert [t.verb for t in extract_triples("An atmospheric, serious-minded thriller.")] == ["is"]
    assert extract_triples("Bright apples.")[0].verb == "is"


def test_fallbacks_only_where_no_clause_was_found():
    got = extract_triples("Mark Zuckerberg founded Facebook in California.")
    assert all(t.subject == "Mark Zuckerberg" for t in got)


def test_extraction_rate_on_bundled_tweets_is_at_least_80_percent():
    from dpkit.data import load_health_tweets
    from dpkit.dpst.triples import extraction_rate

    texts = list(load_health_tweets(n_classes=4, max_per_class=40, seed=0).train_texts)
    assert extraction_rate(extract_triples_batch(texts)) >= 0.8
    assert extraction_rate([]) != extraction_rate([])  # nan for no documents
