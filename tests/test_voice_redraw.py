"""The voice's public redraw rule (dpkit.models.voice.redraw_reason) and DP-KPS's redraw of failed
texts (dpkit.kps.prompts.redraw_failed): which texts are redrawn, with which seeds, and what is kept."""

import pytest

from dpkit.kps.prompts import redraw_failed
from dpkit.models.voice import keyphrase_share, redraw_reason
from dpkit.validate import ParameterError

TERMS = ["tooth", "enamel", "caries", "fluoride"]


@pytest.mark.parametrize("text, why", [
    ("", "empty"), ("   ", "empty"), ("Caries.", "short"), ("I can't", "short"),
    ("Sure! Here is a medical exam question about caries and fluoride.", "assistant"),
    ("What is a medical exam question that uses these terms: tooth, enamel?", "assistant"),
    ("Tooth, enamel, caries, fluoride, tooth", "keyphrase_list"),
    ("Fluoride: tooth enamel caries", "keyphrase_list"),
    ("Dr. Joe's Daily Daily Daily Daily Daily Daily", "repetition"),
    ("A healthy start by having a healthy start and a healthy start to your day", "repetition"),
])
def test_redraw_reason_names_what_is_not_a_document(text, why):
    assert redraw_reason(text, keyphrases=TERMS, document_type="medical exam question") == why


@pytest.mark.parametrize("text", [
    "Which of the following increases the resistance of tooth enamel to caries?",
    "Fluoride in drinking water is most effective at a concentration of:  1 ppm",  # ends with a value, not ':'
    "Best treatment of a fractured mandible in a child is",
    "Most common site of dental caries in children is:",     # real exam questions end with a colon
])
def test_redraw_reason_passes_documents(text):
    assert redraw_reason(text, keyphrases=TERMS, document_type="medical exam question") is None


def test_keyphrase_share_counts_words_of_the_terms():
    assert keyphrase_share("tooth enamel is hard", ["tooth enamel"]) == 0.5
    assert keyphrase_share("", TERMS) == 0.0
    # without keyphrases nothing is a list
    assert redraw_reason("Tooth, enamel, caries, fluoride", keyphrases=()) is None


def test_redraw_failed_redraws_only_failed_texts_with_round_seeds_and_stops_when_all_pass():
    texts = {"a": "Which nerve supplies the upper canine tooth?", "b": "Tooth, enamel, caries", "c": ""}
    terms = {k: TERMS for k in texts}
    calls = []
    answers = {1: {"b": "Sure! Here is a question.", "c": "What is the most common site of caries in children?"},
               2: {"b": "Which salt of fluoride is used in toothpaste?"}}

    def generate(keys, round_):
        calls.append((sorted(keys), round_))
        return {k: answers[round_][k] for k in keys}

    out, redraws = redraw_failed(texts, terms, generate, document_type="medical exam question", rounds=3)
    assert calls == [(["b", "c"], 1), (["b"], 2)]          # round 3 not needed: every text passes
    assert out["a"] == texts["a"] and out["c"].startswith("What is") and out["b"].startswith("Which salt")
    assert redraws == {"b": ["keyphrase_list", "keyphrase_list"], "c": ["empty"]}
    assert texts["b"] == "Tooth, enamel, caries"             # the input is not changed


def test_a_failed_redraw_replaces_a_text_only_for_a_lesser_reason_and_zero_rounds_is_off():
    texts, terms = {"a": "Sure! Here is one.", "b": "Daily Daily Daily Daily Daily Daily"}, {"a": TERMS, "b": TERMS}
    answers = {1: {"a": "I can't", "b": "Sorry, I can't help with that."},            # worse: kept as it was
               2: {"a": "Dental caries dental caries dental caries in children", "b": ""}}   # a: a loop, lesser
    out, redraws = redraw_failed(texts, terms, lambda keys, r: {k: answers[r][k] for k in keys},
                                 document_type="question", rounds=2)
    assert out == {"a": answers[2]["a"], "b": texts["b"]}
    assert redraws == {"a": ["assistant", "assistant"], "b": ["repetition", "repetition"]}
    assert redraw_failed(texts, terms, None, document_type="question", rounds=0) == (texts, {})
    with pytest.raises(ParameterError):
        redraw_failed(texts, terms, None, document_type="question", rounds=-1)
