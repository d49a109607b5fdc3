"""The public assistant-talk pattern list: what it catches, and its false-positive rate on real data.

The false-positive bound is measured, not assumed: the list was run over every
bundled real text (Rotten Tomatoes 12,752 snippets, health tweets 60,418,
medical 9,648 at the time of writing) and matched none of them; the widened list matches 2
health tweets (``test_textmetrics_assistant_fpr.py`` counts ten corpora). The test keeps the
rate at most 1 in 2,000 per data set, so a pattern added later that fires on real
text fails it.
"""

import pytest

from dpkit.data.health_tweets import _records as health_records
from dpkit.data.medical import _records as medical_records
from dpkit.data.rotten_tomatoes import _records as rotten_records
from dpkit.textmetrics.assistant import ASSISTANT_PATTERNS, COMPILED, assistant_kinds, assistant_share, \
    is_assistant_talk

#: The bound on the false-positive rate per data set (measured: at most 2 of 60,418; see module docstring).
MAX_FALSE_POSITIVE_RATE = 1 / 2000

ASSISTANT_TALK = {
    "apology": ["I'm sorry, but I cannot do that.", "I apologize for the confusion.", "Bad food\n\nI'm sorry if any "
                "for any confusion."],
    "offer_of_help": ["I'm ready to help. What can I assist you with today?", "How can I help you today?",
                      "I'm here to help you with your writing.", "Let me know if you need anything else!"],
    "ai_self_reference": ["I am a helpful AI named SmolLM, trained by Hugging Face.", "As an AI language model, I "
                          "do not have opinions.", "I'm a health news AI, not a chatbot."],
    "refusal": ["I can't", "I cannot help with that request.", "I'm unable to write that."],
    "preamble": ["Sure, here is a health news tweet:", "Certainly! Here's a one-sentence review:",
                 "Here's a rewritten version of the text."],
    "instruction_echo": ["Winning the Super Bowl, using all the terms: jackets, doctor.",
                         "The keyphrases are: flu, rest.", "This tweet uses all of the health news terms."],
}
REAL_LOOKING = ["I can't recommend this film enough.", "Sure, it's contrived, but the cast is winning.",
                "Here's the story of a nurse who ran the Boston marathon.", "Sorry for any inconvenience!",
                "Great!", "Which of the following terms describes the nasal tip?", "Feel free to join our chat."]


@pytest.mark.parametrize("kind", sorted(ASSISTANT_TALK))
def test_each_kind_is_caught(kind):
    for text in ASSISTANT_TALK[kind]:
        assert kind in assistant_kinds(text), text
        assert is_assistant_talk(text)


def test_real_looking_sentences_are_not_flagged():
    assert [t for t in REAL_LOOKING if is_assistant_talk(t)] == []


def test_the_instruction_document_type_counts_as_an_echo():
    assert not is_assistant_talk("A one-sided story about measles.")
    assert is_assistant_talk("A short text about measles.", document_type="short text")
    assert not is_assistant_talk("Measles: a tweet from the CDC.", document_type="tweet")  # one word: too common


def test_share_and_the_public_list():
    assert assistant_share(["I can't", "Flu season starts early this year", "", "How can I help you?"]) == 0.5
    assert assistant_share([]) != assistant_share([])  # nan
    assert len(COMPILED) == sum(len(v) for v in ASSISTANT_PATTERNS.values())


@pytest.mark.parametrize("name, texts", [
    ("rotten_tomatoes", lambda: [t for t, _ in rotten_records()]),
    ("health_tweets", lambda: [t for t, _ in health_records(True)]),
    ("medical", lambda: [t for t, _ in medical_records(False)]),
])
def test_false_positive_rate_on_real_data(name, texts):
    texts = texts()
    flagged = [t for t in texts if is_assistant_talk(t)]
    assert len(texts) > 5000
    assert len(flagged) / len(texts) <= MAX_FALSE_POSITIVE_RATE, flagged[:10]
